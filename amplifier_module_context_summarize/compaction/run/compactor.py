"""When and how a request's compaction runs: in band, at the soft threshold, or in the background, and how a
background compaction lands.

The view passes the threshold: while it still fits, nothing waits for the summarizer (the strategy plans
offline; a plan that needs a summary written, by the LLM or the extractive summarizer, runs in the background,
``background.py``); a view that would not
fit is masked further when that alone fits, else it waits, up to the compaction deadline, then the cheaper
rungs answer. A landed background compaction is installed by the next request if history and state are still
those it started from, or masked further since. Every compaction asks the hooks first (``context:pre_compact``:
their focus steers its summaries, their ``deny`` postpones it while the view fits) and is reported once it is
installed or dropped (``context:post_compact``); a background one asks before its summarizer work starts, so its
post comes requests later. Where masking reached is stored, so a resumed session shows the same view.

A compaction of a view that fits the budget is installed only when it makes the view smaller (``gains``):
one that cannot (the tail and the current turn protected, the summary already there) leaves the view exactly
as it was, its post says ``unchanged``, and none is tried again while the view fits until the plan could reach
further (``Stall``). A view past the budget is made to fit whatever it costs.
"""

from __future__ import annotations

import asyncio
import logging
import time
from bisect import bisect_right
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from ... import events
from ...config import Config
from ...core.clock import now
from ...core.history import History
from ...core.messages import Message, message_text
from ...core.plan import Limits, needs_compaction
from ...core.state import CompactionState, Shown, pins_for
from ...summarizer.in_context import SentView
from ...summarizer.pace import Pace
from ...working_set.facts import Facts
from ...working_set.index import index_of
from ..cache.breaker import CircuitBreaker
from ..cache.flight import BACKGROUND_CLAIM_S
from ..cache.records import PlanRecords
from ..cache.resume import walk
from ..cache.segments import SegmentSource
from ..plan.facts import PlanFacts
from ..plan.job import CompactionReport, Job
from ..plan.strategies import Strategy
from ..plan.warm import Warmer, fold_ahead, let_loop_run
from ..view.losses import Account, FactsRun, account_of, joined, newly_hidden, newly_hidden_messages
from ..view.masking import MaskSettings
from ..view.request import RequestView
from .background import CANCELLED, FAILED, LANDED, STARTED, BackgroundCompactor, Flight, Landed
from .execute import Executor
from .prefetch import Prefetcher

logger = logging.getLogger(__name__)
T = TypeVar("T")

BACKGROUND_DEADLINE_S = BACKGROUND_CLAIM_S
"""A background compaction's summarizer calls end by then (no request waits for it unless its view would not
fit, and such a request cancels it at its own deadline)."""
LANDING_GRACE_S = 0.25
"""How long a request whose view would not fit waits for a background summary before it masks further instead,
when masking alone fits: a summary landing that soon gives the smaller view; the seconds an LLM call may still
take are not worth waiting for."""
LOW_LANDING = 0.5
"""A view that still fits is not compacted to below this share of the target: only hiding one group larger than
the room between the target and the threshold (a huge tool output) lands that low, and that same group would go
anyway once the view no longer fits, with the newest groups then in its place."""


