"""The strategies compared side by side, all fed the same summarizer backend."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import create_manager
from ..backends.base import Backend
from ..compaction import Strategy
from ..core.messages import Message
from ..events import POST_COMPACT, SUMMARY_FAILED
from ..manager import SummarizingContextManager
from ..stores import MemoryStore
from ..summarizer.span import Outcome
from ..testing.replay import REPLAY_DEADLINE_S
from .models import SIMULATED, SIMULATED_NATIVE, ModelSpec
from .naive import NaiveStrategy


@dataclass(frozen=True)
class Variant:
    """One strategy the evaluation compares: a compaction strategy of the one registry
    (``compaction.plan.strategies.STRATEGIES``, by its ``compaction_strategy`` name), the settings beside it, and
    what the evaluation adds to it."""

    compaction_strategy: str
    settings: Mapping[str, Any] = field(default_factory=dict)
    baseline: Callable[[], Strategy] | None = None
    """A strategy object passed to ``create_manager`` instead of the configured one (the naive baseline)."""
    oracle_recall: bool = False
    """Artifact probes are answered from the view plus an oracle use of the ``context_recall`` tool."""


VARIANTS: dict[str, Variant] = {
    "summarize": Variant("summarize"),
    "summarize+recall": Variant("summarize", oracle_recall=True),
    "summarize-only": Variant("summarize", {"observation_masking": False}),
    "mask": Variant("mask"),
    "naive": Variant("summarize", baseline=NaiveStrategy),
    "truncation": Variant("truncate"),
}
"""``summarize``: this module as configured by default, the hybrid (old tool outputs masked first, a summary
only when masking cannot bring the view near the target). ``summarize-only``: the same with
``observation_masking: false``. ``summarize+recall``: the hybrid's views, with artifact probes answered
from the view plus an oracle use of the ``context_recall`` tool (a search for the probe's key in what the
view summarizes or masks; what it returns is charged to the probe's tokens). ``mask``: masking, then
dropping the oldest groups (``compaction_strategy: mask``, no summarizer). ``naive``: whole prefix
re-summarized at each compaction, no cache. ``truncation``: oldest groups dropped (``compaction_strategy:
truncate``)."""
STRATEGIES = tuple(VARIANTS)
"""The names the evaluation compares, in report order."""


def variant(strategy: str) -> Variant:
    """The variant ``strategy`` names; an unknown name is a ``ValueError`` listing the known ones."""
    if strategy not in VARIANTS:
        raise ValueError(f"unknown strategy {strategy!r} (expected one of {', '.join(STRATEGIES)})")
    return VARIANTS[strategy]


def manager_config(strategy: str, budget: int, summarizer: ModelSpec) -> dict[str, Any]:
    chosen = variant(strategy)
    # A simulated model stands where a direct backend would (the backend itself is passed to create_manager).
    stands_for = {SIMULATED: "anthropic", SIMULATED_NATIVE: "native"}
    settings: dict[str, Any] = {"provider": stands_for.get(summarizer.provider, summarizer.provider)}
    settings["timeout_s"] = REPLAY_DEADLINE_S  # one call of a small local model on a busy machine: minutes
    if summarizer.model:
        settings["model"] = summarizer.model
    config: dict[str, Any] = {
        "max_tokens": budget,
        "compaction_strategy": chosen.compaction_strategy,
        "summarizer": settings,
        # A replay has no agent time between requests for background work to run in: compact in band, so the
        # views scored are the ones compaction makes (when they arrive is what ``bench --latency`` measures).
        "background_compaction": False,
        "compaction_deadline_s": REPLAY_DEADLINE_S,  # nobody waits for a replay: summaries get their calls' time
    }
    config.update(chosen.settings)
    return config


class ExtractiveMeter:
    """What the extractive summarizer reads and writes, in tokens: its cost, which no provider reports.

    An observer of a summarizer's extractive summaries (``SpanSummarizer.on_extractive``), it counts every one,
    whether it is the configured summarizer (offline) or a fallback after an LLM failure: the span's tokens
    plus the summary's.
    """

    def __init__(self, count_messages: Callable[[list[Message]], int], count_text: Callable[[str], int]) -> None:
        self.read_tokens = 0
        self.written_tokens = 0
        self._count_messages = count_messages
        self._count_text = count_text

    @property
    def tokens(self) -> int:
        return self.read_tokens + self.written_tokens

    def __call__(self, messages: list[Message], outcome: Outcome) -> None:
        self.read_tokens += self._count_messages(messages)
        self.written_tokens += self._count_text(outcome.text)


class CompactionTally:
    """Hooks noting each compaction's fallback and each failed background summary's, then passing them on.

    ``make_manager`` creates every manager with one (around the caller's hooks), so a replay reads it as
    ``manager.hooks``."""

    def __init__(self, inner: Any | None = None) -> None:
        self.inner = inner
        self.fallbacks: list[str] = []
        self.failed: Counter[str] = Counter()

    async def emit(self, event: str, data: dict[str, Any]) -> Any:
        if event == POST_COMPACT and data.get("outcome", "compacted") == "compacted":  # installed ones
            self.fallbacks.append(str(data.get("fallback") or "none"))
        elif event == SUMMARY_FAILED:
            self.failed[str(data.get("fallback") or data.get("reason") or "unknown")] += 1
        if self.inner is not None:
            return await self.inner.emit(event, data)
        return None


def make_manager(
    strategy: str, budget: int, summarizer: ModelSpec, backend: Backend | None, hooks: Any | None = None
) -> SummarizingContextManager:
    """A fresh manager with an empty private cache, as at the start of a real session.

    A backend with ``fork()`` (``testing.SimulatedLLM``) gives each manager its own twin, so that what it answers
    does not depend on how the managers' calls interleave.
    """
    config = manager_config(strategy, budget, summarizer)
    fork = getattr(backend, "fork", None)
    if callable(fork):
        backend = fork()
    make_baseline = variant(strategy).baseline
    baseline = make_baseline() if make_baseline is not None else None
    tally = hooks if isinstance(hooks, CompactionTally) else CompactionTally(hooks)
    return create_manager(config, backend=backend, store=MemoryStore(), hooks=tally, strategy=baseline)
