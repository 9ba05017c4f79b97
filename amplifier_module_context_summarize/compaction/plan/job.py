"""One compaction as a value: what it reads (``PlanFacts``), what it may do (provider, deadline, focus, whether
it may call the LLM), and its report. The executor carries a strategy's plan out over a ``Job``; the summary
sources read the span and the last view sent through it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...backends.base import Fault, Skip
from ...core.history import History
from ...core.messages import Message
from ...core.plan import Limits
from ...core.state import CompactionState, Segment
from ...summarizer.in_context import InContext, SentView, locate
from ..view.masking import Masks
from .facts import PlanFacts


@dataclass(frozen=True)
class StandIn:
    """A segment the extractive summarizer wrote in place of the LLM's (``Writer.STAND_IN``), and the size its
    summary was asked for: the background compaction that replaces it asks the LLM for the same."""

    segment: Segment
    max_tokens: int | None
    span: list[Message] | None = None
    """The groups as the stand-in read them (masked): the LLM reads the same, and they are not masked again (an
    install forgets the masked forms before its boundary; masking 31,000 groups again took 2.3 s at 50,000
    messages, the loop held). None for one a resume found (``StandInRecord``): read when its rewrite runs."""
    tokens: int = 0
    """The span's tokens as the stand-in read them (what its rewrite's time is given for): known when it was
    written, and kept in its mark, so a resume need not count a span its history has not counted (4 s at 50,000
    messages)."""


@dataclass
class CompactionReport:
    """What one compaction did; the ``context:post_compact`` event and the stats are made from it."""

    provider_calls: int = 0
    cache_hits: int = 0
    summaries: int = 0
    """Summaries and tier merges written (by the LLM or extractively), not served from the cache."""
    input_tokens: int = 0
    output_tokens: int = 0
    fallback: Fault | Skip | None = None
    failures: list[tuple[Fault | Skip, int]] = field(default_factory=list)
    """(category, provider calls) of each summary the LLM was asked for and that fell back."""
    stand_ins: list[StandIn] = field(default_factory=list)
    """The segments this compaction wrote as stand-ins (``Writer.STAND_IN``): the LLM's summaries of them are owed,
    and their cuts are marked so (``PlanRecords.record_cuts``)."""

    def note_fallback(self, category: Fault | Skip | None) -> None:
        self.fallback = self.fallback or category


@dataclass
class Job:
    """One compaction: its facts, the state it starts from, and what its summaries may do."""

    facts: PlanFacts
    state: CompactionState
    provider: Any | None = None
    deadline: float | None = None
    """``core.clock.now()`` value past which no summarizer call runs."""
    offline: bool = False
    """Write no summary, LLM or offline: the executor stops at the first summary or merge the store has not got.
    The soft threshold plans in band this way, and when it stops asks the hooks (``context:pre_compact``) and runs
    the job again in the background, so every summary a compaction writes carries their focus."""
    focus: str | None = None
    """What this compaction's summaries are asked to focus on (``compact(focus=...)``, a ``context:pre_compact``
    hook); part of their store keys."""
    last_sent: Callable[[], SentView | None] | None = None
    """The view the session's last request sent (read when a summary is asked: a background compaction's runs
    after the request that started it returned its view)."""
    report: CompactionReport = field(default_factory=CompactionReport)
    rewrites: tuple[StandIn, ...] = ()
    """A background job that writes the LLM's summaries of these stand-ins in their place (and nothing else)."""

    @property
    def stand_ins(self) -> list[StandIn]:
        """The segments this job wrote as stand-ins (its report's)."""
        return self.report.stand_ins

    @property
    def history(self) -> History:
        return self.facts.history

    @property
    def limits(self) -> Limits:
        return self.facts.limits

    @property
    def masks(self) -> Masks | None:
        return self.facts.masks

    def span(self, start: int, end: int, authored: bool = False) -> list[Message]:
        """Groups ``[start, end)`` as a summarizer reads them: masked when masking is on (``authored``: for a reader
        of only what the user and the assistant wrote, ``Masks.span``)."""
        masks = self.facts.masks
        return masks.span(start, end, authored) if masks is not None else self.facts.history.span(start, end)

    def in_context(self, start: int, end: int) -> InContext | None:
        """Groups ``[start, end)`` in the last view sent, as it showed them (None when it does not show them)."""
        sent = self.last_sent() if self.last_sent is not None else None
        return locate(sent, self.facts.history, self.facts.masks, start, end)
