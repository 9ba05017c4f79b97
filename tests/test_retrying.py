"""``RetryingBackend``, the one retry policy, against scripted fake backends (no HTTP)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from typing import Any

import pytest

from amplifier_module_context_summarize.backends.base import BackendError, Completion, Fault
from amplifier_module_context_summarize.backends.retrying import DEFAULT_RETRIES, RetryingBackend, retries_for
from amplifier_module_context_summarize.summarizer.prompts import load_prompts
from amplifier_module_context_summarize.summarizer.span import SpanSummarizer, SummarizerSettings

FAST = {"wait_base": 0.01, "wait_max": 0.05}


class Scripted:
    """A backend that plays back outcomes: an exception to raise, or text to return."""

    name = "scripted"
    model: str | None = "fake"

    def __init__(self, outcomes: Iterable[BaseException | str]) -> None:
        self.outcomes = list(outcomes)
        self.calls: list[tuple[str, str, int, Any]] = []

    async def complete(
        self, system: str, prompt: str, max_output_tokens: int, provider: Any | None = None
    ) -> Completion:
        self.calls.append((system, prompt, max_output_tokens, provider))
        outcome = self.outcomes[min(len(self.calls), len(self.outcomes)) - 1]
        if isinstance(outcome, BaseException):
            raise outcome
        return Completion(outcome, 1, 1)


class Hung:
    name = "hung"
    model: str | None = None

    def __init__(self) -> None:
        self.calls = 0
        self.cancelled = 0

    async def complete(
        self, system: str, prompt: str, max_output_tokens: int, provider: Any | None = None
    ) -> Completion:
        self.calls += 1
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        return Completion("never")


async def run(
    backend: Any,
    max_retries: int = 3,
    timeout_s: float = 5,
    provider: Any | None = None,
    deadline: float | None = None,
    **kwargs: Any,
) -> Completion:
    retrying = RetryingBackend(backend, max_retries, timeout_s, **{**FAST, **kwargs})
    return await retrying.complete("sys", "prompt", 123, provider, deadline=deadline)


async def test_first_attempt_success_passes_arguments_through() -> None:
    backend = Scripted(["done"])
    attempts: list[int] = []
    provider = object()
    completion = await run(backend, provider=provider, on_attempt=attempts.append)
    assert completion == Completion("done", 1, 1)
    assert backend.calls == [("sys", "prompt", 123, provider)]
    assert attempts == [1]


@pytest.mark.parametrize("category", sorted(f for f in Fault if f.retryable))
async def test_retryable_categories_are_retried(category: str) -> None:
    backend = Scripted([BackendError(category), BackendError(category), "ok"])
    attempts: list[int] = []
    assert (await run(backend, on_attempt=attempts.append)).text == "ok"
    assert attempts == [1, 2, 3]


@pytest.mark.parametrize(
    "category", [Fault.AUTH, Fault.BAD_REQUEST, Fault.INPUT_TOO_LONG, Fault.ERROR, Fault.REFUSAL, Fault.EMPTY]
)
async def test_other_categories_are_not_retried(category: str) -> None:
    backend = Scripted([BackendError(category), "ok"])
    with pytest.raises(BackendError) as info:
        await run(backend)
    assert info.value.fault == category
    assert len(backend.calls) == 1


async def test_exhaustion_reraises_the_last_error() -> None:
    last = BackendError(Fault.SERVER_ERROR)
    backend = Scripted([BackendError(Fault.RATE_LIMITED), BackendError(Fault.CONNECTION), last])
    with pytest.raises(BackendError) as info:
        await run(backend, max_retries=2)
    assert info.value is last
    assert len(backend.calls) == 3


async def test_zero_retries_means_one_attempt() -> None:
    backend = Scripted([BackendError(Fault.SERVER_ERROR), "ok"])
    with pytest.raises(BackendError):
        await run(backend, max_retries=0)
    assert len(backend.calls) == 1


async def test_retry_after_is_honoured() -> None:
    backend = Scripted([BackendError(Fault.RATE_LIMITED, retry_after=0.3), "ok"])
    started = time.monotonic()
    await run(backend, wait_base=0.01, wait_max=5)
    assert time.monotonic() - started >= 0.29


async def test_retry_after_is_capped_by_wait_max() -> None:
    backend = Scripted([BackendError(Fault.RATE_LIMITED, retry_after=3600), "ok"])
    started = time.monotonic()
    await run(backend, wait_base=0.01, wait_max=0.05)
    assert time.monotonic() - started < 1


async def test_hung_attempt_becomes_timeout_and_is_cancelled() -> None:
    backend = Hung()
    started = time.monotonic()
    with pytest.raises(BackendError) as info:
        await run(backend, max_retries=1, timeout_s=0.1)
    assert info.value.fault == Fault.TIMEOUT
    assert backend.calls == 2 and backend.cancelled == 2
    assert time.monotonic() - started < 2


async def test_foreign_exception_becomes_error_without_leaking_message(caplog: pytest.LogCaptureFixture) -> None:
    secret = "sk-live-DO-NOT-LOG"
    backend = Scripted([RuntimeError(f"bad key {secret}"), "ok"])
    with (
        caplog.at_level(logging.DEBUG, logger="amplifier_module_context_summarize"),
        pytest.raises(BackendError) as info,
    ):
        await run(backend)
    error = info.value
    assert error.fault == Fault.ERROR and str(error) == Fault.ERROR
    assert len(backend.calls) == 1
    assert error.__cause__ is None and error.__suppress_context__
    assert "RuntimeError" in caplog.text
    assert secret not in caplog.text


async def test_outer_cancellation_propagates() -> None:
    task = asyncio.create_task(run(Hung(), timeout_s=10))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


# --- The compaction deadline -------------------------------------------------------------------


async def test_a_passed_deadline_raises_deadline_without_asking() -> None:
    backend = Scripted(["ok"])
    with pytest.raises(BackendError) as info:
        await run(backend, deadline=time.monotonic() - 1)
    assert info.value.fault == Fault.DEADLINE
    assert backend.calls == []


async def test_the_deadline_cuts_a_hung_attempt_short_as_deadline_not_timeout() -> None:
    backend = Hung()
    started = time.monotonic()
    with pytest.raises(BackendError) as info:
        await run(backend, max_retries=3, timeout_s=10, deadline=time.monotonic() + 0.1)
    assert info.value.fault == Fault.DEADLINE
    assert backend.cancelled == 1
    assert time.monotonic() - started < 1


async def test_no_wait_runs_past_the_deadline_even_when_the_server_asks_for_longer() -> None:
    backend = Scripted([BackendError(Fault.RATE_LIMITED, retry_after=10), "ok"])
    started = time.monotonic()
    with pytest.raises(BackendError) as info:
        await run(backend, wait_max=10, deadline=time.monotonic() + 0.2)
    assert info.value.fault == Fault.DEADLINE
    assert len(backend.calls) == 1
    assert time.monotonic() - started < 1


# --- The wrapper as a backend ------------------------------------------------------------------


class RetriesItself(Scripted):
    retries_itself = True


def test_the_wrapper_answers_to_the_inner_name_and_model() -> None:
    wrapped = RetryingBackend(Scripted([]), 2, 5)
    assert (wrapped.name, wrapped.model) == ("scripted", "fake")
    assert repr(wrapped).startswith("RetryingBackend(")


def test_no_module_retries_on_a_backend_that_retries_itself_unless_configured() -> None:
    assert retries_for(Scripted([]), None) == DEFAULT_RETRIES
    assert retries_for(RetriesItself([]), None) == 0
    assert retries_for(RetriesItself([]), 2) == 2
    assert retries_for(Scripted([]), 0) == 0


class FailsFirstPerPrompt:
    """Every distinct prompt fails once (retryable), then answers; slow enough for summaries to interleave."""

    name = "flaky"
    model: str | None = "fake"

    def __init__(self) -> None:
        self.seen: set[str] = set()

    async def complete(
        self, system: str, prompt: str, max_output_tokens: int, provider: Any | None = None
    ) -> Completion:
        await asyncio.sleep(0.01)
        if prompt not in self.seen:
            self.seen.add(prompt)
            raise BackendError(Fault.SERVER_ERROR)
        return Completion("A short summary.", 1, 1)


async def test_concurrent_summaries_each_count_their_own_attempts() -> None:
    settings = SummarizerSettings(200, 100_000, timeout_s=5, max_retries=2, wait_base=0.01, wait_max=0.02)
    summarizer = SpanSummarizer(FailsFirstPerPrompt(), load_prompts(), lambda text: len(text) // 4, settings)
    spans = [[{"role": "user", "content": f"Span {i}: " + "details of the work so far. " * 50}] for i in range(4)]
    outcomes = await asyncio.gather(*(summarizer.summarize(span, None) for span in spans))
    assert [o.fallback for o in outcomes] == [None] * 4
    assert [o.provider_calls for o in outcomes] == [2] * 4
