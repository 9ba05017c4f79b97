"""``cache/breaker.py``: the circuit breaker over a fake clock (no time passes unless a test moves it)."""

from __future__ import annotations

from amplifier_module_context_summarize.compaction.cache.breaker import CLOSED, HALF_OPEN, OPEN, CircuitBreaker


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def opened(threshold: int = 3, open_s: float = 30.0) -> tuple[CircuitBreaker, Clock]:
    clock = Clock()
    breaker = CircuitBreaker(threshold, open_s, clock)
    for _ in range(threshold):
        breaker.record_failure()
    assert breaker.state == OPEN
    return breaker, clock


def test_the_circuit_opens_after_threshold_failures_in_a_row() -> None:
    breaker = CircuitBreaker(3, 30.0, Clock())
    breaker.record_failure()
    breaker.record_failure()
    assert breaker.state == CLOSED and breaker.allows_call()
    breaker.record_success()  # the run is broken: counting starts again
    breaker.record_failure()
    breaker.record_failure()
    assert breaker.state == CLOSED and breaker.allows_call()
    breaker.record_failure()
    assert breaker.state == OPEN and not breaker.allows_call()


def test_an_open_circuit_half_opens_after_open_s_and_lets_a_probe_through() -> None:
    breaker, clock = opened(open_s=30.0)
    clock.now += 29.999
    assert breaker.state == OPEN and not breaker.allows_call()
    clock.now += 0.001
    assert breaker.state == HALF_OPEN and breaker.allows_call()


def test_a_failed_probe_reopens_for_a_whole_open_s() -> None:
    breaker, clock = opened(open_s=30.0)
    clock.now += 30.0
    assert breaker.state == HALF_OPEN
    breaker.record_failure()  # one failure is enough: the run of failures never ended
    assert breaker.state == OPEN and not breaker.allows_call()
    clock.now += 29.0
    assert breaker.state == OPEN, "open again from the probe's failure, not from the first opening"
    clock.now += 1.0
    assert breaker.state == HALF_OPEN


def test_a_successful_probe_closes_the_circuit_and_forgets_the_failures() -> None:
    breaker, clock = opened(threshold=3)
    clock.now += 30.0
    breaker.record_success()
    assert breaker.state == CLOSED and breaker.allows_call()
    breaker.record_failure()
    breaker.record_failure()
    assert breaker.state == CLOSED, "a closed circuit needs a whole new run of failures to open"


def test_threshold_zero_never_opens() -> None:
    breaker = CircuitBreaker(0, 30.0, Clock())
    for _ in range(100):
        breaker.record_failure()
    assert breaker.state == CLOSED and breaker.allows_call()