class Compactor:
    """Decides when a request's compaction runs (in band, at the soft threshold, in the background), has the
    executor carry the strategy's plan out, and installs and reports what it returns."""

    def __init__(
        self,
        config: Config,
        view: RequestView,
        strategy: Strategy,
        segments: SegmentSource,
        breaker: CircuitBreaker,
        prefetcher: Prefetcher,
        mask_settings: MaskSettings | None,
        emit: Callable[[events.Payload], Awaitable[Any]],
    ) -> None:
        self.config, self.view, self.strategy, self.segments = config, view, strategy, segments
        self.breaker, self.prefetcher, self.mask_settings, self.emit = breaker, prefetcher, mask_settings, emit
        self.hooks_said: Steer | None = None
        """What the hooks answered the last ``context:pre_compact`` (None: not asked yet); steers prefetches."""
        self.executor = Executor(segments)
        self.background = BackgroundCompactor(self._run_background)
        """The soft threshold's compaction, when it needs the summarizer (``background_compaction``)."""
        self.in_band_next = False
        """After a background compaction failed, the next compaction runs in band (no retry loop of failures)."""
        self.warmer = Warmer()
        self.sent: SentView | None = None
        """The view the last request returned (``record_sent``): a session-model summary is asked at its end."""
        """Works out what the strategy reads before it runs, yielding the loop between slices (``warm.py``)."""
        self.records = PlanRecords(config, segments.store, strategy.plans_as, strategy.stores_cuts)
        """What the plan stores beside its summaries (cuts, mask end, working set), so a resume shows the same view."""
        self._folding: asyncio.Task[None] | None = None
        """After a resume served the stored working set: its groups extracted and folded between requests."""
        self._owed: OwedPost | None = None
        """A compaction of this request whose ``context:pre_compact`` went out and whose post has not yet (what the
        hooks answered rides in it); a background flight holds its own until a request lands or drops it."""
        self.stall: Stall | None = None
        """The last compaction of a view that fit could not make it smaller: none is tried again while the view
        fits and the plan's reach is the same (``Stall``)."""

    async def for_request(self, limits: Limits, provider: Any | None, tokens: int) -> None:
        """The view passed the threshold. While it still fits, nothing waits for the summarizer (the soft
        threshold); a view that would not fit is masked further when that alone fits, else it waits, up to the
        compaction deadline, then the cheaper rungs answer."""
        await self._paying(self._for_request(limits, provider, tokens))

    async def _paying(self, work: Awaitable[T]) -> T:
        """Run ``work``; when the request is cancelled under it, a ``context:pre_compact`` already sent still gets
        its post (outcome ``cancelled`` unless the compaction was installed), so hooks and stats stay paired."""
        try:
            return await work
        except asyncio.CancelledError:
            await self.pay_owed_post()
            raise

    async def pay_owed_post(self) -> None:
        """Send the post of a compaction whose pre went out and whose post did not (its request was cancelled)."""
        owed, self._owed = self._owed, None
        if owed is None:
            return
        outcome = events.COMPACTED if owed.installed else events.CANCELLED
        duration_ms = round((time.perf_counter() - owed.started) * 1000, 3)
        await self._report_compaction(
            owed.report,
            owed.limits,
            owed.tokens,
            owed.messages,
            duration_ms,
            owed.force,
            NOTHING_ACCOUNTED,
            outcome,
            owed.steer,
        )

    async def pay_flight(self, flight: Flight) -> None:
        """A background compaction dropped before it was installed: its pre gets its post (``cancelled``)."""
        self._owed, flight.owed = flight.owed, None
        await self.pay_owed_post()

    def _mark_installed(self) -> None:
        if self._owed is not None:
            self._owed.installed = True

    async def _for_request(self, limits: Limits, provider: Any | None, tokens: int) -> None:
        if self.stalled(limits, tokens):
            return
        if not self.config.background_compaction:  # blocking: the request waits for its summary, up to the deadline
            await self._in_band(limits, provider, force=False, deadline=now() + self.config.compaction_deadline_s)
            return
        deadline = now() + self.config.compaction_deadline_s
        if tokens > limits.budget and self.background.running:
            # A summary about to land beats masking further; past a short grace, masking that fits beats waiting.
            await self.background.wait(min(deadline, now() + LANDING_GRACE_S))
            if self.background.running and await self._mask_beside_flight(limits, provider):
                return  # the summary under way lands onto this masking later
            await self.background.wait(deadline)
            await self._land()
            tokens = self.view.tokens()
            if not needs_compaction(tokens, limits):
                return
        if tokens <= limits.budget and not self.in_band_next:
            if not self.background.running:
                await self._compact_soft(limits, provider, over_budget=False)
            return
        running, in_band = self.background.running, self.in_band_next
        if not (running or in_band) and await self._compact_soft(limits, provider, over_budget=True):
            return  # masking alone made it fit: the summary is written in the background
        self.in_band_next = False
        await self.settle_background(deadline)
        if needs_compaction(self.view.tokens(), limits):
            await self._in_band(limits, provider, force=False, deadline=deadline)

    async def _compact_soft(self, limits: Limits, provider: Any | None, over_budget: bool) -> bool:
        """Plan the compaction offline and install it now; if it needs a summary written (any summarizer: none is
        written before the hooks are asked), run it in the background.

        A view that fits is left as it is while the summary is written. One ``over_budget`` is first masked as far
        as the plan got, when that fits; if it does not, nothing happens here (False) and the request compacts
        in band.
        """
        attempt = await self._begin(limits, provider, force=False, deadline=None, offline=True)
        executed = await self.executor.run(self.strategy, attempt.job)
        if executed.state is None:
            if over_budget and executed.fitting is None:
                return False
            if over_budget:  # the masking installed now is a compaction of its own; the summary's lands later
                await self._ask_then_install(attempt, executed.fitting, limits)  # over the budget: never postponed
            await self._start_background(limits, provider)
            return True
        if not over_budget and not self.gains(attempt, executed.state, limits):
            self.stall = Stall(self.reach(limits))  # known before the hooks are asked: nothing to report
            return True
        if not over_budget and attempt.job.facts.view_tokens(executed.state) < limits.target * LOW_LANDING:
            return True  # an overshoot: wait until the view does not fit (``LOW_LANDING``)
        await self._ask_then_install(attempt, executed.state, limits)
        return True

    async def _ask_then_install(self, attempt: Attempt, state: CompactionState, limits: Limits) -> None:
        """Ask the hooks (``context:pre_compact``), then install ``state`` unless they postpone it (only while the
        view fits the budget)."""
        steer = await self._emit_pre_compact(attempt)
        if not await self._postponed(steer, limits, attempt.tokens):
            await self._finish(attempt, state)

    async def _start_background(self, limits: Limits, provider: Any | None) -> None:
        """Ask the hooks (``context:pre_compact``), then run the summarizer in the background with their focus; a
        ``deny`` while the view fits postpones it before any summarizer call. The flight owes the post from here.
        """
        attempt = self._attempt(time.perf_counter(), limits, provider, force=False, deadline=None)
        tokens, job = attempt.tokens, attempt.job
        steer = await self._emit_pre_compact(attempt)
        if await self._postponed(steer, limits, tokens):
            return
        job.focus = steer.focus
        job.deadline = now() + max(BACKGROUND_DEADLINE_S, self.pace.allowance_s(tokens))
        flight = self.background.start(job, self.view.state, self.view.history, tokens)
        flight.owed, self._owed = self._owed, None  # no await between: a cancel from here on leaves it to the flight
        await self._emit_background(flight, STARTED)

    @property
    def pace(self) -> Pace:
        return self.segments.summarizer.pace

    def span_estimate(self, limits: Limits, tokens: int) -> int:
        """Input tokens of the summary a compaction of a ``tokens`` view would ask for: what it takes down to the
        target, and the prompt around it (an estimate: the span is read masked, so usually less)."""
        return max(tokens - limits.target, 0) + self.config.summary_output_tokens

    def slow(self, limits: Limits) -> bool:
        """The summarizer is measured slower than the compaction deadline for a summary of the usual size (from the
        threshold down to the target): its summaries are started early, at ``prefetch_threshold``, as ``prefetch``
        does, so the compaction finds them written rather than cutting them at the deadline. In both modes: no
        request waits past ``compaction_deadline_s`` (blocking included), so the time a slow summary needs is found
        between requests, while the agent's own model works."""
        if self.segments.summarizer.backend is None or not self.pace.known:
            return False
        return self.pace.allowance_s(self.span_estimate(limits, limits.compact_at)) > self.config.compaction_deadline_s

    async def _mask_beside_flight(self, limits: Limits, provider: Any | None) -> bool:
        """A view past the budget while a background summary is written: when masking further alone fits, install
        that in band (True) instead of waiting; the summary then lands onto the masked state (``_land``).

        A fast agent step with a large output gets here: the output arrives before the summary does.
        """
        if self.view.masks is None:  # masking is off: there is nothing to install but the summary
            return False
        attempt = await self._begin(limits, provider, force=False, deadline=None, offline=True)
        executed = await self.executor.run(self.strategy, attempt.job)
        state = executed.fitting if executed.state is None else executed.state
        if state is None or not masks_further(attempt.before, state) or not attempt.job.facts.fits(state):
            return False
        await self._ask_then_install(attempt, state, limits)  # past the budget: never postponed
        return True

    async def in_band(
        self,
        limits: Limits,
        provider: Any | None,
        force: bool,
        deadline: float | None = None,
        focus: str | None = None,
    ) -> bool:
        """Compact in band: the request waits for the summarizer (until ``deadline``, a ``core.clock.now()`` value).

        ``focus`` (or one a ``context:pre_compact`` hook returns) steers this compaction's summaries; a hook's
        ``deny`` postpones it while the view fits (False: nothing was done)."""
        return await self._paying(self._in_band(limits, provider, force, deadline, focus))

    async def _in_band(
        self,
        limits: Limits,
        provider: Any | None,
        force: bool,
        deadline: float | None,
        focus: str | None = None,
    ) -> bool:
        started = time.perf_counter()
        # One deadline for all this request waits for: a background summary, then every summarizer call.
        if deadline is None:
            deadline = now() + self.config.compaction_deadline_s
        await self.prefetcher.drain(deadline)
        attempt = await self._begin(limits, provider, force, deadline, started=started)
        steer = await self._emit_pre_compact(attempt, focus)
        if await self._postponed(steer, limits, attempt.tokens):
            return False
        attempt.job.focus = steer.focus
        executed = await self.executor.run(self.strategy, attempt.job)
        state = executed.state or attempt.before  # a job that may call the LLM has a state
        if not self.gains(attempt, state, limits):
            duration_ms = round((time.perf_counter() - attempt.started) * 1000, 3)
            await self._unchanged(attempt.job, attempt.tokens, attempt.messages, duration_ms, attempt.force)
            return False
        await self._finish(attempt, state)
        return True

    def gains(self, attempt: Attempt, state: CompactionState, limits: Limits) -> bool:
        """Whether installing ``state`` is worth it: the view did not fit the budget (the ladder must make it fit,
        whatever it costs), or ``state`` makes it smaller. One no smaller would break the provider's cached prefix
        for nothing; an explicit ``compact()`` is held to the same rule (it returns the tokens it saved: none)."""
        return attempt.tokens > limits.budget or attempt.job.facts.view_tokens(state) < attempt.tokens

    def stalled(self, limits: Limits, tokens: int) -> bool:
        """A compaction of this view, which fits, could not gain the last time, and nothing that could let it gain
        has changed since (``Stall``). A view past the budget ends the stall."""
        stall = self.stall
        if stall is None:
            return False
        if tokens <= limits.budget and stall.reach == self.reach(limits):
            return True
        self.stall = None
        return False

    def reach(self, limits: Limits) -> Reach:
        """How far a plan of the view under ``limits`` may cut and mask, with what it starts from (``Stall``)."""
        view = self.view
        history, state = view.history, view.state
        prefix = history.prefix  # searched from the boundary: a resumed history's older counts are not read
        protected = bisect_right(prefix, prefix[-1] - limits.preserve_recent, state.boundary) - 1
        cut_end = max(min(protected, history.last_cuttable), state.boundary)
        mask_end = view.masks.limit() if view.masks is not None else None
        return Reach(history, state, limits.budget, cut_end, mask_end)

    async def _unchanged(self, job: Job, tokens: int, messages: int, duration_ms: float, force: bool) -> None:
        """Report a compaction whose pre went out and that could not make the fitting view smaller: nothing is
        installed (the view stays exactly as it was, ``tokens`` and ``messages`` its measure); the summaries it
        wrote stay in the store for a later one, and none is tried again until the plan could reach further."""
        self.stall = Stall(self.reach(job.limits))
        await self._report_compaction(
            job.report,
            job.limits,
            tokens,
            messages,
            duration_ms,
            force,
            NOTHING_ACCOUNTED,
            events.UNCHANGED,
            before=self.view.state,
        )

    async def _postponed(self, steer: Steer, limits: Limits, tokens: int) -> bool:
        """A hook denied the compaction: postponed while the view fits the budget, never otherwise. A postponed
        compaction's pre is closed by ``context:compaction_postponed`` instead of a post (nothing was installed)."""
        if not steer.denied:
            return False
        if tokens > limits.budget:
            steer.overruled = True
            return False
        self._owed = None
        await self.emit(
            events.CompactionPostponed(
                token_count=tokens, budget=limits.budget, threshold=limits.compact_at, reason=steer.reason
            )
        )
        return True

    async def _begin(
        self,
        limits: Limits,
        provider: Any | None,
        force: bool,
        deadline: float | None,
        offline: bool = False,
        started: float | None = None,
    ) -> Attempt:
        """Warm what the plan reads (the loop let run), then take the view's measure and make the job."""
        started = time.perf_counter() if started is None else started
        await self._warm()
        return self._attempt(started, limits, provider, force, deadline, offline)

    def _attempt(
        self,
        started: float,
        limits: Limits,
        provider: Any | None,
        force: bool,
        deadline: float | None,
        offline: bool = False,
    ) -> Attempt:
        c, view = self.config, self.view
        facts = PlanFacts(
            history=view.history,
            limits=limits if not force else Limits(limits.budget, 0, limits.target, limits.preserve_recent),
            system_tokens=view.system_view_tokens() + view.injected_tokens,  # room for the hook's text again
            counter=view.counter,
            summary_allowance=c.summary_output_tokens,
            working_set_tokens=c.working_set_tokens(view.budget.wire),
            summary_room=c.summary_room(view.budget.wire),
            masks=view.masks,
            recall_tool=c.recall_tool_name,
            summarizer=self.segments.summarizer.backend is not None,
        )
        facts.remember(view.state, view.shown_by_state())  # its injection is in ``system_tokens``
        job = Job(facts, view.state, provider, deadline, offline, last_sent=self.cached_sent)
        history = view.history
        estimated = history.estimating and view.state.boundary < history.bounded
        return Attempt(job, view.state, view.tokens(), len(view.build()), started, force, estimated)

    async def _finish(self, attempt: Attempt, state: CompactionState) -> None:
        """Install a compaction made in band and report it."""
        job, before = attempt.job, attempt.before
        self.view.state = state
        self._mark_installed()
        self.view.remember_shown(self.view.state, job.facts.shown(self.view.state), self.view.history.latest_request)
        await let_loop_run()
        await self._after_install(before)
        artifacts = await self._artifacts_hidden(before, self.view.state, self.view.shown(), job)
        duration_ms = round((time.perf_counter() - attempt.started) * 1000, 3)
        report, limits = job.report, job.limits
        await self._report_compaction(
            report, limits, attempt.tokens, attempt.messages, duration_ms, attempt.force, artifacts, before=before
        )

    async def _after_install(self, before: CompactionState) -> None:
        await self.records.record_cuts(self.view.history, before, self.view.state, self.view.budget.wire)
        await self.records.record_drop(self.view.history, before, self.view.state, self.view.budget.wire)
        if self.view.masks is not None:
            self.view.masks.forget_before(self.view.state.boundary)
            await self.records.record_mask_end(self.view.history, before, self.view.state, self.view.budget.wire)
        await self.records.record_working_set(self.view.history, self.view.state, self.view.working_set_room())

    async def _run_background(self, job: Job, before: CompactionState) -> Landed:
        """The background task: a prefetch under way is let land first (single flight), then the plan is carried out.

        The summary message and the artifact account are worked out here too, off the request path.
        """
        await self.prefetcher.drain(job.deadline)
        await self.warmer.warm(job.history, job.masks, job.state)
        state = (await self.executor.run(self.strategy, job)).state or before
        shows = job.facts.shown(state)
        return Landed(state, shows, await self._artifacts_hidden(before, state, shows, job))

    def may_land(self) -> bool:
        """A background compaction is in flight or has finished: ``land`` has something to look at (asked on
        every request, so the usual answer costs no coroutine)."""
        return self.background.flight is not None or bool(self.background.lost)

    async def land(self) -> None:
        """Install a background compaction that has landed, if it still applies; report how it ended."""
        await self._paying(self._land())

    async def _land(self) -> None:
        while self.background.lost:  # dropped with an event loop that closed under it
            await self.pay_flight(self.background.lost.pop(0))
        flight = self.background.landed()
        if flight is None:
            return
        # This request reports it now: its pre went out when it started (the hooks' focus is in its summaries).
        self._owed, flight.owed = flight.owed, None
        landed = None if flight.task.cancelled() else flight.task.result()
        if landed is None:
            self.in_band_next = True
            await self._emit_background(flight, FAILED, flight.error or "error")
            await self.pay_owed_post()
            return
        current = self.view.state
        applies = current is flight.before or masks_further(flight.before, current)
        if flight.history is not self.view.history or not applies:
            await self._emit_background(flight, CANCELLED, "superseded")
            await self.pay_owed_post()
            return
        state = landed.state
        if current.mask_end > state.boundary:  # masked further in band meanwhile: keep that masking
            state = state.masked_to(current.mask_end)
        # Before: the view this replaces, now (the history grew and may have been masked since the flight started).
        tokens_before, messages_before = self.view.tokens(), len(self.view.build())
        if self._owed is not None:  # counted now, after the request that lent bounds: exact
            self._owed.estimated = False
        if tokens_before <= flight.job.limits.budget and self._tokens_of(state, landed.shown) >= tokens_before:
            await self._emit_background(flight, LANDED)
            await self._unchanged(flight.job, tokens_before, messages_before, flight.elapsed_ms(), False)
            return
        self.view.state = state
        self._mark_installed()
        self.view.remember_shown(state, landed.shown)  # masking leaves the summary as is; the pin is re-derived
        await self._after_install(current)
        await self._emit_background(flight, LANDED)
        await self._report_compaction(
            flight.job.report,
            flight.job.limits,
            tokens_before,
            messages_before,
            flight.elapsed_ms(),
            False,
            landed.artifacts,
            before=current,
        )

    def _tokens_of(self, state: CompactionState, shows: Shown) -> int:
        """Tokens of the view ``state`` would show, its summary message ``shows`` with the pins re-derived for the
        latest request (as the next request shows it), without installing it: ``RequestView.tokens``'s sum, with the
        room a hook's text takes again once it lands (as the plan counted it)."""
        view, history = self.view, self.view.history
        shows = shows.pinning(pins_for(history, state.boundary, view.counter, self.config.summary_output_tokens))
        prefix, tail = history.prefix, state.tail_start
        masked = view.masks.tokens(state.boundary, tail) if view.masks is not None else 0
        return view.system_view_tokens() + view.injected_tokens + shows.tokens + masked + prefix[-1] - prefix[tail]

    async def settle_background(self, deadline: float) -> None:
        """Before compacting in band: let a running background compaction land until ``deadline``, else cancel it."""
        if not self.background.running:
            await self.land()
            return
        await self.background.wait(deadline)
        await self.land()
        await self.cancel_background("deadline")

    async def cancel_background(self, reason: str) -> None:
        """Cancel the background compaction (one finished but not installed is dropped too); its pre gets its
        post, outcome ``cancelled``."""
        await self._paying(self._cancel_background(reason))

    async def _cancel_background(self, reason: str) -> None:
        pending = self.background.flight
        flight = self.background.cancel()
        if pending is not None:
            self._owed, pending.owed = pending.owed, None
        if flight is not None:
            await self._emit_background(flight, CANCELLED, reason)
        await self.pay_owed_post()

    async def _emit_background(self, flight: Flight, phase: str, reason: str | None = None) -> None:
        await self.emit(
            events.BackgroundCompaction(
                phase=phase,
                reason=reason,
                token_count=flight.tokens,
                budget=flight.job.limits.budget,
                elapsed_ms=0.0 if phase == STARTED else flight.elapsed_ms(),
                waited_ms=round(flight.waited * 1000, 3),
            )
        )

    async def _emit_pre_compact(self, attempt: Attempt, focus: str | None = None) -> Steer:
        """Report a compaction about to be installed; its post is owed from here on, whatever happens. What the
        hooks answer steers it (``Steer``)."""
        job, tokens, force = attempt.job, attempt.tokens, attempt.force
        limits = self.view.budget.limits(job.limits.budget)  # a forced job's own limits have no threshold
        self._owed = owed = OwedPost(job.report, job.limits, tokens, attempt.messages, attempt.started, force)
        owed.estimated = attempt.estimated
        result = await self.emit(
            events.PreCompact(
                message_count=len(self.view.history.messages),
                token_count=tokens,
                budget=limits.budget,
                strategy=self.strategy.name,
                threshold=limits.compact_at,
                forced=force,
                fits=tokens <= limits.budget,
                focus=focus,
                estimated=attempt.estimated,
            )
        )
        owed.steer = steer = Steer.of(result, focus)
        self.hooks_said = Steer.of(result, None)  # the hooks' own answer, without a caller's one-off focus
        return steer

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

    async def _warm(self) -> None:
        await self.warmer.warm(self.view.history, self.view.masks, self.view.state)

    async def _artifacts_hidden(
        self, before: CompactionState, state: CompactionState, shows: Shown, job: Job
    ) -> Account:
        """The newly summarized or masked groups' artifacts, kept or lost by the text that now stands for them.

        O(span): the span's artifacts, tested against the summary (and pins) and the span's masked form. The
        facts of each group shown as stored are those the working set already extracted (``index_of``: the
        compaction has just read them, ``warm.py``), so the account does not extract the span again; a group
        shown otherwise (sanitized) is extracted as stored. The rest runs in a worker thread, so a long span does
        not hold the event loop: it reads only what is gathered here (lists of its own, of frozen facts and of
        stored messages, which nobody changes, and one string).
        """
        history, masks = job.history, job.masks
        index, irregular = index_of(history), history.shown_as
        spans = newly_hidden(before.boundary, before.tail_start, state.boundary, state.tail_start)
        parts: list[Facts | list[Message]] = []
        run = FactsRun()
        await let_loop_run()
        texts = [message_text(m) for m in shows.messages]
        for start, end in spans:
            for group in range(start, end):
                if group in irregular:
                    if not run.empty:
                        parts.append(run.facts())
                        run = FactsRun()
                    g = history.groups[group]
                    parts.append(history.messages[g.start : g.end])
                else:
                    run.add(index.facts(group))
            await let_loop_run()
            if start >= state.boundary and masks is not None:
                texts += [message_text(m) for m in masks.span(start, end)]
                await let_loop_run()
        if not run.empty:
            parts.append(run.facts())
        return await asyncio.to_thread(_account, parts, "\n".join(texts))

    async def _report_compaction(
        self,
        report: CompactionReport,
        limits: Limits,
        tokens_before: int,
        messages_before: int,
        duration_ms: float,
        force: bool,
        artifacts: Account,
        outcome: str = events.COMPACTED,
        steer: Steer | None = None,
        before: CompactionState | None = None,
    ) -> None:
        """Send the ``context:post_compact`` of ``self._owed`` (or of a pre already taken off it: ``steer`` is then
        what its hooks answered), then the kernel's event; what a ``post_compact`` hook injects is put back."""
        tokens_after, messages_after = self.view.sent_tokens(limits.budget), len(self.view.build())
        summarized = self.view.history.messages_before(self.view.state.boundary)
        newly = newly_hidden_messages(self.view.history, before, self.view.state) if before is not None else (0, 0)
        for category, calls in report.failures:
            await self.emit(events.SummaryFailed("compaction", category, calls))
        if steer is None:
            steer = self._owed.steer if self._owed is not None else Steer()
        estimated = self._owed is not None and self._owed.estimated
        self._owed = None  # paid now: a cancel from here on does not report it twice
        after = (tokens_after, messages_after, summarized)
        post = self._post_compact(report, limits, tokens_before, after, duration_ms, artifacts, outcome, steer, newly)
        post = replace(post, estimated=estimated) if estimated else post
        result = await self.emit(post)
        if outcome != events.COMPACTED:
            return  # nothing was installed: the kernel's event reports compactions only
        self.view.inject(injected_text(result))
        history, state, wire = self.view.history, self.view.state, self.view.budget.wire
        await self.records.record_injection(history, state, self.view.injected_text, wire)
        strategy, segments = self.strategy.name, bool(self.view.state.segments)
        await self.emit(
            events.Compaction(
                before_tokens=tokens_before,
                after_tokens=tokens_after,
                before_messages=messages_before,
                after_messages=messages_after,
                messages_removed=max(messages_before - messages_after, 0),
                messages_summarized=summarized if segments else 0,
                messages_truncated=0 if segments else summarized,
                budget=limits.budget,
                target_tokens=limits.target,
                strategy=strategy,
                strategy_level=report.fallback or strategy,
            )
        )

    def _post_compact(
        self,
        report: CompactionReport,
        limits: Limits,
        tokens_before: int,
        after: tuple[int, int, int],
        duration_ms: float,
        artifacts: Account,
        outcome: str,
        steer: Steer,
        newly: tuple[int, int],
    ) -> events.PostCompact:
        """The ``context:post_compact`` payload of a compaction now in the view (``after``: its tokens, messages
        and the messages its summary stands for)."""
        tokens_after, messages_after, summarized = after
        view = self.view
        return events.PostCompact(
            message_count=messages_after,
            token_count=tokens_after,
            tokens_before=tokens_before,
            budget=limits.budget,
            wire_budget=view.budget.wire,
            tool_tokens=view.budget.tool_tokens,
            calibration=round(view.budget.calibration.factor, 4),
            strategy=self.strategy.name,
            summarized_messages=summarized,
            segments=len(view.state.segments),
            provider_calls=report.provider_calls,
            cache_hits=report.cache_hits,
            summaries=report.summaries,
            summarizer_input_tokens=report.input_tokens,
            summarizer_output_tokens=report.output_tokens,
            summary_tokens=view.shown().summary_tokens,
            duration_ms=duration_ms,
            fallback=report.fallback,
            circuit=self.breaker.state,
            clipped=tokens_after > limits.budget or bool(view.clipped),
            clipped_messages=len(view.clipped),
            artifacts_kept=artifacts.kept_count,
            artifacts_lost=artifacts.lost_count,
            focus=steer.focus,
            deny_overruled=steer.overruled,
            outcome=outcome,
            newly_summarized=newly[0],
            newly_masked=newly[1],
        )

    def record_sent(self, view: list[Message]) -> None:
        """Remember ``view``, returned to the orchestrator, with where its groups start (a copy fitted to the
        budget shows them as ``build`` does up to its first clip; ``locate`` compares every message it uses)."""
        shown, state = self.view.shown(), self.view.state
        head = len(self.view.system_view()) + len(shown.messages)
        self.sent = SentView(view, len(view), self.view.history, state.boundary, state.tail_start, head, now())

    def cached_sent(self) -> SentView | None:
        """The last view sent, while the provider may still hold it in its prompt cache: a summary asked at its end
        is then a cache read (``summarizer.prompt_cache_ttl_s``); after a longer pause, none."""
        sent = self.sent
        ttl_s = self.config.summarizer.prompt_cache_ttl_s
        return sent if sent is not None and sent.cached(now(), ttl_s) else None

    async def resumed(self, history: History, wire_budget: int) -> CompactionState:
        """The state stored summaries, the drop past them and the mask end give ``history`` under this session's plan
        at ``wire_budget``: only cuts, truncation and masking that plan installed are taken."""
        if not self.strategy.stores_cuts:
            return CompactionState()
        tag = self.records.plan(wire_budget)
        state = await walk(history, self.segments.store, history.last_cuttable, tag)
        state = state.cut(await self.records.dropped_to(history, state.boundary, tag))
        if self.mask_settings is not None:
            state = state.masked_to(await self.records.mask_end(history, state.boundary, tag))
        if state.segments:
            await self._seed_working_set(history, state)
        return state

    async def resumed_injection(self, history: History, state: CompactionState, wire_budget: int) -> str | None:
        """What a ``context:post_compact`` hook put back after ``state`` (``resumed``'s) when this session's plan
        installed it: a resume shows the view the session showed, the hook's plan included."""
        if not self.strategy.stores_cuts:
            return None
        return await self.records.injection(history, state, self.records.plan(wire_budget))

    def fold_after_resume(self, history: History, state: CompactionState) -> None:
        """Extract and fold the summarized groups' working set in the background, in slices while the agent awaits
        its model, so the next compaction does not pay for all of them at once: a resume that served the stored text
        has folded none (one that rendered it has folded them all by its first request, and the task ends there)."""
        self.stop_folding()
        if state.segments and index_of(history).folded < state.summarized_end:
            self._folding = asyncio.get_running_loop().create_task(self._fold(history, state.summarized_end))

    def stop_folding(self) -> None:
        if self._folding is not None:
            self._folding.cancel()
            self._folding = None

    async def _fold(self, history: History, end: int) -> None:
        try:
            await fold_ahead(history, end)
        except Exception as exc:  # only work ahead: the next compaction folds what is left
            logger.warning("folding the working set ahead failed (%s)", type(exc).__name__)

    async def _seed_working_set(self, history: History, state: CompactionState) -> None:
        """Hand the working set's index the texts stored for the summarized groups of ``history``, one per room."""
        await self.records.seed_working_set(history, state.summarized_end)


