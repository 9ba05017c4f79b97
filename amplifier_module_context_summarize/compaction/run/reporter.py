"""Every ``context:pre_compact`` gets one ``context:post_compact``, however its compaction ends.

A ``CompactionRun`` is opened before the pre goes out and is an async context manager: leaving it by an exception
(the request cancelled) sends the post it still owes, outcome ``cancelled`` (``compacted`` when its state was
installed already). A run handed to a background flight (``hand_off``) is the flight's: the request that lands,
drops or cancels the flight enters it again and closes it. The ``Reporter`` measures the view and emits; what it
sends is built by the pure functions of ``payloads``.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from ... import events
from ...core.plan import Limits
from ...core.state import CompactionState
from ..cache.breaker import CircuitBreaker
from ..cache.records import PlanRecords
from ..plan.job import CompactionReport
from ..view.losses import Account, newly_hidden_messages
from ..view.request import RequestView
from . import payloads
from .attempt import Attempt
from .decide import postpones
from .payloads import Closing, FlightPhase, Measure, Outcome
from .steer import Steer, injected_text

Emit = Callable[[events.Payload], Awaitable[Any]]

NOTHING_ACCOUNTED = Account({}, {})
"""The artifact account of a compaction whose report was cut short (it is worked out after the install)."""


class Reporter:
    """Sends a compaction's events: the pre (asking the hooks), the postponement, the post and the kernel's event."""

    def __init__(
        self, view: RequestView, strategy: str, breaker: CircuitBreaker, records: PlanRecords, emit: Emit
    ) -> None:
        self.view, self.strategy, self.breaker, self.records, self.emit = view, strategy, breaker, records, emit
        self.hooks_said: Steer | None = None
        """What the hooks answered the last ``context:pre_compact`` (None: not asked yet); steers prefetches."""

    def open(self, attempt: Attempt) -> CompactionRun:
        """A run for ``attempt``; its pre goes out with ``CompactionRun.ask``, inside ``async with``."""
        job = attempt.job
        return CompactionRun(
            self,
            job.report,
            job.limits,
            attempt.tokens,
            attempt.messages,
            attempt.started,
            attempt.force,
            attempt.estimated,
        )

    def prefetch_steer(self, hooks_answer: bool) -> Steer | None:
        """What a prefetch may write with: no summary is written before the hooks are asked (``context:pre_compact``),
        and a prefetch writes ahead of the compaction that will ask them. So, with handlers that could answer
        (``hooks_answer``), none is written until the hooks have been asked once; then with the focus they last
        gave, keyed by it (``SegmentSource.key``): the compaction they steer the same way takes it from the store,
        one they steer otherwise writes its own (a summary without its focus is never served for it). None: no
        prefetch now (not asked yet, or their last answer postponed the compaction)."""
        if not hooks_answer:
            return Steer()
        said = self.hooks_said
        return None if said is None or said.denied else said

    async def pre_compact(self, run: CompactionRun, focus: str | None) -> Steer:
        """Report a compaction about to be installed; what the hooks answer steers it (``Steer``)."""
        limits = self.view.budget.limits(run.limits.budget)  # a forced job's own limits have no threshold
        result = await self.emit(
            events.PreCompact(
                message_count=len(self.view.history.messages),
                token_count=run.tokens,
                budget=limits.budget,
                strategy=self.strategy,
                threshold=limits.compact_at,
                forced=run.force,
                fits=run.tokens <= limits.budget,
                focus=focus,
                estimated=run.estimated,
            )
        )
        self.hooks_said = Steer.of(result, None)  # the hooks' own answer, without a caller's one-off focus
        return Steer.of(result, focus)

    async def postponed(self, run: CompactionRun, limits: Limits) -> None:
        """Close a denied run's pre with ``context:compaction_postponed`` (nothing was installed)."""
        await self.emit(
            events.CompactionPostponed(
                token_count=run.tokens, budget=limits.budget, threshold=limits.compact_at, reason=run.steer.reason
            )
        )

    async def background(
        self, phase: FlightPhase, reason: str | None, tokens: int, budget: int, elapsed_ms: float, waited_s: float
    ) -> None:
        """A background compaction's ``context:background_compaction``."""
        await self.emit(payloads.background(phase, reason, tokens, budget, elapsed_ms, waited_s))

    def measure(self, budget: int) -> tuple[int, int, int]:
        """The view's sent tokens, messages, and the stored messages its summary stands for."""
        view = self.view
        return view.sent_tokens(budget), len(view.build()), view.history.messages_before(view.state.boundary)

    def measured(self, tokens: int, messages: int, summarized: int) -> Measure:
        view = self.view
        budget = view.budget
        return Measure(
            tokens,
            messages,
            summarized,
            budget.wire,
            budget.tool_tokens,
            round(budget.calibration.factor, 4),
            len(view.state.segments),
            view.shown().summary_tokens,
            self.breaker.state,
            len(view.clipped),
        )

    async def post_compact(self, run: CompactionRun, end: End) -> None:
        """Send ``run``'s ``context:post_compact``, then (installed) put back what a hook injects and send the
        kernel's event."""
        view, limits = self.view, run.limits
        tokens, messages, summarized = self.measure(limits.budget)
        newly = newly_hidden_messages(view.history, end.before, view.state) if end.before is not None else (0, 0)
        for category, calls in run.report.failures:
            await self.emit(events.SummaryFailed("compaction", category, calls))
        run.closed = True  # paid now: a cancel from here on does not report it twice
        closing = Closing(
            run.report,
            self.strategy,
            limits.budget,
            limits.target,
            end.tokens_before,
            end.messages_before,
            end.duration_ms,
            end.artifacts,
            end.outcome,
            run.steer.focus,
            run.steer.overruled,
            newly,
            end.estimated,
            self.measured(tokens, messages, summarized),
        )
        result = await self.emit(payloads.post_compact(closing))
        if end.outcome is not Outcome.COMPACTED:
            return  # nothing was installed: the kernel's event reports compactions only
        view.inject(injected_text(result))
        await self.records.record_injection(view.history, view.state, view.injected_text, view.budget.wire)
        await self.emit(payloads.kernel_compaction(closing, bool(view.state.segments)))


