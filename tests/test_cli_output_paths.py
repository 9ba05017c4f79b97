"""Issue 32, item 13: every output path of the command line ends in one line and exit 2, never a traceback.

Each subcommand that writes is tried against each kind of bad path (a missing folder, a folder where a file
belongs, a file where a folder belongs, a device that refuses writes), and a recording holding lone
surrogates (a JSON ``\\ud83d`` escape) is converted, compacted and inspected: written safely, not refused.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amplifier_module_context_summarize.__main__ import main

SURROGATE_EXAMPLES = 100
"""Generated sessions with lone surrogates in every string position, converted and read back."""

SESSION = [
    {"role": "user", "content": "Fix the parser, please \ud83d."},
    {"role": "assistant", "content": "Done \udcff.", "tool_calls": []},
]


def write_session(path: Path, messages: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps(messages), encoding="ascii")  # "\ud83d" stays a JSON escape on disk
    return path


def bad_paths(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "a_folder").mkdir()
    (tmp_path / "a_file").write_text("x")
    return {
        "missing folder": str(tmp_path / "missing" / "dir" / "out"),
        "folder": str(tmp_path / "a_folder"),
        "under a file": str(tmp_path / "a_file" / "out"),
        "existing file": str(tmp_path / "a_file"),
        "unwritable": "/dev/full",
    }


WRITERS = {
    # subcommand: (arguments before the path, whether the path names a folder)
    "convert -o": (["convert", "{session}", "-o"], False),
    "inspect --html": (["inspect", "{session}", "--budget", "2000", "--html"], False),
    "eval --out": (["eval", "--sessions", "1", "--strategies", "mask", "--quiet", "--out"], True),
}
GOOD = {("convert -o", "existing file"), ("inspect --html", "existing file")}  # overwriting a file is fine
FOLDER_MADE = {("eval --out", "missing folder"), ("eval --out", "folder")}  # eval makes or fills its folder


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("kind", ["missing folder", "folder", "under a file", "existing file", "unwritable"])
def test_every_output_path_fails_in_one_line(writer: str, kind: str, tmp_path: Path, capsys) -> None:
    if (writer, kind) in GOOD | FOLDER_MADE or (kind == "unwritable" and not Path("/dev/full").exists()):
        pytest.skip("a path this subcommand may use")
    session = write_session(tmp_path / "s.json", SESSION)
    target = bad_paths(tmp_path)[kind]
    argv = [a.format(session=session) for a in WRITERS[writer][0]] + [target]
    assert main(argv) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip() and "extractive summarizer" not in line]
    assert len(lines) == 1 and "cannot write" in lines[0] and "Traceback" not in err, err


@pytest.mark.parametrize("writer", ["convert -o", "inspect --html"])
def test_an_existing_file_is_overwritten(writer: str, tmp_path: Path) -> None:
    session = write_session(tmp_path / "s.json", SESSION)
    target = tmp_path / "out"
    target.write_text("old")
    assert main([a.format(session=session) for a in WRITERS[writer][0]] + [str(target)]) == 0
    assert target.read_text(encoding="utf-8") != "old"


@pytest.mark.parametrize("raw", ["missing", "a_file"])
def test_bench_cost_raw_that_is_no_folder_is_one_line(raw: str, tmp_path: Path, capsys) -> None:
    (tmp_path / "a_file").write_text("x")
    assert main(["bench", "--cost", "--quick", "--no-sim", "--raw", str(tmp_path / raw)]) == 2
    err = capsys.readouterr().err
    assert "--raw" in err and "not a folder" in err and "Traceback" not in err


@pytest.mark.parametrize("to_file", [False, True])
def test_convert_writes_lone_surrogates_as_escapes(to_file: bool, tmp_path: Path, capsysbinary) -> None:
    session = write_session(tmp_path / "s.json", SESSION)
    out = tmp_path / "out.jsonl"
    assert main(["convert", str(session)] + (["-o", str(out)] if to_file else [])) == 0
    data = out.read_bytes() if to_file else capsysbinary.readouterr().out
    back = [json.loads(line) for line in data.decode("utf-8").splitlines()]
    assert [m["content"] for m in back] == [m["content"] for m in SESSION]


@pytest.mark.parametrize("command", [["compact", "--no-summary"], ["compact", "--json"], ["inspect"]])
def test_compact_and_inspect_read_the_same_file(command: list[str], tmp_path: Path, capsysbinary) -> None:
    session = write_session(tmp_path / "s.json", SESSION * 30)
    assert main([command[0], str(session), "--budget", "1000", *command[1:]]) == 0
    captured = capsysbinary.readouterr()
    captured.out.decode("utf-8")
    captured.err.decode("utf-8")


strings = st.text(st.sampled_from(["a", " ", "\ud83d", "\udcff", "é", "\n", '"', "\\", "\u2028"]), max_size=12)


@settings(max_examples=SURROGATE_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["user", "assistant"]), strings, strings), min_size=1, max_size=4))
def test_converted_sessions_read_back_exactly(turns: list[tuple[str, str, str]]) -> None:
    import tempfile

    messages = [{"role": role, "content": text or "x", "name": name} for role, text, name in turns]
    with tempfile.TemporaryDirectory() as folder:
        session = write_session(Path(folder) / "s.json", messages)
        out = Path(folder) / "out.jsonl"
        assert main(["convert", str(session), "-o", str(out)]) == 0
        back = [json.loads(line) for line in out.read_bytes().decode("utf-8").splitlines()]
    assert back == json.loads(json.dumps(messages))  # what the file holds (a surrogate pair reads as one)
