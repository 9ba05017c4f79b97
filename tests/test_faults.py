"""Fault injection: whatever the summarizer's provider does, every request returns a valid view that fits.

Providers here raise (the amplifier_core.llm_errors taxonomy and plain exceptions), time out, hang,
answer slowly, or answer with nothing useful. The ``context:post_compact`` event names the rung of the
failure ladder that produced the summary; the stored history is never touched; a span that failed is
not sent again on every request; a request cancelled mid-summary leaves the manager usable.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import re
from pathlib import Path
from typing import Any

import pytest
from amplifier_core import llm_errors
from amplifier_core.hooks import HookRegistry, HookResult
from amplifier_core.message_models import ChatResponse, TextBlock
from amplifier_core.testing import EventRecorder

from amplifier_module_context_summarize import create_manager, events
from amplifier_module_context_summarize.backends.base import BackendError, Fault, Skip, fault_of
from amplifier_module_context_summarize.compaction import SummarizeStrategy
from amplifier_module_context_summarize.core.invariants import check_view
from amplifier_module_context_summarize.evaluation.cassette import ReplayedFailure
from amplifier_module_context_summarize.notify import failure_line
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
async def test_a_resume_shows_the_fallback_and_pays_nothing_for_the_failed_span_before_or_after_its_cooldown():
    """A resume rebuilds the view the live session showed (issue 43: the cut carries the fallback's text), so the
    span that failed is not asked again on every resume, nor when its cooldown ends: the fallback stands until the
    span is summarized again (a merge, a further compaction)."""
    clock = FakeClock()
    manager, recorder = make({"summarizer": {"max_retries": 0}, "failure_cooldown_s": 30}, clock=clock)
    provider = FakeProvider(fail_with=RuntimeError("down"))
    await manager.set_messages(HISTORY)
    live = await manager.get_messages_for_request(BUDGET, provider)
    assert_good(live, manager)
    calls = len(provider.requests)
    assert calls >= 1 and post_events(recorder)[0]["fallback"] == "error"

    for _ in range(5):  # a resume with the same history shows the same view
        await manager.set_messages(HISTORY)
        assert await manager.get_messages_for_request(BUDGET, provider) == live
    clock.now += 31
    await manager.set_messages(HISTORY)
    assert await manager.get_messages_for_request(BUDGET, provider) == live
    assert len(provider.requests) == calls, "a resume paid for the span that failed"
    assert await manager.get_messages() == HISTORY


async def test_cooldown_does_not_block_a_healthy_provider_for_other_spans_or_after_success():
    manager, recorder = make({"summarizer": {"max_retries": 0}, "failure_cooldown_s": 300})
    await manager.set_messages(HISTORY)
    await manager.get_messages_for_request(BUDGET, FakeProvider(fail_with=RuntimeError("down")))
    healthy = FakeProvider()
    longer = HISTORY + mixed_history(40)[1:]
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
    class Broken(SummarizeStrategy):
        def plan(self, facts, state, progress):
            raise ZeroDivisionError("a bug in a third-party strategy")

    manager, recorder = make(strategy=Broken(0.2, name="broken"))
    views = await replay(manager, HISTORY, FakeProvider(), budget=BUDGET)
    assert views and all(manager.counter.count_messages(v) <= BUDGET for v in views)
    assert {e["fallback"] for e in post_events(recorder)} == {"error"}


# ------------------------------------------------------------------ the fault categories, typed

# The categories as the frozensets of ``backends.base`` had them before they became ``Fault``:
# RETRYABLE, PROVIDER_FAULTS (counted by the circuit breaker) and CONTENT_REJECTIONS.
OLD_RETRYABLE = {"rate_limited", "server_error", "timeout", "connection"}
OLD_PROVIDER_FAULTS = OLD_RETRYABLE | {"deadline", "auth", "no_provider", "error"}
OLD_CONTENT_REJECTIONS = {"empty", "refusal", "not_smaller", "ungrounded", "degenerate", "tool_call"}
OLD_CATEGORIES = OLD_PROVIDER_FAULTS | OLD_CONTENT_REJECTIONS | {"bad_request", "input_too_long"}


@pytest.mark.parametrize("category", sorted(OLD_CATEGORIES))
def test_each_fault_is_retryable_and_held_against_the_breaker_as_the_old_sets_said(category):
    fault = Fault(category)
    assert fault == category and str(fault) == category
    assert fault.retryable is (category in OLD_RETRYABLE)
    assert fault.counts_against_breaker is (category in OLD_PROVIDER_FAULTS)
    assert fault.rejected_answer is (category in OLD_CONTENT_REJECTIONS)
    assert fault.transient is (category in OLD_RETRYABLE | {"deadline"})  # notify's and the log level's set
    assert BackendError(fault).retryable is fault.retryable


def test_the_faults_are_the_old_categories_and_the_skips_are_no_faults():
    assert {f.value for f in Fault} == OLD_CATEGORIES
    assert {s.value for s in Skip} == {"cooldown", "circuit_open", "deferred"}
    assert not any(s.counts_against_breaker for s in Skip)
    assert all(Fault.named(s) is None for s in Skip) and Fault.named(None) is None


@pytest.mark.parametrize(
    ("exc", "fault"),
    [
        (BackendError(Fault.RATE_LIMITED, retry_after=2.0), Fault.RATE_LIMITED),
        (BackendError("deadline"), Fault.DEADLINE),
        (ReplayedFailure("refusal"), Fault.REFUSAL),  # a subclass carries its own
        (RuntimeError("a bug"), Fault.ERROR),
        (TimeoutError("unclassified here"), Fault.ERROR),  # classifying provider errors is the backend's job
        (asyncio.CancelledError(), Fault.ERROR),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, BaseException) else str(v),
)
def test_fault_of_gives_a_backend_errors_fault_and_error_for_anything_else(exc, fault):
    assert fault_of(exc) is fault


def test_a_backend_error_takes_a_fault_or_its_string_and_prints_as_the_string_did():
    error = BackendError("server_error", retry_after=1.5)
    assert error.fault is Fault.SERVER_ERROR and error.retry_after == 1.5
    assert str(error) == "server_error" and repr(error) == "BackendError('server_error')"
    assert str(BackendError(Fault.AUTH)) == "auth" and BackendError(Fault.AUTH).args == ("auth",)
    with pytest.raises(ValueError, match="'cooldown' is not a fault category"):
        BackendError("cooldown")  # a skip is no fault


def test_an_event_carrying_a_fault_is_byte_identical_to_the_old_string_in_json_and_text():
    typed = events.SummaryFailed("compaction", Fault.TIMEOUT, 2).to_dict()
    plain = events.SummaryFailed("compaction", "timeout", 2).to_dict()
    assert (
        json.dumps(typed) == json.dumps(plain) == '{"reason": "compaction", "fallback": "timeout", "provider_calls": 2}'
    )
    assert json.loads(json.dumps(typed)) == plain and typed == plain
    skipped = json.loads(json.dumps({"fallback": Skip.CIRCUIT_OPEN}))
    assert skipped == {"fallback": "circuit_open"}
    logged = logging.LogRecord("x", logging.INFO, __file__, 1, "fell back (%s)", (Fault.NOT_SMALLER,), None)
    assert f"{Fault.NOT_SMALLER}" == format(Fault.NOT_SMALLER) == "not_smaller"
    assert logged.getMessage() == "fell back (not_smaller)"
    for fallback, plain_value in [
        (Fault.DEADLINE, "deadline"),
        (Fault.REFUSAL, "refusal"),
        (Skip.CIRCUIT_OPEN, "circuit_open"),
    ]:
        assert failure_line({"fallback": fallback}) == failure_line({"fallback": plain_value})
    assert failure_line({"fallback": "deadline"}).endswith("(deadline: the provider is busy or slow)")
    assert failure_line({"fallback": Fault.REFUSAL}).endswith("(refusal: see the log)")
    assert failure_line({}).endswith("(error: see the log)")


async def test_a_background_summary_that_raises_reports_error_and_logs_the_class(caplog):
    manager, _ = make()
    for message in HISTORY[:20]:
        await manager.add_message(message)

    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise ZeroDivisionError("a bug, not a provider fault")

    manager.summarizer.summarize = broken
    with caplog.at_level("WARNING"):
        outcome = await manager.segments.prefetched(manager.history, 0, 2, None, FakeProvider())
    assert outcome is not None and outcome.fallback is Fault.ERROR and not outcome.cacheable
    assert "ZeroDivisionError" in caplog.text and "a bug" not in caplog.text
    assert manager.segments.cooling_spans == 1


def test_the_event_docs_name_every_fault_and_skip_a_fallback_can_be():
    docs = (Path(__file__).resolve().parent.parent / "docs" / "events.md").read_text()
    row = next(line for line in docs.splitlines() if line.startswith("| `fallback` | `null`, or a short category"))
    assert {f"`{value}`" for value in [*Fault, *Skip]} <= set(re.findall(r"`[a-z_]+`", row))


async def test_the_kernels_hook_registry_hands_handlers_the_plain_string_of_a_fault():
    registry, seen = HookRegistry(), []

    async def handler(event: str, data: dict[str, Any]) -> HookResult:
        seen.append(data)
        return HookResult(action="continue")

    registry.register(events.SUMMARY_FAILED, handler, priority=1, name="test")
    await registry.emit(events.SUMMARY_FAILED, events.SummaryFailed("prefetch", Fault.DEADLINE, 1).to_dict())
    await registry.emit(events.SUMMARY_FAILED, {"fallback": Skip.COOLDOWN})
    assert [(type(d["fallback"]), d["fallback"]) for d in seen] == [(str, "deadline"), (str, "cooldown")]
