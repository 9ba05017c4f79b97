"""The working set: one artifact index for everything the summary stands for, folded group by group."""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import threading
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from amplifier_module_context_summarize import create_manager
from amplifier_module_context_summarize.benchmark.synth import SMALL, SessionGenerator
from amplifier_module_context_summarize.compaction.view.losses import FactsRun, joined
from amplifier_module_context_summarize.compaction.view.splice import working_set_room
from amplifier_module_context_summarize.config import Config
from amplifier_module_context_summarize.core.history import History
from amplifier_module_context_summarize.core.messages import message_calls
from amplifier_module_context_summarize.core.state import CompactionState, Segment
from amplifier_module_context_summarize.core.substrings import Substrings
from amplifier_module_context_summarize.core.tokens import TokenCounter
from amplifier_module_context_summarize.manager import SUMMARY_MARKER
from amplifier_module_context_summarize.stores import MemoryStore
from amplifier_module_context_summarize.testing import (
    CALL_SHAPES,
    FakeProvider,
    mixed_history,
    replay,
    tool_call,
    tool_result,
)
from amplifier_module_context_summarize.working_set import fold as working_set
from amplifier_module_context_summarize.working_set import index as working_set_index
from amplifier_module_context_summarize.working_set import layout
from amplifier_module_context_summarize.working_set.fold import (
    HEADING,
    _names_word,
    canonical,
    named_files,
    working_set_of,
)
from amplifier_module_context_summarize.working_set.index import FactsLog, WorkingSetIndex, index_of
from amplifier_module_context_summarize.working_set.mentions import _short_ids
from amplifier_module_context_summarize.working_set.shell import _shell_tokens, _word

COUNTER = TokenCounter()
COUNT = COUNTER.count_text
BIG = 100_000

Messages = list[dict[str, Any]]


def call(shape: str, call_id: str, name: str, args: dict[str, Any], output: Any, error: bool | None = None) -> Messages:
    return [tool_call(shape, call_id, name, args), tool_result(shape, call_id, output, is_error=error)]


def debugging_session(shape: str = "anthropic") -> Messages:
    """Read, create, edit, delete and move files; a test run that fails then passes; ids and a URL."""
    return [
        {"role": "user", "content": "Fix ABC-123 in /repo (see https://docs.example.com/x)."},
        *call(shape, "r1", "read_file", {"path": "/repo/src/app/models.py"}, "import foo\nraise Error: data"),
        *call(shape, "w1", "write_file", {"path": "src/app/new_helper.py", "content": "x = 1\n"}, "written"),
        *call(shape, "e1", "edit_file", {"path": "/repo/src/app/models.py", "old": "foo", "new": "bar"}, "ok"),
        *call(shape, "t1", "bash", {"command": "cd /repo && pytest -x tests/test_models.py"}, FAILING),
        *call(shape, "t2", "bash", {"command": "cd /repo && pytest -x tests/test_models.py"}, "3 passed in 0.2s"),
        *call(shape, "m1", "bash", {"command": "cd /repo && git mv docs/old.md docs/guide.md && rm build.log"}, ""),
        *call(shape, "g1", "bash", {"command": "cd /repo && git commit -am 'Fix import'"}, "[main 1a2b3c4] Fix"),
        {"role": "user", "content": "Great, open PR #42."},
        {"role": "assistant", "content": "Opened PR #42."},
    ]


FAILING = "FAILED tests/test_models.py::test_import - ModuleNotFoundError: No module named 'foo'\nExit code: 1"


def render(messages: Messages, max_tokens: int = BIG) -> str:
    return layout.render(working_set_of(messages), max_tokens, COUNT)


# ------------------------------------------------------------------ rendering


def test_rendering_gives_states_one_spelling_outcomes_and_ids() -> None:
    text = render(debugging_session())
    lines = text.splitlines()

    assert lines[:2] == [HEADING, "Paths are relative to /repo. Commands run there are shown without `cd /repo &&`."]
    assert "- src/app/models.py — edited" in lines  # read, then edited: edited; one spelling for both forms
    assert "- src/app/new_helper.py — created" in lines
    assert "- docs/guide.md (from docs/old.md) — moved" in lines
    assert "- build.log — deleted" in lines
    assert "- tests/test_models.py — used" in lines
    assert text.index("Files changed:") < text.index("Files read or used:") < text.index("Commands (")
    assert (
        "- `pytest -x tests/test_models.py` — passed, 2 runs; an earlier failure is resolved: "
        "FAILED tests/test_models.py::test_import - ModuleNotFoundError: No module named 'foo'"
    ) in lines
    assert "Identifiers: ABC-123, commit 1a2b3c4, PR #42" in lines
    assert lines[-2:] == ["URLs:", "- https://docs.example.com/x"]
    assert "/repo/src" not in text


def test_a_command_failing_last_shows_its_failure_and_the_earlier_distinct_ones() -> None:
    messages = [
        *call("openai", "a", "bash", {"command": "make"}, "src/main.c:3: error: expected ';'\nExit code: 2"),
        *call("openai", "b", "bash", {"command": "make"}, "ld: undefined symbol main\nlink error: 1\nExit code: 2"),
    ]

    [line] = [line for line in render(messages).splitlines() if line.startswith("- `make`")]

    assert line == (
        "- `make` — failed (exit 2), 2 runs: link error: 1 (failed before with: src/main.c:3: error: expected ';')"
    )


