"""What a compaction's plan reads: one history under one budget, asked as plain synchronous questions.

``PlanFacts`` answers the planning questions (token counts of a candidate view, where a cut may fall, how far
masking reaches) over the history's prefix sums, the masked forms and the summary a state shows. Its answers are
remembered per state, so a plan that asks about the same state again pays nothing; the executor works out the
costly ones (a long session's summary message, its working set) off the event loop before the plan asks
(``settle``, ``settle_working_set``), and the plan reads them without awaiting anything.
"""

from __future__ import annotations

import asyncio
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import overload

from ...core.history import History
from ...core.invariants import last_allowed_cut
from ...core.plan import Limits, choose_boundary, near_target
from ...core.state import TRUNCATION_MARKER_TOKENS, CompactionState, Segment, Shown, pins_for
from ...core.tokens import TokenCounter
from ...working_set.index import index_of
from ..view.masking import Masks
from ..view.splice import shown, summary_message, working_set_room
from .warm import let_loop_run

PIN_PASSES = 3
"""Pinned requests are the first and the latest: the pinned set can change at most twice as the cut moves."""


ShownKey = tuple[int, tuple[Segment, ...]]


def shown_key(state: CompactionState) -> ShownKey:
    """What a state's summary message and pins are a function of: its boundary and its segments (not its mask end)."""
    return state.boundary, state.segments


