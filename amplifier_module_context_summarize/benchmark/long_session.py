"""What one compaction costs early and late in a long session, with no LLM to hide behind.

With the extractive strategy, or a summarizer whose every call fails (so each segment is written
extractively after the failure), a compaction is all the module's own work. A session of up to 50,000
messages is replayed as an orchestrator would (a request before each assistant message) and every compacting
request is timed in CPU time (``time.process_time``: another process on the machine does not count). At each
checkpoint the compactions just before it are taken: a compaction must cost what its span costs, so the
median at 50,000 messages should be that at 5,000.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from .. import create_manager
from ..backends.base import BackendError, Fault
from ..testing import EventRecorder, replay_steps
from .coding import CodingSession
from .collector import collection_times
from .heartbeat import Heartbeat
from .live_host import LiveHost, measure_live_host, session_lines
from .resume import ResumeCosts, measure_resume
from .synth import SMALL, TextSource
from .timing import gc_paused

KINDS = ("extractive", "failing summarizer")


@dataclass(frozen=True)
class LongPlan:
    checkpoints: tuple[int, ...] = (5_000, 10_000, 20_000, 50_000)
    budget: int = 100_000
    samples: int = 8
    """Compactions timed per checkpoint: the last ones before it."""
    seed: int = 50_000
    resume: bool = True
    """Then resume the session on a new manager, with its store and with none (``resume.py``; extractive only)."""


QUICK_LONG = LongPlan(checkpoints=(1_000, 2_000), budget=20_000, samples=3)


@dataclass
class Checkpoint:
    messages: int
    samples: int = 0
    median_s: float = 0.0
    max_s: float = 0.0
    span_messages: float = 0.0
    """Median messages in the history between consecutive compactions there."""


@dataclass
class LongCosts:
    kind: str
    budget: int
    checkpoints: list[Checkpoint] = field(default_factory=list)
    compactions: int = 0
    fallbacks: int = 0
    """Compactions that fell back from the LLM (all of them, with the failing summarizer; none, extractive)."""
    provider_calls: int = 0
    seconds: float = 0.0
    loop_lag_s: float = 0.0
    """Longest the event loop stayed blocked in the session by the module's work (``heartbeat.Heartbeat``: net of
    the garbage collector's pauses; the replay itself yields between requests, as an agent awaiting its model
    does)."""
    loop_lag_last_s: float = 0.0
    """The same over the requests after the second-to-last checkpoint (the longest history)."""
    loop_lag_raw_last_s: float = 0.0
    """``loop_lag_last_s`` as seen, the garbage collector's pauses included (``heartbeat.Heartbeat``)."""
    gc_pause_last_s: float = 0.0
    """The garbage collector's longest pause over the same requests (it follows the process's heap)."""
    host_collection_s: float = 0.0
    """One full collection of the bench's process holding the session's messages without a manager: what the host
    pays whatever the module does, the measure of ``loop_lag_raw_last_s``'s target. The median of collections
    timed before the manager holds the messages and after it is gone (a typical pause, as the loop's longest
    block holds one: not the best of several, nor one taken while the machine was slower or faster)."""
    host_collection_cold_s: float = 0.0
    """The same collection timed after other work has evicted the heap from the processor's caches
    (``collection_times(after_other_work=True)``, the median), as a pause in a running process finds it: reported
    beside ``host_collection_s``, not a target's measure."""
    resume: ResumeCosts | None = None
    """The whole session resumed on a new manager (``set_messages``, then the first request)."""
    live_host: LiveHost | None = None
    """The same session in a host that decodes each message and keeps none (``live_host.py``), from the
    second-to-last checkpoint: the loop with this module against the contract's list-holding context."""

    @property
    def flatness(self) -> float:
        """Median compaction time at the last checkpoint over that at the first."""
        first, last = self.checkpoints[0], self.checkpoints[-1]
        return last.median_s / first.median_s if first.median_s else 0.0


class FailingBackend:
    """A summarizer backend whose every call fails (a provider that is down)."""

    name = "bench-failing"
    model: str | None = "failing"

    async def complete(self, system: str, prompt: str, max_output_tokens: int, provider: Any | None = None) -> Any:
        raise BackendError(Fault.SERVER_ERROR)


