"""Issue 47: large tool outputs go to a file the moment they arrive, and the view shows a preview that says plainly
what the model has not seen, where the rest is and how to read it (read_file or context_recall)."""

from __future__ import annotations

import json
import logging
import os
import re
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from amplifier_module_context_summarize import SUMMARY_MARKER, create_manager, parse_config
from amplifier_module_context_summarize.core.clip import clip_middle
from amplifier_module_context_summarize.core.messages import scrub_text
from amplifier_module_context_summarize.recall.tool import RecallTool
from amplifier_module_context_summarize.spill.folder import SpillFolder
from amplifier_module_context_summarize.spill.preview import MARKER
from amplifier_module_context_summarize.testing import EventRecorder, tool_call, tool_result
from amplifier_module_context_summarize.testing.simulated_reader import SimulatedReader

REPO = Path(__file__).resolve().parent.parent
BUDGET = 16_000
WIDE = 100_000
"""A budget the outputs fit whole: what the view shows without spilling."""
PATH = re.compile(r"^File: (.+)$", re.M)
HANDLE = re.compile(r'handle "?(m\d+(?:\.\d+)?-[0-9a-f]{6})')


class ReadFile:
    """Amplifier's tool-filesystem ``read_file`` as its ``ReadTool.execute`` reads a file (checked against
    microsoft/amplifier-module-tool-filesystem ``read.py``): ``file_path`` absolute or ``~``-relative, ``offset`` the
    first line (1-based, default 1), ``limit`` lines (default 2,000), ``str.splitlines`` lines, each cut at 2,000
    characters, strict UTF-8, and ``allowed_read_paths`` (None: every path) checked on the resolved path."""

    def __init__(self, allowed_read_paths: list[str] | None = None) -> None:
        self.allowed = allowed_read_paths

    def execute(self, file_path: str, offset: int = 1, limit: int = 2_000) -> dict[str, Any]:
        path = Path(file_path).expanduser()
        if self.allowed is not None:
            resolved = path.resolve()
            if not any(Path(a).resolve() in (resolved, *resolved.parents) for a in self.allowed):
                return {"success": False, "error": f"Access denied: {file_path}"}
        lines = path.read_text(encoding="utf-8").splitlines()
        chosen = lines[max(0, offset - 1) : max(0, offset - 1) + limit]
        cut = [line[:2_000] + "... [truncated]" if len(line) > 2_000 else line for line in chosen]
        return {"success": True, "lines": cut, "total_lines": len(lines)}


def big_output(lines: int = 3_000, secret: str = "ZEBRA-4471") -> str:
    body = [f"test_case_{i:05d} PASSED in 0.{i % 97:02d}s" for i in range(lines)]
    body[lines // 2] = f"FAILED test_checkout: expected order id {secret}"
    return "\n".join(body)


def config(tmp_path: Path, **extra: Any) -> dict[str, Any]:
    return {"max_tokens": BUDGET, "summarizer": "extractive", "storage_path": str(tmp_path / "s.db"), **extra}


def session(output: str, shape: str = "openai", turns: int = 1) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    for i in range(turns):
        messages.append({"role": "user", "content": f"Run the test suite, part {i}."})
        messages.append(tool_call(shape, f"c{i}", "bash", {"command": "pytest"}))
        messages.append(tool_result(shape, f"c{i}", output if i == turns - 1 else f"ok {i}"))
    return messages


async def view_of(manager: Any, messages: list[dict[str, Any]], budget: int = BUDGET) -> list[dict[str, Any]]:
    for message in messages:
        await manager.add_message(message)
    return await manager.get_messages_for_request(budget)


def output_texts(view: list[dict[str, Any]]) -> list[str]:
    texts: list[str] = []
    for message in view:
        content = message.get("content")
        if message.get("role") == "tool" and isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts += [b.get("content") or b.get("output") for b in content if b.get("type") == "tool_result"]
    return [t for t in texts if isinstance(t, str)]


def preview_in(view: list[dict[str, Any]]) -> str:
    found = [t for t in output_texts(view) if t.startswith(MARKER)]
    assert len(found) == 1, output_texts(view)
    return found[0]


# ------------------------------------------------------------------ what the view shows


@pytest.mark.parametrize("shape", ["openai", "anthropic", "amplifier"])
async def test_an_output_over_the_threshold_is_written_whole_and_previewed(tmp_path, shape):
    output = big_output()
    manager = create_manager(config(tmp_path))
    preview = preview_in(await view_of(manager, session(output, shape)))
    path = Path(PATH.search(preview).group(1))
    assert path.read_text(encoding="utf-8") == output
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == stat.S_IMODE(path.parent.parent.stat().st_mode) == 0o700
    assert path.parent.parent == tmp_path / "spill"  # beside the summary store, one folder per session
    lines = output.splitlines()
    assert lines[0] in preview and lines[-1] in preview and "ZEBRA-4471" not in preview
    assert f"{len(output):,} characters" in preview and f"{len(lines):,} lines" in preview and "tokens" in preview
    assert "NOT seen" in preview and "NOT in your context" in preview and preview.rstrip().endswith("]")
    assert HANDLE.search(preview) and "context_recall" in preview
    assert manager.counter.count_text(preview) < 1_200  # about a tenth of the default threshold


async def test_outputs_under_the_threshold_and_a_memory_store_are_left_alone(tmp_path):
    small = big_output(lines=200)
    manager = create_manager(config(tmp_path))
    assert small in output_texts(await view_of(manager, session(small)))
    in_memory = create_manager({"summarizer": "extractive"})  # no file store: nothing written
    output = big_output()
    assert not in_memory.spill.enabled
    assert output in output_texts(await view_of(in_memory, session(output), WIDE))
    off = create_manager(config(tmp_path / "off", spill_path=None, max_tokens=WIDE))
    assert output in output_texts(await view_of(off, session(output), WIDE))
    assert not (tmp_path / "off" / "spill").exists() and not (tmp_path / "spill").exists()


async def test_the_threshold_is_in_tokens_and_configurable(tmp_path):
    output = big_output(lines=400)  # about 5,600 tokens
    default = create_manager(config(tmp_path / "a"))
    assert output in output_texts(await view_of(default, session(output)))
    lower = create_manager(config(tmp_path / "b", spill_threshold_tokens=2_000))
    preview_in(await view_of(lower, session(output)))


@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        ("spill_threshold_tokens", 10, "spill_threshold_tokens"),
        ("spill_threshold_tokens", "big", "spill_threshold_tokens"),
        ("spill_max_mb", 0, "spill_max_mb"),
        ("spill_max_age_s", -1, "spill_max_age_s"),
        ("spill_path", "", "spill_path"),
        ("spill_path", 3, "spill_path"),
    ],
)
def test_bad_values_name_their_key(key, value, says):
    with pytest.raises(ValueError, match=says):
        parse_config({key: value})


