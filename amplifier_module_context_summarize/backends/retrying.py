"""The one retry policy for summarizer calls, as a backend wrapping another.

The SDK clients are built with ``max_retries=0`` so that retries, backoff and the per-attempt timeout
are decided here, once, for every backend. The compaction's deadline belongs to this policy too, so
only the wrapper's ``complete`` takes it; the adapters it wraps answer once and never see it.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable
from typing import Any

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt
from tenacity.wait import wait_exponential, wait_random

from ..core.clock import now
from .base import Backend, BackendError, Closable, Completion, Fault, SelfRetrying, fault_of

logger = logging.getLogger(__name__)

DEFAULT_RETRIES = 3
"""Module retries per call for a backend that does not retry on its own."""


def retries_for(inner: Backend | None, configured: int | None) -> int:
    """Module retries per call: ``summarizer.max_retries`` when set, else ``DEFAULT_RETRIES``.

    Unset, a backend that ``retries_itself`` (the session provider) gets none: stacked retries multiply waits.
    """
    if configured is not None:
        return configured
    return 0 if isinstance(inner, SelfRetrying) and inner.retries_itself else DEFAULT_RETRIES


class RetryingBackend:
    """``inner`` behind the retry policy; a ``Backend`` itself, so callers just call ``complete``.

    Transient faults (``BackendError.retryable``) are retried up to ``max_retries`` more times with
    exponential backoff and jitter, never waiting less than a ``retry_after`` the server gave (capped at
    ``wait_max``). Every attempt is cut off after ``timeout_s``. ``on_attempt`` is called with 1, 2, ...
    before each attempt, which is how callers count provider calls.
    """

    def __init__(
        self,
        inner: Backend,
        max_retries: int,
        timeout_s: float,
        wait_base: float = 1.0,
        wait_max: float = 30.0,
        on_attempt: Callable[[int], None] | None = None,
    ) -> None:
        self.inner = inner
        self.max_retries = max(0, max_retries)
        self.timeout_s = timeout_s
        self.wait_base = wait_base
        self.wait_max = wait_max
        self.on_attempt = on_attempt

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def model(self) -> str | None:
        return self.inner.model

    def __repr__(self) -> str:
        return f"RetryingBackend({self.inner!r}, max_retries={self.max_retries}, timeout_s={self.timeout_s})"

    async def aclose(self) -> None:
        """Close the wrapped backend, when it holds anything (the policy itself holds nothing)."""
        if isinstance(self.inner, Closable):
            await self.inner.aclose()

    async def complete(
        self,
        system: str,
        prompt: str,
        max_output_tokens: int,
        provider: Any | None = None,
        *,
        deadline: float | None = None,
    ) -> Completion:
        """Answer, retrying transient faults; nothing runs or waits past ``deadline`` (``core.clock.now()``).

        Raises the last ``BackendError`` when out of attempts or time (``Fault.DEADLINE`` when the deadline cut
        an attempt short), or the first non-retryable one at once.
        """
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.max_retries + 1),
            wait=_wait_strategy(self.wait_base, self.wait_max, deadline),
            retry=retry_if_exception(lambda exc: isinstance(exc, BackendError) and exc.retryable),
            before_sleep=_log_retry,
            reraise=True,
        )
        completion: Completion | None = None
        async for attempt in retrying:
            with attempt:
                if self.on_attempt is not None:
                    self.on_attempt(attempt.retry_state.attempt_number)
                completion = await self._attempt(system, prompt, max_output_tokens, provider, deadline)
        if completion is None:  # unreachable: tenacity either succeeds or re-raises
            raise BackendError(Fault.ERROR)
        return completion

    async def _attempt(
        self, system: str, prompt: str, max_output_tokens: int, provider: Any | None, deadline: float | None
    ) -> Completion:
        remaining = math.inf if deadline is None else deadline - now()
        if remaining <= 0:
            raise BackendError(Fault.DEADLINE)
        # Not ``asyncio.wait_for``: on timeout it cancels the call and then waits for it to end, so a callee that
        # catches CancelledError (an SDK retry loop catching BaseException, a shielded scope) would hold the
        # request as long as it likes. The call runs as a task of its own; at the cut it is cancelled and left.
        call = asyncio.ensure_future(self.inner.complete(system, prompt, max_output_tokens, provider))
        try:
            done, _ = await asyncio.wait({call}, timeout=min(self.timeout_s, remaining))
        except asyncio.CancelledError:
            abandon(call)  # the request itself was cancelled: that must reach the caller, the call must not hold it
            raise
        if not done:
            abandon(call)
            await asyncio.sleep(0)  # one turn: a callee that honours the cancel ends now; one that does not is left
            raise BackendError(Fault.DEADLINE if remaining < self.timeout_s else Fault.TIMEOUT)
        try:
            return call.result()
        except BackendError:
            raise
        except asyncio.CancelledError:
            # The backend raised CancelledError on its own (an SDK or provider cancelling its own work):
            # a provider fault like any other, never a crash of the agent loop.
            logger.debug("summarizer backend %s raised CancelledError on its own", self.inner.name)
            raise BackendError(Fault.ERROR) from None
        except Exception as exc:  # anything unclassified is a plain Fault.ERROR
            # Class name only: provider messages can echo request data or keys.
            logger.debug("summarizer backend %s raised %s", self.inner.name, type(exc).__name__)
            raise BackendError(Fault.ERROR) from None


def abandon(call: asyncio.Future[Any]) -> None:
    """Cancel ``call`` and stop caring when it ends: whatever it returns or raises later is read and dropped
    (no "exception was never retrieved"), and nothing it returns is used."""
    call.cancel()
    call.add_done_callback(_drop_outcome)


def _drop_outcome(call: asyncio.Future[Any]) -> None:
    if not call.cancelled():
        error = call.exception()
        if error is not None:
            logger.debug("an abandoned summarizer call ended with %s", type(error).__name__)


def _wait_strategy(
    wait_base: float, wait_max: float, deadline: float | None = None
) -> Callable[[RetryCallState], float]:
    # Built from strategies that exist unchanged in tenacity 8 and 9 (wait_exponential_jitter's
    # ``initial`` became ``multiplier`` in 9.x).
    backoff = wait_exponential(multiplier=wait_base, max=wait_max) + wait_random(0, wait_base)

    def wait(state: RetryCallState) -> float:
        delay = min(backoff(state), wait_max)
        error = state.outcome.exception() if state.outcome is not None else None
        retry_after = error.retry_after if isinstance(error, BackendError) else None
        if retry_after is not None:
            delay = max(delay, min(retry_after, wait_max))
        if deadline is not None:
            delay = max(0.0, min(delay, deadline - now()))
        return delay

    return wait


def _log_retry(state: RetryCallState) -> None:
    error = state.outcome.exception() if state.outcome is not None else None
    wait = state.next_action.sleep if state.next_action is not None else 0.0
    logger.debug(
        "summarizer attempt %d failed (%s); retrying in %.2fs",
        state.attempt_number,
        fault_of(error) if error is not None else Fault.ERROR,
        wait,
    )
