"""The compaction's event payloads, each a pure function of what it reports: no view, no hooks, no clock.

``reporter`` measures the view and closes a run; what goes out is built here from those plain values, so a
payload can be checked against its report without a manager.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from ... import events
from ..plan.job import CompactionReport
from ..view.losses import Account


class Outcome(Enum):
    """How a compaction whose ``context:pre_compact`` went out ended (``PostCompact.outcome``)."""

    COMPACTED = events.COMPACTED
    CANCELLED = events.CANCELLED
    UNCHANGED = events.UNCHANGED


class FlightPhase(Enum):
    """A background compaction's ``context:background_compaction`` phases."""

    STARTED = "started"
    LANDED = "landed"
    FAILED = "failed"
    CANCELLED = "cancelled"


@dataclass(frozen=True)
class Measure:
    """The view once a compaction ended, as its post reports it."""

    tokens: int
    messages: int
    summarized: int
    """Stored messages the summary (or the truncation) stands for."""
    wire_budget: int
    tool_tokens: int
    calibration: float
    segments: int
    summary_tokens: int
    circuit: str
    clipped_messages: int


@dataclass(frozen=True)
class Closing:
    """One compaction's report as its post gives it: what it did, the view before and after, how it ended."""

    report: CompactionReport
    strategy: str
    budget: int
    target: int
    tokens_before: int
    messages_before: int
    duration_ms: float
    artifacts: Account
    outcome: Outcome
    focus: str | None
    overruled: bool
    newly: tuple[int, int]
    """(messages newly summarized, newly masked)."""
    estimated: bool
    after: Measure


def post_compact(c: Closing) -> events.PostCompact:
    """The ``context:post_compact`` payload."""
    report, after = c.report, c.after
    return events.PostCompact(
        message_count=after.messages,
        token_count=after.tokens,
        tokens_before=c.tokens_before,
        budget=c.budget,
        wire_budget=after.wire_budget,
        tool_tokens=after.tool_tokens,
        calibration=after.calibration,
        strategy=c.strategy,
        summarized_messages=after.summarized,
        segments=after.segments,
        provider_calls=report.provider_calls,
        cache_hits=report.cache_hits,
        summaries=report.summaries,
        summarizer_input_tokens=report.input_tokens,
        summarizer_output_tokens=report.output_tokens,
        summary_tokens=after.summary_tokens,
        duration_ms=c.duration_ms,
        fallback=report.fallback,
        circuit=after.circuit,
        clipped=after.tokens > c.budget or bool(after.clipped_messages),
        clipped_messages=after.clipped_messages,
        artifacts_kept=c.artifacts.kept_count,
        artifacts_lost=c.artifacts.lost_count,
        focus=c.focus,
        deny_overruled=c.overruled,
        outcome=c.outcome.value,
        newly_summarized=c.newly[0],
        newly_masked=c.newly[1],
        estimated=c.estimated,
    )


def kernel_compaction(c: Closing, has_segments: bool) -> events.Compaction:
    """The kernel's ``context:compaction`` of an installed compaction (``has_segments``: the state summarizes)."""
    after = c.after
    return events.Compaction(
        before_tokens=c.tokens_before,
        after_tokens=after.tokens,
        before_messages=c.messages_before,
        after_messages=after.messages,
        messages_removed=max(c.messages_before - after.messages, 0),
        messages_summarized=after.summarized if has_segments else 0,
        messages_truncated=0 if has_segments else after.summarized,
        budget=c.budget,
        target_tokens=c.target,
        strategy=c.strategy,
        strategy_level=c.report.fallback or c.strategy,
    )


def background(
    phase: FlightPhase, reason: str | None, tokens: int, budget: int, elapsed_ms: float, waited_s: float
) -> events.BackgroundCompaction:
    """A background compaction's ``context:background_compaction`` (no elapsed time when it has just started)."""
    return events.BackgroundCompaction(
        phase=phase.value,
        reason=reason,
        token_count=tokens,
        budget=budget,
        elapsed_ms=0.0 if phase is FlightPhase.STARTED else elapsed_ms,
        waited_ms=round(waited_s * 1000, 3),
    )
