"""How fast the summarizer answers, measured: seconds per input token, so waits can follow a slow backend.

A local model on a couple of cores reads 5-6 ms a prompt token: a 10,000-token span takes about a minute, longer
than the compaction deadline (30 s), and every summary waited for in band would be cut. Each answered call is
timed against the tokens it was sent; a call cut by the deadline or the per-call timeout still says the backend
is at least that slow (its time over its tokens), so the estimate rises even when no call gets through. The
manager uses it to start slow summaries early (a prefetch), to give background summaries the time they need,
and, when summaries keep falling back anyway, to say once which key to change (``SlowWarning``).
"""

from __future__ import annotations

import logging
from collections import deque

from ..backends.base import Fault

logger = logging.getLogger(__name__)

WINDOW = 8
"""Calls the estimate is made from: the newest ones (a local server warms up; a busy one slows down)."""
MARGIN = 1.5
"""A summary is given this many times its expected time: calls vary (output length, a busy machine)."""
FLOOR_MARGIN = 4.0
"""Given no answered call, only a cut one: the backend needs more than the floor, by how much is unknown, so each
cut makes the next wait about four times as long (30 s, 2 min, 8 min: a real pace is reached in one or two cuts;
the wait never passes ``summarizer.timeout_s`` a call)."""
CUTS_BEFORE_WARNING = 3
"""Summaries in a row cut by a deadline or timeout, with none written between, before the one warning."""


class Pace:
    """Seconds per input token of the summarizer's calls (answered ones; cut ones as a floor)."""

    def __init__(self) -> None:
        self._calls: deque[tuple[float, int]] = deque(maxlen=WINDOW)
        self._floor = 0.0
        """Seconds per token at least, from the newest call that was cut short (reset by an answered call)."""

    def answered(self, seconds: float, input_tokens: int) -> None:
        if input_tokens > 0 and seconds >= 0:
            self._calls.append((seconds, input_tokens))
            self._floor = 0.0

    def cut(self, seconds: float, input_tokens: int) -> None:
        """A call cut after ``seconds``: the backend needs more than that for ``input_tokens``."""
        if input_tokens > 0 and seconds > 0:
            self._floor = max(self._floor, seconds / input_tokens)

    @property
    def known(self) -> bool:
        return bool(self._calls) or self._floor > 0

    def _measured(self) -> float:
        tokens = sum(t for _, t in self._calls)
        return sum(s for s, _ in self._calls) / tokens if tokens else 0.0

    @property
    def seconds_per_token(self) -> float:
        return max(self._measured(), self._floor)

    def expected_s(self, input_tokens: int) -> float:
        """Seconds a summary of ``input_tokens`` is expected to take (0 while nothing is measured)."""
        return self.seconds_per_token * max(input_tokens, 0)

    def allowance_s(self, input_tokens: int) -> float:
        """Seconds to give a summary of ``input_tokens``: its expected time with a margin."""
        return self.expected_s(input_tokens) * (FLOOR_MARGIN if self._floor > self._measured() else MARGIN)


class SlowWarning:
    """Says once, at WARNING, that summaries keep falling back because the summarizer is slower than the time it
    is given, with the measured pace and the key to change: ``compaction_deadline_s`` when the deadline cut them,
    ``summarizer.timeout_s`` when single calls timed out."""

    KEYS = {Fault.DEADLINE: "compaction_deadline_s", Fault.TIMEOUT: "summarizer.timeout_s"}

    def __init__(self, pace: Pace, deadline_s: float, timeout_s: float) -> None:
        self.pace, self.deadline_s, self.timeout_s = pace, deadline_s, timeout_s
        self.cuts = 0
        self.warned: str | None = None
        """The message, once said."""

    def written(self) -> None:
        """The LLM wrote a summary: a run of cuts ends."""
        self.cuts = 0

    def fell_back(self, category: str | None) -> None:
        """``category``: a payload's ``fallback`` (a ``Fault`` or ``Skip``, or its string)."""
        fault = Fault.named(category)
        if fault is None or fault not in self.KEYS:
            return
        self.cuts += 1
        if self.cuts < CUTS_BEFORE_WARNING or self.warned is not None:
            return
        key = self.KEYS[fault]
        given = self.deadline_s if fault == Fault.DEADLINE else self.timeout_s
        ms = self.pace.seconds_per_token * 1000
        pace = f"it reads about {ms:.1f} ms per input token" if ms else "no summary call has finished yet"
        self.warned = (
            f"summaries keep falling back to the offline summary ({self.cuts} in a row, {category}): the summarizer "
            f"is slower than the {given:g} s it is given ({pace}); raise {key}"
            + (" (and summarizer.timeout_s, the longest single call)" if key == "compaction_deadline_s" else "")
            + ", or use a faster summarizer"
        )
        logger.warning(self.warned)
