"""How long the event loop stays blocked: a heartbeat task's lag.

A task sleeps ``interval_s`` again and again and notes how much later than asked it wakes: the longest such
lag is the longest stretch the loop spent without running anything else (a streaming UI, another session).
"""

from __future__ import annotations

import asyncio
import contextlib
import time


class Heartbeat:
    def __init__(self, interval_s: float = 0.001) -> None:
        self.interval_s = interval_s
        self.max_lag_s = 0.0
        self.beats = 0
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            asked = time.perf_counter()
            await asyncio.sleep(self.interval_s)
            lag = time.perf_counter() - asked - self.interval_s
            self.beats += 1
            self.max_lag_s = max(self.max_lag_s, lag)

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    def reset(self) -> None:
        self.max_lag_s = 0.0

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
