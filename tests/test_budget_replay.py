"""Every view of the bundled Claude Code sessions fits the budget by a count that is not the module's own.

The module plans a view on its own per-message counts. If one message shape is counted below what it costs on
the wire, a view planned to within a hundred tokens of the budget goes over by that much (issue 38: Anthropic
``tool_use`` arguments were counted as compact JSON, ~6 tokens a call under the spaced JSON providers send).
So the counter is checked against an independent one on every message of the corpus, and the bundled Claude
Code sessions are replayed as an orchestrator drives them, each view counted independently.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from amplifier_module_context_summarize import create_manager
from amplifier_module_context_summarize.core.tokens import MESSAGE_OVERHEAD, TokenCounter, text_counter
from amplifier_module_context_summarize.testing.providers import FakeProvider
from amplifier_module_context_summarize.testing.replay import replay_steps

CORPUS = Path(__file__).parents[1] / "amplifier_module_context_summarize" / "evaluation" / "corpus"
CLAUDE_CODE = sorted(CORPUS.glob("cc-*.jsonl"))
BUDGET = 20_000
QUICK = "cc-spotter-gqc"
"""The session kept in the quick loop; the others run in the full suite."""

count_text = text_counter()


def _arguments(args: Any) -> str:
    return args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)


def _block_texts(block: Any) -> list[str]:
    if isinstance(block, str):
        return [block]
    if not isinstance(block, dict):
        return [json.dumps(block, ensure_ascii=False, default=repr)]
    kind = block.get("type")
    if kind == "text":
        return [str(block.get("text", ""))]
    if kind in ("tool_use", "tool_call"):
        return [_arguments(block.get("input", block.get("arguments", {})))]
    if kind == "tool_result":
        return _content_texts(block.get("content", block.get("output")))
    return []  # thinking and other blocks: left out, so this count is a floor of the wire's


def _content_texts(content: Any) -> list[str]:
    if content is None:
        return []
    if isinstance(content, list):
        return [text for block in content for text in _block_texts(block)]
    return _block_texts(content)


def wire_tokens(message: dict[str, Any]) -> int:
    """cl100k of a message's text, tool-call arguments (the JSON a provider sends) and results, plus framing."""
    texts = _content_texts(message.get("content"))
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        texts.append(_arguments(function.get("arguments", call.get("arguments", {}))))
    return MESSAGE_OVERHEAD + sum(count_text(text) for text in texts)


def _messages(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.mark.parametrize("path", sorted(CORPUS.glob("*.jsonl")), ids=lambda p: p.stem)
def test_no_message_is_counted_below_its_wire_form(path: Path) -> None:
    counter = TokenCounter()
    under = [
        (i, counter.count_message(m), wire_tokens(m))
        for i, m in enumerate(_messages(path))
        if counter.count_message(m) < wire_tokens(m)
    ]
    assert under == [], f"messages counted below their wire form (index, ours, wire): {under[:5]}"


def test_a_block_call_costs_what_its_tool_calls_twin_costs() -> None:
    args = {"file_path": "src/app/main.py", "old_string": "x = 1", "new_string": "x = 2", "replace_all": False}
    block = {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Edit", "input": args}]}
    listed = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "Edit", "arguments": json.dumps(args)}}],
    }
    counter = TokenCounter()
    assert counter.count_message(block) == counter.count_message(listed)


def _session_params() -> list[Any]:
    return [
        pytest.param(path, id=path.stem, marks=() if path.stem == QUICK else pytest.mark.slow) for path in CLAUDE_CODE
    ]


@pytest.mark.parametrize("path", _session_params())
def test_replayed_claude_code_views_fit_by_an_independent_count(path: Path) -> None:
    async def replay() -> list[tuple[int, int]]:
        manager = create_manager({"compaction_strategy": "summarize"})
        provider = FakeProvider()  # the session provider: answers every summary
        over, views = [], 0
        async for step in replay_steps(manager, _messages(path), provider, BUDGET):
            if step.due:
                view = await step.request()
                views += 1
                tokens = sum(wire_tokens(m) for m in view)
                if tokens > BUDGET:
                    over.append((step.index, tokens))
        assert views > 100 and provider.requests, "the replay compacted with LLM summaries"
        return over

    assert asyncio.run(replay()) == []
