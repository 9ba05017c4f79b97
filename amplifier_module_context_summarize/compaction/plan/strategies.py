"""The compaction strategies: where a compaction is decided.

Each strategy is an object that owns its facts (does it need a summarizer, does it mask, does it store its cuts,
its name in events) and one pure ``plan(facts, state, progress) -> Plan``: synchronous, no I/O, the same answer for
the same inputs. The executor (``execute.py``) carries a plan's steps out and asks again until it is complete.
The rungs are composed in one order, as a pipeline: mask the oldest tool outputs, then summarize the oldest
groups, then drop whole groups (truncation) as the last rung.

* ``summarize`` — the hybrid: old tool outputs are masked first (when observation masking is on), and only when
  that cannot bring the view to the target do the oldest groups become segment summaries (LLM, or extractive
  when no backend is configured: the ``extractive`` strategy is the same plan with the offline summarizer),
  folded into higher tiers when the summary outgrows its share. Truncation is not its rung: a view still over
  the budget is fitted per request (``fit.py``), so no group is dropped unread.
* ``mask`` — masking, then whole oldest groups dropped behind a ``[CONTEXT TRUNCATED]`` marker.
* ``truncate`` — whole oldest groups are dropped behind a ``[CONTEXT TRUNCATED]`` marker.

Add a strategy: a class with the read-only attributes and the ``plan`` of ``Strategy``, and a line in ``STRATEGIES``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from ...config import Config
from ...core.plan import Limits, split_for_tiers
from ...core.state import CompactionState
from ...summarizer.span import MIN_SPAN_TOKENS
from .facts import PlanFacts
from .steps import Merge, Phase, Plan, Progress, Summarize, Writer, done

MERGE_SHARE = 0.5
"""A tier merge folds the summary down to this share of its room, so that the next segments fit without one:
the same hysteresis as compaction (threshold, then target), applied to the summary's own room."""
SEGMENT_SHARE = 0.25
"""Share of the summary's room a new segment summary is asked to fill (when below the output cap, i.e. on
small budgets): beside a merged summary (``MERGE_SHARE``) two new segments fit before the next merge."""
MIN_MERGE_TOKENS = 256
"""Smallest size a merge or a segment is asked for (an offline merge that cannot fit one item each uses the
output cap instead)."""
EXTRA_SUMMARY_PASSES = 2
"""Further segments a compaction may summarize when its first summary left the view over budget."""


class Strategy(Protocol):
    """Decides each compaction: its facts, and a pure plan."""

    @property
    def name(self) -> str:
        """What events report (``strategy`` in ``context:pre_compact`` / ``context:post_compact``)."""
        ...

    @property
    def summarizes(self) -> bool:
        """Writes summaries: prefetching ahead of its compactions is worth it."""
        ...

    @property
    def asks_llm(self) -> bool:
        """Its summaries are the LLM's: a summarizer backend is built for it (``extractive``: the offline one)."""
        ...

    @property
    def stores_cuts(self) -> bool:
        """Its cuts (summaries, and where truncation put the boundary) are stored, so a resumed session takes the
        same."""
        ...

    @property
    def plans_as(self) -> str:
        """The plan family in the store's plan tag: strategies that cut alike take each other's stored cuts."""
        ...

    @property
    def reads_prefetched(self) -> bool:
        """Takes a stored segment from the boundary (a prefetch) when one brings the view near the target."""
        ...

    def masks(self, observation_masking: bool) -> bool:
        """Whether its compactions mask old tool outputs, given the ``observation_masking`` setting."""
        ...

    def plan(self, facts: PlanFacts, state: CompactionState, progress: Progress) -> Plan: ...


def segment_tokens(budget: int, summary_budget_ratio: float, working_set_tokens: int, output_cap: int) -> int:
    """The size a new segment summary is asked for: the summarizer's output cap, or, when the budget is small,
    ``SEGMENT_SHARE`` of the summary's room (its share less the working set's), so that new segments fit beside
    a merged summary instead of forcing a merge at every compaction."""
    room = int(budget * summary_budget_ratio) - working_set_tokens
    return max(min(output_cap, int(room * SEGMENT_SHARE)), MIN_MERGE_TOKENS)


