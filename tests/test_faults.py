"""Fault injection: whatever the summarizer's provider does, every request returns a valid view that fits.

Providers here raise (the amplifier_core.llm_errors taxonomy and plain exceptions), time out, hang,
answer slowly, or answer with nothing useful. The ``context:post_compact`` event names the rung of the
failure ladder that produced the summary; the stored history is never touched; a span that failed is
not sent again on every request; a request cancelled mid-summary leaves the manager usable.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest
from amplifier_core import llm_errors
from amplifier_core.message_models import ChatResponse, TextBlock
from amplifier_core.testing import EventRecorder

from amplifier_module_context_summarize import create_manager
from amplifier_module_context_summarize.core.invariants import check_view
from amplifier_module_context_summarize.stores import MemoryStore
from amplifier_module_context_summarize.testing import FakeProvider, mixed_history, replay

BUDGET = 12_000
HISTORY = mixed_history(50)


def make(config: dict[str, Any] | None = None, **kwargs: Any):
    recorder = EventRecorder()
    manager = create_manager({"max_tokens": BUDGET, **(config or {})}, hooks=recorder, **kwargs)
    # Real backoff starts at 1 s; the policy is the same, only faster.
    manager.summarizer.settings = dataclasses.replace(manager.summarizer.settings, wait_base=0.001, wait_max=0.01)
    return manager, recorder


def post_events(recorder: EventRecorder) -> list[dict[str, Any]]:
    return [data for _, data in recorder.get_events("context:post_compact")]


def assert_good(view: list[dict[str, Any]], manager: Any) -> None:
    assert check_view(view) == []
    assert manager.counter.count_messages(view) <= BUDGET


class HangingProvider(FakeProvider):
    """Never answers: only ``summarizer.timeout_s`` gets the request back."""

    async def complete(self, request: Any, **kwargs: Any) -> ChatResponse:
        self.requests.append(request)
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


class SyncProvider(FakeProvider):
    """``complete`` that is not a coroutine function: awaiting its result fails."""

    def complete(self, request: Any, **kwargs: Any) -> ChatResponse:  # type: ignore[override]
        self.requests.append(request)
        return ChatResponse(content=[TextBlock(text="summary")])


class ReturnsProvider(FakeProvider):
    """Answers with a fixed object that is not a proper ChatResponse."""

    def __init__(self, answer: Any) -> None:
        super().__init__()
        self.answer = answer

    async def complete(self, request: Any, **kwargs: Any) -> Any:
        self.requests.append(request)
        return self.answer


class UnprintableError(Exception):
    def __str__(self) -> str:
        raise RuntimeError("even str() fails")


RAISES = [
    (llm_errors.RateLimitError("429 slow down", retry_after=0.0), "rate_limited", True),
    (llm_errors.QuotaExceededError("quota gone"), "auth", False),
    (llm_errors.AuthenticationError("bad key"), "auth", False),
    (llm_errors.AccessDeniedError("no access"), "auth", False),
    (llm_errors.ContentFilterError("filtered"), "refusal", False),
    (llm_errors.NetworkError("reset by peer"), "connection", True),
    (llm_errors.LLMTimeoutError("took too long"), "timeout", True),
    (llm_errors.ProviderUnavailableError("overloaded"), "server_error", True),
    (llm_errors.InvalidRequestError("bad request"), "bad_request", False),
    (llm_errors.NotFoundError("no such model"), "bad_request", False),
    (llm_errors.StreamError("stream cut"), "connection", True),
    (llm_errors.AbortError("aborted"), "error", False),
    (llm_errors.ConfigurationError("misconfigured"), "error", False),
    (llm_errors.InvalidToolCallError("bad tool call"), "error", False),
    (llm_errors.LLMError("generic"), "error", False),
    (TimeoutError("plain timeout"), "timeout", True),
    (ConnectionResetError("plain reset"), "connection", True),
    (RuntimeError("boom"), "error", False),
    (ValueError("bad value"), "error", False),
    (KeyError("missing"), "error", False),
    (UnprintableError(), "error", False),
]


@pytest.mark.slow
@pytest.mark.parametrize(("error", "category", "retryable"), RAISES, ids=[type(e).__name__ for e, _, _ in RAISES])
async def test_raising_provider_falls_back_and_the_view_still_fits(error, category, retryable):
    manager, recorder = make({"summarizer": {"max_retries": 2}})
    provider = FakeProvider(fail_with=error)
    await replay(manager, HISTORY, provider, budget=BUDGET)
    first = post_events(recorder)[0]
    assert first["fallback"] == category
    assert first["provider_calls"] == (3 if retryable else 1), "only transient faults are retried"
    assert await manager.get_messages() == HISTORY


async def test_context_length_error_splits_the_span_then_falls_back():
    manager, recorder = make({"summarizer": {"max_retries": 0}})
    provider = FakeProvider(fail_with=llm_errors.ContextLengthError("prompt is too long"))
    await replay(manager, HISTORY, provider, budget=BUDGET)
    first = post_events(recorder)[0]
    assert first["fallback"] == "input_too_long"
    assert first["provider_calls"] > 1, "an input overflow splits the fragment and retries"
    assert len({r.messages[1].content for r in provider.requests}) == len(provider.requests)


GARBAGE = [
    (FakeProvider(reply=""), "empty"),
    (FakeProvider(reply="   \n\t "), "empty"),
    (FakeProvider(reply="I'm sorry, but I can't help with that."), "refusal"),
    (FakeProvider(reply="As an AI language model I cannot summarize this."), "refusal"),
    (FakeProvider(reply="word " * 60_000), "not_smaller"),
    (ReturnsProvider(None), "empty"),
    (ReturnsProvider("a bare string"), "empty"),
    (ReturnsProvider(ChatResponse(content=[])), "empty"),
    (SyncProvider(), "error"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("provider", "category"), GARBAGE, ids=[c for _, c in GARBAGE])
async def test_useless_answer_is_rejected_and_the_view_still_fits(provider, category):
    manager, recorder = make({"summarizer": {"max_retries": 0}})
    await replay(manager, HISTORY, provider, budget=BUDGET)
    events = post_events(recorder)
    assert events[0]["fallback"] == category
    summary = next(
        m
        for m in (await manager.get_messages_for_request(BUDGET, provider))
        if str(m.get("content", "")).startswith("[CONTEXT SUMMARY]")
    )
    assert "I'm sorry" not in summary["content"] and "word word word" not in summary["content"]
    assert await manager.get_messages() == HISTORY


@pytest.mark.slow
async def test_timeout_and_hang_are_cut_off_by_timeout_s():
    for provider in (FakeProvider(delay=30), HangingProvider()):
        manager, recorder = make({"summarizer": {"timeout_s": 0.05, "max_retries": 1}})
        loop = asyncio.get_running_loop()
        started = loop.time()
        await replay(manager, HISTORY, provider, budget=BUDGET)
        assert loop.time() - started < 5
        first = post_events(recorder)[0]
        assert first["fallback"] == "timeout" and first["provider_calls"] == 2


@pytest.mark.slow
async def test_slow_provider_within_timeout_is_used():
    manager, recorder = make({"summarizer": {"timeout_s": 5}})
    provider = FakeProvider(delay=0.05)
    await replay(manager, HISTORY, provider, budget=BUDGET)
    assert all(e["fallback"] is None for e in post_events(recorder))
    assert provider.requests


@pytest.mark.slow
async def test_flaky_provider_recovers_after_transient_faults():
    class Flaky(FakeProvider):
        async def complete(self, request, **kwargs):
            if len(self.requests) % 3 != 2:
                self.requests.append(request)
                raise llm_errors.RateLimitError("429", retry_after=0.0)
            return await super().complete(request, **kwargs)

    manager, recorder = make({"summarizer": {"max_retries": 3}})
    await replay(manager, HISTORY, Flaky(), budget=BUDGET)
    first = post_events(recorder)[0]
    assert first["fallback"] is None and first["provider_calls"] == 3


@pytest.mark.slow
async def test_failing_provider_never_sees_the_same_span_twice_during_a_session():
    manager, recorder = make({"summarizer": {"max_retries": 0}})
    provider = FakeProvider(fail_with=RuntimeError("down"))
    history = mixed_history(150, size=8)
    await replay(manager, history, provider, budget=BUDGET)
    prompts = [r.messages[1].content for r in provider.requests]
    assert len(post_events(recorder)) >= 3
    assert len(set(prompts)) == len(prompts)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.slow
async def test_failed_span_is_not_retried_on_every_request_until_the_cooldown_ends():
    clock = FakeClock()
    manager, recorder = make({"summarizer": {"max_retries": 0}, "failure_cooldown_s": 30}, clock=clock)
    provider = FakeProvider(fail_with=RuntimeError("down"))
    await manager.set_messages(HISTORY)
    assert_good(await manager.get_messages_for_request(BUDGET, provider), manager)
    calls = len(provider.requests)
    assert calls >= 1 and post_events(recorder)[0]["fallback"] == "error"

    for _ in range(5):  # a resume with the same history asks for the same span again
        await manager.set_messages(HISTORY)
        assert_good(await manager.get_messages_for_request(BUDGET, provider), manager)
    assert len(provider.requests) == calls, "an unchanged span that failed was retried at once"
    assert {e["fallback"] for e in post_events(recorder)[1:]} == {"cooldown"}

    clock.now += 31
    await manager.set_messages(HISTORY)
    assert_good(await manager.get_messages_for_request(BUDGET, provider), manager)
    assert len(provider.requests) > calls, "after the cooldown the span is tried again"
    assert await manager.get_messages() == HISTORY


async def test_cooldown_does_not_block_a_healthy_provider_for_other_spans_or_after_success():
    manager, recorder = make({"summarizer": {"max_retries": 0}, "failure_cooldown_s": 300})
    await manager.set_messages(HISTORY)
    await manager.get_messages_for_request(BUDGET, FakeProvider(fail_with=RuntimeError("down")))
    healthy = FakeProvider()
    longer = HISTORY + mixed_history(10)[1:]
    await manager.set_messages(longer)  # a different span: not cooling down
    assert_good(await manager.get_messages_for_request(BUDGET, healthy), manager)
    assert healthy.requests and post_events(recorder)[-1]["fallback"] is None


async def test_cancelling_a_request_mid_summary_leaves_state_and_cache_consistent():
    cache = MemoryStore()
    manager, recorder = make(store=cache)
    provider = FakeProvider(delay=30)
    for message in HISTORY:
        await manager.add_message(message)
    state = manager.state

    task = asyncio.create_task(manager.get_messages_for_request(BUDGET, provider))
    while not provider.requests:
        await asyncio.sleep(0.001)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert not manager._lock.locked()
    assert manager.state == state
    assert await cache.count() == 0, "nothing half-done was cached"
    assert manager.segments.cooling_spans == 0, "a cancellation is not a provider failure"
    assert await manager.get_messages() == HISTORY

    healthy = FakeProvider()
    view = await manager.get_messages_for_request(BUDGET, healthy)
    assert_good(view, manager)
    assert len(healthy.requests) == 1 and post_events(recorder)[-1]["fallback"] is None
    assert await cache.count() >= 1
    again = await manager.get_messages_for_request(BUDGET, healthy)
    assert again == view and len(healthy.requests) == 1
    await manager.add_message({"role": "user", "content": "and now?"})
    assert_good(await manager.get_messages_for_request(BUDGET, healthy), manager)
    assert await manager.get_messages() == [*HISTORY, {"role": "user", "content": "and now?"}]


async def test_cancelling_one_of_several_waiting_requests_does_not_hurt_the_others():
    manager, _ = make()
    provider = FakeProvider(delay=0.2)
    for message in HISTORY:
        await manager.add_message(message)
    tasks = [asyncio.create_task(manager.get_messages_for_request(BUDGET, provider)) for _ in range(5)]
    while not provider.requests:
        await asyncio.sleep(0.001)
    tasks[3].cancel()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    assert isinstance(results[3], asyncio.CancelledError)
    views = [r for i, r in enumerate(results) if i != 3]
    for view in views:
        assert_good(view, manager)
    assert all(v == views[0] for v in views)
    assert len(provider.requests) == 1


@pytest.mark.slow
async def test_hook_that_raises_does_not_break_the_request():
    class BadHooks:
        async def emit(self, event, data):
            raise RuntimeError("observer crashed")

    manager = create_manager({"max_tokens": BUDGET}, hooks=BadHooks())
    views = await replay(manager, HISTORY, FakeProvider(), budget=BUDGET)
    assert views and manager.stats["compactions"] >= 1


@pytest.mark.slow
async def test_fault_inside_compaction_falls_back_to_truncation(monkeypatch):
    manager, recorder = make()

    async def broken(*args, **kwargs):
        raise ZeroDivisionError("a bug, not a provider fault")

    monkeypatch.setattr(manager.segments, "summary", broken)
    views = await replay(manager, HISTORY, FakeProvider(), budget=BUDGET)
    assert views
    assert await manager.get_messages() == HISTORY
    assert [e["fallback"] for e in post_events(recorder)][:1] == ["error"]
    assert all(manager.counter.count_messages(v) <= BUDGET for v in views)


@pytest.mark.slow
async def test_a_strategy_that_raises_still_leaves_a_fitting_view(monkeypatch):
    class Broken:
        name = "broken"

        async def compact(self, job):
            raise ZeroDivisionError("a bug in a third-party strategy")

    manager, recorder = make(strategy=Broken())
    views = await replay(manager, HISTORY, FakeProvider(), budget=BUDGET)
    assert views and all(manager.counter.count_messages(v) <= BUDGET for v in views)
    assert {e["fallback"] for e in post_events(recorder)} == {"error"}
