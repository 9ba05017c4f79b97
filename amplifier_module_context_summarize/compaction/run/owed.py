"""The rewrite a resume owes: a resumed state that shows stand-ins (``Resumer.owed``, read from their cuts' marks)
gets the background compaction a live session starts for them (``stand_in.py``), from the request path."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

from ...config import Config
from ...core.plan import Limits
from ...summarizer.in_context import SentView
from ...summarizer.pace import Pace
from ..cache.segments import SegmentSource
from ..view.request import RequestView
from .attempt import Request, attempt_of
from .flights import Flights
from .resume import Resumer


class Owing(Protocol):
    """What the rewrite reads of the compactor (``Compactor``)."""

    config: Config
    view: RequestView
    segments: SegmentSource
    resumer: Resumer
    flights: Flights

    @property
    def pace(self) -> Pace: ...

    def cached_sent(self) -> SentView | None: ...


async def rewrite_owed(compactor: Owing, limits: Limits, provider: Any | None) -> None:
    """Start ``Flights.start_rewrite`` for the stand-ins owed since the last resume, once a resume; wait while another
    background compaction runs. With no summarizer backend there is nothing to write. Asked after every request
    (``Compactor.prefetch``): the request's own compaction, in band or started in the background, goes first."""
    resumer, flights = compactor.resumer, compactor.flights
    if not resumer.owed or flights.background.running:
        return
    owed = resumer.take_owed()
    summarizer = compactor.segments.summarizer.backend is not None
    if summarizer:
        view, started = compactor.view, time.perf_counter()
        ask = Request(limits, provider, False, None)
        last_sent: Callable[[], SentView | None] = compactor.cached_sent
        attempt = attempt_of(compactor.config, view, summarizer, last_sent, started, ask)
        await flights.start_rewrite(attempt, limits, list(owed), compactor.pace)
