"""How long the event loop stays blocked: a heartbeat task's lag.

A task sleeps ``interval_s`` again and again and notes how much later than asked it wakes: the longest such
lag is the longest stretch the loop spent without running anything else (a streaming UI, another session).

The interpreter's cyclic garbage collector also stops the loop while it runs, for a time that follows the
whole process's heap (a full collection with 50,000 messages held, by the manager and by the benchmark itself:
up to a quarter of a second on CPython 3.11), not the code that happened to allocate when it started. So the
lag is kept twice: as seen (``max_raw_lag_s``) and net of the collector's pauses within the same beat
(``max_lag_s``, the module's own work), with the longest pause itself (``max_gc_s``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time

from .timing import CollectorTime


class Heartbeat:
    def __init__(self, interval_s: float = 0.001) -> None:
        self.interval_s = interval_s
        self.max_lag_s = 0.0
        """Longest lag less the collector's pauses in that beat."""
        self.max_raw_lag_s = 0.0
        """Longest lag as seen, collector pauses included."""
        self.beats = 0
        self._task: asyncio.Task[None] | None = None
        self._collector = CollectorTime()
        """The collector's pauses since ``start``."""

    @property
    def max_gc_s(self) -> float:
        """Longest single pause of the garbage collector."""
        return self._collector.longest

    @property
    def full_collections(self) -> int:
        """Full collections (generation 2) since ``start`` or the last ``reset``."""
        return self._collector.collections

    async def _run(self) -> None:
        collector = self._collector
        while True:
            asked, collected = time.perf_counter(), collector.seconds
            await asyncio.sleep(self.interval_s)
            lag = time.perf_counter() - asked - self.interval_s
            self.beats += 1
            self.max_raw_lag_s = max(self.max_raw_lag_s, lag)
            self.max_lag_s = max(self.max_lag_s, lag - (collector.seconds - collected))

    def start(self) -> None:
        self._collector.start()
        self._task = asyncio.get_running_loop().create_task(self._run())

    def reset(self) -> None:
        self.max_lag_s = self.max_raw_lag_s = self._collector.longest = 0.0
        self._collector.collections = 0

    async def stop(self) -> None:
        with contextlib.suppress(ValueError):
            self._collector.stop()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
