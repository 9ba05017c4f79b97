"""One file's successful reads folded on one working-set line, and still counted as named there."""

from __future__ import annotations

import re
from typing import Any

import pytest

from amplifier_module_context_summarize.compaction.view.losses import account
from amplifier_module_context_summarize.core.tokens import TokenCounter
from amplifier_module_context_summarize.testing import tool_call, tool_result
from amplifier_module_context_summarize.working_set.fold import working_set_of
from amplifier_module_context_summarize.working_set.layout import render
from amplifier_module_context_summarize.working_set.reads import READ_GROUP, named_reads, read_form

COUNT = TokenCounter().count_text


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("sed -n '95,115p' astroid/builder.py", ("astroid/builder.py", "sed -n '95,115p'")),
        ('grep -n "__init__\\.py" a/mod.py -B2 -A2', ("a/mod.py", 'grep -n "__init__\\.py" -B2 -A2')),
        ("grep -A 20 -n 'def x' a.py", ("a.py", "grep -A 20 -n 'def x'")),
        ("grep -e foo -n src/a.py", ("src/a.py", "grep -e foo -n")),
        ("head -100 astroid/builder.py", ("astroid/builder.py", "head -100")),
        ("tail -n 40 logs/run.log", ("logs/run.log", "tail -n 40")),
        ("cat  setup.cfg", ("setup.cfg", "cat")),
    ],
)
def test_a_simple_read_of_one_file_splits_into_its_file_and_the_rest(command: str, expected: Any) -> None:
    assert read_form(command) == expected


@pytest.mark.parametrize(
    "command",
    [
        "cat a.py b.py",  # two files
        "grep -n x src/*.py",  # a glob
        'grep -r "x" --include="*.py"',  # a search with no file
        "sed -i 's/a/b/' a.py",  # an edit
        "cat a.py | grep x",  # a pipeline
        "cd src && cat a.py",  # a list
        "cat a.py > b.py",  # a redirection
        "cat $(ls)",  # a substitution
        "python -c 'print(1)' a.py",  # not a reader
        "ls -la",
        "grep -n pattern",
        'grep -n "unbalanced a.py',
    ],
)
def test_anything_but_one_simple_read_of_one_file_is_left_as_it_is(command: str) -> None:
    assert read_form(command) is None


def bash(call_id: str, command: str, output: str = "line") -> list[dict[str, Any]]:
    return [
        tool_call("openai", call_id, "bash", {"command": command}),
        tool_result("openai", call_id, output),
    ]


def exploring(reads: int) -> list[dict[str, Any]]:
    """An agent reading two files in many slices, once re-reading a slice, and one other read."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Find the bug in /repo."}]
    for i in range(reads):
        messages += bash(f"a{i}", f"cd /repo && sed -n '{10 * i},{10 * i + 9}p' pkg/core.py")
        messages += bash(f"b{i}", f'cd /repo && grep -n "name_{i}" pkg/util.py -B5 -A20')
    messages += bash("again", "cd /repo && sed -n '0,9p' pkg/core.py")
    messages += bash("one", "cd /repo && head -50 README.md")
    return messages


def test_a_files_reads_share_one_line_in_order_with_their_run_counts() -> None:
    text = render(working_set_of(exploring(3)), 100_000, COUNT)
    core = [line for line in text.splitlines() if line.startswith(f"- pkg/core.py{READ_GROUP}")]
    assert core == [f"- pkg/core.py{READ_GROUP}`sed -n '10,19p'` · `sed -n '20,29p'` · `sed -n '0,9p'` ×2"]
    assert f'- pkg/util.py{READ_GROUP}`grep -n "name_0" -B5 -A20` ·' in text
    assert "- `head -50 README.md` — ok" in text  # a file read once keeps its plain line
    assert "sed -n '10,19p' pkg/core.py" not in text


def test_a_short_room_drops_a_read_line_whole_and_counts_every_command_it_stood_for() -> None:
    state = working_set_of(exploring(12))
    full = render(state, 100_000, COUNT)
    seen = set()
    for room in range(COUNT(full), 40, -5):
        text = render(state, room, COUNT)
        assert COUNT(text) <= room
        if not text:  # not even the counts fit
            continue
        listed = sum(len(re.findall(r"`[^`]+`(?: ×\d+)?", line)) for line in text.splitlines() if READ_GROUP in line)
        plain = len(re.findall(r"^- `(?:sed|grep|head)", text, re.MULTILINE))
        dropped = re.search(r"^- \+(\d+) earlier commands?$", text, re.MULTILINE)
        # 12 + 12 distinct reads, the re-read counted once, and the README read: 25 commands in all
        assert listed + plain + (int(dropped.group(1)) if dropped else 0) == 25
        assert listed in (0, 12, 24)  # each file's line (12 reads) is shown whole or not at all
        if dropped and listed:
            seen.add("some dropped")
    assert seen == {"some dropped"}


def test_a_command_is_named_by_the_rest_of_it_on_its_files_read_line_only() -> None:
    text = f"### Working set\n- pkg/core.py{READ_GROUP}`sed -n '10,19p'` · `head -5`\n- other.py — edited"
    commands = [
        ("a", "pkg/core.py", "sed -n '10,19p'"),
        ("b", "pkg/core.py", "sed -n '20,29p'"),  # not listed
        ("c", "other.py", "head -5"),  # listed, but for another file
        ("d", "pkg/core.py", "HEAD   -5"),  # spacing and case do not matter
    ]
    assert named_reads(text, commands, 80) == {"a", "d"}


def test_what_was_lost_counts_a_folded_read_as_kept() -> None:
    span = exploring(2)
    shown = render(working_set_of(span), 100_000, COUNT)
    kept = account(span, shown)
    assert "cd /repo && sed -n '10,19p' pkg/core.py" not in shown
    assert kept.lost["commands"] == []
    assert "sed -n '10,19p' pkg/core.py" in kept.kept["commands"]
    assert account(span, shown.replace("'10,19p'", "'11,19p'")).lost["commands"] == ["sed -n '10,19p' pkg/core.py"]