# ------------------------------------------------------------------ reading it back


async def test_read_file_and_recall_reach_the_text_the_preview_leaves_out(tmp_path):
    output = big_output()
    manager = create_manager(config(tmp_path))
    preview = preview_in(await view_of(manager, session(output)))
    path = PATH.search(preview).group(1)
    hidden = re.search(r"lines ([\d,]+)–([\d,]+)\) are NOT", preview)
    first, last = (int(g.replace(",", "")) for g in hidden.groups())
    read = ReadFile().execute(path, offset=first, limit=last - first + 1)
    assert read["lines"] == output.splitlines()[first - 1 : last]
    assert any("ZEBRA-4471" in line for line in read["lines"])
    assert ReadFile(allowed_read_paths=[str(tmp_path)]).execute(path, offset=1, limit=1)["success"]
    recall = RecallTool(manager)
    handle = HANDLE.search(preview).group(1)
    pages, offset = [], 0
    while offset is not None:
        page = recall.fetch({"handle": handle, "offset": offset})
        pages.append(page["text"])
        offset = page["next_offset"]
    assert "".join(pages) == output == Path(path).read_text(encoding="utf-8")
    found = recall.search({"operation": "search", "query": "ZEBRA-4471"})
    assert [r["handle"] for r in found["results"]] == [handle] and found["results"][0]["shown"] == "spilled"


async def test_a_masked_spilled_output_describes_the_output_not_its_preview(tmp_path):
    output = big_output()
    cfg = config(
        tmp_path,
        mask_keep_recent=0,
        compact_threshold=0.3,
        target_usage=0.1,
        preserve_recent_ratio=0.05,
        prefetch_threshold=0.2,
    )
    manager = create_manager(cfg)
    messages = session(output) + [
        m for i in range(12) for m in session("x" * 900)[1:] if m.get("role") != "system" or i == 0
    ]
    for message in messages:
        await manager.add_message(message)
    await manager.compact()
    view = await manager.get_messages_for_request(BUDGET)
    masked = [t for t in output_texts(view) if f"{len(output):,} chars, 3,000 lines" in t]
    assert masked and masked[0].startswith("[tool output masked:")


# ------------------------------------------------------------------ durable and bounded


async def test_a_resume_shows_the_same_preview_and_path_and_rewrites_a_removed_file(tmp_path):
    output = big_output()
    messages = session(output, turns=3)
    live = create_manager(config(tmp_path))
    live_view = await view_of(live, messages)
    resumed = create_manager(config(tmp_path))
    await resumed.set_messages(messages)
    assert await resumed.get_messages_for_request(BUDGET) == live_view
    path = Path(PATH.search(preview_in(live_view)).group(1))
    path.unlink()  # the folder's bounds removed it
    again = create_manager(config(tmp_path))
    await again.set_messages(messages)
    assert await again.get_messages_for_request(BUDGET) == live_view
    assert path.read_text(encoding="utf-8") == output


