"""The end of a session: background work settled, cancelled and stopped, then the store and the summarizer's backend
closed once. Each step's fault is logged (by class name: it may echo a key) and the next step still runs."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from ...backends.base import Closable
from ...core.clock import now
from ...stores import SummaryStore
from .compactor import Compactor
from .prefetch import Prefetcher

logger = logging.getLogger(__name__)

CANCEL_GRACE_S = 1.0
"""At close, how long a cancelled background task is given to end before the store and the backend close."""


async def end_background(compactor: Compactor, prefetcher: Prefetcher, wait_s: float) -> None:
    """Let summaries still being written reach the store (up to ``wait_s``: one landing after the last request is
    then found by the next process), cancel what still runs and wait for it to end (a compaction never installed
    reports ``cancelled``), stop folding the working set."""
    deadline = now() + wait_s

    async def settle() -> None:
        await compactor.background.wait(deadline)
        await prefetcher.drain(deadline)

    await quietly("waiting for background summaries", settle)
    await quietly("cancelling the background compaction", lambda: compactor.flights.stop(CANCEL_GRACE_S))
    await quietly("cancelling prefetches", lambda: prefetcher.stop(CANCEL_GRACE_S))
    await quietly("stopping the working set's folding", compactor.resumer.stop)


async def close_resources(store: SummaryStore, backend: object) -> None:
    """Close the store, then the summarizer's backend when it holds anything to close."""
    await quietly("closing the summary store", store.close)
    if isinstance(backend, Closable):
        await quietly("closing the summarizer backend", backend.aclose)


async def quietly(what: str, step: Callable[[], Awaitable[object]]) -> None:
    """Run one step of ``close``: its fault is logged and never raised."""
    try:
        await step()
    except Exception as exc:
        logger.warning("%s at close failed (%s)", what, type(exc).__name__)