def _manager(kind: str, budget: int, events: EventRecorder | None, store: Any | None = None) -> Any:
    if kind == "extractive":
        # In band (as offline summaries used to be written at the soft threshold): the cost timed is the request's own.
        config = {"max_tokens": budget, "compaction_strategy": "extractive", "background_compaction": False}
        return create_manager(config, hooks=events, store=store)
    config = {"max_tokens": budget, "summarizer": {"max_retries": 0}}
    return create_manager(config, backend=FailingBackend(), hooks=events, store=store)


async def measure_long_session(kind: str, plan: LongPlan, text: TextSource) -> LongCosts:
    """Replay one coding session to the last checkpoint, timing every compacting request."""
    started = time.perf_counter()
    events = EventRecorder(only={"context:post_compact"})
    messages = CodingSession(SMALL, seed=plan.seed, text=text).history(max(plan.checkpoints))
    host_collections = collection_times()
    host_cold = collection_times(after_other_work=True)
    manager = _manager(kind, plan.budget, events)
    timed: list[tuple[int, float]] = []
    """(messages in the history, CPU seconds) of each compacting request."""
    heartbeat = Heartbeat()
    heartbeat.start()
    late = sorted(plan.checkpoints)[-2] if len(plan.checkpoints) > 1 else 0
    overall = 0.0
    async for step in replay_steps(manager, messages, budget=plan.budget):
        if step.index == late:
            overall = heartbeat.max_lag_s
            heartbeat.reset()
        await asyncio.sleep(0)  # the agent's own awaits (its model call) between steps
        if not step.due:
            continue
        done = manager.stats["compactions"]
        with gc_paused():
            cpu = time.process_time()
            await step.request()
            elapsed = time.process_time() - cpu
        if manager.stats["compactions"] > done:
            timed.append((step.index + 1, elapsed))
    await asyncio.sleep(2 * heartbeat.interval_s)
    await heartbeat.stop()
    result = LongCosts(kind, plan.budget, compactions=len(timed), provider_calls=manager.stats["provider_calls"])
    resume = None
    if plan.resume and kind == "extractive":
        live = await manager.get_messages_for_request(token_budget=plan.budget)
        store, manager = manager.store, None  # a restarted process has only its store, not the session's manager
        resume = await measure_resume(
            lambda store: _manager(kind, plan.budget, None, store), store, messages, plan.budget, live
        )
    result.resume = resume
    manager = None  # the host's collection again, the session's messages still held (the last step holds the manager)
    del step
    result.host_collection_s = statistics.median([*host_collections, *collection_times()])
    result.host_collection_cold_s = statistics.median(host_cold)
    result.loop_lag_last_s = heartbeat.max_lag_s
    result.loop_lag_raw_last_s, result.gc_pause_last_s = heartbeat.max_raw_lag_s, heartbeat.max_gc_s
    result.loop_lag_s = max(overall, heartbeat.max_lag_s)
    result.fallbacks = sum(1 for payload in events.payloads("context:post_compact") if payload["fallback"])
    for checkpoint in plan.checkpoints:
        before = [(n, s) for n, s in timed if n <= checkpoint][-plan.samples :]
        seconds = [s for _, s in before]
        spans = [b - a for (a, _), (b, _) in _pairs(before)]
        result.checkpoints.append(
            Checkpoint(
                checkpoint,
                len(seconds),
                statistics.median(seconds) if seconds else 0.0,
                max(seconds, default=0.0),
                statistics.median(spans) if spans else 0.0,
            )
        )
    result.seconds = time.perf_counter() - started
    return result


def _pairs(items: list[tuple[int, float]]) -> Iterator[tuple[tuple[int, float], tuple[int, float]]]:
    return zip(items, items[1:], strict=False)


async def measure_long_sessions(plan: LongPlan, text: TextSource) -> list[LongCosts]:
    runs = []
    lines: tuple[list[str], list[bool]] | None = None
    window_from = sorted(plan.checkpoints)[-2] if len(plan.checkpoints) > 1 else 0
    for kind in KINDS:
        run = await measure_long_session(kind, plan, text)
        lines = lines or session_lines(max(plan.checkpoints), plan.seed, text)
        run.live_host = await measure_live_host(
            partial(_manager, kind, plan.budget, None), *lines, plan.budget, window_from
        )
        runs.append(run)
    return runs