def test_tool_failures_are_listed_with_their_resolution() -> None:
    messages = [
        *call("anthropic", "e1", "Edit", {"file_path": "/repo/a.py", "old_string": "x"}, "String not found", True),
        *call("anthropic", "e2", "Edit", {"file_path": "/repo/a.py", "old_string": "y"}, "updated"),
        *call("anthropic", "r", "Read", {"file_path": "/repo/gone.py"}, "File does not exist.", True),
    ]

    text = render(messages)

    assert "- Edit a.py: String not found — resolved: a later call succeeded" in text
    assert "- Read gone.py: File does not exist." in text
    assert "- a.py — edited" in text  # the failed edit changed nothing; the second one did
    assert "- gone.py — used" in text  # a failed read read nothing


def test_heredoc_body_is_neither_command_nor_files() -> None:
    script = "cat > reproduce.py << 'EOF'\nimport os  # see notes.md and src/secret.py\nprint('Error: x')\nEOF"
    text = render(call("openai", "h", "bash", {"command": script}, ""))

    assert "- `cat > reproduce.py << 'EOF' …` — ok" in text
    assert "- reproduce.py — created" in text
    assert "notes.md" not in text and "secret.py" not in text and "import os" not in text


@pytest.mark.parametrize(
    "first",
    [
        'python3 -c "print(1 << 20)"',  # quoted (issue 43 item 18)
        "python3 -c 'print(1 << 20)'",
        "echo $((1 << 20))",  # arithmetic
        "(( size = 1<<20 )) && echo $size",
        "echo a\\<<b",  # escaped
        "make  # then: cat <<EOF",  # in a comment
        "# remove the old module and rename the new one",  # a comment read to the end of the command
        "echo done # old << new",
    ],
)
def test_a_later_line_of_a_command_is_read_whatever_the_first_line_holds(first: str) -> None:
    # a ``<<`` that opens no heredoc took every later line for its body; a comment ran to the end of the command
    script = f"{first}\ngit rm old_module.py\ngit mv new_module.py module.py"
    text = render(call("openai", "m", "bash", {"command": script}, ""))

    assert "- old_module.py — deleted" in text
    assert "- module.py (from new_module.py) — moved" in text
    assert "git mv new_module.py module.py` — ok" in text  # the command's line keeps its later lines


def test_a_heredoc_after_a_quoted_shift_still_feeds_its_body() -> None:
    script = "python3 -c 'print(1 << 2)' && cat > notes.md <<EOF\nsrc/secret.py\nEOF\ngit rm old.py"
    text = render(call("openai", "h", "bash", {"command": script}, ""))

    assert "- notes.md — created" in text and "- old.py — deleted" in text
    assert "secret.py" not in text


def test_lines_read_from_files_are_not_errors() -> None:
    source = "Traceback (most recent call last):\nValueError: Error: bad\nFAILED tests/x.py::t\n"
    messages = [
        *call("openai", "r", "read_file", {"path": "src/checks.py"}, source),
        *call("openai", "c", "bash", {"command": "cat src/checks.py | grep -n Error"}, source),
        *call("openai", "g", "grep", {"pattern": "Error", "path": "src"}, "src/checks.py:2:ValueError: Error: bad"),
    ]

    text = render(messages)

    assert "failed" not in text and "Error" not in text.replace("grep -n Error", "")
    assert "- src/checks.py — read" in text


@pytest.mark.parametrize("shape", CALL_SHAPES)
def test_every_tool_call_shape_gives_the_same_working_set(shape: str) -> None:
    assert render(debugging_session(shape)) == render(debugging_session("anthropic"))


# ------------------------------------------------------------------ paths


@pytest.mark.parametrize(
    ("spellings", "root", "expected"),
    [
        (["/repo/lib/a.ex", "lib/a.ex", "./lib/a.ex", "/repo/lib/../lib/a.ex"], "/repo", "lib/a.ex"),
        (["/elsewhere/b.py"], "/repo", "/elsewhere/b.py"),
        (["~/notes.md"], "/repo", "~/notes.md"),
    ],
)
def test_one_spelling_per_file(spellings: list[str], root: str, expected: str) -> None:
    assert {canonical(s, root) for s in spellings} == {expected}


def test_absolute_and_relative_spellings_count_once_and_a_write_to_a_known_file_is_an_edit() -> None:
    messages = [
        *call("anthropic", "r", "Read", {"file_path": "/home/u/proj/lib/a.ex"}, "defmodule A"),
        *call("anthropic", "t", "Bash", {"command": "mix test test/a_test.exs lib/a.ex"}, "1 test, 0 failures"),
        *call("anthropic", "w", "Write", {"file_path": "lib/a.ex", "content": "defmodule A do end"}, "ok"),
        *call("anthropic", "s", "Read", {"file_path": "/home/u/proj/test/a_test.exs"}, "defmodule ATest"),
    ]

    state = working_set_of(messages)

    assert state.root() == "/home/u/proj"
    assert [(e.path, e.state) for e in state.entries()] == [("lib/a.ex", "edited"), ("test/a_test.exs", "read")]


