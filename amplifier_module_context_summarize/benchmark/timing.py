"""Timing helpers: timeit-style batches with the collector paused, and a clock on the summarizer."""

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
