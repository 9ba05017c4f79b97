"""The events this module emits, as typed payloads, and the stats that are folded from them.

Every payload is a frozen dataclass whose fields are exactly the keys hooks receive (the README's event
tables are tested against them). The manager's ``stats`` are computed from the same payloads, so the
figures a hook sees and the figures the stats report cannot drift apart.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, ClassVar

from amplifier_core.events import CONTEXT_COMPACTION, CONTEXT_POST_COMPACT, CONTEXT_PRE_COMPACT, LLM_RESPONSE

SUMMARY_FAILED = "context:summary_failed"
SUMMARY_PREFETCHED = "context:summary_prefetched"
COMPACTED, CANCELLED, UNCHANGED = "compacted", "cancelled", "unchanged"
"""``PostCompact.outcome``."""
STORE_DEGRADED = "context:store_degraded"
STORE_RESTORED = "context:store_restored"
BACKGROUND_COMPACTION = "context:background_compaction"
COMPACTION_POSTPONED = "context:compaction_postponed"
PINS_DROPPED = "context:pins_dropped"
USAGE = "context:usage"


@dataclass(frozen=True)
class Payload:
    event: ClassVar[str]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def keys(cls) -> list[str]:
        return [f.name for f in fields(cls)]


@dataclass(frozen=True)
class PreCompact(Payload):
    event: ClassVar[str] = CONTEXT_PRE_COMPACT
    message_count: int
    token_count: int
    budget: int
    strategy: str
    threshold: int
    forced: bool
    fits: bool
    """Whether the view fits the budget as it is: only then may a hook's ``deny`` postpone the compaction."""
    focus: str | None
    """The focus ``compact(focus=...)`` gave (hooks may return another with ``modify``)."""
    estimated: bool = False
    """``token_count`` is an upper bound, not a count: the first plan after a resume with nothing stored counts
    only the groups that decide it (``History.count_from``)."""


@dataclass(frozen=True)
class PostCompact(Payload):
    event: ClassVar[str] = CONTEXT_POST_COMPACT
    message_count: int
    token_count: int
    tokens_before: int
    budget: int
    wire_budget: int
    tool_tokens: int
    calibration: float
    strategy: str
    summarized_messages: int
    segments: int
    provider_calls: int
    cache_hits: int
    summaries: int
    summarizer_input_tokens: int
    summarizer_output_tokens: int
    summary_tokens: int
    duration_ms: float
    fallback: str | None
    circuit: str
    clipped: bool
    clipped_messages: int
    artifacts_kept: int
    artifacts_lost: int
    focus: str | None
    """What the compaction's summaries were asked to focus on (``compact(focus=...)`` and pre_compact hooks)."""
    deny_overruled: bool
    """A pre_compact hook denied the compaction, but the view did not fit the budget: it went ahead."""
    outcome: str = "compacted"
    """``compacted``; ``cancelled``: the request was cancelled before the compaction was installed; or
    ``unchanged``: the plan could not make a view that fit the budget smaller, so nothing was installed. Either
    way the view is as it was; every ``context:pre_compact`` gets its post."""
    newly_summarized: int = 0
    """Stored messages this compaction summarized (or truncated): ``summarized_messages`` counts earlier ones too."""
    newly_masked: int = 0
    """Stored messages this compaction masked (their tool outputs shown in short)."""
    estimated: bool = False
    """``tokens_before`` is an upper bound, not a count (as its pre's ``token_count``); ``token_count`` is exact."""


@dataclass(frozen=True)
class Compaction(Payload):
    """The kernel's ``context:compaction``, with context-simple's key names where they mean the same."""

    event: ClassVar[str] = CONTEXT_COMPACTION
    before_tokens: int
    after_tokens: int
    before_messages: int
    after_messages: int
    messages_removed: int
    messages_summarized: int
    messages_truncated: int
    budget: int
    target_tokens: int
    strategy: str
    strategy_level: str
    module: str = "context-summarize"


@dataclass(frozen=True)
class SummaryFailed(Payload):
    """A summary the LLM was asked for fell back: ``reason`` says where (``prefetch`` or ``compaction``), ``fallback``
    the category (a provider fault, or a rejected answer: ``empty``, ``refusal``, ``not_smaller``, ``ungrounded``,
    ``degenerate``)."""

    event: ClassVar[str] = SUMMARY_FAILED
    reason: str
    fallback: str | None
    provider_calls: int


@dataclass(frozen=True)
class SummaryPrefetched(Payload):
    """A background summary was stored for the next compaction."""

    event: ClassVar[str] = SUMMARY_PREFETCHED
    provider_calls: int
    summarizer_input_tokens: int
    summarizer_output_tokens: int