RESUME_SCRIPT = """
import asyncio, json, sys
from amplifier_module_context_summarize import create_manager
messages = json.loads(open(sys.argv[1]).read())
async def main():
    m = create_manager({{"max_tokens": {budget}, "summarizer": "extractive", "storage_path": {store!r}}})
    await m.set_messages(messages)
    print(json.dumps(await m.get_messages_for_request({budget})))
asyncio.run(main())
"""


def test_a_resume_in_a_new_process_shows_the_same_preview(tmp_path):
    messages = session(big_output(), turns=2)
    (tmp_path / "m.json").write_text(json.dumps(messages))
    script = tmp_path / "resume.py"
    script.write_text(RESUME_SCRIPT.format(budget=BUDGET, store=str(tmp_path / "s.db")))

    def run() -> list[dict[str, Any]]:
        done = subprocess.run(
            [sys.executable, str(script), str(tmp_path / "m.json")], capture_output=True, text=True, cwd=REPO
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    first, second = run(), run()
    assert first == second and preview_in(first)


def test_the_folder_removes_files_past_its_age_then_the_oldest_past_its_size(tmp_path):
    now = [1_000_000.0]
    folder = SpillFolder(tmp_path / "spill", max_bytes=2_500, max_age_s=100, clock=lambda: now[0])
    paths = []
    for i in range(4):
        paths.append(folder.write("0123456789abcdef", f"m{i}-aaaaaa-{i:010x}.txt", b"x" * 1_000))
        os.utime(paths[-1], (now[0] - 50 + i, now[0] - 50 + i))
    assert [p.exists() for p in paths] == [False, False, True, True]  # 4,000 bytes > 2,500: oldest first
    os.utime(paths[2], (now[0] - 500, now[0] - 500))
    (tmp_path / "spill" / "0123456789abcdef" / "notes.txt").write_text("not ours")
    folder.prune()
    assert [p.exists() for p in paths] == [False, False, False, True]
    assert (tmp_path / "spill" / "0123456789abcdef" / "notes.txt").exists()  # only its own names are removed
    newest = folder.write("0123456789abcdef", "m9-aaaaaa-0000000009.txt", b"y" * 3_000)
    assert newest.exists() and not paths[3].exists()  # the file just written stays, even over the bound


def locked(tmp_path: Path) -> tuple[Path, str]:
    """A folder this process cannot write (root can write anywhere: a file where the folder should be)."""
    if hasattr(os, "getuid") and os.getuid() != 0:
        (tmp_path / "locked").mkdir(mode=0o500)
        return tmp_path / "locked" / "spill", "PermissionError"
    (tmp_path / "locked").write_text("a file, not a folder")
    return tmp_path / "locked" / "spill", "FileExistsError"


async def test_an_unusable_folder_shows_the_output_whole_with_one_warning_and_one_event(tmp_path, caplog):
    root, fault = locked(tmp_path)
    recorder = EventRecorder()
    manager = create_manager(config(tmp_path, spill_path=str(root), max_tokens=WIDE), hooks=recorder)
    output = big_output()
    with caplog.at_level(logging.WARNING):
        view = await view_of(manager, session(output, turns=2), WIDE)
        await manager.add_message({"role": "user", "content": "again"})
        await manager.add_message(tool_call("openai", "c9", "bash", {"command": "pytest"}))
        await manager.add_message(tool_result("openai", "c9", output + "\nmore"))
        later = await manager.get_messages_for_request(WIDE)
    assert output in output_texts(view) and output + "\nmore" in output_texts(later)
    assert len([r for r in caplog.records if "spill folder" in r.getMessage()]) == 1
    degraded = recorder.payloads("context:store_degraded")
    assert degraded == [{"store": "spill", "reason": fault, "fallback": "whole outputs"}]


async def test_a_link_is_never_followed(tmp_path, caplog):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "spill").symlink_to(elsewhere)
    manager = create_manager(config(tmp_path, max_tokens=WIDE))
    output = big_output()
    with caplog.at_level(logging.WARNING):
        view = await view_of(manager, session(output), WIDE)
    assert output in output_texts(view) and list(elsewhere.iterdir()) == []
    assert any("symbolic link" in r.getMessage() for r in caplog.records)


# ------------------------------------------------------------------ with the other features


async def test_a_pinned_output_is_shown_verbatim_not_spilled(tmp_path):
    output = big_output(lines=2_000)
    messages = session(output)
    messages[-1]["metadata"] = {"pin": True}
    manager = create_manager(config(tmp_path, max_tokens=WIDE))
    assert output in output_texts(await view_of(manager, messages, WIDE))


