"""The retry policy against scripted fake backends (no HTTP)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amplifier_module_context_summarize.backends.base import (
    AUTH,
    BAD_REQUEST,
    CONNECTION,
    EMPTY,
    ERROR,
    INPUT_TOO_LONG,
    RATE_LIMITED,
    REFUSAL,
    RETRYABLE,
    SERVER_ERROR,
    TIMEOUT,
    BackendError,
    Completion,
)
from amplifier_module_context_summarize.retry import (
    complete_with_retries,
    error_for_status,
    mentions_input_too_long,
    parse_retry_after,
)

FAST = {"wait_base": 0.01, "wait_max": 0.05}
KNOWN = {AUTH, BAD_REQUEST, CONNECTION, ERROR, INPUT_TOO_LONG, RATE_LIMITED, SERVER_ERROR, TIMEOUT}


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


async def run(backend: Any, max_retries: int = 3, timeout_s: float = 5, **kwargs: Any) -> Completion:
    return await complete_with_retries(
        backend,
        "sys",
        "prompt",
        123,
        kwargs.pop("provider", None),
        max_retries=max_retries,
        timeout_s=timeout_s,
        **{**FAST, **kwargs},
    )


async def test_first_attempt_success_passes_arguments_through() -> None:
    backend = Scripted(["done"])
    attempts: list[int] = []
    provider = object()
    completion = await run(backend, provider=provider, on_attempt=attempts.append)
    assert completion == Completion("done", 1, 1)
    assert backend.calls == [("sys", "prompt", 123, provider)]
    assert attempts == [1]


@pytest.mark.parametrize("category", sorted(RETRYABLE))
async def test_retryable_categories_are_retried(category: str) -> None:
    backend = Scripted([BackendError(category), BackendError(category), "ok"])
    attempts: list[int] = []
    assert (await run(backend, on_attempt=attempts.append)).text == "ok"
    assert attempts == [1, 2, 3]


@pytest.mark.parametrize("category", [AUTH, BAD_REQUEST, INPUT_TOO_LONG, ERROR, REFUSAL, EMPTY])
async def test_other_categories_are_not_retried(category: str) -> None:
    backend = Scripted([BackendError(category), "ok"])
    with pytest.raises(BackendError) as info:
        await run(backend)
    assert info.value.category == category
    assert len(backend.calls) == 1


async def test_exhaustion_reraises_the_last_error() -> None:
    last = BackendError(SERVER_ERROR)
    backend = Scripted([BackendError(RATE_LIMITED), BackendError(CONNECTION), last])
    with pytest.raises(BackendError) as info:
        await run(backend, max_retries=2)
    assert info.value is last
    assert len(backend.calls) == 3


async def test_zero_retries_means_one_attempt() -> None:
    backend = Scripted([BackendError(SERVER_ERROR), "ok"])
    with pytest.raises(BackendError):
        await run(backend, max_retries=0)
    assert len(backend.calls) == 1


async def test_retry_after_is_honoured() -> None:
    backend = Scripted([BackendError(RATE_LIMITED, retry_after=0.3), "ok"])
    started = time.monotonic()
    await run(backend, wait_base=0.01, wait_max=5)
    assert time.monotonic() - started >= 0.29


async def test_retry_after_is_capped_by_wait_max() -> None:
    backend = Scripted([BackendError(RATE_LIMITED, retry_after=3600), "ok"])
    started = time.monotonic()
    await run(backend, wait_base=0.01, wait_max=0.05)
    assert time.monotonic() - started < 1


async def test_hung_attempt_becomes_timeout_and_is_cancelled() -> None:
    backend = Hung()
    started = time.monotonic()
    with pytest.raises(BackendError) as info:
        await run(backend, max_retries=1, timeout_s=0.1)
    assert info.value.category == TIMEOUT
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
    assert error.category == ERROR and str(error) == ERROR
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


# --- HTTP classification helpers ---------------------------------------------------------------


def test_parse_retry_after_forms() -> None:
    assert parse_retry_after(None) is None
    assert parse_retry_after({}) is None
    assert parse_retry_after({"retry-after": "12"}) == 12.0
    assert parse_retry_after({"retry-after": "0.5"}) == 0.5
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({"retry-after": "-3"}) is None
    future = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert 25 <= (parse_retry_after({"retry-after": future}) or 0) <= 31


@given(st.floats(min_value=0, max_value=1e6, allow_nan=False))
def test_parse_retry_after_seconds_roundtrip(seconds: float) -> None:
    assert parse_retry_after({"retry-after": repr(seconds)}) == pytest.approx(seconds)


@given(st.integers(min_value=100, max_value=599), st.booleans(), st.text(max_size=20))
def test_error_for_status_is_total(status: int, too_long: bool, header: str) -> None:
    error = error_for_status(status, {"retry-after": header}, too_long=too_long)
    assert error.category in KNOWN
    assert str(error) == error.category
    assert error.retry_after is None or error.retry_after >= 0


def test_too_long_markers() -> None:
    assert mentions_input_too_long("prompt is too long: 210000 tokens > 200000 maximum")
    assert mentions_input_too_long("This model's maximum context length is 8192 tokens")
    assert not mentions_input_too_long(
        "max_tokens: 100000 > 64000, which is the maximum allowed number of output tokens"
    )
    assert not mentions_input_too_long(None)