def summary_end(facts: PlanFacts, state: CompactionState, end: int) -> int | None:
    """Where a summary of the groups from ``state``'s boundary to ``end`` cuts: widened to the nearest cut whose span
    is worth an LLM summary (``MIN_SPAN_TOKENS``); None while no cut up to the last allowed one is (the span stays
    masked). The extractive summarizer writes any span, at no cost: ``end`` itself. A group closing moves the last
    allowed cut, so a span too small at one request can be worth a summary at the next with the first cut unmoved
    (a stall's reach holds this too: ``Compactor.reach``)."""
    if not facts.summarizer:
        return end
    return facts.end_with_span(state, end, MIN_SPAN_TOKENS)


@dataclass(frozen=True)
class TruncateStrategy:
    """Whole oldest groups dropped; nothing summarized or masked (where it cut is stored, for a resume)."""

    name: str = "truncate"
    summarizes: bool = False
    asks_llm: bool = False
    stores_cuts: bool = True
    plans_as: str = "truncate"
    reads_prefetched: bool = False

    def masks(self, observation_masking: bool) -> bool:
        return False

    def plan(self, facts: PlanFacts, state: CompactionState, progress: Progress) -> Plan:
        return done(facts.truncated(state))


@dataclass(frozen=True)
class MaskStrategy:
    """Masking alone, no LLM: old tool outputs become placeholders; if that is not enough, truncation."""

    name: str = "mask"
    summarizes: bool = False
    asks_llm: bool = False
    stores_cuts: bool = True
    plans_as: str = "mask"
    reads_prefetched: bool = False

    def masks(self, observation_masking: bool) -> bool:
        return True

    def plan(self, facts: PlanFacts, state: CompactionState, progress: Progress) -> Plan:
        state = facts.masked(state)
        if facts.within_target(state):
            return done(state)
        truncated = facts.truncated(state)
        wider = facts.masked(state, truncated.boundary)  # groups truncation would drop whole: mask them instead
        return done(wider if wider is not state and facts.within_target(wider) else truncated)