async def test_non_ascii_and_a_lone_surrogate_reach_the_file_as_valid_utf8(tmp_path):
    output = big_output().replace("PASSED", "réussi ✓ 通过") + "\nbad byte \udcff here"
    manager = create_manager(config(tmp_path))
    view = await view_of(manager, session(output))
    json.dumps(view, ensure_ascii=False).encode("utf-8")  # the view encodes
    preview = preview_in(view)
    path = PATH.search(preview).group(1)
    assert Path(path).read_text(encoding="utf-8") == scrub_text(output)
    assert ReadFile().execute(path, offset=len(output.splitlines()), limit=1)["lines"] == ["bad byte \ufffd here"]
    handle = HANDLE.search(preview).group(1)
    assert RecallTool(manager).fetch({"handle": handle})["total_chars"] == len(output)


@pytest.mark.parametrize("background", [True, False])
async def test_a_large_new_output_with_a_summary_in_view_keeps_the_recent_groups(tmp_path, background):
    """Without spilling, a new output larger than the view's room is clipped and pushes the recent groups out."""
    reasoning = "The change keeps the API as it was. " * 40
    turns = [
        m
        for i in range(30)
        for m in (
            {"role": "user", "content": f"Step {i}: edit src/mod_{i}.py"},
            tool_call("openai", f"c{i}", "edit", {"path": f"src/mod_{i}.py"}),
            tool_result("openai", f"c{i}", f"edited src/mod_{i}.py\n" + "diff line\n" * 120),
            {"role": "assistant", "content": f"Edited src/mod_{i}.py. {reasoning}"},
        )
    ]
    tail = [
        {"role": "user", "content": "Now run everything."},
        tool_call("openai", "big", "bash", {"command": "pytest -v"}),
        tool_result("openai", "big", big_output(lines=2_400)),
    ]
    views = {}
    for spill in ("off", str(tmp_path / f"spill-{background}")):
        cfg = config(tmp_path, spill_path=spill, background_compaction=background, max_tokens=12_000)
        manager = create_manager(cfg)
        for message in turns:
            await manager.add_message(message)
            if message["role"] == "user":
                await manager.get_messages_for_request(12_000)
        await manager.compact()
        for message in tail:
            await manager.add_message(message)
        view = await manager.get_messages_for_request(12_000)
        assert manager.counter.count_messages(view) <= 12_000
        assert str(view[0]["content"]).startswith(SUMMARY_MARKER)
        await manager.close()
        views[spill == "off"] = view
    recent = {"role": "assistant", "content": f"Edited src/mod_29.py. {reasoning}"}
    assert recent in views[False] and preview_in(views[False])
    assert recent not in views[True] and any("characters clipped" in t for t in output_texts(views[True]))


# ------------------------------------------------------------------ the wording, read by a simulated model


def cases(n: int = 20) -> list[tuple[str, str]]:
    """(output, a fact only its unseen middle holds)."""
    out = []
    for i in range(n):
        secret = f"ORD-{7000 + 37 * i}"
        out.append((big_output(lines=1_500 + 97 * i, secret=secret), secret))
    return out


async def test_the_simulated_model_reads_the_file_after_the_preview_but_not_after_a_clip(tmp_path):
    reader = SimulatedReader(seed=7)
    told, clipped = 0, 0
    for i, (output, secret) in enumerate(cases()):
        manager = create_manager(config(tmp_path / str(i)))
        # The reader's draws follow its text: the folder is named as one path, so they do not follow pytest's tmp_path
        # (a run in another folder drew five skips of 20 once, where 10% is two).
        preview = preview_in(await view_of(manager, session(output))).replace(str(tmp_path), "/spill")
        assert secret not in preview  # the question's answer lies in the unseen middle
        step = reader.next_step(preview)
        if step.kind == "read":
            told += 1
            assert step.path == PATH.search(preview).group(1) or step.handle == HANDLE.search(preview).group(1)
        old = clip_middle(output, 8_000, "; recall with context_recall, handle m3-abcdef")
        clipped += reader.next_step(old).kind == "read"
    assert told >= 16 and clipped <= 4, (told, clipped)


def test_the_simulated_model_carries_on_unless_told_plainly():
    reader = SimulatedReader(seed=1, skip_rate=0.0)
    head = "line\n" * 30
    assert reader.next_step(head + "[output saved to /tmp/x.txt]\n" + head).kind == "answer"  # a path, no warning
    assert reader.next_step("You have NOT seen most of this output.\n" + head).kind == "answer"  # no way to read
    told = "You have NOT seen most of this output. File: /tmp/x.txt\n" + head
    step = reader.next_step(told)
    assert step.kind == "read" and step.path == "/tmp/x.txt"
    assert reader.next_step(head * 40 + told + head * 40).kind == "answer"  # said only in the middle: unread
