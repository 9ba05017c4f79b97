"""Timing helpers: timeit-style batches with the collector paused, the collector's own time, and a clock on the
summarizer."""

from __future__ import annotations

import gc
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..manager import SummarizingContextManager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Like ``timeit``: a collection landing inside one batch would be noise, not the code's cost."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class CollectorTime:
    """Seconds the cyclic garbage collector runs inside the ``with`` block (``gc.callbacks``), so one wall time can
    be read both as the user waits and net of the collector, whose pauses follow the whole process's heap."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.collections = 0
        """Full collections (generation 2) among them: the long pauses."""
        self.longest = 0.0
        """The longest single pause."""
        self._began: float | None = None

    def _on_gc(self, phase: str, info: dict[str, Any]) -> None:
        now = time.perf_counter()
        if phase == "start":
            self._began = now
        elif self._began is not None:
            pause, self._began = now - self._began, None
            self.seconds += pause
            self.longest = max(self.longest, pause)
            self.collections += info.get("generation") == 2

    def start(self) -> None:
        gc.callbacks.append(self._on_gc)

    def stop(self) -> None:
        gc.callbacks.remove(self._on_gc)

    def __enter__(self) -> CollectorTime:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()


class SummarizerClock:
    """Times a manager's summarizer entry points, so planning and prompting can be told apart."""

    def __init__(self, manager: SummarizingContextManager) -> None:
        self.seconds = 0.0
        self.calls: dict[str, int] = defaultdict(int)
        self.span_messages = 0
        summarizer = manager.summarizer
        for name in ("summarize", "merge"):
            setattr(summarizer, name, self._timed(name, getattr(summarizer, name)))

    def _timed(self, name: str, method: Any) -> Any:
        async def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return await method(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - started
                self.calls[name] += 1
                if name == "summarize" and args:
                    self.span_messages += len(args[0])

        return timed
