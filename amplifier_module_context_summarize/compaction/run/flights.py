"""A background compaction's life seen from the requests: started with the run that owes its post, landed (installed
if it still applies, or reported ``unchanged``), dropped as superseded, failed, cancelled or lost with its loop.
Each end closes the flight's ``CompactionRun``, so its ``context:pre_compact`` gets exactly one post."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from ...core.clock import now
from ...core.plan import Limits
from ...core.state import CompactionState
from ...summarizer.pace import Pace
from ..cache.flight import BACKGROUND_CLAIM_S
from ..plan.job import Job, StandIn
from ..view.request import RequestView
from .attempt import Attempt
from .background import BackgroundCompactor, Flight, Landed, Run
from .decide import gains, lands_onto
from .install import Installer
from .payloads import FlightPhase, Outcome
from .reporter import CompactionRun, End, Reporter

Unchanged = Callable[[CompactionRun, Job, int, int, float], Awaitable[None]]
"""Reports a compaction that could not make the view smaller (``Compactor.unchanged``)."""


class Flights:
    """Starts, lands, settles and cancels the one background compaction (``BackgroundCompactor``)."""

    def __init__(
        self, view: RequestView, installer: Installer, reporter: Reporter, run: Run, unchanged: Unchanged
    ) -> None:
        self.view, self.installer, self.reporter, self.unchanged = view, installer, reporter, unchanged
        self.background = BackgroundCompactor(run)
        self.in_band_next = False
        """After a background compaction failed, the next compaction runs in band (no retry loop of failures)."""

    async def start(self, job: Job, run: CompactionRun, tokens: int) -> None:
        """Run ``job`` in the background from the view as it is; the flight holds ``run`` from here."""
        flight = self.background.start(job, self.view.state, self.view.history, tokens, run)
        await self.emit(flight, FlightPhase.STARTED)

    async def start_rewrite(self, attempt: Attempt, limits: Limits, stand_ins: list[StandIn], pace: Pace) -> None:
        """The background compaction that writes the LLM's summaries of the ``stand_ins`` the view still shows in
        their place (``stand_in.rewrite``), as ``attempt``: asked of the hooks (``context:pre_compact``) like any,
        its post sent when a request installs it; a ``deny`` (the view fits now) leaves the stand-ins. The stand-ins
        are a compaction's just written, or a resume's (``Resumer.owed``)."""
        shown = self.view.state.segments
        owed = tuple(s for s in stand_ins if s.segment in shown)
        if not owed or self.background.running:
            return
        async with self.reporter.open(attempt) as run:
            steer = await run.ask()
            if await run.postponed(limits):
                return
            job = attempt.job
            job.focus, job.rewrites = steer.focus, owed
            span = sum(s.tokens for s in owed)  # as the stand-ins read them: a resumed span is not counted again
            job.deadline = now() + max(BACKGROUND_CLAIM_S, pace.allowance_s(span))
            await self.start(job, run, attempt.tokens)

    def may_land(self) -> bool:
        """A background compaction is in flight or has finished: ``land`` has something to look at (asked on
        every request, so the usual answer costs no coroutine)."""
        return self.background.flight is not None or bool(self.background.lost)

    async def land(self) -> None:
        """Install a background compaction that has landed, if it still applies; report how it ended (this request
        reports it now: its pre went out when it started, and the hooks' focus is in its summaries)."""
        while self.background.lost:  # dropped with an event loop that closed under it
            await self.drop(self.background.lost.pop(0))
        flight = self.background.landed()
        if flight is None:
            return
        async with flight.run as run:
            landed = None if flight.task.cancelled() else flight.task.result()
            if landed is None:
                self.in_band_next = True
                await self.emit(flight, FlightPhase.FAILED, flight.error or "error")
                return
            current = self.view.state
            if not lands_onto(flight.before, current, flight.history is self.view.history):
                await self.emit(flight, FlightPhase.CANCELLED, "superseded")
                return
            await self._install(run, flight, landed, current)

    async def _install(self, run: CompactionRun, flight: Flight, landed: Landed, current: CompactionState) -> None:
        state = landed.state
        if current.mask_end > state.boundary:  # masked further in band meanwhile: keep that masking
            state = state.masked_to(current.mask_end)
        # Before: the view this replaces, now (the history grew and may have been masked since the flight started).
        tokens_before, messages_before = self.view.tokens(), len(self.view.build())
        run.estimated = False  # counted now, after the request that lent bounds: exact
        budget = flight.job.limits.budget
        planned = None if tokens_before > budget else self.installer.tokens_of(state, landed.shown)
        # The LLM's summary in place of a stand-in is worth installing when it fits, smaller or not (``stand_in``).
        upgrade = bool(flight.job.rewrites) and landed.state is not flight.before
        if not gains(tokens_before, budget, planned) and not (upgrade and planned is not None and planned <= budget):
            await self.emit(flight, FlightPhase.LANDED)
            await self.unchanged(run, flight.job, tokens_before, messages_before, flight.elapsed_ms())
            return
        await self.installer.install(run, state, landed.shown, current, None, False)  # the pin is re-derived
        await self.emit(flight, FlightPhase.LANDED)
        end = End(Outcome.COMPACTED, tokens_before, messages_before, flight.elapsed_ms(), landed.artifacts, current)
        await run.close(end)

    async def drop(self, flight: Flight) -> None:
        """A background compaction dropped before it was installed: its pre gets its post (``cancelled``)."""
        async with flight.run:
            pass  # leaving a run that is not closed sends its post

    async def settle(self, deadline: float) -> None:
        """Before compacting in band: let a running background compaction land until ``deadline``, else cancel it."""
        if not self.background.running:
            await self.land()
            return
        await self.background.wait(deadline)
        await self.land()
        await self.cancel("deadline")

    async def cancel(self, reason: str) -> None:
        """Cancel the background compaction (one finished but not installed is dropped too); its pre gets its
        post, outcome ``cancelled``."""
        pending = self.background.flight
        flight = self.background.cancel()
        if pending is None:
            return
        async with pending.run:
            if flight is not None:
                await self.emit(flight, FlightPhase.CANCELLED, reason)

    async def stop(self, grace_s: float) -> None:
        """The end of the session: cancel the flight, give it ``grace_s`` to end before the store closes, and send
        the post of one never installed (``cancelled``)."""
        pending = self.background.flight
        flight = self.background.cancel()
        if flight is not None:
            await asyncio.wait({flight.task}, timeout=grace_s)
        if pending is not None:
            await self.drop(pending)

    async def emit(self, flight: Flight, phase: FlightPhase, reason: str | None = None) -> None:
        budget = flight.job.limits.budget
        await self.reporter.background(phase, reason, flight.tokens, budget, flight.elapsed_ms(), flight.waited)
