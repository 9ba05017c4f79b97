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
from ..view.masking import Masks, MaskSettings
from ..view.request import RequestView
from .artifacts import artifacts_hidden
from .attempt import Attempt, Request, attempt_of, first_cut
from .background import Landed
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
    masks_further,
    slow,
    still_stalled,
)
from .execute import Executor
from .flights import Flights
from .install import Installer
from .owed import rewrite_owed
from .payloads import Outcome
from .prefetch import Prefetcher
from .reporter import CompactionRun, Emit, End, Reporter
from .reports import answers_pre_compact
from .resume import Resumer
from .stand_in import rewrite

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
        self.warmer = Warmer()
        """Works out what the strategy reads before it runs, yielding the loop between slices (``warm.py``)."""
        self.sent: SentView | None = None
        """The view the last request returned (``record_sent``): a session-model summary is asked at its end."""
        self.records = PlanRecords(config, segments.store, strategy.plans_as, strategy.stores_cuts)
        """What the plan stores beside its summaries (cuts, mask end, working set), so a resume shows the same view."""
        self.reporter = Reporter(view, strategy.name, breaker, self.records, emit)
        self.installer = Installer(config, view, self.records)
        self.resumer = Resumer(strategy, segments, self.records, mask_settings is not None)
        self.flights = Flights(view, self.installer, self.reporter, self._run_background, self.unchanged)
        self.background = self.flights.background
        """The soft threshold's compaction, when it needs the summarizer (``background_compaction``)."""
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
        stand_in = self.config.background_compaction and not self.flights.in_band_next  # see ``stand_in.py``
        if self.config.background_compaction:
            self.flights.in_band_next = False
            await self.flights.settle(deadline)
            if not needs_compaction(self.view.tokens(), limits):
                return
        await self.in_band(limits, provider, force=False, deadline=deadline, stand_in=stand_in)

    def _moment(self, limits: Limits, tokens: int, stalled: bool, waited: bool) -> Moment:
        background = self.config.background_compaction
        running = background and self.background.running
        return Moment(tokens, limits.budget, background, running, self.flights.in_band_next, stalled, waited)

    async def _wait_for_flight(self, limits: Limits, provider: Any | None, deadline: float) -> bool:
        """A summary about to land beats masking further; past a short grace, masking that fits beats waiting (True:
        masked beside the flight); else wait for it up to ``deadline`` and land it."""
        await self.background.wait(min(deadline, now() + LANDING_GRACE_S))
        if self.background.running and await self._mask_beside_flight(limits, provider):
            return True
        await self.background.wait(deadline)
        await self.flights.land()
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
            await self.flights.start(job, run, attempt.tokens)

    @property
    def pace(self) -> Pace:
        return self.segments.summarizer.pace

    def slow(self, limits: Limits) -> bool:
        """The summarizer is measured slower than the compaction deadline (``decide.slow``)."""
        has_backend = self.segments.summarizer.backend is not None
        c = self.config
        return slow(self.pace, has_backend, limits, c.summary_output_tokens, c.compaction_deadline_s)

    async def resume(self, wire_budget: int) -> None:
        """Show the state this session's plan stored at ``wire_budget`` (a budget known only now, or a key renewed)."""
        if self.strategy.stores_cuts:
            view, resumer = self.view, self.resumer
            self.installer.place(await resumer.resumed(view.history, wire_budget))
            view.inject(await resumer.resumed_injection(view.history, view.state, wire_budget), wire_budget)
            resumer.fold_after_resume(view.history, view.state)

    def start_over(self, history: History, state: CompactionState) -> None:
        """A new history (``set_messages``, ``clear``): work on the old one stops, and none of it is reported."""
        self.prefetcher.cancel()
        self.resumer.stop_folding()
        self.background.cancel()
        self.flights.in_band_next = False
        self.view.install(history, Masks(history, self.mask_settings) if self.mask_settings else None, state)

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
        stand_in: bool = False,
    ) -> bool:
        """Compact in band: the request waits for the summarizer (until ``deadline``, a ``core.clock.now()`` value).

        ``focus`` (or one a ``context:pre_compact`` hook returns) steers this compaction's summaries; a hook's
        ``deny`` postpones it while the view fits (False: nothing was done). ``stand_in``: see ``stand_in.py``."""
        started = time.perf_counter()
        # One deadline for all this request waits for: a background summary, then every summarizer call.
        if deadline is None:
            deadline = now() + self.config.compaction_deadline_s
        await self.prefetcher.make_way(deadline, focus)
        attempt = await self._begin(Request(limits, provider, force, deadline, stand_in=stand_in), started=started)
        async with self.reporter.open(attempt) as run:
            steer = await run.ask(focus)
            if await run.postponed(limits):
                return False
            attempt.job.focus = steer.focus
            executed = await self.executor.run(self.strategy, attempt.job)
            state = executed.state or attempt.before  # a job that may call the LLM has a state
            planned = None if attempt.tokens > limits.budget else attempt.job.facts.view_tokens(state)
            if not gains(attempt.tokens, limits.budget, planned):
                await self.unchanged(run, attempt.job, attempt.tokens, attempt.messages, _ms_since(attempt.started))
                return False
            await self._finish(run, attempt, state)  # its post is sent: the LLM's summaries owed start after it
        if attempt.job.stand_ins:
            rewrite = self._attempt(time.perf_counter(), Request(limits, provider, False, None))
            await self.flights.start_rewrite(rewrite, limits, attempt.job.stand_ins, self.pace)
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
        first, summary_end = first_cut(self.config, view, self.segments.summarizer.backend is not None, limits)
        mask_end = view.masks.limit() if view.masks is not None else None
        return Reach(history, state, limits.budget, cut_end, mask_end, first, summary_end)

    async def unchanged(self, run: CompactionRun, job: Job, tokens: int, messages: int, duration_ms: float) -> None:
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
        done = await rewrite(job, before, self.segments) if job.rewrites else None  # see ``stand_in.py``
        state = done or (await self.executor.run(self.strategy, job)).state or before
        shows = job.facts.shown(state)
        return Landed(state, shows, await artifacts_hidden(before, state, shows, job))

    async def prefetch(self, limits: Limits, provider: Any | None, tokens: int, hooks: Any | None) -> None:
        """After a request: the rewrite a resume owes (``rewrite_owed``), then the next cut summarized early
        (``prefetch``, or a summarizer measured slow) with the hooks' steer, once asked (``prefetch_steer``)."""
        await rewrite_owed(self, limits, provider)
        c, view = self.config, self.view
        if not ((c.prefetch or self.slow(limits)) and self.strategy.summarizes):
            return
        steer = self.reporter.prefetch_steer(answers_pre_compact(hooks))
        if steer is None:
            return
        fixed = view.system_view_tokens() + view.shown().summary_tokens + c.summary_output_tokens
        masks = view.masks
        span_of, saves = (masks.span, view.mask_savings) if masks is not None else (None, None)
        await self.prefetcher.maybe_start(
            view.history, view.state, limits, tokens, fixed, provider, span_of, saves, steer.focus
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

    def stop_folding(self) -> None:
        """Stop folding a resumed session's working set ahead (``Resumer.fold_after_resume``)."""
        self.resumer.stop_folding()
