"""Resuming a long session: ``set_messages`` of its whole history on a new manager, then its first request.

With the session's summaries stored (the resume path: the same store, as a restarted process or a fork finds
it) the state is walked back from the store and the first view is the one the session had; with nothing
stored the first request compacts the whole history at once. Each is timed in wall and in CPU time (the
process's, worker threads and any child processes included; another process on the
machine does not count), with the collector running, as a restarted process resumes: from a heap holding the host's
messages and no garbage of the session before it. Its pauses are timed too, so the wall time reads both as the user
waits (the targets) and net of the collector (the module's own work).
"""

from __future__ import annotations

import gc
import os
import time
from dataclasses import dataclass
from typing import Any

from ..stores import MemoryStore, SummaryStore
from .timing import CollectorTime


@dataclass
class ResumeTimes:
    set_s: float = 0.0
    request_s: float = 0.0
    set_cpu_s: float = 0.0
    request_cpu_s: float = 0.0
    compactions: int = 0
    """Compactions of the first request (none when the stored state fits)."""
    collector_s: float = 0.0
    """Seconds the garbage collector ran within ``wall_s``."""
    full_collections: int = 0

    @property
    def cpu_s(self) -> float:
        return self.set_cpu_s + self.request_cpu_s

    @property
    def wall_s(self) -> float:
        """What the target reads: the time the user waits, worker threads and processes included."""
        return self.set_s + self.request_s

    @property
    def net_s(self) -> float:
        """``wall_s`` less the collector's pauses: the module's own work."""
        return self.wall_s - self.collector_s


@dataclass
class ResumeCosts:
    messages: int
    stored: ResumeTimes
    nothing_stored: ResumeTimes
    same_view: bool
    """The view resumed from the store is the one the session had before (it must be)."""


def _cpu() -> float:
    """CPU seconds of this process and of its children it has reaped (a child extracting facts)."""
    children = os.times()
    return time.process_time() + children.children_user + children.children_system


async def _resume(
    make: Any, store: SummaryStore, messages: list[dict[str, Any]], budget: int
) -> tuple[Any, ResumeTimes]:
    gc.collect()  # a restarted process holds no garbage of the session before it
    manager = make(store)
    times = ResumeTimes()
    with CollectorTime() as collector:
        wall, cpu = time.perf_counter(), _cpu()
        await manager.set_messages(messages)
        times.set_s, times.set_cpu_s = time.perf_counter() - wall, _cpu() - cpu
        wall, cpu = time.perf_counter(), _cpu()
        view = await manager.get_messages_for_request(token_budget=budget)
        times.request_s, times.request_cpu_s = time.perf_counter() - wall, _cpu() - cpu
    times.collector_s, times.full_collections = collector.seconds, collector.collections
    times.compactions = manager.stats["compactions"]
    # A served resume folds the working set between requests (``Compactor.fold_after_resume``): stopped here, so
    # the next measurement on this process is not charged with this session's background work.
    manager.compactor.stop_folding()
    return view, times


async def measure_resume(
    make: Any, store: SummaryStore, messages: list[dict[str, Any]], budget: int, live_view: list[dict[str, Any]]
) -> ResumeCosts:
    """``make(store)`` builds a manager as the session's was; ``store`` holds what the session stored."""
    view, stored = await _resume(make, store, messages, budget)
    _, nothing = await _resume(make, MemoryStore(), messages, budget)
    return ResumeCosts(len(messages), stored, nothing, view == live_view)