@dataclass(frozen=True)
class End:
    """How a run ended, for its post: the view it replaced (``tokens_before``, ``messages_before``) and more."""

    outcome: Outcome
    tokens_before: int
    messages_before: int
    duration_ms: float
    artifacts: Account = NOTHING_ACCOUNTED
    before: CompactionState | None = None
    """The state before: what is newly summarized or masked is counted from it."""
    estimated: bool = False


@dataclass
class CompactionRun:
    """One compaction from its pre to its post (see the module's docstring for the contract)."""

    reporter: Reporter
    report: CompactionReport
    limits: Limits
    tokens: int
    """The view's tokens when it started (a bound when ``estimated``)."""
    messages: int
    started: float
    """``time.perf_counter()`` when it started."""
    force: bool
    estimated: bool
    """``tokens`` is a bound, not a count (``Attempt.estimated``)."""
    steer: Steer = field(default_factory=Steer)
    """What the hooks answered its ``context:pre_compact``."""
    installed: bool = False
    """Its state is in the view: it happened, even if its report is cut short."""
    closed: bool = False
    """Its post (or postponement) went out."""
    held: bool = False
    """A background flight holds it: leaving the request's ``async with`` does not close it."""

    async def __aenter__(self) -> CompactionRun:
        self.held = False
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if not self.held:
            await self.cut_short()

    async def ask(self, focus: str | None = None) -> Steer:
        """Send the pre; from here its post is owed, whatever happens."""
        self.steer = await self.reporter.pre_compact(self, focus)
        return self.steer

    async def postponed(self, limits: Limits) -> bool:
        """The hooks denied it: postponed (True, closed by ``context:compaction_postponed``) while the view fits the
        budget (``limits``, the caller's: a forced job's own have no threshold); past it, the deny is overruled."""
        if not self.steer.denied:
            return False
        if not postpones(True, self.tokens, limits.budget):
            self.steer.overruled = True
            return False
        self.closed = True
        await self.reporter.postponed(self, limits)
        return True

    def hand_off(self) -> None:
        """A background flight takes it over (no await between its start and this)."""
        self.held = True

    async def close(self, end: End) -> None:
        await self.reporter.post_compact(self, end)

    async def cut_short(self) -> None:
        """Send the post of a run whose pre went out and whose post did not (its request was cancelled, or its flight
        dropped): ``compacted`` when its state was installed, else ``cancelled``; nothing when closed already."""
        if self.closed:
            return
        self.closed = True  # a cancel while it is sent does not send it twice
        outcome = Outcome.COMPACTED if self.installed else Outcome.CANCELLED
        duration_ms = round((time.perf_counter() - self.started) * 1000, 3)
        await self.close(End(outcome, self.tokens, self.messages, duration_ms))
