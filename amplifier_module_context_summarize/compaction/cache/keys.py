"""What a stored summary is keyed by: the session line's root (``fingerprint``: ``C0``), a focus, a plan.

A segment is stored under the chain hashes at its two ends, from a root that changes whenever what shapes a summary
changes, so a summary is never served to a session that would have written it otherwise.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...config import Config
from ...core.history import History
from ...core.messages import canonical_json, content_hash
from ...core.state import CompactionState
from ...stores.records import segment_end
from ..view.masking import MaskSettings

if TYPE_CHECKING:
    from ...summarizer.span import SpanSummarizer

FINGERPRINT_VERSION = "3"
"""2: the strategy name left the fingerprint (``extractive`` strategy and summarizer share summaries).
3: segment summaries no longer end with their own artifact ledger (the summary message ends with the working set)."""


def fingerprint(
    summarizer: SpanSummarizer, config: Config, mask_settings: MaskSettings | None, spill: list[Any] | None = None
) -> str:
    """``C0``: what shapes a summary (summarizer, model, prompts, summary size, system handling, masking, recall,
    spilling: the summarizer reads a spilled output's preview)."""
    c = config
    shape: dict[str, object] = {
        "v": FINGERPRINT_VERSION,
        "summarizer": summarizer.name,
        "model": summarizer.model,
        "prompts": summarizer.prompts.version,
        "summary_max_tokens": c.summary_output_tokens,
        "preserve_system": c.preserve_system,
    }
    if mask_settings is not None:  # the summarizer reads masked groups
        shape["mask"] = mask_settings.key
    if spill is not None:
        shape["spill"] = spill
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


def state_key(history: History, state: CompactionState) -> str:
    """What tells one state of ``history`` from another as a view shows it: its boundary and verbatim tail (by chain)
    and each summary (its ends, tier and text), so a merge that keeps the cuts is another state."""
    chain = history.chain_at
    segments = [[chain(s.start), chain(s.end), s.tier, content_hash(s.text)] for s in state.segments]
    return content_hash(canonical_json([chain(state.boundary), chain(state.tail_start), segments]))
