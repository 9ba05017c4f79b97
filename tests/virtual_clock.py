"""A fake clock that drives the event loop: time passes only when the loop would wait, and then at once.

With it a provider that hangs for an hour, per-attempt timeouts, retry backoff and the compaction deadline
all play out in virtual seconds within milliseconds of real time, and a test can measure how long a request
*would* have taken. The loop's ``time`` and the package's ``time.monotonic`` read the same clock.
"""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace
from typing import Any

import pytest


class VirtualClock:
    def __init__(self, start: float = 1_000.0) -> None:
        self.now = start

    def monotonic(self) -> float:
        return self.now

    def install(self, monkeypatch: pytest.MonkeyPatch, *modules: Any) -> None:
        """Drive the running loop by this clock, and give ``modules`` a ``time`` whose ``monotonic`` is it."""
        loop = asyncio.get_running_loop()
        selector = loop._selector  # type: ignore[attr-defined]
        real_select = selector.select

        def select(timeout: float | None = None) -> Any:
            ready = real_select(0)
            if not ready and timeout is not None and timeout > 0:
                self.now += timeout  # nothing to do until the next timer: jump to it
            return ready

        monkeypatch.setattr(loop, "time", self.monotonic)
        monkeypatch.setattr(selector, "select", select)
        fake_time = SimpleNamespace(monotonic=self.monotonic, perf_counter=time.perf_counter, time=time.time)
        for module in modules:
            monkeypatch.setattr(module, "time", fake_time)
