"""Resume and fork for free: the compaction state of a history is a walk along stored segments.

A segment is stored under the chain hashes at its two ends, so from ``C0`` (the fingerprint) every
stored segment that starts where the walk stands and ends on this history's chain is a step. A shared
store can hold several cuts of one prefix (a fork with another budget, a prefetch), so a greedy walk
could stop early on another session's segment: the walk that reaches furthest wins, then the one with
fewest segments (tier merges), then the one with longer segments first. It steps only along segments this
session's plan installed (``CutRecord``), so a cut made for another budget or strategy is never adopted.
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING

from ...config import Config
from ...core.history import History
from ...core.messages import canonical_json, content_hash
from ...core.state import CompactionState, Segment
from ...stores import SummaryStore
from ...stores.records import CutKey, SegmentKey, read, segment_end
from ..view.masking import MaskSettings

if TYPE_CHECKING:
    from ...summarizer.span import SpanSummarizer

FINGERPRINT_VERSION = "3"
"""2: the strategy name left the fingerprint (``extractive`` strategy and summarizer share summaries).
3: segment summaries no longer end with their own artifact ledger (the summary message ends with the working set)."""


def fingerprint(summarizer: SpanSummarizer, config: Config, mask_settings: MaskSettings | None) -> str:
    """``C0``: what shapes a summary (summarizer, model, prompts, summary size, system handling, masking, recall)."""
    c = config
    shape = {
        "v": FINGERPRINT_VERSION,
        "summarizer": summarizer.name,
        "model": summarizer.model,
        "prompts": summarizer.prompts.version,
        "summary_max_tokens": c.summary_output_tokens,
        "preserve_system": c.preserve_system,
    }
    if mask_settings is not None:  # the summarizer reads masked groups
        shape["mask"] = mask_settings.key
    if c.recall_tool_name:  # the summary's preamble names the tool
        shape["recall"] = c.recall_tool_name
    if c.summary_instructions:  # every prompt carries them: a summary written without them is not theirs
        shape["instructions"] = content_hash(c.summary_instructions)
    return content_hash(canonical_json(shape))


def focused_end(chain: str, focus: str | None) -> str:
    """The end key of a segment summarized with ``focus`` (the chain itself without one): a compaction without that
    focus never reads it as its own, while a resume walking the store still finds it (the view the session showed)."""
    return segment_end(chain, content_hash(focus)[:16] if focus else None)


def plan_tag(planner: str, config: Config, wire_budget: int) -> str:
    """What decides where a session cuts, besides its history: the strategy's plan family (``Strategy.plans_as``:
    the ``extractive`` strategy plans as ``summarize`` and shares its summaries), budget (as the provider gives it),
    and the thresholds. Two sessions with the same tag make the same cuts of the same history."""
    c = config
    shape = [planner, wire_budget, c.compact_threshold, c.target_usage, c.preserve_recent_ratio]
    return content_hash(canonical_json(shape))[:16] + ":"


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
