"""A circuit breaker across spans: after repeated summarizer failures, stop asking the LLM for a while.

The per-span cooldown only stops one span from being asked again; when the summarizer itself is down,
every new span would still wait out the whole deadline. After ``threshold`` failures in a row the circuit
opens: compactions use the extractive rung at once until ``open_s`` has passed, then one call probes.
"""

from __future__ import annotations

import time
from collections.abc import Callable

CLOSED, OPEN, HALF_OPEN = "closed", "open", "half_open"


class CircuitBreaker:
    def __init__(self, threshold: int, open_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.threshold = threshold
        self.open_s = open_s
        self._clock = clock
        self._failures = 0
        self._opened_at: float | None = None

    @property
    def state(self) -> str:
        if self._opened_at is None:
            return CLOSED
        return OPEN if self._clock() - self._opened_at < self.open_s else HALF_OPEN

    def allows_call(self) -> bool:
        """True unless the circuit is open; a half-open circuit lets a probe through."""
        return self.state != OPEN

    def record_success(self) -> None:
        self._failures = 0
        self._opened_at = None

    def record_failure(self) -> None:
        self._failures += 1
        if self.threshold > 0 and (self._failures >= self.threshold or self._opened_at is not None):
            self._opened_at = self._clock()  # a failed probe re-opens at once