@dataclass
class OwedPost:
    """What a ``context:post_compact`` needs when its request is cancelled between the pre and the post."""

    report: CompactionReport
    limits: Limits
    tokens: int
    messages: int
    started: float
    """``time.perf_counter()`` when the compaction started."""
    force: bool
    installed: bool = False
    """The compaction's state is in the view already: it happened, only its report was cut short."""
    steer: Steer = field(default_factory=lambda: Steer())
    """What the hooks answered its ``context:pre_compact``."""
    estimated: bool = False
    """``tokens`` is a bound, not a count (``Attempt.estimated``)."""


@dataclass(frozen=True)
class Reach:
    """How far a plan may cut and mask the view, and what it starts from (``Compactor.reach``)."""

    history: History
    """Compared by identity: ``set_messages`` puts another in place."""
    state: CompactionState
    budget: int
    cut_end: int
    """The furthest boundary: the newest group and the protected tail (``preserve_recent`` tokens) stay."""
    mask_end: int | None
    """The furthest mask end (``Masks.limit``: the newest ``keep_recent`` outputs stay); None without masking."""


@dataclass(frozen=True)
class Stall:
    """A compaction of a view that fit could not make it smaller (its post said ``unchanged``, or a plan made at
    the soft threshold was dropped before the hooks were asked): what its plan could reach.

    The rule: while the view fits the budget, no compaction is tried again as long as the plan's reach is the
    same (``Reach``: history, state, budget, the furthest cut and the furthest mask end). A plan aims at the
    target but cuts no further than the protected tail and masks no further than the newest outputs it keeps;
    with those the same it can only make the same state again, and the tail that grew since makes that no
    smaller. A message that moves either end (a group closing, the tail growing past a group, a newer output),
    an install, or another budget ends the stall; so does a view past the budget, which is compacted whatever
    the cost (the ladder makes it fit). ``compact()`` is always tried.
    """

    reach: Reach