def test_the_folder_commands_run_in_is_the_root() -> None:
    messages = [
        *call("openai", "a", "bash", {"command": "cd /testbed && sed -n '1,20p' src/x.py"}, "x"),
        *call(
            "openai", "b", "str_replace_based_edit_tool", {"command": "str_replace", "path": "/testbed/src/x.py"}, "ok"
        ),
        *call("openai", "c", "bash", {"command": "cat /tmp/repro.py"}, "y"),
    ]

    state = working_set_of(messages)

    assert state.root() == "/testbed"
    assert [(e.path, e.state) for e in state.entries()] == [("src/x.py", "edited"), ("/tmp/repro.py", "read")]


# ------------------------------------------------------------------ room: folding before dropping


def big_session(read_files: int = 200, edited: int = 6) -> Messages:
    """``read_files`` reads across 10 folders, then ``edited`` edits in one folder, and a few commands."""
    messages: Messages = []
    for i in range(read_files):
        path = f"/repo/lib/spotter/part_{i % 10}/module_{i:03d}.ex"
        messages += call("anthropic", f"r{i}", "Read", {"file_path": path}, "defmodule X")
    for i in range(edited):
        path = f"/repo/lib/spotter/services/service_{i}.ex"
        messages += call("anthropic", f"e{i}", "Edit", {"file_path": path, "old_string": "a"}, "updated")
    for i in range(30):
        messages += call("anthropic", f"c{i}", "Bash", {"command": f"cd /repo && mix test --seed {i}"}, "done")
    return messages


def files_named(text: str, paths: list[str]) -> int:
    return len(named_files(text, paths))


def counted(text: str, noun: str) -> int:
    return sum(int(n) for n in re.findall(rf"\+(\d+) more {noun} files? in", text))


