"""Resume and fork for free: the compaction state of a history is a walk along stored segments.

A segment is stored under the chain hashes at its two ends (``keys``), so from ``C0`` (the fingerprint) every
stored segment that starts where the walk stands and ends on this history's chain is a step. A shared store can
hold several cuts of one prefix (a fork with another budget, a prefetch), so a greedy walk
could stop early on another session's segment: the walk that reaches furthest wins, then the one with
fewest segments (tier merges), then the one with longer segments first. It steps only along segments this
session's plan installed (``CutRecord``), so a cut made for another budget or strategy is never adopted.
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
    session's plan only as a cache."""
    paths: dict[int, list[Segment]] = {0: []}
    pending = [0]
    while pending:
        position = heapq.heappop(pending)  # every walk into it came from a smaller position: final
        path = paths[position]
        here = history.chain_at(position)
        records = await read(store, SegmentKey(here))
        if plan is not None and records:
            made = {(cut.end, cut.groups) for cut in await read(store, CutKey(plan, here))}
            records = [r for r in records if (r.end, r.groups) in made]
        for record in records:
            end = position + record.groups
            if not position < end <= limit or history.chain_at(end) != record.end:
                continue
            candidate = [*path, Segment(position, end, record.text, record.tokens, record.tier)]
            known = paths.get(end)
            if known is None:
                heapq.heappush(pending, end)
            elif (len(candidate), [-s.end for s in candidate]) >= (len(known), [-s.end for s in known]):
                continue
            paths[end] = candidate
    furthest = max(paths)
    return CompactionState(furthest, tuple(paths[furthest])) if furthest else CompactionState()
