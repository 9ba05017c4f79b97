"""Resume and fork for free: the compaction state of a history is a walk along stored segments.

A segment is stored under the chain hashes at its two ends, so from ``C0`` (the fingerprint) every
stored segment that starts where the walk stands and ends on this history's chain is a step. A shared
store can hold several cuts of one prefix (a fork with another budget, a prefetch), so a greedy walk
could stop early on another session's segment: the walk that reaches furthest wins, then the one with
fewest segments (tier merges), then the one with longer segments first.
"""

from __future__ import annotations

import heapq

from ..core.history import History
from ..core.state import CompactionState, Segment
from ..stores import SummaryStore


async def walk(history: History, store: SummaryStore, limit: int) -> CompactionState:
    """The state the stored segments give ``history``, cutting no further than group ``limit``."""
    paths: dict[int, list[Segment]] = {0: []}
    pending = [0]
    while pending:
        position = heapq.heappop(pending)  # every walk into it came from a smaller position: final
        path = paths[position]
        for entry in await store.starting_at(history.chain_at(position)):
            end = position + entry.groups
            if not position < end <= limit or history.chain_at(end) != entry.end:
                continue
            candidate = [*path, Segment(position, end, entry.text, entry.tokens, entry.tier)]
            known = paths.get(end)
            if known is None:
                heapq.heappush(pending, end)
            elif (len(candidate), [-s.end for s in candidate]) >= (len(known), [-s.end for s in known]):
                continue
            paths[end] = candidate
    furthest = max(paths)
    return CompactionState(furthest, tuple(paths[furthest])) if furthest else CompactionState()
