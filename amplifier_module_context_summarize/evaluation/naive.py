"""The naive baseline: at every compaction, summarize the whole prefix again from scratch.

This is what most peers do. It differs from the module in exactly one step — how the summary is
made — so everything else (grouping, where the boundary falls, the view splice, clipping) is the
module's own and the comparison isolates incremental, cached summarization.
"""

from __future__ import annotations

from typing import Any

from ..cache import CachedSummary
from ..manager import CompactionReport, Segment, SummarizingContextManager
from ..plan import Limits, choose_boundary


class NullCache:
    """A summary cache that never remembers, so no compaction is ever a cache hit."""

    def get(self, start: str, end: str) -> CachedSummary | None:
        return None

    def starting_at(self, start: str) -> list[CachedSummary]:
        return []

    def put(self, entry: CachedSummary) -> None:
        return None


class NaiveManager(SummarizingContextManager):
    """Keeps no incremental state: one summary of groups ``[0, boundary)``, rewritten at every compaction."""

    async def _summarize_to(self, limits: Limits, provider: Any | None, report: CompactionReport) -> None:
        fixed = self._system_tokens + self.config.summary_output_tokens
        boundary = choose_boundary(self._prefix, self._boundary, self._last_cuttable(), fixed, limits)
        if boundary <= self._boundary:
            return
        outcome = await self.summarizer.summarize(self._span_messages(0, boundary), None, provider)
        key = (self._chain_at(0), self._chain_at(boundary))
        segment = self._record(key, 0, boundary, outcome, tier=0, report=report)
        self._set_segments([Segment(0, boundary, segment.text, segment.tokens)], boundary)
