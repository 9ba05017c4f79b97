"""Prefetch: above a lower watermark, summarize in the background the segment the next compaction will want.

Single flight: one background summary at a time, and over a shared store (Redis) none for a segment another
worker has claimed. The threshold compaction then finds it stored and turns into a cache hit
(``segments.SegmentSource.ready_end``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from ...core.clock import now
from ...core.history import History
from ...core.messages import Message
from ...core.plan import Limits, choose_boundary, near_target
from ...core.state import CompactionState
from ...summarizer.span import Outcome
from ..cache.segments import SegmentSource
from .background import orphaned

logger = logging.getLogger(__name__)


class Prefetcher:
    def __init__(self, segments: SegmentSource, watermark: float, report: Callable[[Outcome], Awaitable[None]]) -> None:
        self.segments = segments
        self.watermark = watermark
        self.report = report
        """Awaited with each background outcome (the manager turns it into an event)."""
        self._inflight: dict[tuple[str, str], asyncio.Task[None]] = {}

    @property
    def busy(self) -> bool:
        self._drop_orphans()
        return bool(self._inflight)

    def _drop_orphans(self) -> None:
        """Forget summaries bound to a closed or other event loop: they never finish here (``orphaned``)."""
        for key in [k for k, task in self._inflight.items() if orphaned(task)]:
            del self._inflight[key]

    async def maybe_start(
        self,
        history: History,
        state: CompactionState,
        limits: Limits,
        view_tokens: int,
        fixed_tokens: int,
        provider: Any | None,
        span_of: Callable[[int, int], list[Message]] | None = None,
        mask_savings: Callable[[int], int] | None = None,
        focus: str | None = None,
    ) -> None:
        """``fixed_tokens``: system, summary and the allowance of the summary to come. ``mask_savings(end)``: tokens
        masking saves today at a compaction that would cut at ``end`` (it only saves more as the session grows).
        ``focus``: what the hooks steer compactions with (``Reporter.prefetch_steer``): the summary is asked with it
        and keyed by it, so the compaction they steer finds it."""
        self._drop_orphans()
        if self._inflight or not limits.budget * self.watermark < view_tokens <= limits.compact_at:
            return
        growth = limits.compact_at - view_tokens + 1
        end = choose_boundary(history.prefix, state.boundary, history.last_cuttable, fixed_tokens, limits, growth)
        if end <= state.boundary:
            return
        if mask_savings is not None and limits.compact_at - mask_savings(end) <= near_target(limits):
            return  # masking will answer the threshold compaction: a summary made now would go unused
        key = self.segments.key(history, state.boundary, end, focus)
        if await self.segments.store.get(*key) is not None:
            return
        task = asyncio.get_running_loop().create_task(self._run(history, state, end, provider, key, span_of, focus))
        self._inflight[key] = task
        task.add_done_callback(partial(self._forget, key))

    def _forget(self, key: tuple[str, str], _task: asyncio.Task[None]) -> None:
        self._inflight.pop(key, None)

    async def _run(
        self,
        history: History,
        state: CompactionState,
        end: int,
        provider: Any | None,
        key: tuple[str, str],
        span_of: Callable[[int, int], list[Message]] | None,
        focus: str | None = None,
    ) -> None:
        flight = self.segments.flight
        try:
            if not await flight.try_acquire(key):  # another worker of the fleet is summarizing it, or just did
                return
            try:
                outcome = await self.segments.prefetched(
                    history, state.boundary, end, state.summary_text, provider, span_of, focus
                )
            finally:
                await flight.release(key)
            if outcome is not None:
                await self.report(outcome)
        except Exception as exc:  # nobody awaits a background task: say so rather than die silently
            logger.warning("prefetch failed (%s); the next compaction summarizes the span itself", type(exc).__name__)

    async def drain(self, deadline: float | None = None) -> None:
        """Let a background summary land (the compaction about to run may want it), until ``deadline``.

        ``deadline`` is a ``core.clock.now()`` value: a background summary has no deadline of its own, so
        one still running then is cancelled rather than holding the request past the compaction's.
        """
        self._drop_orphans()
        tasks = list(self._inflight.values())
        if not tasks:
            return
        timeout = None if deadline is None else max(deadline - now(), 0.0)
        _, running = await asyncio.wait(tasks, timeout=timeout)
        for task in running:
            task.cancel()

    async def make_way(self, deadline: float, focus: str | None) -> None:
        """Before a compaction in band: let a summary written ahead land (``drain``), or, for a compaction asked
        with a focus of its own (``compact(focus=...)``), cancel it: written before that focus was given, it is
        keyed without it and never served for it, and waiting on it spends the deadline the focused summaries
        share."""
        if focus is None:
            await self.drain(deadline)
        else:
            self.cancel()

    def cancel(self) -> None:
        self._drop_orphans()
        for task in self._inflight.values():
            task.cancel()
        self._inflight.clear()

    async def stop(self, grace_s: float) -> None:
        """Cancel every background summary and wait, up to ``grace_s``, for them to end (the end of a session: none
        may outlive the store and the backend it writes through)."""
        self._drop_orphans()
        tasks = list(self._inflight.values())
        self.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=grace_s)
