"""Amplifier's orchestrator tool-call shape is first-class: grouped, counted, rendered and hashed like OpenAI's.

loop-basic and loop-streaming store ``"tool_calls": [{"id", "tool", "arguments"}]`` (a dict, sometimes a JSON
string); loop-streaming also keeps the model-dumped content blocks, with the same call as a ``tool_call`` block,
and a copy of the first thinking block under ``thinking_block``.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from amplifier_module_context_summarize import create_manager
from amplifier_module_context_summarize.core.clip import clip_tool_outputs
from amplifier_module_context_summarize.core.invariants import ToolPairing, check_view
from amplifier_module_context_summarize.core.messages import (
    call_ids,
    canonical_json,
    content_hash,
    group_messages,
    message_text,
    sanitize,
    tool_call_parts,
    validate_message,
)
from amplifier_module_context_summarize.core.tokens import TokenCounter
from amplifier_module_context_summarize.summarizer.extractive import extractive_summary
from amplifier_module_context_summarize.summarizer.prompts import render_transcript
from amplifier_module_context_summarize.testing import FakeProvider, builders, replay
from amplifier_module_context_summarize.working_set.facts import extract
from amplifier_module_context_summarize.working_set.fold import working_set_of
from amplifier_module_context_summarize.working_set.layout import render

ARGS = {"path": "src/app.py", "offset": 120, "limit": 200, "pattern": "def handle_request(self, request: Request)"}
THINKING = {
    "type": "thinking",
    "thinking": "The handler is in src/app.py; read it before changing the signature. " * 4,
    "signature": "EqQBCkYIBxgCKkDx" * 24,
    "visibility": None,
    "content": None,
}

counter = TokenCounter()
PAIRING = (ToolPairing(),)
"""Fragments of a history are checked for tool pairing only (they need not open with a user message)."""


def openai_call(call_id: str = "call_1", args: dict[str, Any] = ARGS) -> dict[str, Any]:
    return builders.tool_call("openai", call_id, "read_file", args)


def amplifier_call(
    call_id: str = "call_1", args: dict[str, Any] = ARGS, as_json: bool = False, text: str = ""
) -> dict[str, Any]:
    """A tool call as loop-basic stores it."""
    return builders.tool_call("orchestrator_json" if as_json else "orchestrator", call_id, "read_file", args, text)


def streaming_call(*call_ids_: str, text: str = "Reading the handler.") -> dict[str, Any]:
    """A tool call as loop-streaming stores it: every call both as a content block and in ``tool_calls``."""
    blocks = [{"type": "tool_call", "id": c, "name": "read_file", "input": ARGS, "visibility": None} for c in call_ids_]
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": text, "visibility": None}, dict(THINKING), *blocks],
        "tool_calls": [{"id": c, "tool": "read_file", "arguments": ARGS} for c in call_ids_],
        "thinking_block": dict(THINKING),
        "metadata": {"provider": "anthropic", "stop_reason": "tool_use"},
    }


def tool_result(
    call_id: str = "call_1", content: str = "def handle_request(self, request):\n    ..."
) -> dict[str, Any]:
    return builders.tool_result("orchestrator", call_id, content, name="read_file")


def turn(call: dict[str, Any], *results: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "Look at the request handler."},
        call,
        *results,
        {"role": "assistant", "content": "Done."},
    ]


SHAPES = {
    "dict": lambda: amplifier_call(),
    "json": lambda: amplifier_call(as_json=True),
    "streaming": lambda: streaming_call("call_1"),
}


@pytest.mark.parametrize("message", [openai_call(), amplifier_call(), amplifier_call(as_json=True)])
def test_tool_call_parts_reads_each_shape(message: dict[str, Any]) -> None:
    call_id, name, args = tool_call_parts(message["tool_calls"][0])
    assert (call_id, name) == ("call_1", "read_file")
    assert (json.loads(args) if isinstance(args, str) else args) == ARGS
    assert tool_call_parts({"type": "tool_call", "id": "b", "name": "grep", "input": {"q": 1}}) == (
        "b",
        "grep",
        {"q": 1},
    )


@pytest.mark.parametrize("as_json", [False, True])
def test_amplifier_call_costs_about_what_the_openai_call_costs(as_json: bool) -> None:
    openai = counter.count_message(openai_call())
    amplifier = counter.count_message(amplifier_call(as_json=as_json))
    assert openai > 30
    assert abs(amplifier - openai) <= 0.15 * openai, (amplifier, openai)


def test_streaming_call_counts_its_call_and_thinking_once() -> None:
    message = streaming_call("call_1")
    single = {k: v for k, v in message.items() if k != "thinking_block"}
    only_list = {**single, "content": [message["content"][0], THINKING]}
    assert counter.count_message(message) == counter.count_message(single), "thinking_block repeats a content block"
    assert counter.count_message(message) == counter.count_message(only_list), "the tool_call block repeats tool_calls"


def test_thinking_block_outside_content_is_counted() -> None:
    bare = amplifier_call(text="Reading the handler.")
    with_thinking = {**bare, "thinking_block": dict(THINKING)}
    added = counter.count_message(with_thinking) - counter.count_message(bare)
    assert added >= counter.count_text(THINKING["thinking"]) + len(THINKING["signature"]) // 8
    assert THINKING["thinking"].strip() in message_text(with_thinking)


@pytest.mark.parametrize("shape", SHAPES)
def test_transcript_and_text_show_tool_name_and_arguments(shape: str) -> None:
    message = SHAPES[shape]()
    transcript = render_transcript([message, tool_result()])
    assert transcript.count("[tool call call_1] read_file(") == 1, transcript
    assert '"path": "src/app.py"' in transcript or '"path":"src/app.py"' in transcript
    assert "def handle_request(self, request: Request)" in transcript
    assert "TOOL RESULT call_1]\ndef handle_request" in transcript
    text = message_text(message)
    assert text.count("read_file(") == 1 and "src/app.py" in text


@pytest.mark.parametrize("shape", SHAPES)
def test_call_and_its_tool_result_form_one_group(shape: str) -> None:
    messages = turn(SHAPES[shape](), tool_result())
    for message in messages:
        validate_message(message)
    assert call_ids(messages[1]) == ["call_1"]
    assert [(g.start, g.end) for g in group_messages(messages)] == [(0, 1), (1, 3), (3, 4)]
    assert not check_view(messages, rules=PAIRING)
    assert sanitize(messages[1:3]) == messages[1:3]


def test_parallel_streaming_calls_are_each_one_call() -> None:
    messages = turn(streaming_call("a", "b"), tool_result("b"), tool_result("a"))
    assert call_ids(messages[1]) == ["a", "b"]
    assert [(g.start, g.end) for g in group_messages(messages)] == [(0, 1), (1, 4), (4, 5)]
    assert not check_view(messages, rules=PAIRING)
    group = messages[1:4]
    assert sanitize(group) is group, "an answered group is returned untouched"


@pytest.mark.parametrize("shape", SHAPES)
def test_unanswered_call_and_orphan_result_are_removed_from_the_view(shape: str) -> None:
    call = SHAPES[shape]()
    if shape != "streaming":
        call["content"] = "Reading the handler."
    messages = [tool_result("ghost"), {"role": "user", "content": "go"}, call, {"role": "user", "content": "stop"}]
    original = copy.deepcopy(messages)
    assert len(check_view(messages, rules=PAIRING)) == 2

    view = [m for g in group_messages(messages) for m in sanitize(messages[g.start : g.end])]

    assert not check_view(view, rules=PAIRING)
    assert [m["role"] for m in view] == ["user", "assistant", "user"]
    assert "tool_calls" not in view[1]
    assert not [b for b in view[1]["content"] if isinstance(b, dict) and b.get("type") == "tool_call"]
    assert "Reading the handler." in message_text(view[1])
    if shape == "streaming":
        assert view[1]["thinking_block"] == THINKING
    assert messages == original, "sanitizing must not touch the input"


def test_streaming_call_answered_in_part_keeps_only_the_answered_call_in_both_places() -> None:
    group = [streaming_call("a", "b"), tool_result("a")]
    [call, result] = sanitize(group)
    assert [c["id"] for c in call["tool_calls"]] == ["a"]
    assert [b["id"] for b in call["content"] if b["type"] == "tool_call"] == ["a"]
    assert call["thinking_block"] is group[0]["thinking_block"]
    assert result is group[1]
    assert not check_view([call, result], rules=PAIRING)


def test_canonical_hash_is_stable_and_sees_the_arguments() -> None:
    message = streaming_call("call_1")
    reordered = json.loads(json.dumps(dict(reversed(message.items()))))
    reordered["tool_calls"][0]["arguments"] = dict(reversed(ARGS.items()))
    assert canonical_json(message) == canonical_json(reordered)
    assert content_hash(canonical_json(message)) == content_hash(canonical_json(copy.deepcopy(message)))
    changed = copy.deepcopy(message)
    changed["tool_calls"][0]["arguments"]["path"] = "src/other.py"
    assert canonical_json(changed) != canonical_json(message)
    as_text = amplifier_call(as_json=True)
    assert canonical_json(as_text) != canonical_json(amplifier_call()), "a JSON string is not its dict"


@pytest.mark.parametrize("shape", SHAPES)
def test_working_set_names_the_path_the_extractive_summary_does_not_repeat_it(shape: str) -> None:
    messages = turn(SHAPES[shape](), tool_result())
    assert [f.path for f in extract(messages).files] == ["src/app.py"]
    assert "- src/app.py — read" in render(working_set_of(messages), 500, counter.count_text)
    summary = extractive_summary(messages, previous_summary=None, max_tokens=500, count_tokens=counter.count_text)
    assert "src/app.py" not in summary


def test_huge_tool_output_is_clipped_and_the_call_kept_whole() -> None:
    huge = "line of output\n" * 20_000
    messages = [streaming_call("call_1"), tool_result(content=huge)]
    clipped, changed = clip_tool_outputs(messages, 2_000, counter.count_messages)
    assert changed and clipped[0] is messages[0]
    assert len(clipped[1]["content"]) < len(huge) and "characters clipped" in clipped[1]["content"]
    assert clipped[1]["tool_call_id"] == "call_1" and clipped[1]["name"] == "read_file"


async def test_views_of_a_streaming_session_are_valid_and_keep_thinking_blocks_intact() -> None:
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    for i in range(40):
        history += turn(
            streaming_call(f"c{i}a", f"c{i}b", text=f"Step {i}."), tool_result(f"c{i}b"), tool_result(f"c{i}a")
        )
    manager = create_manager({"max_tokens": 6_000})
    views = await replay(manager, history, FakeProvider(), budget=6_000)

    assert await manager.get_messages() == history
    last = views[-1]
    assert len(last) < len(history), "the session was compacted"
    kept = [m for m in last if "thinking_block" in m]
    assert kept, "recent streaming turns stay verbatim"
    for message in kept:
        assert message in history, "a kept assistant turn is the stored message, thinking block and all"
        assert message["thinking_block"] == THINKING
