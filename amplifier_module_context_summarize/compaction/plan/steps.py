"""A plan's vocabulary: the state a compaction has reached, the one step that needs the outside world next
(a summary, a merge of summaries), and where the plan stands between steps.

A strategy's ``plan`` is a pure function from what it reads (``PlanFacts``), the state so far and its
``Progress`` to a ``Plan``. Everything a plan decides without I/O (masking, cuts, truncation) is already in
``Plan.state``; ``Plan.step`` is what the executor must fetch before asking the plan again (None: the plan is
complete and ``Plan.state`` is the compaction's result).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum
from typing import Any

from ...core.state import CompactionState, Segment


class Writer(Enum):
    """Who writes a summary step."""

    SUMMARIZER = "summarizer"
    """The configured summarizer (the LLM when there is one), through the store."""
    EXTRACTIVE = "extractive"
    """The extractive summarizer, at no cost: a span too small for an LLM summary that must be cut to fit."""
    STAND_IN = "stand_in"
    """The extractive summarizer now, in place of an LLM summary too long for a request to wait for (more than
    ``facts.stand_in_above`` tokens); it is not stored as the span's summary, and the LLM's is written in the
    background and replaces it (``Compactor.rewrite``)."""
    FRESH = "fresh"
    """The configured summarizer on the unmasked span, nothing stored or reused (the naive baseline)."""


@dataclass(frozen=True)
class Summarize:
    """Summarize groups ``[start, end)`` as one segment; the segments ending at or before ``start`` stay."""

    start: int
    end: int
    max_tokens: int | None = None
    """The size asked for, when below the summarizer's output cap."""
    writer: Writer = Writer.SUMMARIZER

    def apply(self, state: CompactionState, segment: Segment) -> CompactionState:
        kept = [s for s in state.segments if s.end <= self.start]
        if self.writer is Writer.FRESH:
            return CompactionState(self.end, (*kept, segment))
        return state.with_segments([*kept, segment], self.end)


@dataclass(frozen=True)
class Merge:
    """Fold the oldest ``count`` segment summaries into one higher tier of about ``max_tokens``."""

    count: int
    max_tokens: int

    def apply(self, state: CompactionState, merged: Segment) -> CompactionState:
        """The state with the merge in place; unchanged when the merge came out no smaller than its parts."""
        parts = state.segments[: self.count]
        if merged.tokens >= sum(p.tokens for p in parts):
            return state
        return state.with_segments([merged, *state.segments[self.count :]], state.boundary)


Step = Summarize | Merge


class Phase(Enum):
    """Where a plan stands between its steps."""

    START = "start"
    MERGING = "merging"
    """Folding tiers after a summary (or before ending, when nothing could be cut)."""
    PASSES = "passes"
    """A summary was made: summarize further while the view does not fit."""
    DONE = "done"


@dataclass(frozen=True)
class Progress:
    """What a plan needs to remember between its steps; the plan itself keeps nothing."""

    phase: Phase = Phase.START
    summaries: int = 0
    """Summary steps planned so far (a span too small for one, masked instead, counts too)."""
    then: Phase = Phase.DONE
    """Where a ``MERGING`` phase goes once the summary fits its share."""
    allowance: int | None = None
    """The summary's share the merges fold it into (worked out when merging starts)."""
    merging_from: CompactionState | None = None
    """The state a merge step started from: a next plan seeing it unchanged knows the merge gained nothing."""
    fitting: CompactionState | None = None
    """While the first summary is under way: the masked state that fits the budget, if any. A compaction that may
    not call the LLM (planned in band at the soft threshold) installs it instead of waiting for the summary."""

    def to(self, phase: Phase, **changes: Any) -> Progress:
        return replace(self, phase=phase, **changes)


@dataclass(frozen=True)
class Plan:
    """What a strategy decided: the state reached, and the step to take next.

    No step and a progress not ``DONE``: the plan goes on from ``state`` once the executor has worked out, off
    the event loop, what it reads next (``PlanFacts.settle``)."""

    state: CompactionState
    step: Step | None = None
    progress: Progress = Progress(Phase.DONE)

    @property
    def done(self) -> bool:
        return self.step is None and self.progress.phase is Phase.DONE


def done(state: CompactionState) -> Plan:
    return Plan(state)
