"""The one retry policy for summarizer calls, plus the HTTP-failure view it relies on.

The SDK clients are built with ``max_retries=0`` so that retries, backoff and the per-attempt
deadline are decided here, once, for every backend. The helpers that turn an HTTP status and its
headers into a ``BackendError`` live here too, because what they decide (retryable or not, how long
the server asked us to wait) is exactly what this policy consumes.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable, Mapping
from email.utils import parsedate_to_datetime
from typing import Any

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt
from tenacity.wait import wait_exponential, wait_random

from .backends.base import (
    AUTH,
    BAD_REQUEST,
    DEADLINE,
    ERROR,
    INPUT_TOO_LONG,
    RATE_LIMITED,
    SERVER_ERROR,
    TIMEOUT,
    Backend,
    BackendError,
    Completion,
)

logger = logging.getLogger(__name__)

# Phrases providers use when the prompt does not fit the model (Anthropic, OpenAI, vLLM, llama.cpp...).
_TOO_LONG_MARKERS = (
    "prompt is too long",
    "input is too long",
    "context length",
    "context_length",
    "context window",
    "context limit",
    "maximum context",
    "too many tokens",
    "input length",
)


def mentions_input_too_long(text: str | None) -> bool:
    """True when a provider's error text says the input does not fit (used for matching only, never logged)."""
    lowered = (text or "").lower()
    return any(marker in lowered for marker in _TOO_LONG_MARKERS)


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds the server asked us to wait: ``retry-after-ms``, or ``retry-after`` as seconds or an HTTP date."""
    if not headers:
        return None
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            value = float(raw_ms) / 1000
        except ValueError:
            value = math.nan
        if math.isfinite(value) and value >= 0:
            return value
    raw = headers.get("retry-after")
    if not raw:
        return None
    raw = raw.strip()
    try:
        value = float(raw)
    except ValueError:
        try:
            when = parsedate_to_datetime(raw)
        except (TypeError, ValueError, IndexError):
            return None
        if when is None:
            return None
        return max(0.0, when.timestamp() - time.time())
    return value if math.isfinite(value) and value >= 0 else None


def error_for_status(status: int, headers: Mapping[str, str] | None = None, *, too_long: bool = False) -> BackendError:
    """Classify an HTTP failure; ``too_long`` is the backend's reading of a 400's body."""
    if status == 429:
        return BackendError(RATE_LIMITED, retry_after=parse_retry_after(headers))
    if status == 408:
        return BackendError(TIMEOUT)
    if status >= 500:
        return BackendError(SERVER_ERROR, retry_after=parse_retry_after(headers))
    if status in (401, 403):
        return BackendError(AUTH)
    if status == 413 or (too_long and status in (400, 422)):
        return BackendError(INPUT_TOO_LONG)
    if status in (400, 404, 422):
        return BackendError(BAD_REQUEST)
    return BackendError(ERROR)


def _wait_strategy(
    wait_base: float, wait_max: float, deadline: float | None = None
) -> Callable[[RetryCallState], float]:
    # Built from strategies that exist unchanged in tenacity 8 and 9 (wait_exponential_jitter's
    # ``initial`` became ``multiplier`` in 9.x).
    backoff = wait_exponential(multiplier=wait_base, max=wait_max) + wait_random(0, wait_base)

    def wait(state: RetryCallState) -> float:
        delay = min(backoff(state), wait_max)
        error = state.outcome.exception() if state.outcome is not None else None
        retry_after = getattr(error, "retry_after", None)
        if retry_after is not None:
            delay = max(delay, min(retry_after, wait_max))
        if deadline is not None:
            delay = max(0.0, min(delay, deadline - time.monotonic()))
        return delay

    return wait


def _log_retry(state: RetryCallState) -> None:
    error = state.outcome.exception() if state.outcome is not None else None
    wait = state.next_action.sleep if state.next_action is not None else 0.0
    logger.debug(
        "summarizer attempt %d failed (%s); retrying in %.2fs",
        state.attempt_number,
        getattr(error, "category", type(error).__name__),
        wait,
    )


async def _attempt(
    backend: Backend,
    system: str,
    prompt: str,
    max_output_tokens: int,
    provider: Any | None,
    timeout_s: float,
    deadline: float | None,
) -> Completion:
    remaining = math.inf if deadline is None else deadline - time.monotonic()
    if remaining <= 0:
        raise BackendError(DEADLINE)
    try:
        return await asyncio.wait_for(
            backend.complete(system, prompt, max_output_tokens, provider), min(timeout_s, remaining)
        )
    except BackendError:
        raise
    except TimeoutError:
        raise BackendError(DEADLINE if remaining < timeout_s else TIMEOUT) from None
    except Exception as exc:  # anything unclassified is a plain ERROR
        # Class name only: provider messages can echo request data or keys.
        logger.debug("summarizer backend %s raised %s", getattr(backend, "name", "?"), type(exc).__name__)
        raise BackendError(ERROR) from None


async def complete_with_retries(
    backend: Backend,
    system: str,
    prompt: str,
    max_output_tokens: int,
    provider: Any | None = None,
    *,
    max_retries: int,
    timeout_s: float,
    wait_base: float = 1.0,
    wait_max: float = 30.0,
    on_attempt: Callable[[int], None] | None = None,
    deadline: float | None = None,
) -> Completion:
    """Ask ``backend`` once, retrying transient faults up to ``max_retries`` more times.

    Every attempt is cut off after ``timeout_s``, and nothing runs or waits past ``deadline`` (a
    ``time.monotonic()`` value). Raises the last ``BackendError`` when out of attempts or time, or the
    first non-retryable one at once. ``on_attempt`` is called with 1, 2, ... before each attempt.
    """
    retrying = AsyncRetrying(
        stop=stop_after_attempt(max(0, max_retries) + 1),
        wait=_wait_strategy(wait_base, wait_max, deadline),
        retry=retry_if_exception(lambda exc: isinstance(exc, BackendError) and exc.retryable),
        before_sleep=_log_retry,
        reraise=True,
    )
    completion: Completion | None = None
    async for attempt in retrying:
        with attempt:
            if on_attempt is not None:
                on_attempt(attempt.retry_state.attempt_number)
            completion = await _attempt(backend, system, prompt, max_output_tokens, provider, timeout_s, deadline)
    if completion is None:  # unreachable: tenacity either succeeds or re-raises
        raise BackendError(ERROR)
    return completion
