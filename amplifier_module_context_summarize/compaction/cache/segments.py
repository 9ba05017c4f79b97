"""Where segment summaries come from: the store first, then the summarizer, guarded by cooldowns and a breaker.

A span is only ever paid for once: a cached summary is served as is; a span whose summary failed is not
sent again until its cooldown ends; while the circuit is open no span is sent at all. Whatever answers,
the report of the compaction says so.
"""

from __future__ import annotations

import contextlib
import logging
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from ...backends.base import Fault, Skip, fault_of
from ...core.history import History
from ...core.messages import Message
from ...core.state import Segment
from ...stores import CachedSummary, SummaryStore
from ...stores.records import ArtefactKey, ArtefactRecord
from ...summarizer.offline_merge import merge_summaries
from ...summarizer.prompts import keep_names
from ...summarizer.span import Outcome, SpanSummarizer
from ...working_set.facts import authored_text
from ..plan.job import CompactionReport, Job, StandIn
from .breaker import CircuitBreaker
from .flight import SingleFlight
from .keys import focused_end

logger = logging.getLogger(__name__)

MAX_REMEMBERED_FAILURES = 1024
"""Failed spans remembered for their cooldown; the oldest are forgotten first (a long session stays bounded)."""


def pinned_requests(history: History, start: int, end: int) -> tuple[str, ...]:
    """The session's first request, when groups ``[start, end)`` hold it: every view that shows their summary
    also shows it verbatim (``state.pins_for``), so a summary need not repeat it."""
    first = history.first_request
    if first < 0 or end <= start or not history.groups[start].start <= first < history.groups[end - 1].end:
        return ()
    return (authored_text(history.messages[first]),)


