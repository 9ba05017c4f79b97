"""The compaction strategies: each turns a ``Compaction`` into a new state through its public questions.

* ``summarize`` — the hybrid: old tool outputs are masked first (when observation masking is on), and
  only when that cannot bring the view to the target do the oldest groups become segment summaries
  (LLM, or extractive when no backend is configured: the ``extractive`` strategy is the same code with
  the offline summarizer), folded into higher tiers when the summary outgrows its share, truncation as
  the last rung.
* ``mask`` — masking, then whole oldest groups dropped behind a ``[CONTEXT TRUNCATED]`` marker.
* ``truncate`` — whole oldest groups are dropped behind a ``[CONTEXT TRUNCATED]`` marker.

Add a strategy: a class with ``name`` and ``async compact(job) -> CompactionState`` (see
``compaction.Strategy``), and a line in ``STRATEGIES``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from .backends.base import ERROR
from .compaction import Compaction, SummarizerNeeded
from .extractive import extractive_summary
from .plan import Limits, split_for_tiers
from .segments import SegmentSource, pinned_requests
from .state import CompactionState, Segment
from .working_set_index import shown_tokens

logger = logging.getLogger(__name__)

MIN_SHRUNK_SUMMARY_TOKENS = 64
"""Below this a re-rendered summary says too little to be worth more than the truncation marker."""
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


def segment_tokens(budget: int, summary_budget_ratio: float, working_set_tokens: int, output_cap: int) -> int:
    """The size a new segment summary is asked for: the summarizer's output cap, or, when the budget is small,
    ``SEGMENT_SHARE`` of the summary's room (its share less the working set's), so that new segments fit beside
    a merged summary instead of forcing a merge at every compaction."""
    room = int(budget * summary_budget_ratio) - working_set_tokens
    return max(min(output_cap, int(room * SEGMENT_SHARE)), MIN_MERGE_TOKENS)


class TruncateStrategy:
    name = "truncate"

    async def compact(self, job: Compaction) -> CompactionState:
        return job.truncated(job.state)


class MaskStrategy:
    """Masking alone, no LLM: old tool outputs become placeholders; if that is not enough, truncation."""

    name = "mask"

    async def compact(self, job: Compaction) -> CompactionState:
        state = job.masked(job.state)
        if job.within_target(state):
            return state
        truncated = job.truncated(state)
        wider = job.masked(state, truncated.boundary)  # groups truncation would drop whole: mask them instead
        return wider if wider is not state and job.within_target(wider) else truncated


class SummarizeStrategy:
    """Summarize from the boundary; cached segments (a prefetch, a parent session) are taken as they are."""

    def __init__(self, segments: SegmentSource, summary_budget_ratio: float, use_prefetched: bool, name: str) -> None:
        self.segments = segments
        self.summary_budget_ratio = summary_budget_ratio
        self.use_prefetched = use_prefetched
        self.name = name

    async def compact(self, job: Compaction) -> CompactionState:
        try:
            return await self._summarize(job)
        except SummarizerNeeded:
            raise  # an offline plan reached the LLM: the caller runs it again in the background
        except Exception as exc:  # a bug, not a provider fault (those are handled below this)
            logger.exception("summarizing failed (%s); dropping whole groups instead", type(exc).__name__)
            job.report.note_fallback(ERROR)
            return job.truncated(job.state)

    async def _summarize(self, job: Compaction) -> CompactionState:
        state = job.masked(job.state)
        if job.within_target(state):
            return state  # masking alone was enough: no summary to pay for
        planned = job.shown(state).summary_tokens + job.summary_allowance
        end = await self._prefetched_end(job) or job.fitting_boundary(state, planned)
        wider = job.masked(state, end)
        if wider is not state and job.within_target(wider):
            # The summary would take groups whose outputs masking kept as recent: masking them is enough,
            # and keeps their calls and the assistant's words that a summary would paraphrase.
            return wider
        if not job.moves(state, end):
            # Nothing to cut, or only system messages: a new summary could only add. A summary over its share
            # (walked back from a store another cut of this history filled) is still folded to it.
            return await self._fitted(job, await self._merge_tiers(job, state))
        try:
            state = await self._extend(job, state, end)
        except SummarizerNeeded as needed:  # offline: say how far masking alone gets within the budget
            needed.fitting = next((s for s in (wider, state) if job.fits(s)), None)
            raise
        # The summary can come out larger than its allowance (preamble, ledger, a long reply): while the view
        # still does not fit, summarize the next groups measured with the real summary; then drop whole groups.
        for _ in range(EXTRA_SUMMARY_PASSES):
            if job.fits(state):
                return state
            end = job.fitting_boundary(state, job.shown(state).summary_tokens + job.summary_allowance)
            if not job.moves(state, end):
                break
            state = await self._extend(job, state, end)
        if not job.fits(state):
            budget = job.limits.budget
            state = state.cut(
                job.fitting_boundary(state, job.shown(state).summary_tokens, Limits(budget, 0, budget, 0))
            )
        return await self._fitted(job, state)

    async def _fitted(self, job: Compaction, state: CompactionState) -> CompactionState:
        """If any valid view fits the budget, one that does: the summary re-rendered shorter, else the marker.

        Only a view whose pinned requests and newest groups leave too little room for the summary gets here,
        so re-reading the summarized span (offline, no LLM) is rare and worth it. The shorter summary is
        stored like a tier merge, so a resumed session walks to the same view.
        """
        if job.fits(state) or not state.segments:
            return state
        budget = job.limits.budget
        whole_budget = Limits(budget, 0, budget, 0)
        marker = job.truncated(state.with_segments((), state.boundary), whole_budget)
        if not job.fits(marker):
            return state  # not even the marker fits: the manager's last resort clips tool outputs
        shows = job.shown(state)
        frame = shows.summary_tokens - sum(s.tokens for s in state.segments)
        room = budget - (job.view_tokens(marker) - job.shown(marker).summary_tokens) - frame
        start, end = state.segments[0].start, state.summarized_end
        if room >= MIN_SHRUNK_SUMMARY_TOKENS:
            text = extractive_summary(
                job.span(start, end),
                previous_summary=None,
                max_tokens=room,
                count_tokens=job.counter.count_text,
                pinned=pinned_requests(job.history, start, end),
            )
            tier = max(s.tier for s in state.segments) + 1
            segment = Segment(start, end, text, job.counter.count_text(text), tier)
            shrunk = marker.with_segments([segment], marker.boundary)
            if text and job.fits(shrunk):
                await self.segments.keep(job.history, segment)
                return shrunk
        return marker

    def segment_tokens(self, job: Compaction) -> int:
        """The size a new segment summary is asked for (``segment_tokens``)."""
        return segment_tokens(
            job.limits.budget, self.summary_budget_ratio, job.working_set_tokens, job.summary_allowance
        )

    async def _extend(self, job: Compaction, state: CompactionState, end: int) -> CompactionState:
        segment = await self.segments.summary(
            job, state.boundary, end, state.summary_text, max_tokens=self.segment_tokens(job)
        )
        state = state.with_segments([*state.segments, segment], end)
        return await self._merge_tiers(job, state)

    async def _prefetched_end(self, job: Compaction) -> int | None:
        if not self.use_prefetched:
            return None
        return await self.segments.ready_end(job, job.near_target)

    async def _merge_tiers(self, job: Compaction, state: CompactionState) -> CompactionState:
        """Fold the oldest segment summaries into one higher tier while the summary is over its share.

        Each merge is asked to bring the summary to ``MERGE_SHARE`` of its room (the merged part to at least
        half of that), not just under it: a summary merged to just under its room would need another merge
        at the very next compaction.
        """
        # The working set's own share only: the room it borrows from short summaries must not force merges.
        working_set = min(shown_tokens(job, state), job.working_set_tokens)
        allowance = int(job.limits.budget * self.summary_budget_ratio) - working_set
        while True:
            count = split_for_tiers([s.tokens for s in state.segments], allowance)
            if count == 0:
                return state
            parts = list(state.segments[:count])
            rest = sum(s.tokens for s in state.segments[count:])
            target = int(allowance * MERGE_SHARE)
            room = max(target - rest, target // 2, MIN_MERGE_TOKENS)
            merged = await self.segments.merge(job, parts, room)
            if merged.tokens >= sum(p.tokens for p in parts):
                return state
            state = state.with_segments([merged, *state.segments[count:]], state.boundary)


StrategyFactory = Callable[[SegmentSource, float, bool], "TruncateStrategy | MaskStrategy | SummarizeStrategy"]
STRATEGIES: dict[str, StrategyFactory] = {
    "summarize": lambda segments, ratio, prefetch: SummarizeStrategy(segments, ratio, prefetch, "summarize"),
    "extractive": lambda segments, ratio, prefetch: SummarizeStrategy(segments, ratio, prefetch, "extractive"),
    "mask": lambda segments, ratio, prefetch: MaskStrategy(),
    "truncate": lambda segments, ratio, prefetch: TruncateStrategy(),
}
