"""The naive baseline: at every compaction, summarize the whole prefix again from scratch.

This is what most peers do. It differs from the module in exactly one step — how the summary is
made — so everything else (grouping, where the boundary falls, the view splice, clipping) is the
module's own and the comparison isolates incremental, cached summarization. It is written against
the public strategy interface only (``compaction.Strategy``).
"""

from __future__ import annotations

from ..compaction.job import Compaction
from ..compaction.segments import pinned_requests
from ..core.state import CompactionState, Segment
from ..summarizer.span import SpanSummarizer


class NaiveStrategy:
    """One summary of groups ``[0, boundary)``, rewritten at every compaction; nothing is stored."""

    name = "naive"

    def __init__(self, summarizer: SpanSummarizer) -> None:
        self.summarizer = summarizer

    async def compact(self, job: Compaction) -> CompactionState:
        boundary = job.fitting_boundary(job.state, job.summary_allowance + job.working_set_tokens)
        if boundary <= job.state.boundary:
            return job.state
        span = job.history.span(0, boundary)
        pinned = pinned_requests(job.history, 0, boundary)
        outcome = await self.summarizer.summarize(span, None, job.provider, deadline=job.deadline, pinned=pinned)
        report = job.report
        report.summaries += 1
        report.provider_calls += outcome.provider_calls
        report.input_tokens += outcome.input_tokens
        report.output_tokens += outcome.output_tokens
        report.note_fallback(outcome.fallback)
        segment = Segment(0, boundary, outcome.text, self.summarizer.count_text(outcome.text))
        return CompactionState(boundary, (segment,))