class SegmentSource:
    def __init__(
        self,
        summarizer: SpanSummarizer,
        store: SummaryStore,
        breaker: CircuitBreaker,
        cooldown_s: float,
        clock: Callable[[], float],
        quiet: Callable[[], contextlib.AbstractContextManager[Any]] = contextlib.nullcontext,
    ) -> None:
        self.summarizer = summarizer
        self.store = store
        self.breaker = breaker
        self.cooldown_s = cooldown_s
        self.clock = clock
        self.quiet = quiet
        """Entered around summarizer calls (the usage they report is not the agent's)."""
        self._failed: OrderedDict[tuple[str, str], float] = OrderedDict()
        self.flight = SingleFlight(store)
        self.prefetched_any = False
        """A prefetch has stored a summary (``prefetch``, or a summarizer measured slow): compactions look for one."""
        """Claims a segment across a fleet before paying for it, when the store can hold claims (Redis)."""

    @property
    def cooling_spans(self) -> int:
        """Spans whose summary failed and that are remembered for their cooldown."""
        return len(self._failed)

    @staticmethod
    def key(history: History, start: int, end: int, focus: str | None = None) -> tuple[str, str]:
        """Store key of a summary of groups ``[start, end)``; one written with a focus is keyed by it too."""
        return history.chain_at(start), focused_end(history.chain_at(end), focus)

    async def summary(
        self,
        job: Job,
        start: int,
        end: int,
        previous: str | None,
        max_tokens: int | None = None,
        span: list[Message] | None = None,
    ) -> Segment | None:
        """The summary of groups ``[start, end)``, from the store when it has it (``max_tokens``: its size when
        below the summarizer's output cap; ``span``: the groups as read already, else ``job.span``); None when the
        store has not got it and the job writes none (``Job.offline``)."""
        history, report = job.history, job.report
        key = self.key(history, start, end, job.focus)
        cached = await self.store.get(*key)
        if cached is not None:
            report.cache_hits += 1
            return Segment(start, end, cached.text, cached.tokens, cached.tier)
        if job.offline:
            return None
        return await self._summary(job, key, start, end, previous, max_tokens, span)

    async def _summary(
        self,
        job: Job,
        key: tuple[str, str],
        start: int,
        end: int,
        previous: str | None,
        max_tokens: int | None,
        read: list[Message] | None = None,
    ) -> Segment | None:
        history, report, focus = job.history, job.report, job.focus
        span = read if read is not None else job.span(start, end, self.summarizer.reads_authored_only(focus))
        pinned = pinned_requests(history, start, end)
        if self.cooling_down(key):
            outcome = await self.summarizer.extractive_off_loop(
                span, previous, Skip.COOLDOWN, pinned, max_tokens, focus
            )
        elif self.summarizer.backend is not None and not self.breaker.allows_call():
            outcome = await self.summarizer.extractive_off_loop(
                span, previous, Skip.CIRCUIT_OPEN, pinned, max_tokens, focus
            )
        else:
            peer = await self.flight.acquire(key, job.deadline) if self.summarizer.backend is not None else None
            if peer is not None:  # another worker paid for it while we waited
                report.cache_hits += 1
                return Segment(start, end, peer.text, peer.tokens, peer.tier)
            try:
                with self.quiet():
                    outcome = await self.summarizer.summarize(
                        span,
                        previous,
                        job.provider,
                        deadline=job.deadline,
                        pinned=pinned,
                        max_tokens=max_tokens,
                        context=job.in_context(start, end),
                        focus=focus,
                    )
                self.note_health(outcome)
                return await self.record(key, start, end, outcome, tier=0, report=report)
            finally:
                await self.flight.release(key)
        return await self.record(key, start, end, outcome, tier=0, report=report)

    async def summary_offline(
        self, job: Job, start: int, end: int, previous: str | None, max_tokens: int | None = None
    ) -> Segment | None:
        """The extractive summary of groups ``[start, end)``, stored like any other so a resume shows it again;
        None when the store has not got it and the job writes none (``Job.offline``)."""
        segment, _ = await self._extractive(job, start, end, previous, None, max_tokens)
        return segment

    async def stand_in(
        self, job: Job, start: int, end: int, previous: str | None, max_tokens: int | None = None
    ) -> Segment | None:
        """The summary of groups ``[start, end)`` from the store when it has it; else the extractive summary standing
        in for the LLM's (``Writer.STAND_IN``): reported as ``Skip.DEFERRED`` and not stored as the span's summary
        (the cut carries its text, ``PlanRecords.record_cuts``), so the LLM's, written in the background, takes the
        key. None when the store has not got it and the job writes none (``Job.offline``)."""
        segment, span = await self._extractive(job, start, end, previous, Skip.DEFERRED, max_tokens)
        if segment is not None and span is not None:
            job.stand_ins.append(StandIn(segment, max_tokens, span, job.facts.span_tokens(start, end)))
        return segment

    async def _extractive(
        self, job: Job, start: int, end: int, previous: str | None, skip: Skip | None, max_tokens: int | None
    ) -> tuple[Segment | None, list[Message] | None]:
        """The stored summary of groups ``[start, end)``, else the extractive one written now (reported with
        ``skip``) and the span it read; (None, None) when the store has not got it and the job writes none."""
        key = self.key(job.history, start, end, job.focus)
        cached = await self.store.get(*key)
        if cached is not None:
            job.report.cache_hits += 1
            return Segment(start, end, cached.text, cached.tokens, cached.tier), None
        if job.offline:
            return None, None
        pinned = pinned_requests(job.history, start, end)
        span = job.span(start, end, self.summarizer.reads_authored_only(job.focus))
        outcome = await self.summarizer.extractive_off_loop(span, previous, skip, pinned, max_tokens, job.focus)
        return await self.record(key, start, end, outcome, tier=0, report=job.report), span

    async def fresh(self, job: Job, start: int, end: int) -> Segment | None:
        """A summary of groups ``[start, end)`` as the history has them, written afresh: nothing read from the store
        or put in it, no previous summary (the naive baseline rewrites the whole prefix at every compaction); None
        when the job writes none (``Job.offline``)."""
        history, report = job.history, job.report
        if job.offline:
            return None
        with self.quiet():
            outcome = await self.summarizer.summarize(
                history.span(start, end),
                None,
                job.provider,
                deadline=job.deadline,
                pinned=pinned_requests(history, start, end),
            )
        report.summaries += 1
        report.provider_calls += outcome.provider_calls
        report.input_tokens += outcome.input_tokens
        report.output_tokens += outcome.output_tokens
        report.note_fallback(outcome.fallback)
        return Segment(start, end, outcome.text, self.summarizer.count_text(outcome.text))

    async def merge(self, job: Job, parts: list[Segment], max_tokens: int | None = None) -> Segment | None:
        """One higher-tier summary for consecutive segments (cached only when smaller than its parts); None when
        the store has not got it and the job writes none (``Job.offline``).

        ``max_tokens``: the offline merge's size, when smaller than the summarizer's output cap.
        """
        history, report = job.history, job.report
        start, end = parts[0].start, parts[-1].end
        key = self.key(history, start, end, job.focus)
        tier = max(p.tier for p in parts) + 1
        cached = await self.store.get(*key)
        if job.offline and (cached is None or cached.tier == 0):
            return None
        if cached is None and self.summarizer.backend is not None:
            cached = await self.flight.acquire(key, job.deadline)
        if cached is not None and cached.tier > 0:
            report.cache_hits += 1
            return Segment(start, end, cached.text, cached.tokens, cached.tier)
        try:
            outcome = await self._merged(job, parts, key, max_tokens)
            # A merge no smaller than its parts goes unused, so it is not cached either (a resume walking the
            # store would take it); the cooldown keeps an LLM merge from being asked again at once.
            smaller = self.summarizer.count_text(outcome.text) < sum(p.tokens for p in parts)
            return await self.record(key, start, end, outcome, tier, report, keep=smaller)
        finally:
            await self.flight.release(key)

    async def _merged(
        self, job: Job, parts: list[Segment], key: tuple[str, str], max_tokens: int | None = None
    ) -> Outcome:
        """Merge with the LLM; the offline merge of the parts' texts is the fallback (and the offline way).

        The offline merge reads the summaries, not the span they stand for, so its cost stays bounded
        however long the session behind them is.
        """
        texts = [p.text for p in parts]
        if self.summarizer.backend is None:
            return self._merged_offline(job, parts, None, max_tokens)
        if self.cooling_down(key):
            return self._merged_offline(job, parts, Skip.COOLDOWN, max_tokens)
        if not self.breaker.allows_call():
            return self._merged_offline(job, parts, Skip.CIRCUIT_OPEN, max_tokens)
        try:
            with self.quiet():
                outcome = await self.summarizer.merge(
                    texts, job.provider, deadline=job.deadline, max_tokens=max_tokens, focus=job.focus
                )
        except Exception as exc:
            fault = fault_of(exc)
            self._note_health(fault)
            job.report.failures.append((fault, 0))  # a failed merge's calls are not known here
            return self._merged_offline(job, parts, fault, max_tokens)
        self.breaker.record_success()
        return outcome

    def _merged_offline(
        self, job: Job, parts: list[Segment], fallback: Fault | Skip | None, max_tokens: int | None = None
    ) -> Outcome:
        texts, cap, count = (
            [p.text for p in parts],
            self.summarizer.settings.max_output_tokens,
            self.summarizer.count_text,
        )
        keep = keep_names(self.summarizer.instructions, job.focus)  # what the LLM's prose kept gives way last too
        text = merge_summaries(texts, min(cap, max_tokens), count, keep) if max_tokens is not None else ""
        if not text:  # the smaller size asked for is too small for even one item each: the output cap, then
            text = merge_summaries(texts, cap, count, keep)
        if not text:  # not one item fits: read the span after all (rare; its cost is then the span's)
            start, end = parts[0].start, parts[-1].end
            pinned = pinned_requests(job.history, start, end)
            return self.summarizer.extractive(
                job.span(start, end), None, fallback=fallback, pinned=pinned, max_tokens=max_tokens, focus=job.focus
            )
        return Outcome(text=text, fallback=fallback)

    async def prefetched(
        self,
        history: History,
        start: int,
        end: int,
        previous: str | None,
        provider: Any | None,
        span_of: Callable[[int, int], list[Message]] | None = None,
        focus: str | None = None,
    ) -> Outcome | None:
        """A background summary of ``[start, end)`` stored for the next compaction; None when not attempted.

        ``span_of`` gives the groups as a compaction's summarizer would read them (masked, when masking is on);
        ``focus``, the hooks' (``Reporter.prefetch_steer``), rides in its prompt and its key, as a compaction's.
        """
        key = self.key(history, start, end, focus)
        if self.cooling_down(key) or not self.breaker.allows_call():
            return None
        try:
            span = (span_of or history.span)(start, end)
            with self.quiet():
                outcome = await self.summarizer.summarize(
                    span, previous, provider, pinned=pinned_requests(history, start, end), focus=focus
                )
        except Exception as exc:  # background work reports; it never raises into the loop
            logger.warning("a background summary failed (%s)", type(exc).__name__)  # its class: the event says ERROR
            self.cool_down(key)
            return Outcome(text="", fallback=fault_of(exc))
        self.note_health(outcome)
        if outcome.cacheable:
            tokens = self.summarizer.count_text(outcome.text)
            await self.store.put(CachedSummary(key[0], key[1], outcome.text, tokens, end - start))
            await self._keep_artefact(key, end - start, outcome)
            self.prefetched_any = True
        else:
            self.cool_down(key)
        return outcome

    async def ready_end(self, job: Job, acceptable: int) -> int | None:
        """End of an already stored segment from the boundary (a prefetch) that brings the view to ``acceptable``.

        Taking it turns the threshold compaction into a cache hit; the recent share must stay verbatim.
        """
        facts, state = job.facts, job.state
        history = facts.history
        here, best = history.chain_at(state.boundary), None
        summary_tokens = facts.shown(state).summary_tokens
        for entry in await self.store.starting_at(here):
            end = state.boundary + entry.groups  # one written with another focus (or none) is not this job's
            if end > history.last_cuttable or focused_end(history.chain_at(end), job.focus) != entry.end:
                continue
            tail = history.total - history.prefix[end]
            view = facts.system_tokens + summary_tokens + entry.tokens + tail
            if tail >= facts.limits.preserve_recent and view <= acceptable and (best is None or end > best):
                best = end
        return best

    async def record(
        self,
        key: tuple[str, str],
        start: int,
        end: int,
        outcome: Outcome,
        tier: int,
        report: CompactionReport,
        keep: bool = True,
    ) -> Segment:
        report.summaries += 1
        report.provider_calls += outcome.provider_calls
        report.input_tokens += outcome.input_tokens
        report.output_tokens += outcome.output_tokens
        report.note_fallback(outcome.fallback)
        if outcome.fallback is not None and outcome.provider_calls:
            report.failures.append((outcome.fallback, outcome.provider_calls))
        tokens = self.summarizer.count_text(outcome.text)
        if outcome.cacheable and keep:
            self._failed.pop(key, None)
            await self.store.put(CachedSummary(key[0], key[1], outcome.text, tokens, end - start, tier))
            await self._keep_artefact(key, end - start, outcome)
        elif not isinstance(outcome.fallback, Skip):  # the LLM was not asked: nothing new failed
            self.cool_down(key)
        return Segment(start, end, outcome.text, tokens, tier)

    async def _keep_artefact(self, key: tuple[str, str], groups: int, outcome: Outcome) -> None:
        """A provider's native artefact beside the summary it was read from, when the summary is that one answer
        (a span cut into fragments has several, none standing for the whole span)."""
        if len(outcome.artefacts) == 1:
            record = ArtefactRecord(ArtefactKey(key[0]), key[1], groups, outcome.artefacts[0])
            await self.store.put(record.row(self.summarizer.count_text))

    def note_health(self, outcome: Outcome) -> None:
        """Feed the breaker from a summary's outcome (``_note_health``)."""
        fallback = outcome.fallback
        if fallback is None or outcome.provider_calls or fallback.counts_against_breaker:
            self._note_health(fallback)

    def _note_health(self, fallback: Fault | Skip | None) -> None:
        """Only a provider fault counts toward opening the circuit: an answer that was empty, a refusal or no
        smaller than its span came from a provider that works (the summary falls back; the LLM stays on)."""
        if fallback is not None and fallback.counts_against_breaker:
            self.breaker.record_failure()
        else:
            self.breaker.record_success()

    def cooling_down(self, key: tuple[str, str]) -> bool:
        failed_at = self._failed.get(key)
        return failed_at is not None and self.clock() - failed_at < self.cooldown_s

    def cool_down(self, key: tuple[str, str]) -> None:
        """Start the cooldown of span ``key``."""
        self._failed[key] = self.clock()
        self._failed.move_to_end(key)
        while len(self._failed) > MAX_REMEMBERED_FAILURES:
            self._failed.popitem(last=False)
