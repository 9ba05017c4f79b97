"""The progress bar every long command shows on stderr: ``compact``, ``inspect`` and ``eval`` replays.

Drawn only when stderr is a terminal (or when asked with ``--progress``), and only once the work has run
``DELAY_S``: a quick run prints nothing, anything longer shows a sign of life. tqdm draws it when installed (the
``[eval]`` extra); without tqdm it is one plain line redrawn at most ten times a second.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

DELAY_S = 1.0
"""Seconds of work before a bar appears: well under the couple of seconds a user waits before wondering."""


class Progress:
    """``label [#####.....] 1,200/60,000 messages  12 s``; ``update(n)`` counts on, ``progress(done, total)`` sets."""

    def __init__(
        self,
        total: int,
        label: str,
        enabled: bool,
        stream: TextIO | None = None,
        *,
        delay_s: float = DELAY_S,
        clock: Callable[[], float] = time.perf_counter,
        use_tqdm: bool = True,
        unit: str = "",
    ) -> None:
        self.total = max(total, 0)
        self.label, self.unit = label, unit
        self.enabled = enabled and self.total > 0
        self.stream = stream or sys.stderr
        self.done = 0
        self.delay_s, self.clock, self.use_tqdm = delay_s, clock, use_tqdm
        self.started_at = clock()
        self.shown = False
        self._bar: Any = None
        self._drawn = 0.0

    def __call__(self, done: int, total: int) -> None:
        """Set the count (a replay's callback: messages done of ``total``)."""
        if total != self.total:
            self.total = max(total, 0)
            if self._bar is not None:
                self._bar.total = self.total
        self.update(done - self.done)

    def update(self, n: int = 1) -> None:
        self.done += n
        if not self.enabled:
            return
        now = self.clock()
        if not self.shown:
            if now - self.started_at < self.delay_s:
                return  # quick so far (or done already): nothing to show
            self._start()
        if self._bar is not None:
            self._bar.update(self.done - self._bar.n)
            return
        if now - self._drawn >= 0.1 or self.done >= self.total:
            self._drawn = now
            filled = 30 * min(self.done, self.total) // max(self.total, 1)
            unit = f" {self.unit}" if self.unit else ""
            self.stream.write(
                f"\r{self.label} [{'#' * filled}{'.' * (30 - filled)}] {self.done:,}/{self.total:,}{unit}"
                f"  {now - self.started_at:.0f} s"
            )
            self.stream.flush()

    def _start(self) -> None:
        self.shown = True
        if not self.use_tqdm:
            return
        try:
            from tqdm import tqdm
        except ImportError:
            return
        size = shutil.get_terminal_size((80, 24))  # tqdm draws nothing on a terminal that reports size 0
        self._bar = tqdm(
            total=self.total,
            initial=self.done,  # drawn at once with the count so far: the bar starts late, not at zero
            desc=self.label,
            file=self.stream,
            leave=False,
            ncols=size.columns,
            nrows=size.lines,
            unit=f" {self.unit}" if self.unit else "it",
        )

    def close(self) -> None:
        """End the bar's line, so what is printed next (an error, ``interrupted``) starts a line of its own."""
        if not self.shown:
            return
        if self._bar is not None:
            self._bar.close()
        else:
            self.stream.write("\n")
            self.stream.flush()
        self.shown = False


def make_progress(
    total: int,
    label: str,
    quiet: bool = False,
    stream: TextIO | None = None,
    *,
    force: bool | None = None,
    unit: str = "",
) -> Progress:
    """A bar for ``total`` steps: on when ``force`` says so, else on a terminal unless ``quiet``; shown from
    ``DELAY_S`` on (at once when forced, so ``--progress`` always shows one)."""
    out = stream or sys.stderr
    enabled = force if force is not None else (not quiet and out.isatty())
    return Progress(total, label, enabled, out, delay_s=0.0 if force else DELAY_S, unit=unit)
