"""Long commands show a sign of life on a terminal, end on Ctrl-C with one line and exit 130, and ``inspect --html``
says a path it cannot write before the replay and does not flood the terminal with the Markdown."""

from __future__ import annotations

import io
import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from amplifier_module_context_summarize.__main__ import main
from amplifier_module_context_summarize.cli import inspect as inspect_cli
from amplifier_module_context_summarize.cli.compact import EXAMPLE_SESSION
from amplifier_module_context_summarize.cli.progress import Progress

ROOT = Path(__file__).resolve().parent.parent


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("use_tqdm", [False, True])
def test_a_bar_appears_only_once_the_work_has_run_the_delay(use_tqdm):
    stream, clock = io.StringIO(), FakeClock()
    bar = Progress(500, "replaying", True, stream, delay_s=1.0, clock=clock, use_tqdm=use_tqdm, unit="messages")
    for done in range(1, 51):
        clock.now = done * 0.01  # 0.5 s for the first 50
        bar(done, 500)
    assert stream.getvalue() == "" and not bar.shown
    clock.now = 1.5
    bar(60, 500)
    assert bar.shown and "60/500" in stream.getvalue()
    bar.close()
    assert stream.getvalue().endswith("\n") or use_tqdm  # tqdm clears its line (leave=False) instead


def test_a_quick_run_draws_nothing_and_off_a_terminal_nothing_at_all():
    stream, clock = io.StringIO(), FakeClock()
    quick = Progress(10, "replaying", True, stream, delay_s=1.0, clock=clock, use_tqdm=False)
    for done in range(1, 11):
        quick(done, 10)
    quick.close()
    clock.now = 5.0
    off = Progress(10, "replaying", False, stream, delay_s=0.0, clock=clock, use_tqdm=False)
    off(10, 10)
    off.close()
    assert stream.getvalue() == ""


def _long_session(tmp_path: Path, copies: int = 40) -> Path:
    """The example session many times over (~4,900 messages): several seconds of replay even on a fast machine
    (four copies took 0.7 s once the replay got faster: the bar, shown after ``DELAY_S``, never came), ended by
    SIGINT once the bar shows."""
    text = EXAMPLE_SESSION.read_text()
    path = tmp_path / "long.jsonl"
    path.write_text(text.rstrip("\n") + "\n" + (text.rstrip("\n") + "\n") * (copies - 1))
    return path


@pytest.mark.parametrize("command", ["compact", "inspect"])
def test_a_long_replay_shows_progress_on_a_terminal_and_ctrl_c_ends_in_one_line(tmp_path, command):
    """stderr on a terminal (a pty), no --progress: the bar shows by itself within a couple of seconds; SIGINT
    then ends the command with exit 130 and one line, no traceback."""
    session = _long_session(tmp_path)
    leader, follower = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    offline = ["--summarizer", "extractive"] if command == "compact" else []  # no note about keys on stderr
    process = subprocess.Popen(
        [sys.executable, "-m", "amplifier_module_context_summarize", command, str(session), "--budget", "8k", *offline],
        stdout=subprocess.DEVNULL,
        stderr=follower,
        stdin=subprocess.DEVNULL,
        env=env,
        cwd=tmp_path,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # a background job may ignore SIGINT
    )
    os.close(follower)
    seen, deadline = b"", time.monotonic() + 60

    def read() -> bytes:
        """What the terminal shows next, or b"" once nothing more comes (EIO: the command closed its side)."""
        ready, _, _ = select.select([leader], [], [], 0.2)
        try:
            return os.read(leader, 65536) if ready else b""
        except OSError:
            return b""

    try:
        while b"replaying" not in seen and process.poll() is None and time.monotonic() < deadline:
            seen += read()
        assert b"replaying" in seen, f"no progress shown on a terminal: {seen[-400:]!r}"
        assert process.poll() is None, "the replay ended before it could be interrupted"
        process.send_signal(signal.SIGINT)
        code = process.wait(timeout=60)
        while chunk := read():
            seen += chunk
    finally:
        if process.poll() is None:
            process.kill()
        os.close(leader)
    text = seen.decode("utf-8", "replace").replace("\r\n", "\n")
    lines = [line.split("\r")[-1].strip() for line in text.split("\n")]
    said = [line for line in lines if line and "replaying" not in line]
    assert code == 130
    assert said == ["interrupted"] and "Traceback" not in text


def test_inspect_html_to_a_path_it_cannot_write_says_so_before_the_replay(tmp_path, monkeypatch, capsys):
    if Path("/proc/self").is_dir():
        target = Path("/proc/report.html")  # no file can be made there, root or not
    else:  # pragma: no cover - not Linux
        folder = tmp_path / "read-only"
        folder.mkdir(mode=0o500)
        target = folder / "report.html"

    async def never(*args, **kwargs):
        raise AssertionError("replayed before the output path was checked")

    monkeypatch.setattr(inspect_cli, "inspect_session", never)
    assert main(["inspect", "--example", "--html", str(target)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip().splitlines() == [captured.err.strip()]
    assert captured.err.startswith(f"error: cannot write {target}")


def test_inspect_html_prints_a_headline_not_the_markdown_unless_asked(tmp_path, capsys):
    page = tmp_path / "report.html"
    assert main(["inspect", "--example", "--html", str(page), "--no-progress"]) == 0
    quiet = capsys.readouterr()
    assert page.read_text().startswith("<!DOCTYPE html>")
    assert "## Compaction" not in quiet.out and len(quiet.out.splitlines()) == 2
    assert quiet.out.startswith("read: ") and "compaction(s) at a budget of 16,000 tokens" in quiet.out
    assert f"HTML written to {page}" in quiet.err
    assert main(["inspect", "--example", "--html", str(page), "--markdown", "--no-progress"]) == 0
    assert "## Compaction 1" in capsys.readouterr().out


def test_check_file_leaves_an_existing_file_as_it_was_and_no_new_one_behind(tmp_path):
    from amplifier_module_context_summarize.cli.output import check_file

    existing = tmp_path / "kept.html"
    existing.write_text("before")
    assert check_file(existing) == existing and existing.read_text() == "before"
    missing = tmp_path / "new.html"
    assert check_file(missing) == missing and not missing.exists()
