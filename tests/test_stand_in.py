"""A cold resume whose first summary is too long to wait for (``compaction/run/stand_in.py``): the extractive summary
stands in at once, the LLM's is written in the background and lands on a later request.

Issue 48: a cold first request at 50,000 messages on the LLM path summarized a ~6M-token span in 67 calls in band;
with a real provider that is minutes, so the compaction deadline cut it, the extractive summary answered and the
LLM's was never written. Every guarantee is held here: the view fits and keeps its recent tail, each compaction has
its pre and its post, a resume in a new process shows the same view before and after the landing, and the span is
paid for once.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

from test_plan import facts_of, history_of

from amplifier_module_context_summarize import create_manager
from amplifier_module_context_summarize.benchmark.coding import CodingSession
from amplifier_module_context_summarize.benchmark.fake_backend import InstantBackend
from amplifier_module_context_summarize.benchmark.synth import SMALL, TextSource
from amplifier_module_context_summarize.compaction.plan.steps import Progress, Summarize, Writer
from amplifier_module_context_summarize.compaction.plan.strategies import SummarizeStrategy
from amplifier_module_context_summarize.core.state import CompactionState
from amplifier_module_context_summarize.core.tokens import TokenCounter, text_counter
from amplifier_module_context_summarize.stores import MemoryStore
from amplifier_module_context_summarize.testing import EventRecorder

COUNT = text_counter()
TEXT = TextSource()
BUDGET = 12_000
CONFIG = {"max_tokens": BUDGET, "summarizer": {"max_input_tokens": 2_000}}


def session(messages: int) -> list[Any]:
    return CodingSession(SMALL, seed=48, text=TEXT).history(messages)


def manager_for(store: MemoryStore, recorder: EventRecorder | None = None) -> tuple[Any, InstantBackend]:
    backend = InstantBackend(TEXT, COUNT, ratio=0.25, low=60, high=1_500)
    return create_manager(CONFIG, backend=backend, store=store, hooks=recorder), backend


async def resumed_view(store: MemoryStore, messages: list[Any]) -> tuple[list[Any], int]:
    """The first view of a new process resuming ``messages`` with ``store``, and the provider calls it made."""
    manager, backend = manager_for(store)
    await manager.set_messages(messages)
    view = await manager.get_messages_for_request(token_budget=BUDGET)
    calls = backend.calls
    # the process stops (not ``close``: that would close the store the test shares between processes), and with it
    # the rewrite a resume showing the stand-in starts (``test_stand_in_resume.py``)
    await manager.compactor.flights.cancel("exit")
    manager.compactor.stop_folding()
    return view, calls


async def test_a_cold_resume_stands_in_extractively_then_lands_the_llm_summary() -> None:
    messages = session(1_500)
    store, recorder = MemoryStore(), EventRecorder()
    manager, backend = manager_for(store, recorder)
    await manager.set_messages(messages)
    view = await manager.get_messages_for_request(token_budget=BUDGET)
    # at once: no provider call waited for, the view fits with its recent tail, the stand-in says it is one
    assert backend.calls == 0
    assert TokenCounter().count_messages(view) <= BUDGET and view[-1] == messages[-1]
    history, state = manager.history, manager.state
    assert history.total - history.prefix[state.boundary] >= BUDGET * 0.25
    [stand_in] = state.segments
    [post] = recorder.payloads("context:post_compact")
    assert post["fallback"] == "deferred" and post["provider_calls"] == 0
    assert len(recorder.payloads("context:pre_compact")) == 2, "the in-band compaction's and the background's"
    # a new process before the landing shows the same view, and pays for nothing (the cut carries the stand-in)
    assert await resumed_view(store, messages) == (view, 0)

    flight = manager.compactor.background.flight
    assert flight is not None
    await asyncio.wait_for(asyncio.shield(flight.task), 30)
    landed = await manager.get_messages_for_request(token_budget=BUDGET)
    written = backend.calls
    assert written > 10, "the LLM's summary of the span, in dozens of fragments"
    [llm] = manager.state.segments
    assert (llm.start, llm.end) == (stand_in.start, stand_in.end) and llm.text != stand_in.text
    assert manager.state.boundary == state.boundary and TokenCounter().count_messages(landed) <= BUDGET
    posts = recorder.payloads("context:post_compact")
    assert len(posts) == 2 and posts[1]["fallback"] is None and posts[1]["provider_calls"] == written
    # a new process now shows the LLM's summary, from the store: the span was paid for once
    assert await resumed_view(store, messages) == (landed, 0)
    await manager.close(wait_s=0)


async def test_blocking_mode_and_a_short_span_wait_for_the_llm_as_before() -> None:
    for config, messages in (({**CONFIG, "background_compaction": False}, 1_500), (CONFIG, 120)):
        backend = InstantBackend(TEXT, COUNT, ratio=0.25, low=60, high=1_500)
        manager = create_manager(config, backend=backend, store=MemoryStore())
        await manager.set_messages(session(messages))
        await manager.get_messages_for_request(token_budget=4_000 if messages == 120 else BUDGET)
        assert backend.calls > 0 and manager.state.segments
        await manager.close(wait_s=0)


def test_the_plan_stands_in_only_for_a_span_longer_than_the_threshold() -> None:
    """Decided on the span's size (work), never on the clock: the same facts give the same writer."""
    history = history_of(30, 400)
    facts = facts_of(history, 20_000, masking=False)

    def writer(threshold: int | None) -> Writer:
        plan = SummarizeStrategy(0.3).plan(replace(facts, stand_in_above=threshold), CompactionState(), Progress())
        assert isinstance(plan.step, Summarize)
        return plan.step.writer

    assert writer(None) is Writer.SUMMARIZER
    plan = SummarizeStrategy(0.3).plan(facts, CompactionState(), Progress())
    assert isinstance(plan.step, Summarize)
    span = facts.span_tokens(0, plan.step.end)
    assert writer(span) is Writer.SUMMARIZER and writer(span - 1) is Writer.STAND_IN
    assert writer(span - 1) is Writer.STAND_IN  # the same answer again