def test_a_200_file_session_folds_folders_before_it_drops_a_file() -> None:
    state = working_set_of(big_session())
    paths = [e.path for e in state.entries()]
    full = layout.render(state, BIG, COUNT)
    folded = layout.render(state, COUNT(full) * 3 // 4, COUNT)

    assert len(paths) == 206
    assert "- lib/spotter/part_0/module_000.ex — read" in full
    assert COUNT(folded) <= COUNT(full) * 3 // 4
    assert "- lib/spotter/part_0/ — read: module_000.ex, module_010.ex, module_020.ex" in folded
    assert len(named_files(folded, paths)) == 206  # folded, nothing dropped
    assert "more read or used" not in folded and "+30 earlier commands" not in folded


def test_the_ladder_folds_then_drops_the_least_useful_first_and_counts_everything() -> None:
    state = working_set_of(big_session(read_files=200, edited=12))
    paths = [e.path for e in state.entries()]
    reads, changed = [p for p in paths if "/part_" in p], [p for p in paths if "/services/" in p]
    full = COUNT(layout.render(state, BIG, COUNT))
    seen, last = set(), ""
    for max_tokens in range(full, 0, -max(full // 80, 1)):
        text = layout.render(state, max_tokens, COUNT)
        if not text:
            continue
        last = text
        assert COUNT(text) <= max_tokens
        unfolded = re.search(r"^- lib/spotter/\S+\.ex — (read|edited)$", text, re.MULTILINE)
        read_lost = re.search(r"read or used: .*\+\d+ more|more read or used files", text)
        changed_lost = "changed (12 edited)" in text or "more changed files" in text
        commands_left = len(re.findall(r"^- `mix test", text, re.MULTILINE))
        if read_lost:
            assert not unfolded and commands_left == 0  # every folder folded, every command dropped first
            seen.add("read lost")
        if changed_lost:
            assert "lib/spotter/part_" not in text  # the read folders went before any changed file
            seen.add("changed lost")
        trimmed = sum(int(n) for n in re.findall(r"read or used: [^\n]*\+(\d+) more", text))
        assert len(named_files(text, reads)) + trimmed + counted(text, "read or used") == len(reads)
        trimmed = sum(int(n) for n in re.findall(r"changed \(12 edited\): [^\n]*\+(\d+) more", text))
        assert len(named_files(text, changed)) + trimmed + counted(text, "changed") == len(changed)
        dropped = re.search(r"\+(\d+) earlier commands?", text)
        assert commands_left + (int(dropped.group(1)) if dropped else 0) == 30
    assert seen == {"read lost", "changed lost"}
    assert "- +12 more changed files in 1 folder" in last  # at the bottom only counts are left
    assert layout.render(state, 3, COUNT) == ""  # not even the counts fit


def test_any_budget_is_respected() -> None:
    state = working_set_of(big_session(read_files=60, edited=8) + debugging_session())
    for max_tokens in range(0, 1200, 37):
        assert COUNT(layout.render(state, max_tokens, COUNT)) <= max_tokens


# ------------------------------------------------------------------ incremental, resume, cost


def history_of(messages: Messages) -> History:
    history = History(COUNTER, "fingerprint")
    for message in messages:
        history.append(message)
    return history


def long_session() -> Messages:
    messages = mixed_history(30, size=2)
    for turn in range(10):
        messages += debugging_session(CALL_SHAPES[turn % len(CALL_SHAPES)])
    return messages


def fresh_render(messages: list[dict[str, Any]], end: int, room: int, count: Any) -> str:
    """The working set of ``messages`` up to group ``end`` folded from scratch (an index holds its history weakly:
    the history must outlive the render)."""
    history = history_of(messages)
    return WorkingSetIndex(history).render(end, room, count)


def test_incremental_folding_equals_folding_from_scratch() -> None:
    messages = long_session()
    history = history_of(messages)
    index = index_of(history)
    ends = [5, 40, 41, 90, len(history.groups) - 1]
    incremental = [index.render(end, 600, COUNT) for end in ends]

    assert incremental == [fresh_render(messages, end, 600, COUNT) for end in ends]
    assert index.render(40, 600, COUNT) == incremental[1]  # a nearer end after a further one
    whole = history_of(messages)
    assert index_of(whole).render(len(whole.groups), BIG, COUNT) == render(messages)  # the open group too


def test_a_nearer_end_folds_from_the_state_kept_there_not_from_the_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """A request planning on the summary in force while the next one is written (it folded further) renders the
    nearer end again: from the state kept there, not by folding the whole history (issue 48), and the same text."""
    messages = long_session()
    history = history_of(messages)
    closed = len(history.groups) - 1
    index = index_of(history)
    folds: list[int] = []
    real = working_set_index.WorkingSet.add

    def counting(self: Any, facts: Any) -> None:
        folds.append(1)
        real(self, facts)

    monkeypatch.setattr(working_set_index.WorkingSet, "add", counting)
    in_force = index.render(40, 600, COUNT)
    index.render(closed, 600, COUNT)  # the summary under way folds further
    folds.clear()
    first = index.render(40, 500, COUNT)
    assert len(folds) == 40  # the first nearer ask folds from the start, once
    folds.clear()
    again = [index.render(40, 600, COUNT), index.render(40, 300, COUNT), index.render(closed, 300, COUNT)]

    assert folds == []  # both ends served by the states kept there
    assert first == fresh_render(messages, 40, 500, COUNT)
    ends = ((40, 600), (40, 300), (closed, 300))
    fresh = [fresh_render(messages, end, room, COUNT) for end, room in ends]
    assert again == fresh and again[0] == in_force
    folds.clear()
    index.render(45, 600, COUNT)
    assert len(folds) == 5  # a nearer end past a kept one folds only the groups between


def test_each_group_is_extracted_once_across_many_renders(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = working_set_index.extract

    def counting(messages: Messages) -> Any:
        calls.append(1)
        return real(messages)

    monkeypatch.setattr(working_set_index, "extract", counting)
    history = history_of(long_session())
    closed = len(history.groups) - 1
    index = index_of(history)
    for end in [*range(0, closed + 1, 7), closed, 12, 3, closed]:
        for max_tokens in (200, 800):
            index.render(end, max_tokens, COUNT)

    assert len(calls) == closed  # every closed group once, however often and in whatever order it is rendered
    more = tool_call("openai", "z", "bash", {"command": "make"})
    history.append(more)
    index.render(closed + 1, 800, COUNT)
    assert len(calls) == closed + 1  # a further end extracts only the newly closed group


def test_the_newest_group_is_read_afresh_until_it_closes() -> None:
    history = history_of(
        [
            *call("openai", "a", "bash", {"command": "make"}, "ok"),
            tool_call("openai", "b", "bash", {"command": "make test"}),
        ]
    )
    before = index_of(history).render(2, BIG, COUNT)
    history.append(tool_result("openai", "b", "FAILED test_x\nExit code: 1"))
    after = index_of(history).render(2, BIG, COUNT)

    assert "`make test` — failed (exit 1)" in after and before != after


async def test_a_resumed_session_renders_the_identical_summary_message() -> None:
    config = {"max_tokens": 6_000, "summarizer": "extractive"}
    store, messages = MemoryStore(), long_session()
    first = create_manager(config, store=store)
    await replay(first, messages, budget=6_000)
    resumed = create_manager(config, store=store)
    await resumed.set_messages(messages)

    summary = next(
        m for m in await first.get_messages_for_request(6_000) if str(m["content"]).startswith(SUMMARY_MARKER)
    )
    again = next(
        m for m in await resumed.get_messages_for_request(6_000) if str(m["content"]).startswith(SUMMARY_MARKER)
    )

    assert summary == again
    assert HEADING in summary["content"]


# ------------------------------------------------------------------ in the summary message


async def test_the_working_set_is_the_summary_messages_last_section_within_its_share() -> None:
    manager = create_manager({"max_tokens": 6_000, "compaction_strategy": "extractive", "ledger_share": 0.5})
    views = await replay(manager, long_session(), budget=6_000)
    summary = next(m for m in views[-1] if str(m["content"]).startswith(SUMMARY_MARKER))["content"]

    section = summary[summary.index(HEADING) :]
    assert not re.search(r"^### (?!Working set)", section, re.MULTILINE)  # nothing after it
    assert summary.count(HEADING) == 1  # one index, not one per segment
    narrative = sum(segment.tokens for segment in manager.state.segments)
    assert 0 < COUNT(section) <= max(int(6_000 * 0.25 * 0.5), int(6_000 * 0.25) - narrative)


def test_the_working_set_takes_what_the_segment_summaries_leave_of_the_summarys_room() -> None:
    def state(*sizes: int) -> CompactionState:
        return CompactionState(len(sizes), tuple(Segment(i, i + 1, "s", size) for i, size in enumerate(sizes)))

    assert working_set_room(state(100, 200), 600, 1_500) == 1_200  # short summaries lend their room
    assert working_set_room(state(700, 500), 600, 1_500) == 600  # long ones leave it its own share
    assert working_set_room(state(100), 0, 1_500) == 0  # ledger_share 0: no working set at all


async def test_a_terse_summarizer_leaves_the_working_set_room_for_more_commands() -> None:
    """Same session, same shares: a summarizer that writes one line lets the working set list more commands."""
    messages = mixed_history(4, size=2)
    for i in range(120):
        command = f"grep -n 'def handler_{i}' src/service_{i % 9}/module_{i}.py -B3 -A12"
        messages += call(CALL_SHAPES[i % len(CALL_SHAPES)], f"g{i}", "Bash", {"command": command}, f"{i}: ok " * 40)

    async def working_set(reply: str | None) -> tuple[str, int]:
        manager = create_manager({"max_tokens": 6_000, "summarizer": {"provider": "session"}})
        views = await replay(manager, messages, FakeProvider(reply=reply), budget=6_000)
        summary = next(m for m in views[-1] if str(m["content"]).startswith(SUMMARY_MARKER))["content"]
        assert COUNT(summary) <= manager.config.summary_room(6_000) + 100  # the preamble aside, it keeps to its room
        return summary[summary.index(HEADING) :], sum(segment.tokens for segment in manager.state.segments)

    terse, terse_tokens = await working_set("Grepped the handlers; see the working set.")
    wordy, wordy_tokens = await working_set(None)

    assert terse_tokens < wordy_tokens
    assert COUNT(terse) > Config().working_set_tokens(6_000)  # past its own share
    assert terse.count("\n- `grep") > wordy.count("\n- `grep")


async def test_ledger_share_zero_leaves_the_working_set_out() -> None:
    manager = create_manager({"max_tokens": 6_000, "compaction_strategy": "extractive", "ledger_share": 0})
    views = await replay(manager, long_session(), budget=6_000)

    assert manager.state.segments
    assert not any(HEADING in str(m["content"]) for view in views for m in view)


# ------------------------------------------------------------------ naming


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("Edited lib/spotter/services/a.ex and more.", True),
        ("- lib/spotter/services/ — edited: a.ex, b.ex", True),
        ("- lib/spotter/services/ — 7 read or used: b.ex, c.ex, +5 more", False),
        ("- lib/spotter/services/b.ex — edited (a.ex was fine)", False),  # the folder stands inside another path
        ("- lib/spotter/ — read: services/a.ex", False),  # only a file's own folder heads its name
        ("lib/spotter/services/\n- a.ex", False),  # on another line
        ("- other/lib/spotter/services/ — read: a.ex", False),
        ("- lib/spotter/services/ — read: a.exs", False),
    ],
)
def test_a_file_is_named_by_its_path_or_by_its_name_under_its_folder(text: str, named: bool) -> None:
    assert named_files(text, ["lib/spotter/services/a.ex"]) == (["lib/spotter/services/a.ex"] if named else [])


def test_kept_facts_read_back_as_they_were_extracted() -> None:
    history = history_of(long_session())
    extracted = [working_set.extract(history.shown(g)) for g in range(len(history.groups) - 1)]
    log = FactsLog()
    for facts in extracted:
        log.append(facts)

    assert len(log) == len(extracted) > 2 * log.BLOCK
    assert [log[g] for g in range(len(log))] == extracted
    for count in (0, 1, log.BLOCK, log.BLOCK + 5, len(extracted)):
        assert list(log.read(0, count)) == extracted[:count]
    n = len(extracted)
    block = log.BLOCK
    for start, end in ((3, 3), (5, block), (block - 1, block + 2), (block, n), (n - 2, n), (n - 3, n + 4)):
        assert list(log.read(start, end)) == extracted[start:end]


def test_a_run_of_groups_joins_their_facts_as_the_account_joins_them() -> None:
    history = history_of(long_session())
    groups = range(len(history.groups) - 1)
    extracted = [working_set.extract(history.shown(g)) for g in groups]
    run = FactsRun()
    assert run.empty
    for facts in extracted:
        run.add(facts)

    assert not run.empty and run.facts() == joined(extracted)
    assert run.facts().files and run.facts().outcomes  # the session touches files and runs commands


async def test_the_extractive_view_names_the_summarized_tool_call_paths_of_a_generated_session() -> None:
    generator = SessionGenerator(SMALL, seed=11)
    messages = [generator.system()]
    for _ in range(60):
        messages += generator.turn()
    manager = create_manager({"max_tokens": 20_000, "compaction_strategy": "extractive"})
    view = (await replay(manager, messages, budget=20_000))[-1]
    summarized = messages[: manager.history.groups[manager.state.boundary - 1].end]
    paths = []
    for message in summarized:
        for _, _, args in message_calls(message) if message.get("role") == "assistant" else []:
            args = json.loads(args) if isinstance(args, str) else args
            paths.append(args["path"] if "path" in args else args["command"].split()[1])  # cat <path> | grep ...
    summary = next(m["content"] for m in view if str(m["content"]).startswith(SUMMARY_MARKER))

    assert len(set(paths)) > 100
    assert len(named_files(summary, list(set(paths)))) >= 0.9 * len(set(paths))


# ------------------------------------------------------------------ definitions


def coding_session(files: int = 6, names: int = 10) -> Messages:
    """Modules written whole, one edited (a function renamed), one written and then deleted."""
    messages: Messages = [{"role": "user", "content": "Build the services."}]
    for f in range(files):
        code = "".join(f"def handler_{f}_{n}(event):\n    return event\n\n" for n in range(names))
        messages += call("anthropic", f"w{f}", "Write", {"file_path": f"/repo/app/mod_{f}.py", "content": code}, "ok")
    edit = {"file_path": "app/mod_0.py", "old_string": "def handler_0_0(event):", "new_string": "def on_event(e):"}
    messages += call("anthropic", "e", "Edit", edit, "ok")
    messages += call("anthropic", "t", "Write", {"file_path": "/repo/app/tmp.py", "content": "def scratch():\n"}, "ok")
    messages += call("anthropic", "r", "Bash", {"command": "cd /repo && rm app/tmp.py"}, "")
    return messages


def test_definitions_of_changed_files_newest_change_first_removed_ones_marked() -> None:
    text = render(coding_session())

    assert "Definitions written (newest first; · removed):" in text
    assert "- app/mod_0.py: on_event, handler_0_1, handler_0_2," in text and "· removed: handler_0_0" in text
    assert "- app/mod_1.py: handler_1_0, handler_1_1," in text and ", +2 more" in text  # 8 names, then a count
    assert "tmp.py:" not in text  # a deleted file's definitions are gone with it
    assert text.index("Definitions written") < text.index("Commands (")


def test_definitions_are_trimmed_after_read_folders_and_dropped_before_changed_files_and_counted() -> None:
    messages = coding_session(files=12) + big_session(read_files=40, edited=0)
    state = working_set_of(messages)
    full = COUNT(layout.render(state, BIG, COUNT))
    trimmed_seen = dropped_seen = False
    for max_tokens in range(full, 0, -max(full // 60, 1)):
        text = layout.render(state, max_tokens, COUNT)
        if not text:
            continue
        assert COUNT(text) <= max_tokens
        trimmed = re.search(r"^- app/mod_\d+\.py: \w+, \w+, \w+, \+\d+ more$", text, re.MULTILINE)
        dropped = re.search(r"^- \+(\d+) more changed files? with definitions$", text, re.MULTILINE)
        listed = len(re.findall(r"^- app/mod_\d+\.py: ", text, re.MULTILINE))
        if trimmed:
            trimmed_seen = True
            assert "lib/spotter/part_0/module_000.ex — read" not in text  # read folders folded first
        if dropped:
            dropped_seen = True
            assert listed + int(dropped.group(1)) == 12  # every file with definitions listed or counted
        if re.search(r"changed \(\d+ created\)|more changed files? in", text):
            assert listed == 0  # definitions go before any changed file does
    assert trimmed_seen and dropped_seen


def test_a_command_run_in_the_root_is_shown_without_its_cd_and_counts_with_the_same_command() -> None:
    messages = [
        *call("openai", "a", "bash", {"command": "cd /repo && pytest -x tests/test_models.py"}, FAILING),
        *call("openai", "b", "bash", {"command": "pytest -x tests/test_models.py"}, "3 passed in 0.2s"),
        *call("openai", "c", "bash", {"command": "cd /repo && cat src/app/models.py"}, "import foo"),
        *call("openai", "d", "bash", {"command": "cd /elsewhere && make"}, "done"),
    ]
    text = render(messages)

    assert "Paths are relative to /repo. Commands run there are shown without `cd /repo &&`." in text
    assert "- `pytest -x tests/test_models.py` — passed, 2 runs; an earlier failure is resolved: FAILED" in text
    assert "- `cat src/app/models.py` — ok" in text and "- `cd /elsewhere && make` — ok" in text
    assert "cd /repo &&" not in text.split("\n", 2)[2]


@settings(max_examples=80, deadline=None)
@given(
    text=st.text(alphabet="ab/.-_ x\n", max_size=300),
    needles=st.lists(st.text(alphabet="ab/.-_ x\n", min_size=0, max_size=24), max_size=120),
)
def test_searching_many_needles_answers_as_in_does(text: str, needles: list[str]) -> None:
    # past the first searches the text's grams answer: they must never say no where ``in`` says yes
    searched = Substrings(text)
    assert [n in searched for n in needles * 2] == [n in text for n in needles * 2]


_WORD_AFTER = re.compile(r"(?<![\w.~+@/-])NAME(?![\w/-]|\.\w)")


@settings(max_examples=150, deadline=None)
@given(
    line=st.text(alphabet="ab.é_/-~ 2", max_size=40),
    name=st.text(alphabet="ab.é_-2 ", max_size=4),
    start=st.integers(min_value=0, max_value=40),
)
def test_a_file_name_stands_as_a_word_exactly_where_the_pattern_says(line: str, name: str, start: int) -> None:
    pattern = re.compile(_WORD_AFTER.pattern.replace("NAME", re.escape(name)))
    assert _names_word(line, name, start) == bool(pattern.search(line, start))


def _without_comments(script: str) -> str:
    """The shell's rule, a character at a time: outside quotes, a ``#`` that starts a word runs to the end of its
    line."""
    out: list[str] = []
    quote = ""
    i = 0
    while i < len(script):
        c = script[i]
        if c == "\\" and quote != "'":
            out.append(script[i : i + 2])
            i += 2
            continue
        if quote:
            quote = "" if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c == "#" and (not out or out[-1][-1] in " \t\n;&|()"):
            while i < len(script) and script[i] != "\n":
                i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


@settings(max_examples=200, deadline=None)
@given(script=st.text(alphabet="ab./-_~*?=$ \t\n;&|<>()2'\"\\#", max_size=60))
def test_shell_lines_split_into_the_words_shlex_reads(script: str) -> None:
    # plain lines take a regular expression, the others the lexer: both must give the lexer's words, with comments
    # read as the shell reads them (to the end of their line; a ``#`` inside a word is part of it)
    lexer = shlex.shlex(_without_comments(script).replace("\n", " ; "), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        expected = list(lexer)
    except ValueError:
        return  # an unbalanced quote: the fallback's plain split is not the lexer's answer
    if "\\" not in script:  # (a backslash between path characters is read as a Windows separator first)
        assert [_word(token) for token in _shell_tokens(script)] == expected  # quoted operators read back


_BEADS_ID = re.compile(
    r"(?<![\w/.@:-])[a-z][a-z0-9]{1,15}-(?=[a-z0-9]*\d)(?=[a-z0-9]*[a-z])[a-z0-9]{3,8}(?:\.\d+)*(?![\w-]|\.\w)"
)
"""A beads id as one pattern: what ``_short_ids`` finds from the hyphen on, and must find the same."""


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet="abz019-./@:_ Aé\n", max_size=80))
def test_beads_ids_are_found_from_their_hyphen_as_the_whole_pattern_finds_them(text: str) -> None:
    assert _short_ids(text) == [(m.start(), m.group(0)) for m in _BEADS_ID.finditer(text)]


def test_a_beads_id_head_is_the_whole_run_before_its_hyphen() -> None:
    text = "see spotter-a0y, bd-a3f8e9.1 and x/ab-c1d9 but not Xab-c1d9 or abcdefghijklmnopq-c1d9"
    assert [found for _, found in _short_ids(text)] == ["spotter-a0y", "bd-a3f8e9.1"]


async def test_a_render_counted_off_the_loop_is_the_render() -> None:
    history = history_of(long_session())
    count = history.counter.count_text
    for end in (len(history.groups) // 3, len(history.groups) - 1):
        for room in (0, 40, 300, 2_000):
            expected = layout.render(working_set_index.WorkingSetIndex(history).state(end), room, count)
            index = working_set_index.WorkingSetIndex(history)
            assert await index.render_off_loop(end, room, count) == expected
            assert index.render(end, room, count) == expected  # kept, as a render keeps it
            assert await index.tokens_off_loop(end, room, count) == (count(expected) if expected else 0)


async def test_a_fold_further_while_a_worker_lays_the_state_out_waits_for_the_layout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``render_off_loop`` lays out the very state kept at the furthest end in a worker thread; a fold further on
    the loop (another task's request) folds into that same object, so it must wait until the layout is done: the
    text is that of the groups asked for, and the fold's state that of a fold from scratch."""
    history = history_of(long_session())
    count = history.counter.count_text
    early, late, room = len(history.groups) // 3, len(history.groups) - 1, 2_000
    expected = layout.render(working_set_index.WorkingSetIndex(history).state(early), room, count)
    expected_late = layout.render(working_set_index.WorkingSetIndex(history).state(late), room, count)
    assert expected != expected_late  # the later groups change the text: a layout that saw them would differ
    inside, release = threading.Event(), threading.Event()
    estimated_text = working_set_index.estimated_text

    def parked(state: Any, max_tokens: int, count_tokens: Any) -> str:
        inside.set()
        assert release.wait(10)
        return estimated_text(state, max_tokens, count_tokens)

    monkeypatch.setattr(working_set_index, "estimated_text", parked)
    index = working_set_index.WorkingSetIndex(history)
    rendered = asyncio.ensure_future(index.render_off_loop(early, room, count))
    assert await asyncio.to_thread(inside.wait, 10)
    folded = asyncio.ensure_future(asyncio.to_thread(index.state, late))  # a thread: on the loop it would wait there
    done, _ = await asyncio.wait({folded}, timeout=0.2)  # time enough for a fold that did not wait
    assert not done
    release.set()
    assert await rendered == expected
    assert layout.render(await folded, room, count) == expected_late


async def test_a_state_folded_further_before_the_worker_lays_it_out_is_rendered_again_for_its_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Between handing the furthest state to a worker and the worker taking the lock, another task may fold it
    further: the worker must not lay out what no longer stands for the groups asked for."""
    history = history_of(long_session())
    count = history.counter.count_text
    early, late, room = len(history.groups) // 3, len(history.groups) - 1, 2_000
    expected = layout.render(working_set_index.WorkingSetIndex(history).state(early), room, count)
    index = working_set_index.WorkingSetIndex(history)
    to_thread = asyncio.to_thread

    async def after_another_fold(function: Any, *args: Any) -> Any:
        index.state(late)  # another task's fold, run before the worker starts
        return await to_thread(function, *args)

    monkeypatch.setattr(working_set_index.asyncio, "to_thread", after_another_fold)
    assert await index.render_off_loop(early, room, count) == expected


def test_a_working_set_folded_again_to_a_nearer_end_measures_no_line_already_measured() -> None:
    """A nearer end's working set is a new fold with shelves of its own; its lines are mostly the furthest one's,
    and their token counts are shared by counter (issue 48: measuring them all afresh held the loop for up to
    0.8 s at 50,000 messages), so laying it out counts only lines no render counted before."""
    history = history_of(long_session())
    closed = len(history.groups) - 1
    index = index_of(history)
    counted: list[str] = []

    def count(text: str) -> int:
        counted.append(text)
        return COUNT(text)

    index.render(closed, 2_000, count)
    further = set(counted)
    counted.clear()
    nearer = index.render(closed - 2, 2_000, count)
    lines = [line for line in counted if line.endswith("\n")]
    assert not further.intersection(lines), "a line the furthest render measured was measured again"
    assert nearer == fresh_render(long_session(), closed - 2, 2_000, COUNT)


def _named_files_one_folder_at_a_time(text: str, paths: list[str]) -> list[str]:
    """``named_files`` as it read before its headings were indexed: each folder's lines searched on their own."""
    import posixpath

    from amplifier_module_context_summarize.working_set.fold import _PATH_CHAR, _names_word

    lowered = text.lower()
    found = []
    for path in paths:
        spelled = path.lower()
        if spelled in lowered:
            found.append(path)
            continue
        folder, name = posixpath.split(spelled)
        if not folder:
            continue
        stem = folder.rstrip("/")
        heading = re.compile(rf"(?<!{_PATH_CHAR}){re.escape(stem)}/(?!{_PATH_CHAR})")
        rows = [(line, m.end()) for line in lowered.splitlines() if stem in line and (m := heading.search(line))]
        if any(_names_word(line, name, end) for line, end in rows):
            found.append(path)
    return found


_PATH_PIECES = st.sampled_from(["lib", "a", "x.ex", "b.py", "Ü", "é", "src/", "/", "-", ".", "~"])
_TEXT_PIECES = st.sampled_from(["lib/", "a/", "src/", "/", " ", "\n", "x.ex", "b.py", ", ", "—", "Ü", "(", ")", "lib"])


@settings(max_examples=300, deadline=None)
@example("lib/x.ex, b.py", ["lib/b.py"])  # a folder inside a longer path is no heading
@example("- src/lib/ — edited: x.ex, b.py\n- lib/ — read: b.py", ["lib/b.py", "lib/x.ex", "src/lib/x.ex"])
@example("ü/ a.py lib/ (b.py) / x.ex", ["Ü/a.py", "lib/b.py", "/x.ex", "/lib/b.py"])
@given(
    st.lists(_TEXT_PIECES, max_size=40).map("".join),
    st.lists(st.lists(_PATH_PIECES, min_size=1, max_size=5).map("".join), max_size=12),
)
def test_named_files_finds_a_folder_heading_as_a_search_of_that_folder_does(text, paths):
    """``named_files`` reads every folder heading of the text in one pass (a span's thousands of folders each scanned
    every line): the paths it finds are the ones each folder's own search finds, spaces and odd letters included."""
    extra = [p.replace("/", " /", 1) for p in paths]  # a folder with a space: searched on its own, as before
    assert named_files(text, paths + extra) == _named_files_one_folder_at_a_time(text, paths + extra)


_FOLDERS = st.sampled_from(["/repo", "/repo/src", "/other", "src", "./src", "lib", "~", "../up", "/"])
_ACTIONS = st.sampled_from(["read", "edit", "write", "use", "delete", "move"])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(_ACTIONS, _FOLDERS, st.sampled_from(["a.py", "b.py", "x/c.ex"]), _FOLDERS), max_size=30),
    st.lists(_FOLDERS, max_size=4),
)
def test_the_root_read_from_files_and_folders_alone_is_the_folded_working_sets(actions, workdirs):
    """The artifact account reads only the root of its span's working set (``add_root_evidence``): the same as a whole
    fold."""
    from amplifier_module_context_summarize.working_set.fold import WorkingSet
    from amplifier_module_context_summarize.working_set.records import MOVE, Facts, FileAction

    files = [
        FileAction(MOVE, f"{folder}/{name}", f"{target}/{name}")
        if action == "move"
        else FileAction(action, f"{folder}/{name}")
        for action, folder, name, target in actions
    ]
    folded = WorkingSet()
    folded.add(Facts(tuple(files), (), (), (), tuple(workdirs), ()))
    for spelled in (files, [tuple(f) for f in files]):  # plain tuples read the same
        evidence = WorkingSet()
        evidence.add_root_evidence(spelled, workdirs)
        assert evidence.root() == folded.root()
