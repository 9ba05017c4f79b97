"""One compaction as a value: its inputs, the planning questions a strategy asks, and its report.

A strategy is handed a ``Compaction`` and returns the new ``CompactionState``; everything it needs to
plan (token counts of a candidate view, where a cut may fall) is asked through this object, so the
strategies hold no state of their own and never reach into the manager.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from .history import History
from .invariants import last_allowed_cut
from .plan import Limits, choose_boundary
from .state import TRUNCATION_MARKER_TOKENS, CompactionState, Shown, pin_for, shown
from .tokens import TokenCounter


@dataclass
class CompactionReport:
    """What one compaction did; the ``context:post_compact`` event and the stats are made from it."""

    provider_calls: int = 0
    cache_hits: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    fallback: str | None = None

    def note_fallback(self, category: str | None) -> None:
        self.fallback = self.fallback or category


@dataclass
class Compaction:
    """The inputs of one compaction and the planning questions about them."""

    history: History
    state: CompactionState
    limits: Limits
    system_tokens: int
    """Tokens of the system part of the view (kept apart from the groups)."""
    counter: TokenCounter
    summary_allowance: int
    """Output cap of one summary: the room a new segment summary is planned with."""
    provider: Any | None = None
    deadline: float | None = None
    """``time.monotonic()`` value past which no summarizer call runs."""
    working_set_tokens: int = 0
    """Most tokens the working set (the summary message's last section) may take."""
    report: CompactionReport = field(default_factory=CompactionReport)
    _memo: dict[int, tuple[CompactionState, Shown]] = field(default_factory=dict, repr=False)

    def shown(self, state: CompactionState) -> Shown:
        """What ``state`` shows before the tail (remembered: planning asks about the same states repeatedly)."""
        known = self._memo.get(id(state))
        if known is None or known[0] is not state:
            shows = shown(state, self.history, self.counter, self.summary_allowance, self.working_set_tokens)
            known = self._memo[id(state)] = (state, shows)
        return known[1]

    def remember(self, state: CompactionState, shows: Shown) -> None:
        """What the caller already knows ``state`` shows (the current state: its summary is not recounted)."""
        self._memo[id(state)] = (state, shows)

    def view_tokens(self, state: CompactionState) -> int:
        tail = self.history.total - self.history.prefix[state.boundary]
        return self.system_tokens + self.shown(state).tokens + tail

    def fits(self, state: CompactionState) -> bool:
        return self.view_tokens(state) <= self.limits.budget

    def fitting_boundary(self, state: CompactionState, summary_tokens: int, limits: Limits | None = None) -> int:
        """Where to cut so a view with this much summary (and the request it will pin) meets ``limits``."""
        limits = limits or self.limits
        history, fixed = self.history, self.system_tokens + summary_tokens
        last = last_allowed_cut(history)
        end = choose_boundary(history.prefix, state.boundary, last, fixed, limits)
        pinned = pin_for(history, end, self.counter, self.summary_allowance)
        if pinned is not None:
            end = choose_boundary(history.prefix, state.boundary, last, fixed + pinned[1], limits)
        return end

    def moves(self, state: CompactionState, end: int) -> bool:
        """Cutting at ``end`` removes something a summary could stand for (not only system messages)."""
        prefix = self.history.prefix
        return end > state.boundary and prefix[end] != prefix[state.boundary]

    def truncated(self, state: CompactionState, limits: Limits | None = None) -> CompactionState:
        """The bottom rung: whole oldest groups dropped; a summary already shown stays, else a marker leads."""
        room = self.shown(state).summary_tokens if state.segments else TRUNCATION_MARKER_TOKENS
        return state.cut(self.fitting_boundary(state, room, limits))


class Strategy(Protocol):
    """Turns one compaction into a new state. ``name`` is what events report."""

    name: str

    async def compact(self, job: Compaction) -> CompactionState: ...
