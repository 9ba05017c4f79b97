"""A virtual-time event loop: a session of 1-5 s turns and 30 s summaries runs in seconds of wall time.

Time passes only when every task waits and no worker thread is busy (the module runs its heaviest pure
functions in one, ``asyncio.to_thread``): the loop then jumps straight to its next timer. CPU work takes no
virtual time, so a benchmark measures the module's own work for real (``time.perf_counter``) and the waits
(for the summarizer, the agent's turns) virtually. The package's deadlines read the running loop's clock
(``core.clock.now``), so on this loop they read its virtual time and agree with its timers; nothing is patched.
"""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Callable, Coroutine
from concurrent.futures import Executor
from typing import Any, TypeVar, TypeVarTuple

T = TypeVar("T")
Ts = TypeVarTuple("Ts")
START = 1_000.0


class _JumpingSelector(selectors.DefaultSelector):
    """Never sleeps: when nothing is ready, it moves the clock to the loop's next timer instead, unless a worker
    thread is busy: then it waits for real (the thread's result wakes it), and the clock stays."""

    def __init__(self, clock: VirtualClock) -> None:
        super().__init__()
        self.clock = clock
        self.working = 0
        """Worker-thread calls under way (``_VirtualLoop.run_in_executor``)."""

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        ready = super().select(0)
        if not ready and self.working:
            return super().select(timeout)
        if not ready and timeout is not None and timeout > 0:
            self.clock.now += timeout
        return ready


class VirtualClock:
    def __init__(self) -> None:
        self.now = START

    def monotonic(self) -> float:
        return self.now


class _VirtualLoop(asyncio.SelectorEventLoop):
    def __init__(self, clock: VirtualClock) -> None:
        self.selector = _JumpingSelector(clock)
        super().__init__(self.selector)
        self.clock = clock

    def time(self) -> float:
        return self.clock.now

    def run_in_executor(self, executor: Executor | None, func: Callable[[*Ts], T], *args: *Ts) -> asyncio.Future[T]:
        """Counted while under way, so time does not jump past work a thread is still doing."""
        selector = self.selector
        future = super().run_in_executor(executor, func, *args)
        selector.working += 1

        def done(_: asyncio.Future[Any]) -> None:
            selector.working -= 1

        future.add_done_callback(done)
        return future


def run(main: Coroutine[Any, Any, T], clock: VirtualClock | None = None) -> T:
    """Run ``main`` to completion on a virtual-time loop (not from inside a running loop)."""
    clock = clock or VirtualClock()
    loop = _VirtualLoop(clock)
    try:
        return loop.run_until_complete(main)
    finally:
        _cancel_leftovers(loop)
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()


def _cancel_leftovers(loop: asyncio.AbstractEventLoop) -> None:
    """As ``asyncio.run`` does: tasks still pending (a background summary) are cancelled and let finish."""
    leftovers = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in leftovers:
        task.cancel()
    if leftovers:
        loop.run_until_complete(asyncio.gather(*leftovers, return_exceptions=True))
