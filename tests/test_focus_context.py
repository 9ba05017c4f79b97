"""The compaction's focus and the guidance a native compaction sends travel with each call, never through ambient
state. A focus set in a context variable and reset in a ``finally`` raised ``ValueError`` when the coroutine resumed
in another context (a task dropped with its closed loop and collected later, a callback from a hook registry's
thread), which replaced the focused summary with an exception and the ladder dropped whole groups; a guidance set
and never reset rode along into later requests."""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Coroutine, Generator
from typing import Any

import anthropic
import pytest
from amplifier_core.testing import EventRecorder

from amplifier_module_context_summarize import create_manager
from amplifier_module_context_summarize.backends.registry import build_backend
from amplifier_module_context_summarize.config import SummarizerConfig
from amplifier_module_context_summarize.core.messages import message_text
from amplifier_module_context_summarize.testing import mixed_history
from amplifier_module_context_summarize.testing.native_standins import AnthropicCompactionStandIn, http_client

BUDGET = 12_000
MODEL = "claude-sonnet-4-6"
KEYS = {"ANTHROPIC_API_KEY": "sk-ant-test-SECRET"}


class Hopping:
    """Awaits a coroutine stepping it in a fresh copy of the context at every resume: what a coroutine first
    stepped by one task and resumed by another, or by a callback on another thread, runs in."""

    def __init__(self, coro: Coroutine[Any, Any, Any]) -> None:
        self.coro = coro

    def __await__(self) -> Generator[Any, Any, Any]:
        sent: Any = None
        while True:
            try:
                waited = contextvars.copy_context().run(self.coro.send, sent)
            except StopIteration as done:
                return done.value
            sent = yield waited


def native_manager(stand_in: AnthropicCompactionStandIn, recorder: EventRecorder) -> Any:
    summarizer = {"provider": "native", "model": MODEL, "max_retries": 0}
    backend = build_backend(SummarizerConfig(**summarizer), http_client=http_client(stand_in, anthropic), environ=KEYS)
    config = {"max_tokens": BUDGET, "summarizer": summarizer, "background_compaction": False}
    return create_manager(config, hooks=recorder, backend=backend)


def posts(recorder: EventRecorder) -> list[dict[str, Any]]:
    return [data for _, data in recorder.get_events("context:post_compact")]


async def test_a_focused_compaction_resumed_in_another_context_keeps_its_summary(
    caplog: pytest.LogCaptureFixture,
) -> None:
    stand_in, recorder = AnthropicCompactionStandIn(), EventRecorder()
    manager = native_manager(stand_in, recorder)
    history = mixed_history(60)
    await manager.set_messages(history)
    with caplog.at_level(logging.WARNING):
        saved = await Hopping(manager.compact(focus="keep ORD-7731"))
    assert not [r for r in caplog.records if "dropping whole groups" in r.getMessage()]
    post = posts(recorder)[-1]
    assert saved > 0 and post["focus"] == "keep ORD-7731"
    assert post["fallback"] is None and post["provider_calls"] >= 1 and post["summaries"] >= 1
    assert "[CONTEXT SUMMARY]" in message_text(manager.view.shown().summary)  # a summary, not a truncation marker
    sent = [body["compaction"]["instructions"] for _, _, body in stand_in.requests]
    assert sent and all("keep ORD-7731" in instructions for instructions in sent)


async def test_no_guidance_outlives_the_summary_it_was_sent_with() -> None:
    stand_in, recorder = AnthropicCompactionStandIn(), EventRecorder()
    manager = native_manager(stand_in, recorder)
    await manager.set_messages(mixed_history(60))
    await manager.compact(focus="keep ORD-7731")
    asked = len(stand_in.requests)
    assert asked and all("keep ORD-7731" in b["compaction"]["instructions"] for _, _, b in stand_in.requests)
    # A later request of the same backend in the same context (the evaluation's judge, another manager's
    # unfocused summary) carries no earlier compaction's focus.
    await manager.summarizer.backend.complete("You summarize.", "[#1 USER]\nrun the tests please", 200)
    (_, _, later), *_ = stand_in.requests[asked:]
    assert "ORD-7731" not in later["compaction"]["instructions"]


async def test_summaries_written_side_by_side_each_carry_their_own_focus() -> None:
    stand_in, recorder = AnthropicCompactionStandIn(), EventRecorder()
    focused = [native_manager(stand_in, recorder) for _ in range(2)]
    for manager in focused:
        await manager.set_messages(mixed_history(60))
    await asyncio.gather(*(m.compact(focus=f"keep ORD-{7731 + i}") for i, m in enumerate(focused)))
    sent = [b["compaction"]["instructions"] for _, _, b in stand_in.requests]
    assert any("ORD-7731" in s for s in sent) and any("ORD-7732" in s for s in sent)
    assert not any("ORD-7731" in s and "ORD-7732" in s for s in sent)
