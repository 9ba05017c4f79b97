"""A resumed session's view: the state its stored records give a history under this session's plan, what a
``post_compact`` hook put back after it, the working set of its summarized groups folded between requests, and the
stand-ins it shows whose LLM summaries are still owed (``stand_in.py``)."""

from __future__ import annotations

import asyncio
import logging

from ...core.history import History
from ...core.state import CompactionState
from ...working_set.index import index_of
from ..cache.records import PlanRecords
from ..cache.resume import walked
from ..cache.segments import SegmentSource
from ..plan.job import StandIn
from ..plan.strategies import Strategy
from ..plan.warm import fold_ahead, let_loop_run
from .horizon import HORIZON_BUDGETS

logger = logging.getLogger(__name__)


class Resumer:
    """Rebuilds a state from the store (``walk`` and the plan's records) and folds its working set ahead."""

    def __init__(self, strategy: Strategy, segments: SegmentSource, records: PlanRecords, masking: bool) -> None:
        self.strategy, self.segments, self.records, self.masking = strategy, segments, records, masking
        self._folding: asyncio.Task[None] | None = None
        """After a resume served the stored working set: its groups extracted and folded between requests."""
        self.owed: tuple[StandIn, ...] = ()
        """The stand-ins the last resumed state shows (marked beside their cuts): the LLM's summaries of them are
        owed, and the first request that can starts the rewrite a live session starts (``owed.rewrite_owed``)."""

    async def resumed(self, history: History, wire_budget: int) -> CompactionState:
        """The state stored summaries, the drop past them and the mask end give ``history`` under this session's plan
        at ``wire_budget``: only cuts, truncation and masking that plan installed are taken."""
        self.owed = ()
        if not self.strategy.stores_cuts:
            return CompactionState()
        tag = self.records.plan(wire_budget)
        walk = await walked(history, self.segments.store, history.last_cuttable, tag)
        state = walk.state
        self.owed = tuple(StandIn(s, mark.max_tokens, None, mark.span_tokens) for s, mark in walk.stand_ins.items())
        state = state.cut(await self.records.dropped_to(history, state.boundary, tag))
        if self.masking:
            state = state.masked_to(await self.records.mask_end(history, state.boundary, tag))
        if state.segments:  # the working set's index gets the texts stored for the summarized groups, one per room
            await self.records.seed_working_set(history, state.summarized_end)
        return state

    async def aside(self, history: History, wire_budget: int) -> tuple[CompactionState, str | None]:
        """What ``set_messages`` installs with ``history``, built aside: its stored state and what a hook put back
        after it. What the state summarizes is counted only if a plan reads it; with nothing stored, only the newest
        groups are counted and the older ones bounded for the first plan (``horizon``)."""
        state = await self.resumed(history, wire_budget)
        injected = await self.resumed_injection(history, state, wire_budget)
        cold = not state.segments and state.tail_start == 0
        history.count_from(state.boundary, HORIZON_BUDGETS * wire_budget if cold else None)
        return state, injected

    async def resumed_injection(self, history: History, state: CompactionState, wire_budget: int) -> str | None:
        """What a ``context:post_compact`` hook put back after ``state`` (``resumed``'s) when this session's plan
        installed it: a resume shows the view the session showed, the hook's plan included."""
        if not self.strategy.stores_cuts:
            return None
        return await self.records.injection(history, state, self.records.plan(wire_budget))

    def fold_after_resume(self, history: History, state: CompactionState) -> None:
        """Extract and fold the summarized groups' working set in the background, in slices while the agent awaits
        its model, so the next compaction does not pay for all of them at once: a resume that served the stored text
        has folded none (one that rendered it has folded them all by its first request, and the task ends there)."""
        self.stop_folding()
        if state.segments and index_of(history).folded < state.summarized_end:
            self._folding = asyncio.get_running_loop().create_task(self._fold(history, state.summarized_end))

    def take_owed(self) -> tuple[StandIn, ...]:
        """The stand-ins owed since the last resume, once: a rewrite is started for them at most once a resume."""
        owed, self.owed = self.owed, ()
        return owed

    def stop_folding(self) -> None:
        if self._folding is not None:
            self._folding.cancel()
            self._folding = None

    async def stop(self) -> None:
        """Stop folding and let the cancelled task end: it yields only to the loop, never waits."""
        self.stop_folding()
        await let_loop_run()

    async def _fold(self, history: History, end: int) -> None:
        try:
            await fold_ahead(history, end)
        except Exception as exc:  # only work ahead: the next compaction folds what is left
            logger.warning("folding the working set ahead failed (%s)", type(exc).__name__)
