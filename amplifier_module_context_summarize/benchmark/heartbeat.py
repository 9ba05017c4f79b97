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
import gc
import time
from typing import Any


class Heartbeat:
    def __init__(self, interval_s: float = 0.001) -> None:
        self.interval_s = interval_s
        self.max_lag_s = 0.0
        """Longest lag less the collector's pauses in that beat."""
        self.max_raw_lag_s = 0.0
        """Longest lag as seen, collector pauses included."""
        self.max_gc_s = 0.0
        """Longest single pause of the garbage collector."""
        self.beats = 0
        self._task: asyncio.Task[None] | None = None
        self._collecting: float | None = None
        self._collected_s = 0.0
        """Seconds the collector has run since ``start``."""

    def _on_gc(self, phase: str, _info: dict[str, Any]) -> None:
        now = time.perf_counter()
        if phase == "start":
            self._collecting = now
        elif self._collecting is not None:
            pause, self._collecting = now - self._collecting, None
            self._collected_s += pause
            self.max_gc_s = max(self.max_gc_s, pause)

    async def _run(self) -> None:
        while True:
            asked, collected = time.perf_counter(), self._collected_s
            await asyncio.sleep(self.interval_s)
            lag = time.perf_counter() - asked - self.interval_s
            self.beats += 1
            self.max_raw_lag_s = max(self.max_raw_lag_s, lag)
            self.max_lag_s = max(self.max_lag_s, lag - (self._collected_s - collected))

    def start(self) -> None:
        gc.callbacks.append(self._on_gc)
        self._task = asyncio.get_running_loop().create_task(self._run())

    def reset(self) -> None:
        self.max_lag_s = self.max_raw_lag_s = self.max_gc_s = 0.0

    async def stop(self) -> None:
        with contextlib.suppress(ValueError):
            gc.callbacks.remove(self._on_gc)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