@dataclass
class PlanFacts:
    """One history under one budget, as a compaction's plan reads it."""

    history: History
    limits: Limits
    system_tokens: int
    """Tokens of the system part of the view (kept apart from the groups)."""
    counter: TokenCounter
    summary_allowance: int
    """Output cap of one summary: the room a new segment summary is planned with."""
    working_set_tokens: int = 0
    """Tokens the working set (the summary message's last section) may always take."""
    summary_room: int = 0
    """The summary's whole room: the working set may also take what the segment summaries leave of it."""
    masks: Masks | None = None
    """Masked forms of the groups, when observation masking is on."""
    recall_tool: str | None = None
    """The mounted recall tool the summary's preamble names (none: it names no tool)."""
    summarizer: bool = True
    """An LLM writes summaries (False: the extractive summarizer does, at no cost)."""
    stand_in_above: int | None = None
    """A summary step whose span, as the summarizer reads it, is longer than this is written by the extractive
    summarizer now and by the LLM in the background (``Writer.STAND_IN``); None: always as the plan says. Set for a
    request's in-band compaction when background compaction is on (``attempt_of``)."""
    prefetched_end: int | None = None
    """End of a stored segment from the boundary that brings the view near the target (a prefetch), when the
    executor looked for one."""
    _shown: dict[ShownKey, Shown] = field(default_factory=dict, repr=False)
    """By what a state's summary and pins depend on (``shown_key``): the states a plan weighs that differ only in
    how far they mask share one count of the summary message (tens of ms late in a long session)."""
    _working_set: dict[tuple[Segment, ...], int] = field(default_factory=dict, repr=False)

    def shown(self, state: CompactionState) -> Shown:
        """What ``state`` shows before the tail (remembered: a plan asks about the same states repeatedly)."""
        known = self._shown.get(shown_key(state))
        if known is None:
            known = self._shown[shown_key(state)] = shown(
                state,
                self.history,
                self.counter,
                self.summary_allowance,
                self.working_set_tokens,
                self.recall_tool,
                self.summary_room,
            )
        return known

    def remember(self, state: CompactionState, shows: Shown) -> None:
        """What the caller already knows ``state`` shows (the current state: its summary is not recounted)."""
        self._shown[shown_key(state)] = shows

    async def settle(self, state: CompactionState) -> None:
        """Work out ``shown(state)`` with the event loop let run between writing the summary message and counting
        it, and the counting (a pure function of a message of its own) done in a worker thread."""
        if shown_key(state) in self._shown:
            return
        await let_loop_run()
        if state.segments:  # the message below finds this render kept, its count made in a worker thread
            room = working_set_room(state, self.working_set_tokens, self.summary_room)
            history = self.history
            await index_of(history).render_off_loop(state.segments[-1].end, room, history.counter.count_text)
        summary = summary_message(state, self.history, self.working_set_tokens, self.recall_tool, self.summary_room)
        await let_loop_run()
        tokens = await asyncio.to_thread(self.counter.count_message, summary) if summary is not None else 0
        pins = pins_for(self.history, state.boundary, self.counter, self.summary_allowance)
        self._shown[shown_key(state)] = Shown(summary, tokens).pinning(pins)

    async def settle_working_set(self, state: CompactionState) -> None:
        """Work out ``working_set_shown(state)``: late in a long session, laying the working set out holds the loop
        for tens of milliseconds, and counting it for as long again: other tasks run before the layout, and the
        text is counted once, in a worker thread."""
        if state.segments in self._working_set:
            return
        tokens = 0
        if state.segments:
            history = self.history
            room = working_set_room(state, self.working_set_tokens, self.summary_room)
            await let_loop_run()
            index = index_of(history)
            tokens = await index.tokens_off_loop(state.segments[-1].end, room, history.counter.count_text)
        self._working_set[state.segments] = tokens

    def working_set_shown(self, state: CompactionState) -> int:
        """Tokens the working set takes in ``state``'s summary message (the segment summaries share the rest)."""
        known = self._working_set.get(state.segments)
        if known is None:
            known = 0
            if state.segments:
                room = working_set_room(state, self.working_set_tokens, self.summary_room)
                count = self.history.counter.count_text
                known = count(index_of(self.history).render(state.segments[-1].end, room, count))
            self._working_set[state.segments] = known
        return known

    def view_tokens(self, state: CompactionState) -> int:
        return self.system_tokens + self.shown(state).tokens + self.groups_tokens(state, state.boundary)

    def groups_tokens(self, state: CompactionState, start: int) -> int:
        """Tokens of the groups from ``start`` as ``state`` shows them (masked up to its mask end)."""
        history, tail = self.history, max(start, state.tail_start)
        masked = self.masks.tokens(start, tail) if self.masks is not None else 0
        return masked + history.total - history.prefix[tail]

    def fits(self, state: CompactionState) -> bool:
        return self.view_tokens(state) <= self.limits.budget

    @property
    def near_target(self) -> int:
        """A view this small leaves nearly all the room the target would: no further rung is worth paying for."""
        return near_target(self.limits)

    def within_target(self, state: CompactionState) -> bool:
        return self.view_tokens(state) <= self.near_target

    def masked(self, state: CompactionState, limit: int | None = None) -> CompactionState:
        """The cheapest rung: mask the oldest shown groups until the view meets the target, or as far as allowed.

        Allowed: up to the groups holding the newest ``keep_recent`` tool outputs, or up to ``limit`` (a
        summary's planned end: groups it would take whole may as well be masked instead).
        """
        masks = self.masks
        if masks is None:
            return state
        start = state.tail_start
        limit = min(masks.limit() if limit is None else limit, last_allowed_cut(self.history))
        excess = self.view_tokens(state) - self.limits.target
        if limit <= start or excess <= 0:
            return state
        prefix = self.history.prefix

        def saved(end: int) -> int:
            return prefix[end] - prefix[start] - masks.tokens(start, end)

        low, high = start + 1, limit
        if saved(high) <= excess:
            return state.masked_to(high)
        while low < high:  # the nearest end that saves enough (savings only grow with the end)
            middle = (low + high) // 2
            if saved(middle) >= excess:
                high = middle
            else:
                low = middle + 1
        return state.masked_to(low)

    def fitting_boundary(self, state: CompactionState, summary_tokens: int, limits: Limits | None = None) -> int:
        """Where to cut so a view with this much summary (and the request it will pin) meets ``limits``."""
        limits = limits or self.limits
        history, fixed = self.history, self.system_tokens + summary_tokens
        last = last_allowed_cut(history)
        prefix = self._shown_prefix(state)
        end, pinned = choose_boundary(prefix, state.boundary, last, fixed, limits), 0
        for _ in range(PIN_PASSES):  # a further cut may pin another request (first, then latest): plan with it
            now = sum(tokens for _, tokens in pins_for(history, end, self.counter, self.summary_allowance))
            if now == pinned:
                break
            pinned, end = now, choose_boundary(prefix, state.boundary, last, fixed + now, limits)
        return end

    def end_with_span(self, state: CompactionState, end: int, tokens: int) -> int | None:
        """The nearest cut from ``end`` on whose span ``[boundary, cut)``, as a summarizer reads it, has ``tokens``
        or more; None when no cut up to the last allowed one has."""
        start, last = state.boundary, last_allowed_cut(self.history)
        cuts = range(end, last + 1)
        found = bisect_left(cuts, tokens, key=lambda cut: self.span_tokens(start, cut))
        return cuts[found] if found < len(cuts) else None

    def span_tokens(self, start: int, end: int) -> int:
        """Tokens of groups ``[start, end)`` as a summarizer reads them (masked when masking is on)."""
        if self.masks is not None:
            return self.masks.tokens(start, end)
        return self.history.prefix[end] - self.history.prefix[start]

    def _shown_prefix(self, state: CompactionState) -> Sequence[int]:
        if self.masks is None or state.tail_start <= state.boundary:
            return self.history.prefix
        return ShownPrefix(self.history.prefix, self.masks, state.boundary, state.tail_start)

    def moves(self, state: CompactionState, end: int) -> bool:
        """Cutting at ``end`` removes something a summary could stand for (not only system messages)."""
        prefix = self.history.prefix
        return end > state.boundary and prefix[end] != prefix[state.boundary]

    def truncated(self, state: CompactionState, limits: Limits | None = None) -> CompactionState:
        """The bottom rung: whole oldest groups dropped; a summary already shown stays, else a marker leads."""
        room = self.shown(state).summary_tokens if state.segments else TRUNCATION_MARKER_TOKENS
        return state.cut(self.fitting_boundary(state, room, limits))


class ShownPrefix(Sequence[int]):
    """Token prefix sums of the groups as a view shows them, groups ``[start, mask_end)`` masked.

    Planning bisects over it like over the history's own prefix sums; only the entries a search
    touches are worked out.
    """

    def __init__(self, prefix: Sequence[int], masks: Masks, start: int, mask_end: int) -> None:
        self.prefix, self.masks, self.start, self.mask_end = prefix, masks, start, mask_end
        self._saved = prefix[mask_end] - prefix[start] - masks.tokens(start, mask_end)

    def __len__(self) -> int:
        return len(self.prefix)

    @overload
    def __getitem__(self, index: int) -> int: ...

    @overload
    def __getitem__(self, index: slice) -> list[int]: ...

    def __getitem__(self, index: int | slice) -> int | list[int]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        index = index + len(self) if index < 0 else index
        prefix = self.prefix
        if index <= self.start:
            return prefix[index]
        if index <= self.mask_end:
            return prefix[self.start] + self.masks.tokens(self.start, index)
        return prefix[index] - self._saved
