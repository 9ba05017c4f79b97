"""What a session's plan stores beside its summaries, so a resumed session shows the same view: the cuts it
installed (with their text when it is not the stored summary: a fallback, or a stand-in, marked as one), where
truncation put the boundary past them, where its masking reached, the working set its summary shows, and what a
``context:post_compact`` hook put back after it (in a CLI every turn is a new process: the hook's plan must outlive
it; the records are typed in ``stores/records.py``, which writes them as the rows stores have always held).

After every install the compactor records what changed; a resume reads the records of its own plan back against
its history, and takes only those that name this history's chain (a store shared by forks and other budgets holds
others' too). Every read goes through the store's own checks (``within`` sizes them for a working set).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from ...config import Config
from ...core.history import History
from ...core.messages import encodable
from ...core.state import CompactionState, Segment
from ...core.tokens import counts_exactly
from ...stores import SummaryStore
from ...stores.records import (
    CutKey,
    CutRecord,
    DropKey,
    DropRecord,
    InjectionKey,
    InjectionRecord,
    MaskEndKey,
    MaskEndRecord,
    SegmentKey,
    StandInKey,
    StandInRecord,
    WorkingSetKey,
    WorkingSetRecord,
    read,
    text_digest,
)
from ...working_set.index import RENDER_VERSION, index_of
from .keys import plan_tag, state_key

WORKING_SET_MAX_TOKENS = 2**20
"""Largest working set read back from a store (a room that size is a summary's share of a ~10M-token window); each
row must also fit the room it names."""


INJECTION_MAX_TOKENS = 2**20
"""Largest injected text read back from a store (it was clipped to the pins' room, at most half a window)."""


class PlanRecords:
    """The records of this session's plan in ``store``: written after each install, read back by a resume.

    A store never raises (``CheckedStore`` makes a faulty one a miss), so neither does any method here.
    """

    def __init__(self, config: Config, store: SummaryStore, planner: str, stores_cuts: bool) -> None:
        self.config = config
        self.store = store
        self.planner = planner
        """The strategy's plan family (``Strategy.plans_as``), part of every plan tag."""
        self.stores_cuts = stores_cuts
        self._working_set_recorded: tuple[WorkingSetKey, str, str, int] | None = None
        """The working set stored last (key, tag, end, room), so an install of the same summary stores nothing."""

    def plan(self, wire_budget: int) -> str:
        """This session's plan tag at ``wire_budget`` (``resume.plan_tag``)."""
        return plan_tag(self.planner, self.config, wire_budget)

    async def record_cuts(
        self,
        history: History,
        before: CompactionState,
        state: CompactionState,
        wire: int,
        stand_ins: Mapping[Segment, tuple[int | None, int]] | None = None,
    ) -> None:
        """Store the segments ``state`` installed since ``before``, so a resume with the same plan takes them and
        one with another does not.

        A segment whose text is not the one summary stored for its span (a fallback is never stored as a segment, so
        a later LLM call may still pay for the span; a merge no smaller than its parts; a span stored under two
        focuses) carries its text in the cut: a resume shows what this session showed, and pays for nothing. One of
        ``stand_ins`` (segment: the size its summary was asked for, its span's tokens) gets a mark beside its cut
        (``StandInRecord``): its text stands in for the LLM's, which a resume still owes; a fallback gets none, and
        is never rewritten.
        """
        if not self.stores_cuts:
            return
        known, plan = set(before.segments), self.plan(wire)
        for segment in state.segments:
            if segment not in known:
                start, end = history.chain_at(segment.start), history.chain_at(segment.end)
                groups = segment.end - segment.start
                same = [r for r in await read(self.store, SegmentKey(start)) if (r.end, r.groups) == (end, groups)]
                record = CutRecord(CutKey(plan, start), end, groups)
                if [r.text for r in same] != [segment.text]:
                    record = CutRecord(record.key, end, groups, segment.text, segment.tokens, segment.tier)
                    if stand_ins is not None and segment in stand_ins:
                        max_tokens, span_tokens = stand_ins[segment]
                        digest = text_digest(segment.text)
                        mark = StandInRecord(StandInKey(plan, start), end, groups, digest, max_tokens, span_tokens)
                        await self.store.put(mark.row())
                await self.store.put(record.row())

    async def record_drop(self, history: History, before: CompactionState, state: CompactionState, wire: int) -> None:
        """Store where truncation put the boundary past the summary, when it moved: the cut a plan would make again
        depends on what came before (a denying hook's postponements), so a resume reads it rather than recompute it."""
        dropped_from = state.summarized_end
        if not self.stores_cuts or state.boundary <= dropped_from:
            return
        if (state.boundary, dropped_from) == (before.boundary, before.summarized_end):
            return
        key = DropKey(self.plan(wire), history.chain_at(dropped_from))
        await self.store.put(DropRecord(key, history.chain_at(state.boundary), state.boundary - dropped_from).row())

    async def dropped_to(self, history: History, summary_end: int, plan: str) -> int:
        """The furthest boundary the plan ``plan`` recorded past a summary of ``history`` ending at ``summary_end``
        (``summary_end`` when none): truncation only moves it forward while the summary stays."""
        best = summary_end
        for record in await read(self.store, DropKey(plan, history.chain_at(summary_end))):
            end = summary_end + record.groups
            if best < end <= history.last_cuttable and history.chain_at(end) == record.end:
                best = end
        return best

    async def mask_end(self, history: History, boundary: int, plan: str) -> int:
        """The furthest mask end the plan ``plan`` recorded for this history at ``boundary`` (0 when none)."""
        best = 0
        for record in await read(self.store, MaskEndKey(plan, history.chain_at(boundary))):
            end = boundary + record.groups
            if best < end <= history.last_cuttable and history.chain_at(end) == record.end:
                best = end
        return best

    async def record_mask_end(
        self, history: History, before: CompactionState, state: CompactionState, wire: int
    ) -> None:
        """Store where masking reached, when it moved, so a resumed session shows the same masked view."""
        if state.mask_end <= state.boundary:
            return
        if state.mask_end == before.mask_end and state.boundary == before.boundary:
            return
        key = MaskEndKey(self.plan(wire), history.chain_at(state.boundary))
        record = MaskEndRecord(key, history.chain_at(state.mask_end), state.mask_end - state.boundary)
        await self.store.put(record.row())

    async def working_set(self, history: History, end: int) -> list[WorkingSetRecord]:
        """The stored working sets of ``history``'s groups ``[0, end)`` that may be served: this end and chain, this
        render version and counter, and text that fits the room it names (one per room)."""
        tag, count = working_set_tag(history), history.counter.count_text
        rows = self.store.within(WORKING_SET_MAX_TOKENS)
        return [
            record
            for record in await read(rows, working_set_key(history))
            if record.groups == end and record.tag == tag and record.end == history.chain_at(end)
            if count(record.text) <= record.room
        ]

    async def seed_working_set(self, history: History, end: int) -> None:
        """Hand the working set's index the texts stored for ``history``'s groups ``[0, end)``, one per room."""
        for record in await self.working_set(history, end):
            index_of(history).seed(end, record.room, record.text)

    async def record_working_set(self, history: History, state: CompactionState, room: int) -> None:
        """Store the working set the summary of ``state`` shows in ``room``, so a resume need not extract the history.

        The view has just rendered it (the index keeps that render), so this costs a count and a put. A text with a
        lone surrogate is not stored: the store's check would serve it scrubbed, not as rendered.
        """
        if not state.segments:
            return
        end = state.summarized_end
        key, tag, chain = working_set_key(history), working_set_tag(history), history.chain_at(end)
        if (key, tag, chain, room) == self._working_set_recorded:
            return
        count = history.counter.count_text
        text = index_of(history).render(end, room, count)
        if not encodable(text):
            return
        # Counted in a worker thread (a pure count of a text of its own): late in a long session it is tens of
        # kilobytes, and this runs right after the compaction's own work (issue 48).
        row = await asyncio.to_thread(WorkingSetRecord(key, tag, chain, room, end, text).row, count)
        await self.store.within(row.tokens).put(row)
        self._working_set_recorded = (key, tag, chain, room)

    async def record_injection(self, history: History, state: CompactionState, text: str | None, wire: int) -> None:
        """Store ``text``, shown after ``state`` until the next compaction, so a resume of the same plan shows it too.
        Nothing without a text: a later state has another key, so a resume finds none for it; a strategy that
        stores no cuts stores none either."""
        if not text or not self.stores_cuts or state.tail_start <= 0:
            return
        key = InjectionKey(self.plan(wire), state_key(history, state))
        row = InjectionRecord(key, history.chain_at(state.tail_start), state.tail_start, text).row(
            history.counter.count_text
        )
        await self.store.within(row.tokens).put(row)

    async def injection(self, history: History, state: CompactionState, plan: str) -> str | None:
        """What the plan ``plan`` showed after ``state`` of ``history`` (None when nothing was stored for it)."""
        if state.tail_start <= 0:
            return None
        end = history.chain_at(state.tail_start)
        rows = self.store.within(INJECTION_MAX_TOKENS)
        for record in await read(rows, InjectionKey(plan, state_key(history, state))):
            if record.groups == state.tail_start and record.end == end and record.text:
                return record.text
        return None


def working_set_key(history: History) -> WorkingSetKey:
    """The key of a session line's working set: the chain after its first group (its forks share it, and a session
    that begins the same way may rewrite it: the record names its end, so either renders afresh)."""
    return WorkingSetKey(history.chain_at(1))


def working_set_tag(history: History) -> str:
    """What a stored working set's text depends on besides the groups and its room: render version, counter."""
    encoding = history.counter.encoding
    return f"v{RENDER_VERSION}:{encoding if counts_exactly(encoding) else 'estimate'}"
