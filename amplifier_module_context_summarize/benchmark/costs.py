"""Per-turn, per-request and per-compaction costs, and the naive recount baseline.

Timed batches of every size and state are interleaved, repetition by repetition, so that a machine
shared with other work slows all of them alike and the ratios between them stay meaningful.
"""

from __future__ import annotations

import statistics
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from ..manager import SUMMARY_MARKER, SummarizingContextManager
from .fixtures import BUDGET, Fixture, turn_until_compaction
from .recount_baseline import NaiveContextManager, chars_estimate
from .timing import SummarizerClock, gc_paused

STATES = ("compacted", "open")


@dataclass(frozen=True)
class Reps:
    """Repetitions: medians are taken over ``repeat`` batches."""

    repeat: int = 9
    turns: int = 20
    requests: int = 200
    compactions: int = 5
    naive: int = 5
    naive_large: int = 2
    """Naive repetitions from 50,000 messages up: one recount there takes seconds."""


@dataclass
class StateCosts:
    """Median seconds per call in one state at one size."""

    turn_s: float = 0.0
    first_request_s: float = 0.0
    """The request inside a turn: the first one after a new message (caches refresh)."""
    request_s: float = 0.0
    """A request alone, repeated with the new message already added."""
    request_budget_s: float = 0.0
    """The same request given ``token_budget`` instead of the provider (no ``get_info()`` call)."""
    floor_s: float = 0.0
    request_over_floor: float = 0.0
    """Median of the per-repetition ratios (each measured back to back)."""
    view_messages: int = 0
    summary_in_view: bool = False
    compactions_while_timing: int = 0


@dataclass
class CompactionCosts:
    """Medians over the compactions observed; the backend's own time is excluded from all of them."""

    samples: int = 0
    total_s: float = 0.0
    planning_s: float = 0.0
    """Outside the summarizer: boundary, chain hashes, span, splice, summary and working set, the view."""
    prompt_s: float = 0.0
    """Inside the summarizer, outside the backend: transcript, token counts, validation."""
    span_messages: float = 0.0
    provider_calls: int = 0


@dataclass
class SizeCosts:
    size: int
    states: dict[str, StateCosts] = field(default_factory=lambda: {s: StateCosts() for s in STATES})
    compaction: CompactionCosts = field(default_factory=CompactionCosts)
    naive_turn_s: float = 0.0
    naive_chars_turn_s: float = 0.0
    history_tokens: int = 0


async def _turn_batch(
    manager: SummarizingContextManager, fixture: Fixture, state: str, turns: int
) -> tuple[float, float]:
    """Seconds per turn, and per request within it (the first request after each new message)."""
    batch = [next(fixture.stream) for _ in range(turns)]
    provider = fixture.provider(state)
    in_requests = 0.0
    with gc_paused():
        started = time.perf_counter()
        for message in batch:
            await manager.add_message(message)
            requested = time.perf_counter()
            await manager.get_messages_for_request(provider=provider)
            in_requests += time.perf_counter() - requested
        return (time.perf_counter() - started) / turns, in_requests / turns


async def _request_batch(manager: SummarizingContextManager, n: int, **request: Any) -> float:
    with gc_paused():
        started = time.perf_counter()
        for _ in range(n):
            await manager.get_messages_for_request(**request)
        return (time.perf_counter() - started) / n


def _floor_batch(view: list[Any], n: int) -> float:
    with gc_paused():
        started = time.perf_counter()
        for _ in range(n):
            list(view)
        return (time.perf_counter() - started) / n


