"""What masking reads to work out a history's masked forms: counted, not timed (speed is the benchmark's).

A cold resume masks every closed group of a long history on the first request; most groups hold nothing long,
so masking one must not look up where its messages are stored, nor name them by handle, nor copy them.
"""

from __future__ import annotations

from typing import Any

import pytest

from amplifier_module_context_summarize import create_manager
from amplifier_module_context_summarize.compaction.view import masking
from amplifier_module_context_summarize.compaction.view.masking import Masks, MaskSettings
from amplifier_module_context_summarize.core.history import History
from amplifier_module_context_summarize.core.tokens import TokenCounter
from amplifier_module_context_summarize.working_set import outcomes

LONG = "".join(f"collected item {i}: tests/test_m.py::test_{i} PASSED\n" for i in range(40))
FAILED = "Traceback (most recent call last):\n  File 'x.py', line 3\nValueError: bad\n" + LONG + "return code 1\n"


def session(turns: int) -> list[dict[str, Any]]:
    """Turns of one call each (OpenAI and Anthropic shapes alternating), every third output long, every fifth
    call with a long written file among its arguments."""
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    for t in range(turns):
        history.append({"role": "user", "content": f"Task {t}."})
        output = (FAILED if t % 2 else LONG) if t % 3 == 0 else f"ok {t}"
        args = {"path": f"f{t}.py", "content": LONG} if t % 5 == 0 else {"command": f"pytest -k {t}"}
        if t % 2:
            call = {"id": f"c{t}", "type": "function", "function": {"name": "bash", "arguments": args}}
            history.append({"role": "assistant", "content": f"Running {t}.", "tool_calls": [call]})
            history.append({"role": "tool", "tool_call_id": f"c{t}", "content": output})
        else:
            use = {"type": "tool_use", "id": f"c{t}", "name": "bash", "input": args}
            history.append({"role": "assistant", "content": [{"type": "text", "text": f"Running {t}."}, use]})
            result = {"type": "tool_result", "tool_use_id": f"c{t}", "content": output}
            history.append({"role": "user", "content": [result]})
        history.append({"role": "assistant", "content": f"Turn {t} done."})
    return history


def _history(messages: list[dict[str, Any]]) -> History:
    history = History(TokenCounter(), "fp")
    for message in messages:
        history.append(message)
    return history


def test_masking_looks_up_stored_places_only_for_what_it_replaces(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every group used to build a table of its messages' stored places (and every listed message one of its
    blocks') to mask it, though only a replaced output or clipped argument is named by a handle; a group shown
    as stored has each message at its own place."""
    history = _history(session(60))
    tables, handles = [0], [0]
    real_positions, real_blocks, real_handle = masking.StoredPositions, masking.StoredBlocks, masking.handle_for

    def positions(*args: Any) -> Any:
        tables[0] += 1
        return real_positions(*args)

    def blocks(*args: Any) -> Any:
        tables[0] += 1
        return real_blocks(*args)

    def handle(*args: Any) -> str:
        handles[0] += 1
        return real_handle(*args)

    monkeypatch.setattr(masking, "StoredPositions", positions)
    monkeypatch.setattr(masking, "StoredBlocks", blocks)
    monkeypatch.setattr(masking, "handle_for", handle)
    masks = Masks(history, MaskSettings(min_chars=600))
    closed = history.last_cuttable
    replaced = 0
    for g in range(closed):
        masked, changed = masks._masked(g, history.shown(g))
        replaced += sum(str(m).count("handle m") for m in masked) if changed else 0
    assert replaced > 20, "the session has long outputs and arguments to mask"
    assert handles[0] == replaced, "one handle per placeholder or clip, none for what stays"
    assert tables[0] <= replaced, f"{tables[0]} lookup tables for {closed} groups (old: one per group at least)"


def test_an_unchanged_message_and_block_stay_the_shown_objects() -> None:
    """Masking copies only what it replaces: a group with nothing long is the shown list itself, and in a changed
    one every message or block that stays equal stays the same object."""
    history = _history(session(30))
    masks = Masks(history, MaskSettings(min_chars=600))
    plain = changed_blocks = 0
    for g in range(history.last_cuttable):
        shown = history.shown(g)
        masked, changed = masks._masked(g, shown)
        if not changed:
            assert masked is shown
            plain += 1
            continue
        for a, b in zip(shown, masked, strict=True):
            assert a is b or a != b
            if a is not b and isinstance(a.get("content"), list):
                for x, y in zip(a["content"], b["content"], strict=True):
                    assert x is y or x != y
                    changed_blocks += x is not y
    assert plain and changed_blocks


def irregular_session() -> list[dict[str, Any]]:
    """Groups a view shows otherwise than stored: an orphan result, a call never answered, a system message
    between turns; long outputs around them."""
    history = session(12)
    history.insert(10, {"role": "tool", "tool_call_id": "nobody", "content": LONG})
    history.insert(20, {"role": "system", "content": "Hook: remember the tests."})
    dangling = {"id": "lost", "type": "function", "function": {"name": "bash", "arguments": {"command": "ls"}}}
    history.insert(27, {"role": "assistant", "content": None, "tool_calls": [dangling]})
    return history + session(6)[1:]


@pytest.mark.parametrize("preserve_system", [True, False])
def test_a_masked_span_is_its_groups_masked_one_after_another(preserve_system: bool) -> None:
    """``span`` reads runs of groups shown as stored in one slice each: the same messages as group by group,
    around sanitized groups, system messages and the open group."""
    manager = create_manager(
        {"max_tokens": 10**6, "mask_min_chars": 600, "mask_keep_recent": 0, "preserve_system": preserve_system}
    )
    history = manager.history
    for message in irregular_session():
        history.append(message)
    assert history.shown_as, "the session has groups a view shows sanitized"
    masks = Masks(history, manager.mask_settings)
    groups = len(history.groups)
    masks.tokens(0, history.last_cuttable)  # every closed group decided: plain or changed
    for start in range(groups):
        for end in range(start, groups + 1):
            one_by_one = [m for g in range(start, end) for m in masks.group(g)]
            assert masks.span(start, end) == one_by_one, (start, end)


@pytest.mark.parametrize(
    "text",
    [FAILED, LONG, "exit code 2\n" + LONG, "def f():\n    return 1\n", "Error: no such file\nreturn code 0", ""],
)
def test_looks_failed_reads_failure_lines_before_it_searches_for_exit_codes(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An exit code is searched for by a pattern tried at every character of any output saying "return" or
    "exit" (code does): an output whose lines already read as failed is not searched for one. Same answer."""
    expected = outcomes._nonzero_exit(text) or outcomes._reads_failed(text)
    searched = [0]
    real = outcomes._nonzero_exit

    def counting(t: str) -> bool:
        searched[0] += 1
        return real(t)

    monkeypatch.setattr(outcomes, "_nonzero_exit", counting)
    assert outcomes.looks_failed(text) is expected
    assert searched[0] == (0 if outcomes._reads_failed(text) else 1)
