"""A progress bar on stderr: tqdm when installed, else a plain one; silent when stderr is not a terminal."""

from __future__ import annotations

import shutil
import sys
import time
from typing import Any, TextIO


class Progress:
    def __init__(self, total: int, label: str, enabled: bool, stream: TextIO | None = None) -> None:
        self.total = max(total, 0)
        self.label = label
        self.enabled = enabled and self.total > 0
        self.stream = stream or sys.stderr
        self.done = 0
        self._bar: Any = None
        self._drawn = 0.0
        self._started = False

    def _start(self) -> None:
        """Draw from the first update on, so a bar for a later phase does not sit at 0% meanwhile."""
        self._started = True
        try:
            from tqdm import tqdm
        except ImportError:
            return
        size = shutil.get_terminal_size((80, 24))  # tqdm draws nothing on a terminal that reports size 0
        self._bar = tqdm(
            total=self.total, desc=self.label, file=self.stream, leave=False, ncols=size.columns, nrows=size.lines
        )

    def update(self, n: int = 1) -> None:
        self.done += n
        if not self.enabled:
            return
        if not self._started:
            self._start()
        if self._bar is not None:
            self._bar.update(n)
            return
        now = time.monotonic()
        if now - self._drawn >= 0.1 or self.done >= self.total:
            self._drawn = now
            filled = int(30 * self.done / self.total)
            self.stream.write(f"\r{self.label} [{'#' * filled}{'.' * (30 - filled)}] {self.done}/{self.total}")
            self.stream.flush()

    def close(self) -> None:
        if not self.enabled or not self._started:
            return
        if self._bar is not None:
            self._bar.close()
        else:
            self.stream.write("\r" + " " * (len(self.label) + 50) + "\r")
            self.stream.flush()


def make_progress(total: int, label: str, quiet: bool, stream: TextIO | None = None) -> Progress:
    out = stream or sys.stderr
    return Progress(total, label, enabled=not quiet and out.isatty(), stream=out)
