"""Carrying a plan out: the one place a compaction's decisions meet summaries, stores and the event loop.

Every compaction (in band, at the soft threshold, in the background, ``compact()``) runs here: the strategy plans
(pure), the executor takes the step the plan asks for (a summary, a merge), applies it, and asks again, until the
plan is complete. A job that writes no summary (``Job.offline``) stops at the first summary or merge the store
has not got and says so (``Executed.state`` None), with the masked state that fits the budget when the plan found
one. A fault in a plan never reaches the agent loop: the compaction drops whole groups instead.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from ...backends.base import Fault
from ...core.state import CompactionState, Segment
from ..cache.segments import SegmentSource
from ..plan.job import Job
from ..plan.steps import Merge, Phase, Progress, Step, Writer
from ..plan.strategies import Strategy
from ..plan.warm import let_loop_run

logger = logging.getLogger(__name__)

MAX_STEPS = 256
"""Plans asked in one compaction before it is taken for a plan that never completes (a strategy's bug): the hybrid
needs a few dozen at most (three summaries, their merges, the settles between)."""


@dataclass(frozen=True)
class Executed:
    """How a job ended: its state, or (``state`` None) a summary was needed and the job writes none."""

    state: CompactionState | None
    fitting: CompactionState | None = None
    """When a summary was needed: the state masking reached that fits the budget (None when it does not fit)."""

    @property
    def needs_summarizer(self) -> bool:
        return self.state is None


class Executor:
    """Runs a strategy's plan over a job, taking each step from the segment source."""

    def __init__(self, segments: SegmentSource) -> None:
        self.segments = segments

    async def run(self, strategy: Strategy, job: Job) -> Executed:
        try:
            return await self._carry_out(strategy, job)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug here must never stop the agent loop
            logger.exception("compaction failed (%s); dropping whole groups instead", type(exc).__name__)
            job.report.note_fallback(Fault.ERROR)
            return Executed(job.facts.truncated(job.state))

    async def _carry_out(self, strategy: Strategy, job: Job) -> Executed:
        facts, state, progress = job.facts, job.state, Progress()
        if strategy.summarizes and (strategy.reads_prefetched or self.segments.prefetched_any):
            facts.prefetched_end = await self.segments.ready_end(job, facts.near_target)
        for _ in range(MAX_STEPS):
            await facts.settle(state)  # what the plan reads, worked out with the loop let run
            if progress.phase is Phase.MERGING:
                await facts.settle_working_set(state)
            plan = strategy.plan(facts, state, progress)
            if plan.done:
                return Executed(plan.state)
            state, progress = plan.state, plan.progress
            if plan.step is None:
                continue
            result = await self._take(job, plan.step, state)
            if result is None:
                return Executed(None, progress.fitting)
            state = plan.step.apply(state, result)
            if isinstance(plan.step, Merge):
                await let_loop_run()
        raise RuntimeError(f"the {strategy.name!r} plan did not complete in {MAX_STEPS} steps")

    async def _take(self, job: Job, step: Step, state: CompactionState) -> Segment | None:
        """The segment ``step`` asks for; None when the store has not got it and the job writes none."""
        segments = self.segments
        if isinstance(step, Merge):
            return await segments.merge(job, list(state.segments[: step.count]), step.max_tokens)
        if step.writer is Writer.FRESH:
            return await segments.fresh(job, step.start, step.end)
        previous = state.summary_text
        if step.writer is Writer.EXTRACTIVE:
            return await segments.summary_offline(job, step.start, step.end, previous, max_tokens=step.max_tokens)
        if step.writer is Writer.STAND_IN:
            return await segments.stand_in(job, step.start, step.end, previous, max_tokens=step.max_tokens)
        return await segments.summary(job, step.start, step.end, previous, max_tokens=step.max_tokens)
