"""When a request's compaction runs, and the carrying out of that answer: in band, at the soft threshold, or in the
background, and how a background compaction lands.

The view passes the threshold: while it still fits, nothing waits for the summarizer (the strategy plans
offline; a plan that needs a summary written, by the LLM or the extractive summarizer, runs in the background,
``background.py``); a view that would not fit is masked further when that alone fits, else it waits, up to the
compaction deadline, then the cheaper rungs answer. A landed background compaction is installed by the next request
if history and state are still those it started from, or masked further since. Every compaction asks the hooks
first (``context:pre_compact``: their focus steers its summaries, their ``deny`` postpones it while the view fits)
and is reported once it is installed or dropped (``context:post_compact``, ``reporter.CompactionRun``); a background
one asks before its summarizer work starts, so its post comes requests later.

Which path, and whether a planned state is installed, is decided on plain data in ``decide.py`` (``gains``, the low
landing, ``Stall``); every install goes through ``install.Installer``.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from ...config import Config
from ...core.clock import now
from ...core.history import History
from ...core.messages import Message
from ...core.plan import Limits, needs_compaction
from ...core.state import CompactionState
from ...summarizer.in_context import SentView
from ...summarizer.pace import Pace
from ..cache.breaker import CircuitBreaker
from ..cache.flight import BACKGROUND_CLAIM_S
from ..cache.records import PlanRecords
from ..cache.segments import SegmentSource
from ..plan.job import Job
from ..plan.strategies import Strategy
from ..plan.warm import Warmer
from ..view.masking import MaskSettings
from ..view.request import RequestView
from .artifacts import artifacts_hidden
from .attempt import Attempt, Request, attempt_of
from .background import BackgroundCompactor, Flight, Landed
from .decide import (
    Action,
    Moment,
    Reach,
    SoftPlan,
    Stall,
    Verdict,
    cut_reach,
    decide,
    gains,
    judge_soft,
    lands_onto,
    masks_further,
    still_stalled,
)
from .execute import Executor
from .install import Installer
from .payloads import FlightPhase, Outcome
from .prefetch import Prefetcher
from .reporter import CompactionRun, Emit, End, Reporter
from .resume import Resumer
from .steer import Steer

logger = logging.getLogger(__name__)

BACKGROUND_DEADLINE_S = BACKGROUND_CLAIM_S
"""A background compaction's summarizer calls end by then (no request waits for it unless its view would not
fit, and such a request cancels it at its own deadline)."""
LANDING_GRACE_S = 0.25
"""How long a request whose view would not fit waits for a background summary before it masks further instead,
when masking alone fits: a summary landing that soon gives the smaller view; the seconds an LLM call may still
take are not worth waiting for."""


def _ms_since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


class Compactor:
    """Carries out ``decide``'s answer for a request past the threshold, has the executor carry the strategy's plan
    out, and installs (``Installer``) and reports (``Reporter``) what it returns."""

    def __init__(
        self,
        config: Config,
        view: RequestView,
        strategy: Strategy,
        segments: SegmentSource,
        breaker: CircuitBreaker,
        prefetcher: Prefetcher,
        mask_settings: MaskSettings | None,
        emit: Emit,
    ) -> None:
        self.config, self.view, self.strategy, self.segments = config, view, strategy, segments
        self.breaker, self.prefetcher, self.mask_settings = breaker, prefetcher, mask_settings
        self.executor = Executor(segments)
        self.background = BackgroundCompactor(self._run_background)
        """The soft threshold's compaction, when it needs the summarizer (``background_compaction``)."""
        self.in_band_next = False
        """After a background compaction failed, the next compaction runs in band (no retry loop of failures)."""
        self.warmer = Warmer()
        """Works out what the strategy reads before it runs, yielding the loop between slices (``warm.py``)."""
        self.sent: SentView | None = None
        """The view the last request returned (``record_sent``): a session-model summary is asked at its end."""
        self.records = PlanRecords(config, segments.store, strategy.plans_as, strategy.stores_cuts)
        """What the plan stores beside its summaries (cuts, mask end, working set), so a resume shows the same view."""
        self.reporter = Reporter(view, strategy.name, breaker, self.records, emit)
        self.installer = Installer(config, view, self.records)
        self.resumer = Resumer(strategy, segments, self.records, mask_settings is not None)
        self.stall: Stall | None = None
        """The last compaction of a view that fit could not make it smaller: none is tried again while the view
        fits and the plan's reach is the same (``Stall``)."""

    async def for_request(self, limits: Limits, provider: Any | None, tokens: int) -> None:
        """The view passed the threshold: carry out ``decide``'s path (a cancelled request still sends the post of
        each compaction whose pre went out: ``CompactionRun``)."""
        deadline = now() + self.config.compaction_deadline_s  # one for all this request waits for
        action = decide(self._moment(limits, tokens, self._stalled(limits, tokens), waited=False))
        if action is Action.WAIT:
            if await self._wait_for_flight(limits, provider, deadline):
                return  # the summary under way lands onto this masking later
            tokens = self.view.tokens()
            if not needs_compaction(tokens, limits):
                return
            action = decide(self._moment(limits, tokens, stalled=False, waited=True))
        if action is Action.SKIP:
            return
        if action is Action.BACKGROUND:
            await self._compact_soft(limits, provider, over_budget=False)
            return
        if action is Action.MASK_NOW and await self._compact_soft(limits, provider, over_budget=True):
            return  # masking alone made it fit: the summary is written in the background
        if self.config.background_compaction:
            self.in_band_next = False
            await self.settle_background(deadline)
            if not needs_compaction(self.view.tokens(), limits):
                return
        await self.in_band(limits, provider, force=False, deadline=deadline)

    def _moment(self, limits: Limits, tokens: int, stalled: bool, waited: bool) -> Moment:
        background = self.config.background_compaction
        running = background and self.background.running
        return Moment(tokens, limits.budget, background, running, self.in_band_next, stalled, waited)

    async def _wait_for_flight(self, limits: Limits, provider: Any | None, deadline: float) -> bool:
        """A summary about to land beats masking further; past a short grace, masking that fits beats waiting (True:
        masked beside the flight); else wait for it up to ``deadline`` and land it."""
        await self.background.wait(min(deadline, now() + LANDING_GRACE_S))
        if self.background.running and await self._mask_beside_flight(limits, provider):
            return True
        await self.background.wait(deadline)
        await self.land()
        return False

    async def _compact_soft(self, limits: Limits, provider: Any | None, over_budget: bool) -> bool:
        """Plan the compaction offline and install it now; if it needs a summary written (any summarizer: none is
        written before the hooks are asked), run it in the background. False: past the budget and masking does not
        fit, the request compacts in band (``judge_soft``)."""
        attempt = await self._begin(Request(limits, provider, False, None, offline=True))
        executed = await self.executor.run(self.strategy, attempt.job)
        state, fitting = executed.state, executed.fitting
        planned = None if over_budget or state is None else attempt.job.facts.view_tokens(state)
        verdict = judge_soft(
            SoftPlan(
                over_budget, state is None, fitting is not None, attempt.tokens, limits.budget, limits.target, planned
            )
        )
        if verdict is Verdict.IN_BAND:
            return False
        if verdict is Verdict.STALL:
            self.stall = Stall(self.reach(limits))  # known before the hooks are asked: nothing to report
        elif verdict is Verdict.INSTALL and state is not None:
            await self._ask_then_install(attempt, state, limits)
        elif verdict is Verdict.MASK_THEN_BACKGROUND and fitting is not None:  # a compaction of its own
            await self._ask_then_install(attempt, fitting, limits)  # over the budget: never postponed
        if verdict in (Verdict.BACKGROUND, Verdict.MASK_THEN_BACKGROUND):
            await self._start_background(limits, provider)
        return True

    async def _ask_then_install(self, attempt: Attempt, state: CompactionState, limits: Limits) -> None:
        """Ask the hooks (``context:pre_compact``), then install ``state`` unless they postpone it (only while the
        view fits the budget)."""
        async with self.reporter.open(attempt) as run:
            await run.ask()
            if not await run.postponed(limits):
                await self._finish(run, attempt, state)

    async def _start_background(self, limits: Limits, provider: Any | None) -> None:
        """Ask the hooks (``context:pre_compact``), then run the summarizer in the background with their focus; a
        ``deny`` while the view fits postpones it before any summarizer call. The flight holds the run from here."""
        attempt = self._attempt(time.perf_counter(), Request(limits, provider, False, None))
        async with self.reporter.open(attempt) as run:
            steer = await run.ask()
            if await run.postponed(limits):
                return
            job = attempt.job
            job.focus = steer.focus
            job.deadline = now() + max(BACKGROUND_DEADLINE_S, self.pace.allowance_s(attempt.tokens))
            flight = self.background.start(job, self.view.state, self.view.history, attempt.tokens, run)
            await self._emit_background(flight, FlightPhase.STARTED)

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
        that in band (True) instead of waiting; the summary then lands onto the masked state (``land``).

        A fast agent step with a large output gets here: the output arrives before the summary does.
        """
        if self.view.masks is None:  # masking is off: there is nothing to install but the summary
            return False
        attempt = await self._begin(Request(limits, provider, False, None, offline=True))
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
        started = time.perf_counter()
        # One deadline for all this request waits for: a background summary, then every summarizer call.
        if deadline is None:
            deadline = now() + self.config.compaction_deadline_s
        await self.prefetcher.drain(deadline)
        attempt = await self._begin(Request(limits, provider, force, deadline), started=started)
        async with self.reporter.open(attempt) as run:
            steer = await run.ask(focus)
            if await run.postponed(limits):
                return False
            attempt.job.focus = steer.focus
            executed = await self.executor.run(self.strategy, attempt.job)
            state = executed.state or attempt.before  # a job that may call the LLM has a state
            planned = None if attempt.tokens > limits.budget else attempt.job.facts.view_tokens(state)
            if not gains(attempt.tokens, limits.budget, planned):
                await self._unchanged(run, attempt.job, attempt.tokens, attempt.messages, _ms_since(attempt.started))
                return False
            await self._finish(run, attempt, state)
            return True

    def _stalled(self, limits: Limits, tokens: int) -> bool:
        """A compaction of this view, which fits, could not gain the last time, and nothing that could let it gain
        has changed since (``Stall``). A view past the budget ends the stall."""
        stall = self.stall
        if stall is None:
            return False
        if still_stalled(stall, tokens, limits.budget, self.reach(limits) if tokens <= limits.budget else None):
            return True
        self.stall = None
        return False

    def reach(self, limits: Limits) -> Reach:
        """How far a plan of the view under ``limits`` may cut and mask, with what it starts from (``Stall``)."""
        view = self.view
        history, state = view.history, view.state
        cut_end = cut_reach(history.prefix, state.boundary, history.last_cuttable, limits.preserve_recent)
        mask_end = view.masks.limit() if view.masks is not None else None
        return Reach(history, state, limits.budget, cut_end, mask_end)

    async def _unchanged(self, run: CompactionRun, job: Job, tokens: int, messages: int, duration_ms: float) -> None:
        """Report a compaction whose pre went out and that could not make the fitting view smaller: nothing is
        installed (the view stays exactly as it was, ``tokens`` and ``messages`` its measure); the summaries it
        wrote stay in the store for a later one, and none is tried again until the plan could reach further."""
        self.stall = Stall(self.reach(job.limits))
        end = End(Outcome.UNCHANGED, tokens, messages, duration_ms, before=self.view.state, estimated=run.estimated)
        await run.close(end)

    async def _begin(self, ask: Request, started: float | None = None) -> Attempt:
        """Warm what the plan reads (the loop let run), then take the view's measure and make the job."""
        started = time.perf_counter() if started is None else started
        await self.warmer.warm(self.view.history, self.view.masks, self.view.state)
        return self._attempt(started, ask)

    def _attempt(self, started: float, ask: Request) -> Attempt:
        summarizer = self.segments.summarizer.backend is not None
        return attempt_of(self.config, self.view, summarizer, self.cached_sent, started, ask)

    async def _finish(self, run: CompactionRun, attempt: Attempt, state: CompactionState) -> None:
        """Install a compaction made in band and report it."""
        job, before = attempt.job, attempt.before
        await self.installer.install(run, state, job.facts.shown(state), before, self.view.history.latest_request, True)
        artifacts = await artifacts_hidden(before, self.view.state, self.view.shown(), job)
        end = End(
            Outcome.COMPACTED,
            attempt.tokens,
            attempt.messages,
            _ms_since(attempt.started),
            artifacts,
            before,
            run.estimated,
        )
        await run.close(end)

    async def _run_background(self, job: Job, before: CompactionState) -> Landed:
        """The background task: a prefetch under way is let land first (single flight), then the plan is carried out.

        The summary message and the artifact account are worked out here too, off the request path.
        """
        await self.prefetcher.drain(job.deadline)
        await self.warmer.warm(job.history, job.masks, job.state)
        state = (await self.executor.run(self.strategy, job)).state or before
        shows = job.facts.shown(state)
        return Landed(state, shows, await artifacts_hidden(before, state, shows, job))

    def may_land(self) -> bool:
        """A background compaction is in flight or has finished: ``land`` has something to look at (asked on
        every request, so the usual answer costs no coroutine)."""
        return self.background.flight is not None or bool(self.background.lost)

    async def land(self) -> None:
        """Install a background compaction that has landed, if it still applies; report how it ended (this request
        reports it now: its pre went out when it started, and the hooks' focus is in its summaries)."""
        while self.background.lost:  # dropped with an event loop that closed under it
            await self.pay_flight(self.background.lost.pop(0))
        flight = self.background.landed()
        if flight is None:
            return
        async with flight.run as run:
            landed = None if flight.task.cancelled() else flight.task.result()
            if landed is None:
                self.in_band_next = True
                await self._emit_background(flight, FlightPhase.FAILED, flight.error or "error")
                return
            current = self.view.state
            if not lands_onto(flight.before, current, flight.history is self.view.history):
                await self._emit_background(flight, FlightPhase.CANCELLED, "superseded")
                return
            await self._install_landed(run, flight, landed, current)

    async def _install_landed(
        self, run: CompactionRun, flight: Flight, landed: Landed, current: CompactionState
    ) -> None:
        state = landed.state
        if current.mask_end > state.boundary:  # masked further in band meanwhile: keep that masking
            state = state.masked_to(current.mask_end)
        # Before: the view this replaces, now (the history grew and may have been masked since the flight started).
        tokens_before, messages_before = self.view.tokens(), len(self.view.build())
        run.estimated = False  # counted now, after the request that lent bounds: exact
        budget = flight.job.limits.budget
        planned = None if tokens_before > budget else self.installer.tokens_of(state, landed.shown)
        if not gains(tokens_before, budget, planned):
            await self._emit_background(flight, FlightPhase.LANDED)
            await self._unchanged(run, flight.job, tokens_before, messages_before, flight.elapsed_ms())
            return
        await self.installer.install(run, state, landed.shown, current, None, False)  # the pin is re-derived
        await self._emit_background(flight, FlightPhase.LANDED)
        end = End(Outcome.COMPACTED, tokens_before, messages_before, flight.elapsed_ms(), landed.artifacts, current)
        await run.close(end)

    async def pay_flight(self, flight: Flight) -> None:
        """A background compaction dropped before it was installed: its pre gets its post (``cancelled``)."""
        async with flight.run:
            pass  # leaving the run unclosed sends its post

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
        pending = self.background.flight
        flight = self.background.cancel()
        if pending is None:
            return
        async with pending.run:
            if flight is not None:
                await self._emit_background(flight, FlightPhase.CANCELLED, reason)

    async def _emit_background(self, flight: Flight, phase: FlightPhase, reason: str | None = None) -> None:
        budget = flight.job.limits.budget
        await self.reporter.background(phase, reason, flight.tokens, budget, flight.elapsed_ms(), flight.waited)

    def prefetch_steer(self, hooks_answer: bool) -> Steer | None:
        """What a prefetch may write with: no summary is written before the hooks are asked (``context:pre_compact``),
        and a prefetch writes ahead of the compaction that will ask them. So, with handlers that could answer
        (``hooks_answer``), none is written until the hooks have been asked once; then with the focus they last
        gave, keyed by it (``SegmentSource.key``): the compaction they steer the same way takes it from the store,
        one they steer otherwise writes its own (a summary without its focus is never served for it). None: no
        prefetch now (not asked yet, or their last answer postponed the compaction)."""
        if not hooks_answer:
            return Steer()
        said = self.reporter.hooks_said
        return None if said is None or said.denied else said

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

    def stop_folding(self) -> None:
        """Stop folding a resumed session's working set ahead (``Resumer.fold_after_resume``)."""
        self.resumer.stop_folding()

    async def resumed(self, history: History, wire_budget: int) -> CompactionState:
        return await self.resumer.resumed(history, wire_budget)
