"""Background compaction: past the soft threshold the summarizer works while the agent goes on.

At ``compact_threshold`` the view still fits the budget, so no request needs to wait for an LLM summary.
The manager plans the compaction offline first (masking and stored summaries cost no call); only when that
plan reaches the summarizer does the compaction run here, in one task, while requests keep getting the view
as it was (it fits, and stays prefix-stable). The hooks are asked (``context:pre_compact``) before it starts, so
their focus steers its summaries and their ``deny`` spares the summarizer; the flight owes that pre its post.
The first request after the task lands installs its result, if history and state are still those it started
from (or only masked further since: the result is installed with that masking kept). A request whose view
would not fit masks further in band when that alone fits, and otherwise waits for it, up to the compaction
deadline; a task still running then is cancelled and the cheaper rungs answer in band.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ...core.clock import now
from ...core.history import History
from ...core.state import CompactionState, Shown
from ..plan.job import Job
from ..view.losses import Account
from .reporter import CompactionRun

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Landed:
    """What a background compaction produced, with the work its installation needs done off the request path."""

    state: CompactionState
    shown: Shown
    """The summary message of ``state`` (the pinned latest request is re-derived at installation)."""
    artifacts: Account
    """What the newly hidden groups' artifacts became (for ``context:post_compact``)."""


@dataclass
class Flight:
    """One background compaction: the job, what it started from, and its task."""

    job: Job
    before: CompactionState
    history: History
    tokens: int
    """Tokens of the view when it started."""
    started: float
    """``core.clock.now()`` when it started."""
    run: CompactionRun
    """Its ``context:pre_compact`` went out when it started: the run owes the post, closed when a request installs
    it, or with outcome ``cancelled`` when it fails, is superseded, cancelled or lost."""
    task: asyncio.Task[Landed | None] = field(init=False, repr=False)
    waited: float = 0.0
    """Seconds requests spent waiting for it (only a request whose view would not fit waits)."""
    error: str | None = None
    """Class name of the fault that ended it, when it failed."""

    @property
    def owes(self) -> bool:
        """Its post has not gone out yet."""
        return not self.run.closed

    def elapsed_ms(self) -> float:
        return round((now() - self.started) * 1000, 3)


Run = Callable[[Job, CompactionState], Awaitable[Landed]]


def orphaned(task: asyncio.Future[Any]) -> bool:
    """True when ``task`` can never finish for the current caller: its loop is closed, or it is not the running
    one (the loop was closed mid-flight without cancelling its tasks and the manager reused in a new loop).
    Waiting for it would last the whole deadline, and cancelling it raises ``Event loop is closed``."""
    if task.done():
        return False
    loop = task.get_loop()
    if loop.is_closed():
        return True
    try:
        return asyncio.get_running_loop() is not loop
    except RuntimeError:  # no running loop: nothing here can wait for it anyway
        return False


class BackgroundCompactor:
    """Runs at most one compaction at a time in the background; never raises into the agent loop."""

    def __init__(self, run: Run) -> None:
        self._run = run
        self.flight: Flight | None = None
        self.lost: list[Flight] = []
        """Flights dropped with their event loop (``orphaned``): their owed posts are paid by the next request."""

    @property
    def running(self) -> bool:
        self._drop_orphan()
        return self.flight is not None and not self.flight.task.done()

    def _drop_orphan(self) -> None:
        """Forget a flight bound to a closed or other loop: it will never land here (see ``orphaned``)."""
        flight = self.flight
        if flight is not None and orphaned(flight.task):
            logger.warning("background compaction lost with its event loop; the next one starts afresh")
            self.lost.append(flight)
            self.flight = None

    def start(self, job: Job, before: CompactionState, history: History, tokens: int, run: CompactionRun) -> Flight:
        """Start ``job`` in a task; the flight takes ``run`` over from the request (``CompactionRun.hand_off``)."""
        run.hand_off()
        flight = Flight(job, before, history, tokens, now(), run)
        flight.task = asyncio.get_running_loop().create_task(self._guarded(flight))
        self.flight = flight
        return flight

    async def _guarded(self, flight: Flight) -> Landed | None:
        try:
            return await self._run(flight.job, flight.before)
        except Exception as exc:  # nobody awaits this task: report through the manager, never die silently
            logger.warning("background compaction failed (%s); the next one runs in band", type(exc).__name__)
            flight.error = type(exc).__name__
            return None

    def landed(self) -> Flight | None:
        """The flight that has finished (taken: it is handed out once), else None."""
        self._drop_orphan()
        flight = self.flight
        if flight is None or not flight.task.done():
            return None
        self.flight = None
        return flight

    async def wait(self, deadline: float) -> None:
        """Wait for the running compaction until ``deadline`` (``core.clock.now()``); it keeps running after."""
        self._drop_orphan()
        flight = self.flight
        if flight is None or flight.task.done():
            return
        began = now()
        await asyncio.wait({flight.task}, timeout=max(deadline - began, 0.0))
        flight.waited += now() - began

    def cancel(self) -> Flight | None:
        """Cancel the running compaction; return it when one was running."""
        self._drop_orphan()
        flight, self.flight = self.flight, None
        if flight is None or flight.task.done():
            return None
        flight.task.cancel()
        return flight