@dataclass(frozen=True)
class SummarizeStrategy:
    """Mask, then summarize from the boundary; cached segments (a prefetch, a parent session) are taken as they
    are; tiers merged when the summary outgrows its share."""

    summary_budget_ratio: float
    reads_prefetched: bool = False
    name: str = "summarize"
    summarizes: bool = True
    asks_llm: bool = True
    stores_cuts: bool = True
    plans_as: str = "summarize"

    def masks(self, observation_masking: bool) -> bool:
        return observation_masking

    def plan(self, facts: PlanFacts, state: CompactionState, progress: Progress) -> Plan:
        if progress.phase is Phase.MERGING:
            merge = self._merge(facts, state, progress)
            if merge is not None:
                return merge
            progress = progress.to(progress.then, fitting=None, allowance=None, merging_from=None)
        if progress.phase is Phase.START:
            return self._start(facts, state, progress)
        if progress.phase is Phase.PASSES:
            return self._passes(facts, state, progress)
        return done(state)

    def _start(self, facts: PlanFacts, state: CompactionState, progress: Progress) -> Plan:
        state = facts.masked(state)
        if facts.within_target(state):
            return done(state)  # masking alone was enough: no summary to pay for
        planned = facts.shown(state).summary_tokens + facts.summary_allowance
        end = facts.prefetched_end or facts.fitting_boundary(state, planned)
        wider = facts.masked(state, end)
        if wider is not state and facts.within_target(wider):
            # The summary would take groups whose outputs masking kept as recent: masking them is enough,
            # and keeps their calls and the assistant's words that a summary would paraphrase.
            return done(wider)
        if not facts.moves(state, end):
            # Nothing to cut, or only system messages: a new summary could only add. A summary over its share
            # (walked back from a store another cut of this history filled) is still folded to it.
            return Plan(state, None, progress.to(Phase.MERGING, then=Phase.DONE))
        # Offline, the state masking reached that fits the budget stands in for the summary (soft threshold).
        fitting = next((s for s in (wider, state) if facts.fits(s)), None)
        return self._summarize(facts, state, end, progress.to(Phase.START, fitting=fitting))

    def _passes(self, facts: PlanFacts, state: CompactionState, progress: Progress) -> Plan:
        """The summary can come out larger than its allowance (preamble, ledger, a long reply): while the view
        still does not fit, summarize the next groups measured with the real summary; then the cut that fits the
        budget itself is summarized too (never dropped unread)."""
        if progress.summaries <= EXTRA_SUMMARY_PASSES:
            if facts.fits(state):
                return done(state)
            end = facts.fitting_boundary(state, facts.shown(state).summary_tokens + facts.summary_allowance)
            if facts.moves(state, end):
                return self._summarize(facts, state, end, progress)
        if not facts.fits(state):
            budget = facts.limits.budget
            end = facts.fitting_boundary(state, facts.shown(state).summary_tokens, Limits(budget, 0, budget, 0))
            if facts.moves(state, end):
                return self._summarize(facts, state, end, progress, to_fit=True)
        # Still over: the newest groups alone fill the view. The state keeps its summary; the request's view is
        # fitted (the narrative, then the newest outputs clipped, then the working set; ``RequestView.fitted``).
        return done(state)

    def _summarize(
        self, facts: PlanFacts, state: CompactionState, end: int, progress: Progress, to_fit: bool = False
    ) -> Plan:
        """Summarize groups ``[boundary, end)`` as one more segment, widened to a span worth an LLM summary.

        A span too small for one even as far as a cut may go stays masked, unless the view cannot fit without
        cutting it (``to_fit``): the extractive summarizer then writes it, at no cost, so nothing is dropped unread.
        """
        then = Phase.DONE if to_fit else Phase.PASSES
        after = progress.to(Phase.MERGING, summaries=progress.summaries + 1, then=then)
        writer = Writer.SUMMARIZER
        if facts.summarizer:
            worth = summary_end(facts, state, end)
            if worth is None and not to_fit:
                return Plan(facts.masked(state, end), None, after.to(then, fitting=None))
            end, writer = (worth, writer) if worth is not None else (end, Writer.EXTRACTIVE)
            above = facts.stand_in_above
            if writer is Writer.SUMMARIZER and above is not None and facts.span_tokens(state.boundary, end) > above:
                writer = Writer.STAND_IN
        step = Summarize(state.boundary, end, self.segment_tokens(facts), writer)
        return Plan(state, step, after)

    def _merge(self, facts: PlanFacts, state: CompactionState, progress: Progress) -> Plan | None:
        """The next tier merge while the summary is over its share, or None when it fits (or a merge gained nothing).

        Each merge is asked to bring the summary to ``MERGE_SHARE`` of its room (the merged part to at least
        half of that), not just under it: a summary merged to just under its room would need another merge
        at the very next compaction.
        """
        if progress.merging_from is not None and progress.merging_from.segments == state.segments:
            return None  # the last merge came out no smaller than its parts
        allowance = progress.allowance
        if allowance is None:
            # The working set's own share only: the room it borrows from short summaries must not force merges.
            working_set = min(facts.working_set_shown(state), facts.working_set_tokens)
            allowance = int(facts.limits.budget * self.summary_budget_ratio) - working_set
        count = split_for_tiers([s.tokens for s in state.segments], allowance)
        if count == 0:
            return None
        rest = sum(s.tokens for s in state.segments[count:])
        target = int(allowance * MERGE_SHARE)
        room = max(target - rest, target // 2, MIN_MERGE_TOKENS)
        after = progress.to(Phase.MERGING, allowance=allowance, merging_from=state)
        return Plan(state, Merge(count, room), after)

    def segment_tokens(self, facts: PlanFacts) -> int:
        """The size a new segment summary is asked for (``segment_tokens``)."""
        return segment_tokens(
            facts.limits.budget, self.summary_budget_ratio, facts.working_set_tokens, facts.summary_allowance
        )


StrategyFactory = Callable[[float, bool], Strategy]
STRATEGIES: dict[str, StrategyFactory] = {
    "summarize": lambda ratio, prefetch: SummarizeStrategy(ratio, prefetch),
    "extractive": lambda ratio, prefetch: SummarizeStrategy(ratio, prefetch, name="extractive", asks_llm=False),
    "mask": lambda ratio, prefetch: MaskStrategy(),
    "truncate": lambda ratio, prefetch: TruncateStrategy(),
}
"""The configurable strategies by ``compaction_strategy`` name (the only place a strategy is found by name)."""


def strategy_for(config: Config) -> Strategy:
    """The strategy ``config`` names."""
    return STRATEGIES[config.compaction_strategy](config.summary_budget_ratio, config.prefetch)