@dataclass(frozen=True)
class StoreDegraded(Payload):
    """The shared store (Redis) could not be reached; summaries go to the local store until it is back."""

    event: ClassVar[str] = STORE_DEGRADED
    store: str
    reason: str
    fallback: str


@dataclass(frozen=True)
class StoreRestored(Payload):
    """The shared store answers again after a ``context:store_degraded``."""

    event: ClassVar[str] = STORE_RESTORED
    store: str
    down_s: float


@dataclass(frozen=True)
class BackgroundCompaction(Payload):
    """A compaction past the soft threshold whose summarizer work runs in the background: started, landed
    (installed by a request: ``context:post_compact`` follows), failed, or cancelled."""

    event: ClassVar[str] = BACKGROUND_COMPACTION
    phase: str
    reason: str | None
    token_count: int
    budget: int
    elapsed_ms: float
    waited_ms: float


@dataclass(frozen=True)
class CompactionPostponed(Payload):
    """A ``context:pre_compact`` hook returned ``deny`` while the view still fit the budget: nothing was compacted
    (the next request past the threshold asks again)."""

    event: ClassVar[str] = COMPACTION_POSTPONED
    token_count: int
    budget: int
    threshold: int
    reason: str | None


@dataclass(frozen=True)
class PinsDropped(Payload):
    """Pinned messages (``metadata.pin``, ``pin_patterns``, recent user turns) that no longer fit their share of the
    budget (``pin_budget_ratio``): the oldest ``dropped`` are shown only through the summary."""

    event: ClassVar[str] = PINS_DROPPED
    dropped: int
    kept: int
    pin_tokens: int
    pin_room: int
    dropped_indices: list[int]


@dataclass(frozen=True)
class Usage(Payload):
    """A request's view crossed one of the configured fractions of the budget (``of: "budget"``) or of the
    compaction threshold (``of: "threshold"``) upwards: once per crossing (again after it fell below)."""

    event: ClassVar[str] = USAGE
    tokens: int
    budget: int
    fraction: float
    of: str
    usage: float
    compact_at: int
    tokens_to_compaction: int


PAYLOADS: tuple[type[Payload], ...] = (
    PreCompact,
    PostCompact,
    Compaction,
    SummaryFailed,
    SummaryPrefetched,
    StoreDegraded,
    StoreRestored,
    BackgroundCompaction,
    CompactionPostponed,
    PinsDropped,
    Usage,
)
EMITTED = [p.event for p in PAYLOADS]
PRE_COMPACT, POST_COMPACT, COMPACTION = CONTEXT_PRE_COMPACT, CONTEXT_POST_COMPACT, CONTEXT_COMPACTION
__all__ = ["EMITTED", "LLM_RESPONSE", "PAYLOADS", "Stats", *(p.__name__ for p in PAYLOADS)]


@dataclass
class Stats:
    """Running totals folded from the payloads the manager emits."""

    compactions: int = 0
    """Compactions installed (a ``context:post_compact`` with outcome ``cancelled`` or ``unchanged`` is not one)."""
    compactions_cancelled: int = 0
    """Compactions whose request was cancelled before they were installed."""
    compactions_unchanged: int = 0
    """Compactions not installed because they could not make a view that fit the budget smaller (what they paid
    for, summaries and provider calls, is counted with the rest)."""
    provider_calls: int = 0
    cache_hits: int = 0
    summaries: int = 0
    """Summaries written, in compactions and in the background (a prefetch stores one summary)."""
    summarizer_input_tokens: int = 0
    summarizer_output_tokens: int = 0
    summary_failures: int = 0
    """Summaries the LLM was asked for that fell back (``context:summary_failed``)."""

    def observe(self, payload: Payload) -> None:
        if isinstance(payload, PostCompact):
            if payload.outcome == CANCELLED:
                self.compactions_cancelled += 1
            elif payload.outcome == UNCHANGED:
                self.compactions_unchanged += 1
            else:
                self.compactions += 1
            self.cache_hits += payload.cache_hits
            self.summaries += payload.summaries
        if isinstance(payload, SummaryPrefetched):
            self.summaries += 1
        if isinstance(payload, PostCompact | SummaryPrefetched):
            self.provider_calls += payload.provider_calls
        if isinstance(payload, SummaryFailed):
            self.summary_failures += 1
            if payload.reason == "prefetch":  # a compaction's calls are in its post_compact
                self.provider_calls += payload.provider_calls
        if isinstance(payload, PostCompact | SummaryPrefetched):
            self.summarizer_input_tokens += payload.summarizer_input_tokens
            self.summarizer_output_tokens += payload.summarizer_output_tokens

    def as_dict(self) -> dict[str, int]:
        return asdict(self)