async def measure_requests(fixtures: list[Fixture], reps: Reps) -> dict[int, SizeCosts]:
    """Steady-state turns, then a request alone against copying the list it returns."""
    results = {f.size: SizeCosts(f.size) for f in fixtures}
    for f in fixtures:  # start right after a compaction: the whole hysteresis band is ahead
        await turn_until_compaction(f.compacted, f.compacted_provider, f.stream)
        while not f.compacted.state.segments:  # masking alone was enough: go on until a summary is in force
            await turn_until_compaction(f.compacted, f.compacted_provider, f.stream)
    before = {(f.size, s): f.manager(s).stats["compactions"] for f in fixtures for s in STATES}
    turns: dict[tuple[int, str], list[float]] = defaultdict(list)
    first_requests: dict[tuple[int, str], list[float]] = defaultdict(list)
    for _ in range(reps.repeat):
        for f in fixtures:
            for state in STATES:
                turn, first_request = await _turn_batch(f.manager(state), f, state, reps.turns)
                turns[f.size, state].append(turn)
                first_requests[f.size, state].append(first_request)
    requests, budgeted, floors, ratios = defaultdict(list), defaultdict(list), defaultdict(list), defaultdict(list)
    views = {}
    for f in fixtures:
        for state in STATES:
            await f.manager(state).add_message(next(f.stream))
            views[f.size, state] = await f.manager(state).get_messages_for_request(provider=f.provider(state))
    for _ in range(reps.repeat):
        for f in fixtures:
            for state in STATES:
                key, manager = (f.size, state), f.manager(state)
                request = await _request_batch(manager, reps.requests, provider=f.provider(state))
                floor = _floor_batch(views[key], reps.requests)
                budgeted[key].append(await _request_batch(manager, reps.requests, token_budget=f.budget(state)))
                requests[key].append(request)
                floors[key].append(floor)
                ratios[key].append(request / floor)
    for f in fixtures:
        for state in STATES:
            key, view = (f.size, state), views[f.size, state]
            results[f.size].states[state] = StateCosts(
                turn_s=statistics.median(turns[key]),
                first_request_s=statistics.median(first_requests[key]),
                request_s=statistics.median(requests[key]),
                request_budget_s=statistics.median(budgeted[key]),
                floor_s=statistics.median(floors[key]),
                request_over_floor=statistics.median(ratios[key]),
                view_messages=len(view),
                summary_in_view=any(str(m.get("content", "")).startswith(SUMMARY_MARKER) for m in view[:4]),
                compactions_while_timing=f.manager(state).stats["compactions"] - before[key],
            )
    return results


async def measure_compactions(fixture: Fixture, samples: int) -> CompactionCosts:
    """Turn until ``samples`` compactions have happened, timing each compacting request."""
    manager, backend, provider = fixture.compacted, fixture.backend, fixture.compacted_provider
    clock = SummarizerClock(manager)
    totals: list[float] = []
    planning: list[float] = []
    prompting: list[float] = []
    spans: list[int] = []
    calls = manager.stats["provider_calls"]
    while len(totals) < samples:
        await manager.add_message(next(fixture.stream))
        done, in_backend, in_summarizer, span = (
            manager.stats["compactions"],
            backend.seconds,
            clock.seconds,
            clock.span_messages,
        )
        with gc_paused():
            started = time.perf_counter()
            await manager.get_messages_for_request(provider=provider)
            elapsed = time.perf_counter() - started
        if manager.stats["compactions"] == done:
            continue
        in_backend, in_summarizer = backend.seconds - in_backend, clock.seconds - in_summarizer
        totals.append(elapsed - in_backend)
        planning.append(elapsed - in_summarizer)
        prompting.append(in_summarizer - in_backend)
        spans.append(clock.span_messages - span)
    return CompactionCosts(
        samples=samples,
        total_s=statistics.median(totals),
        planning_s=statistics.median(planning),
        prompt_s=statistics.median(prompting),
        span_messages=statistics.median(spans),
        provider_calls=manager.stats["provider_calls"] - calls,
    )


async def measure_naive(fixture: Fixture, reps: Reps, costs: SizeCosts) -> None:
    """The same turn for managers that recount the whole history on every request."""
    repeat = reps.naive_large if fixture.size >= 50_000 else reps.naive
    for attr, count in (("naive_turn_s", fixture.open.counter.count_message), ("naive_chars_turn_s", chars_estimate)):
        naive = NaiveContextManager(count, messages=fixture.history)
        samples = []
        for _ in range(repeat):
            message = next(fixture.stream)
            with gc_paused():
                started = time.perf_counter()
                await naive.add_message(message)
                await naive.get_messages_for_request(token_budget=BUDGET)
                samples.append(time.perf_counter() - started)
        setattr(costs, attr, statistics.median(samples))
        if attr == "naive_turn_s":
            costs.history_tokens = naive.last_total
