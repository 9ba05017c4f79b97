"""The clock every deadline and waited time of the async path reads: the running event loop's.

A deadline is compared with the loop's timers (``asyncio.sleep``, ``wait_for``, ``asyncio.timeout`` all read
``loop.time()``), so it reads the same clock: on an ordinary loop that is ``time.monotonic()``, and on a loop
that keeps its own time (a virtual-time loop in a benchmark or a test, where a 30 s summary passes in
milliseconds) deadlines and timers agree without anyone patching this package. Outside a running loop (a
synchronous caller) it falls back to ``time.monotonic()``. CPU work is timed with ``time.perf_counter()``
instead: a loop's clock need not move while the loop's thread computes.
"""

from __future__ import annotations

import asyncio
import time


def now() -> float:
    """Seconds on the running loop's clock (``time.monotonic()`` when no loop runs in this thread)."""
    try:
        return asyncio.get_running_loop().time()
    except RuntimeError:
        return time.monotonic()
