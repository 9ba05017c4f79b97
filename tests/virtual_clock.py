"""A fake clock that drives the event loop: time passes only when the loop would wait, and then at once.

With it a provider that hangs for an hour, per-attempt timeouts, retry backoff and the compaction deadline
all play out in virtual seconds within milliseconds of real time, and a test can measure how long a request
*would* have taken. The package reads its deadlines from the running loop's clock (``core.clock.now``), so
driving the loop's ``time`` drives them too: no module of the package is patched.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from amplifier_core import _async_compat


class VirtualClock:
    def __init__(self, start: float = 1_000.0) -> None:
        self.now = start

    def monotonic(self) -> float:
        return self.now

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Drive the running loop by this clock: its ``time()``, and so every deadline of the package, is it."""
        loop = asyncio.get_running_loop()
        selector = loop._selector  # type: ignore[attr-defined]
        real_select = selector.select
        real_run_in_executor = loop.run_in_executor
        working = [0]
        """Worker-thread calls under way (``asyncio.to_thread``): CPU work, which takes no virtual time."""

        def select(timeout: float | None = None) -> Any:
            ready = real_select(0)
            if not ready and working[0]:
                return real_select(timeout)  # a thread is still working: wait for it, the clock stays
            if not ready and timeout is not None and timeout > 0:
                self.now += timeout  # nothing to do until the next timer: jump to it
            return ready

        def run_in_executor(executor: Any, func: Any, *args: Any) -> Any:
            future = real_run_in_executor(executor, func, *args)
            working[0] += 1
            future.add_done_callback(lambda _: working.__setitem__(0, working[0] - 1))
            return future

        async def foreign(awaitable: Any) -> Any:
            """amplifier-core's hook registry answers from its own (Rust) threads: work under way, like a thread's."""
            working[0] += 1
            try:
                return await awaitable
            finally:
                working[0] -= 1

        monkeypatch.setattr(_async_compat, "_wrap", foreign)
        monkeypatch.setattr(loop, "time", self.monotonic)
        monkeypatch.setattr(selector, "select", select)
        monkeypatch.setattr(loop, "run_in_executor", run_in_executor)