@dataclass
class Attempt:
    """One compaction under way: its job, and the view's measure when it started (for its events)."""

    job: Job
    before: CompactionState
    tokens: int
    messages: int
    started: float
    """``time.perf_counter()`` when it started."""
    force: bool
    estimated: bool = False
    """``tokens`` holds upper bounds for the oldest groups (a cold resume's first plan, ``History.count_from``)."""


NOTHING_ACCOUNTED = Account({}, {})
"""The artifact account of a compaction whose report was cut short (it is worked out after the install)."""


def _account(parts: list[Facts | list[Message]], shown_text: str) -> Account:
    return account_of(joined(parts), shown_text)


def masks_further(before: CompactionState, after: CompactionState) -> bool:
    """Whether ``after`` differs from ``before`` only in masking more groups (same summary, same boundary)."""
    return after.boundary == before.boundary and after.segments == before.segments and after.mask_end > before.mask_end


@dataclass
class Steer:
    """What hooks answered a ``context:pre_compact``: a focus for the compaction's summaries (``modify`` with
    ``data["focus"]`` or ``data["instructions"]``, beside a caller's own), or a ``deny`` (with its reason)."""

    focus: str | None = None
    denied: bool = False
    reason: str | None = None
    overruled: bool = False
    """Denied while the view did not fit the budget: the compaction went ahead."""

    @classmethod
    def of(cls, result: Any, focus: str | None) -> Steer:
        if result is None:
            return cls(focus)
        data = getattr(result, "data", None)
        asked = [focus] if focus else []
        if isinstance(data, dict):
            asked += [v.strip() for k in ("focus", "instructions") if isinstance(v := data.get(k), str) and v.strip()]
        asked = list(dict.fromkeys(asked))
        text = "\n".join(asked)[:FOCUS_MAX_CHARS] or None
        if getattr(result, "action", None) == "deny":
            reason = getattr(result, "reason", None)
            return cls(text, True, reason[:200] if isinstance(reason, str) else None)
        return cls(text)


FOCUS_MAX_CHARS = 4000
"""A focus longer than this is cut: it rides in every prompt of the compaction."""


def injected_text(result: Any) -> str | None:
    """The text ``inject_context`` results of a ``context:post_compact`` put back (several handlers': joined)."""
    if result is None or getattr(result, "action", None) != "inject_context":
        return None
    many = getattr(result, "context_injections", None) or []
    texts = [getattr(i, "content", None) for i in many] or [getattr(result, "context_injection", None)]
    joined = "\n\n".join(t for t in texts if isinstance(t, str) and t.strip())
    return joined or None
