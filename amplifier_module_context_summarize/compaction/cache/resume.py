"""Resume and fork for free: the compaction state of a history is a walk along stored segments.

A segment is stored under the chain hashes at its two ends (``keys``), so from ``C0`` (the fingerprint) every
stored segment that starts where the walk stands and ends on this history's chain is a step. A shared store can
hold several cuts of one prefix (a fork with another budget, a prefetch), so a greedy walk
could stop early on another session's segment: the walk that reaches furthest wins, then the one with
fewest segments (tier merges), then the one with longer segments first. It steps only along segments this
session's plan installed (``CutRecord``), so a cut made for another budget or strategy is never adopted, and shows
what the plan installed: the stored summary, or the text the cut carries (a fallback summary, or a stand-in: the
LLM's summary in its place once the store has it, else the stand-in, said to be owed so the resumed session writes
the LLM's, ``compaction/run/stand_in.py``).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import NamedTuple

from ...core.history import History
from ...core.state import CompactionState, Segment
from ...stores import SummaryStore
from ...stores.records import CutKey, SegmentKey, StandInKey, StandInRecord, read


async def walk(history: History, store: SummaryStore, limit: int, plan: str | None = None) -> CompactionState:
    """The state the stored segments give ``history``, cutting no further than group ``limit`` (``walked``'s)."""
    return (await walked(history, store, limit, plan)).state


@dataclass(frozen=True)
class Walked:
    """A walk's state, and which of its segments are stand-ins still owed (segment: its mark)."""

    state: CompactionState
    stand_ins: dict[Segment, StandInRecord]


async def walked(history: History, store: SummaryStore, limit: int, plan: str | None = None) -> Walked:
    """The state the stored segments give ``history``, cutting no further than group ``limit``; with ``plan`` (a
    ``plan_tag``), only along segments that plan installed (``CutRecord``): a session sharing the store (a sub-agent
    at another budget, another strategy) may have cut the same prefix elsewhere, and its summaries serve this
    session's plan only as a cache. A cut that carries its own text (a fallback the plan installed, never stored as a
    segment) is a step with that text; one whose text stands in for the LLM's (``StandInRecord``) is a step with the
    LLM's summary when the store has it (written in the background before the session stopped: paid for once, and
    installed here without a call), else with its text, and said to be owed."""
    paths: dict[int, list[Segment]] = {0: []}
    owed: dict[Segment, StandInRecord] = {}
    pending = [0]
    while pending:
        position = heapq.heappop(pending)  # every walk into it came from a smaller position: final
        path = paths[position]
        here = history.chain_at(position)
        steps = [Step(r.groups, r.end, r.text, r.tokens, r.tier) for r in await read(store, SegmentKey(here))]
        if plan is not None:
            steps = await _installed(store, plan, here, steps)
        for step in steps:
            end = position + step.groups
            if not position < end <= limit or history.chain_at(end) != step.end:
                continue
            segment = Segment(position, end, step.text, step.tokens, step.tier)
            candidate = [*path, segment]
            known = paths.get(end)
            if known is None:
                heapq.heappush(pending, end)
            elif (len(candidate), [-s.end for s in candidate]) >= (len(known), [-s.end for s in known]):
                continue
            paths[end] = candidate
            if step.stand_in is not None:
                owed[segment] = step.stand_in
    furthest = max(paths)
    if not furthest:
        return Walked(CompactionState(), {})
    path = paths[furthest]
    return Walked(CompactionState(furthest, tuple(path)), {s: owed[s] for s in path if s in owed})


class Step(NamedTuple):
    """A step of the walk: its groups, the chain at its end, the summary it shows (text, tokens, tier), and the mark
    saying that summary stands in for the LLM's (None: it does not)."""

    groups: int
    end: str
    text: str
    tokens: int
    tier: int
    stand_in: StandInRecord | None = None


async def _installed(store: SummaryStore, plan: str, here: str, stored: list[Step]) -> list[Step]:
    """The steps the plan's cuts at ``here`` name: a cut with a text of its own (what the plan installed was not the
    stored summary: a fallback, or a stand-in) shows that text, unless it is a stand-in whose span the store now
    has the LLM's summary of; one without, the summary stored for its span."""
    steps: list[Step] = []
    marks: list[StandInRecord] | None = None
    for cut in await read(store, CutKey(plan, here)):
        same = [step for step in stored if step[:2] == (cut.groups, cut.end)]
        if not cut.text:
            steps.extend(same)
            continue
        if marks is None:  # read only where a cut carries a text: a fallback or a stand-in
            marks = await read(store, StandInKey(plan, here))
        mark = next((m for m in marks if m.marks(cut)), None)
        if mark is not None and same:
            steps.extend(same)  # the LLM's summary landed in the store: it takes the stand-in's place
        else:
            steps.append(Step(cut.groups, cut.end, cut.text, cut.tokens, cut.tier, mark))
    return steps
