"""The naive baseline: at every compaction, summarize the whole prefix again from scratch.

This is what most peers do. It differs from the module in exactly one step — how the summary is
made — so everything else (grouping, where the boundary falls, the view splice, clipping) is the
module's own and the comparison isolates incremental, cached summarization. It is written against
the public strategy interface only (``compaction.Strategy``): a pure plan whose one step is a fresh summary.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..compaction import Phase, Plan, PlanFacts, Progress, Summarize, Writer
from ..core.state import CompactionState


@dataclass(frozen=True)
class NaiveStrategy:
    """One summary of groups ``[0, boundary)``, rewritten at every compaction; nothing is stored."""

    name: str = "naive"
    summarizes: bool = True
    asks_llm: bool = True
    stores_cuts: bool = False
    plans_as: str = "naive"
    reads_prefetched: bool = False

    def masks(self, observation_masking: bool) -> bool:
        return observation_masking  # it never masks; the session's setting still shapes the tail it keeps

    def plan(self, facts: PlanFacts, state: CompactionState, progress: Progress) -> Plan:
        if progress.phase is Phase.DONE:  # its one summary is written
            return Plan(state)
        boundary = facts.fitting_boundary(state, facts.summary_allowance + facts.working_set_tokens)
        if boundary <= state.boundary:
            return Plan(state)
        return Plan(state, Summarize(0, boundary, writer=Writer.FRESH), Progress(Phase.DONE))
