"""Resume and fork for free: the compaction state of a history is a walk along stored segments.

A segment is stored under the chain hashes at its two ends (``keys``), so from ``C0`` (the fingerprint) every
stored segment that starts where the walk stands and ends on this history's chain is a step. A shared store can
hold several cuts of one prefix (a fork with another budget, a prefetch), so a greedy walk
could stop early on another session's segment: the walk that reaches furthest wins, then the one with
fewest segments (tier merges), then the one with longer segments first. It steps only along segments this
session's plan installed (``CutRecord``), so a cut made for another budget or strategy is never adopted, and shows
what the plan installed: the stored summary, or the text the cut carries (a fallback summary).
"""

from __future__ import annotations

import heapq

from ...core.history import History
from ...core.state import CompactionState, Segment
from ...stores import SummaryStore
from ...stores.records import CutKey, SegmentKey, read


async def walk(history: History, store: SummaryStore, limit: int, plan: str | None = None) -> CompactionState:
    """The state the stored segments give ``history``, cutting no further than group ``limit``; with ``plan`` (a
    ``plan_tag``), only along segments that plan installed (``CutRecord``): a session sharing the store (a sub-agent
    at another budget, another strategy) may have cut the same prefix elsewhere, and its summaries serve this
    session's plan only as a cache. A cut that carries its own text (a fallback the plan installed, never stored as a
    segment) is a step with that text."""
    paths: dict[int, list[Segment]] = {0: []}
    pending = [0]
    while pending:
        position = heapq.heappop(pending)  # every walk into it came from a smaller position: final
        path = paths[position]
        here = history.chain_at(position)
        steps: list[Step] = [(r.groups, r.end, r.text, r.tokens, r.tier) for r in await read(store, SegmentKey(here))]
        if plan is not None:
            steps = await _installed(store, CutKey(plan, here), steps)
        for groups, chain, text, tokens, tier in steps:
            end = position + groups
            if not position < end <= limit or history.chain_at(end) != chain:
                continue
            candidate = [*path, Segment(position, end, text, tokens, tier)]
            known = paths.get(end)
            if known is None:
                heapq.heappush(pending, end)
            elif (len(candidate), [-s.end for s in candidate]) >= (len(known), [-s.end for s in known]):
                continue
            paths[end] = candidate
    furthest = max(paths)
    return CompactionState(furthest, tuple(paths[furthest])) if furthest else CompactionState()


Step = tuple[int, str, str, int, int]
"""A step of the walk: its groups, the chain at its end, and the summary it shows (text, tokens, tier)."""


async def _installed(store: SummaryStore, key: CutKey, stored: list[Step]) -> list[Step]:
    """The steps the plan's cuts at ``key`` name: a cut with a text of its own (what the plan installed was not the
    stored summary: a fallback) shows that text; one without, the summary stored for its span."""
    steps: list[Step] = []
    for cut in await read(store, key):
        if cut.text:
            steps.append((cut.groups, cut.end, cut.text, cut.tokens, cut.tier))
        else:
            steps.extend(step for step in stored if step[:2] == (cut.groups, cut.end))
    return steps
