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

from ..backends.base import Fault
from ..core.plan import Limits, split_for_tiers
from ..core.state import CompactionState
from ..summarizer.span import MIN_SPAN_TOKENS
from ..working_set.index import index_of
from .job import Compaction, SummarizerNeeded
from .segments import SegmentSource
from .splice import working_set_room
from .warm import let_loop_run

logger = logging.getLogger(__name__)

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
            job.report.note_fallback(Fault.ERROR)
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
            return await self._merge_tiers(job, state)
        try:
            state = await self._extend(job, state, end)
        except SummarizerNeeded as needed:  # offline: say how far masking alone gets within the budget
            needed.fitting = next((s for s in (wider, state) if job.fits(s)), None)
            raise
        # The summary can come out larger than its allowance (preamble, ledger, a long reply): while the view
        # still does not fit, summarize the next groups measured with the real summary; then drop whole groups.
        for _ in range(EXTRA_SUMMARY_PASSES):
            await job.shown_off_loop(state)  # written and counted with the loop let run
            if job.fits(state):
                return state
            end = job.fitting_boundary(state, job.shown(state).summary_tokens + job.summary_allowance)
            if not job.moves(state, end):
                break
            state = await self._extend(job, state, end)
        if not job.fits(state):  # the cut that fits the budget itself: summarized too, never dropped unread
            budget = job.limits.budget
            end = job.fitting_boundary(state, job.shown(state).summary_tokens, Limits(budget, 0, budget, 0))
            if job.moves(state, end):
                state = await self._extend(job, state, end, to_fit=True)
        # Still over: the newest groups alone fill the view. The state keeps its summary; the manager fits this
        # request's view (the working set's share, then the newest outputs clipped; ``manager._fitted_view``).
        return state

    def segment_tokens(self, job: Compaction) -> int:
        """The size a new segment summary is asked for (``segment_tokens``)."""
        return segment_tokens(
            job.limits.budget, self.summary_budget_ratio, job.working_set_tokens, job.summary_allowance
        )

    async def _extend(self, job: Compaction, state: CompactionState, end: int, to_fit: bool = False) -> CompactionState:
        """Summarize groups ``[boundary, end)`` as one more segment, widened to a span worth an LLM summary.

        A span too small for one even as far as a cut may go stays masked, unless the view cannot fit without
        cutting it (``to_fit``): the extractive summarizer then writes it, at no cost, so nothing is dropped unread.
        """
        summary = self.segments.summary
        if self.segments.summarizer.backend is not None:
            worth = job.end_with_span(state, end, MIN_SPAN_TOKENS)
            if worth is None and not to_fit:
                return job.masked(state, end)
            end, summary = (worth, summary) if worth is not None else (end, self.segments.summary_offline)
        segment = await summary(job, state.boundary, end, state.summary_text, max_tokens=self.segment_tokens(job))
        state = state.with_segments([*state.segments, segment], end)
        return await self._merge_tiers(job, state)

    async def _prefetched_end(self, job: Compaction) -> int | None:
        if not (self.use_prefetched or self.segments.prefetched_any):  # a slow summarizer is prefetched unasked
            return None
        return await self.segments.ready_end(job, job.near_target)

    async def _merge_tiers(self, job: Compaction, state: CompactionState) -> CompactionState:
        """Fold the oldest segment summaries into one higher tier while the summary is over its share.

        Each merge is asked to bring the summary to ``MERGE_SHARE`` of its room (the merged part to at least
        half of that), not just under it: a summary merged to just under its room would need another merge
        at the very next compaction.
        """
        # The working set's own share only: the room it borrows from short summaries must not force merges.
        working_set = min(await shown_tokens(job, state), job.working_set_tokens)
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
            await let_loop_run()
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


async def shown_tokens(job: Compaction, state: CompactionState) -> int:
    """Tokens the working set takes in ``state``'s summary message (the segment summaries share the rest).

    Late in a long session, laying the working set out holds the loop for tens of milliseconds, and counting it
    for as long again: other tasks run before the layout, and the text is counted once, in a worker thread."""
    if not state.segments:
        return 0
    history = job.history
    count = history.counter.count_text
    room = working_set_room(state, job.working_set_tokens, job.summary_room)
    await let_loop_run()
    return await index_of(history).tokens_off_loop(state.segments[-1].end, room, count)
