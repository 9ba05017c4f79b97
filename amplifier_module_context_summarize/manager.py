"""The Amplifier ContextManager protocol, adapted onto the pieces that do the work.

It holds the lock, the history and the compaction state (in its ``RequestView``), the request's budget
(``core.budget.RequestBudget``: tool schemas, calibration, the system prompt) and the events. Past the threshold,
``compaction.run`` takes over (its guide names each part: ``decide`` picks the path, ``compactor`` carries it out,
``install`` is where a state enters the view, ``reporter`` sends the events). Compaction never changes the history:
the state is rebuilt from the history plus the summary store, which is what makes resume and fork free.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from . import events
from .compaction.cache.breaker import CircuitBreaker
from .compaction.cache.segments import SegmentSource
from .compaction.plan.strategies import Strategy, strategy_for
from .compaction.run.closing import close_resources, end_background
from .compaction.run.compactor import Compactor
from .compaction.run.horizon import first_plan_horizon
from .compaction.run.keys import SessionKey
from .compaction.run.prefetch import Prefetcher
from .compaction.run.reports import Reports, listen_to_usage
from .compaction.run.steer import FOCUS_MAX_CHARS
from .compaction.view.carrier import NativeCarrier
from .compaction.view.masking import Masks, MaskSettings
from .compaction.view.request import RequestView
from .config import Config
from .core.budget import RequestBudget, SystemPromptFactory, request_budget
from .core.clock import now
from .core.history import History
from .core.messages import Message, scrub_value, validate_message
from .core.plan import needs_compaction
from .core.state import SUMMARY_MARKER, CompactionState, Segment, pin_matcher
from .core.tokens import TokenCounter
from .core.wire import ToolSchemaMeter
from .spill import spiller_for
from .stores import CheckedStore, MemoryStore, SummaryStore
from .stores.base import OVERSIZE_FACTOR
from .summarizer.pace import SlowWarning
from .summarizer.span import SpanSummarizer

__all__ = ["SUMMARY_MARKER", "Segment", "SummarizingContextManager"]


class SummarizingContextManager:
    """Amplifier ContextManager that summarizes the oldest groups into one ``[CONTEXT SUMMARY]`` message."""

    def __init__(
        self,
        config: Config | None = None,
        *,
        summarizer: SpanSummarizer,
        hooks: Any | None = None,
        store: SummaryStore | None = None,
        counter: TokenCounter | None = None,
        tools: ToolSchemaMeter | None = None,
        clock: Callable[[], float] | None = None,
        strategy: Strategy | None = None,
    ) -> None:
        self.config = c = config or Config()
        self.summarizer, self.hooks = summarizer, hooks
        self.store: SummaryStore = store if store is not None else MemoryStore(c.cache_max_entries)
        self.counter = counter or TokenCounter(c.token_encoding)
        self.tools = tools
        self.clock = clock or time.monotonic
        """Times cooldowns and the circuit breaker (tests pass a fake one); deadlines read ``core.clock``."""
        self.budget = RequestBudget(
            self.counter, tools, c.budget_fallback, c.compact_threshold, c.target_usage, c.preserve_recent_ratio
        )
        self.calibration = self.budget.calibration
        """Off until ``listen_to_usage`` wires it to the provider's reports (``mount`` does)."""
        self.breaker = CircuitBreaker(c.summarizer.circuit_failures, c.summarizer.circuit_open_s, self.clock)
        reads = CheckedStore(self.store, self.counter.count_text, OVERSIZE_FACTOR * c.summary_output_tokens)
        """What the store returns is checked like any other input before a view may use it."""
        self.segments = SegmentSource(
            summarizer, reads, self.breaker, c.failure_cooldown_s, self.clock, self.calibration.quiet
        )
        strategy = strategy or strategy_for(c)
        self._stats = events.Stats()
        self.slow = SlowWarning(summarizer.pace, c.compaction_deadline_s, c.summarizer.timeout_s)
        """Says once when summaries keep falling back because the summarizer is slower than its time."""
        self.spill = spiller_for(c, self.store, self.counter)
        self.reports = Reports(c, self._emit, self.slow, self.spill.take_events)
        self.prefetcher = Prefetcher(self.segments, c.prefetch_threshold, self.reports.prefetched)
        self._system_prompt_factory: SystemPromptFactory | None = None
        """Name kept from context-simple: amplifier-foundation's peers read and re-wrap it."""
        self._lock = asyncio.Lock()
        self._resumed_at: int | None = None
        """The budget ``set_messages`` resumed under, until the first request says which one the session has."""
        masking = strategy.masks(c.observation_masking)
        self.mask_settings = MaskSettings(c.mask_min_chars, c.mask_keep_recent, c.recall_tool_name) if masking else None
        self.view = RequestView(c, self.counter, self.budget)
        self.carrier = NativeCarrier(self.store, summarizer.name, summarizer.model, self.counter.count_messages)
        self.compactor = Compactor(
            c, self.view, strategy, self.segments, self.breaker, self.prefetcher, self.mask_settings, self._emit
        )
        self.background = self.compactor.background
        self.key = SessionKey(summarizer, c, self.mask_settings, self.store, self.spill.key)
        self._pin_rule = pin_matcher(c.pin_patterns)
        self._closed = False
        """``close`` has closed the store and the backend (a second close only stops background work again)."""
        self._reset([])

    def __repr__(self) -> str:
        return (
            f"SummarizingContextManager(messages={len(self.history.messages)}, boundary={self.state.boundary}, "
            f"strategy={self.strategy.name!r}, summarizer={self.summarizer.name!r})"
        )

    @property
    def stats(self) -> dict[str, int]:
        """Totals folded from the events this manager emitted (so they agree with what hooks saw)."""
        return self._stats.as_dict()

    @property
    def strategy(self) -> Strategy:
        """Decides each compaction; the configured one unless another is given (the evaluation's baselines)."""
        return self.compactor.strategy

    @property
    def fingerprint(self) -> str:
        """``C0``: what every summary key of this session starts from (``compaction.run.keys``)."""
        return self.key.fingerprint

    @property
    def history(self) -> History:
        return self.view.history

    @property
    def masks(self) -> Masks | None:
        return self.view.masks

    @property
    def state(self) -> CompactionState:
        return self.view.state

    @state.setter
    def state(self, state: CompactionState) -> None:
        self.compactor.installer.place(state)

    async def add_message(self, message: dict[str, Any]) -> None:
        try:
            validate_message(message)
        except ValueError as exc:  # named by the index it would have had, as set_messages names it
            raise ValueError(f"messages[{len(self.history.messages)}]: {exc}") from None
        self.history.append(message)  # copied as it is frozen (core.frozen)

    async def get_messages(self) -> list[dict[str, Any]]:
        return self.history.messages.copies()

    async def set_messages(self, messages: list[dict[str, Any]]) -> None:
        if not isinstance(messages, list):
            raise ValueError(f"set_messages expects a list of messages, got {type(messages).__name__}")
        for i, message in enumerate(messages):
            try:
                validate_message(message)
            except ValueError as exc:
                raise ValueError(f"messages[{i}]: {exc}") from None
        async with self._lock:
            # Built aside and installed only once whole: a failure leaves the previous history as it was.
            history = self._history_of(messages, counting=False)
            state, injected = await self.compactor.resumer.aside(history, self.budget.wire)
            await self.compactor.flights.cancel("replaced")
            self.compactor.start_over(history, state)
            self.view.inject(injected)
            self._resumed_at = self.budget.wire
            self.compactor.resumer.fold_after_resume(history, state)

    async def clear(self) -> None:
        async with self._lock:
            await self.compactor.flights.cancel("cleared")
            self._reset([])

    async def get_messages_for_request(
        self, token_budget: int | None = None, provider: Any | None = None
    ) -> list[dict[str, Any]]:
        c = self.config
        wire_budget = await request_budget(token_budget, provider, c.safety_margin, c.max_tokens, c.budget_fallback)
        factory = self._system_prompt_factory
        system_prompt = await self.budget.render_system_prompt(factory) if factory is not None else None
        async with self._lock:
            if self.key.learned(provider) and await self._rekeyed():
                await self.compactor.resume(wire_budget)
            elif self._resumed_at is not None and self._resumed_at != wire_budget:
                await self.compactor.resume(wire_budget)  # resumed before the budget was known: take that plan's cuts
            self._resumed_at = None
            self.budget.use_system_prompt(system_prompt)
            limits = self.budget.limits(self.budget.plan(wire_budget))
            if self.history.estimating:
                first_plan_horizon(self.history, self.masks, limits)
            if self.compactor.flights.may_land():
                await self.compactor.flights.land()
            tokens = self.view.tokens()
            if needs_compaction(tokens, limits):
                await self.compactor.for_request(limits, provider, tokens)
                tokens = self.view.tokens()
            view, sent = self.view.fitted(limits.budget, tokens)
            if self.history.unencodable:  # lone surrogates go out as U+FFFD: no client or provider encodes them
                view = [scrub_value(m) for m in view]
            if self.history.estimating:  # bounds served this first plan only: later reads count them exactly
                self.history.stop_estimating()
            self.compactor.record_sent(view)
            self.calibration.expect(sent + self.budget.tool_tokens)
            await self.reports.usage(sent, limits)
            await self.reports.pins(self.view)
            await self.compactor.prefetch(limits, provider, tokens, self.hooks)
            return await self.carrier.apply(view, provider, self.history, self.state, limits.budget)

    async def get_token_count(self) -> int:
        """Tokens of the view the next request would send, before any further compaction."""
        self.history.stop_estimating()  # a count, never a bound a cold resume lent its first plan
        return self.view.sent_tokens(self.budget.last)

    @property
    def planned_tokens(self) -> int:
        """Tokens of the view as compaction plans it, before a request past the budget fits its copy in band."""
        self.history.stop_estimating()
        return self.view.tokens()

    async def should_compact(self) -> bool:
        self.history.stop_estimating()
        return needs_compaction(self.view.tokens(), self.budget.limits(self.budget.last))

    async def compact(self, focus: str | None = None) -> int:
        """Compact the view now, even under the threshold; return the tokens it saved. History is untouched.

        ``focus`` (Claude Code's ``/compact <focus>``) steers this compaction's summaries; its summaries are stored
        under keys that include it, so none written without it is served for it."""
        if focus is not None and not isinstance(focus, str):
            raise ValueError(f"compact: focus must be text, got {type(focus).__name__}")
        focus = " ".join(focus.split())[:FOCUS_MAX_CHARS] if focus else None
        async with self._lock:
            self.history.stop_estimating()  # its plan was not checked against the bounds (``compaction.run.horizon``)
            limits = self.budget.limits(self.budget.last)
            await self.compactor.flights.settle(now() + self.config.compaction_deadline_s)
            before = self.view.sent_tokens(limits.budget)
            await self.compactor.in_band(limits, None, force=True, focus=focus or None)
            return max(before - self.view.sent_tokens(limits.budget), 0)

    async def close(self, wait_s: float = 10.0) -> None:
        """End of the session (a mounted session's cleanup calls it): let summaries still being written in the
        background reach the store (for up to ``wait_s``; a summary landing after the last request is then found by
        the next process), cancel what is still running and wait for it to end (a compaction never installed reports
        ``cancelled``), then close the store and the summarizer's backend, once. Each step's fault is logged and the
        next step still runs; never raises."""
        await end_background(self.compactor, self.prefetcher, wait_s)
        if not self._closed:
            self._closed = True
            await close_resources(self.store, self.summarizer.backend)

    def listen_to_usage(self, hooks: Any) -> None:
        """Calibrate our counts against the usage the provider reports in ``llm:response`` events."""
        listen_to_usage(self.config, self.calibration, hooks)

    async def set_system_prompt_factory(self, factory: SystemPromptFactory | None) -> None:
        """amplifier-foundation's hook: the system prompt is rendered afresh for every request.

        The rendered prompt leads the view; system messages stored in history are then left out, except
        those hooks injected (``metadata.source == "hook"``), as context-simple does.
        """
        self._system_prompt_factory = factory
        if factory is None:
            async with self._lock:
                self.budget.use_system_prompt(None)

    async def _rekeyed(self) -> bool:
        """Key summaries by the model that writes them, once the backend has learned a new default model.

        True when the key changed and nothing is summarized yet, so the store may hold this history's state.
        Summaries in flight were keyed by the old model: they are cancelled, else one finished by the new model
        (or begun by the old) would be stored under the key the history chain has by then.
        """
        fingerprint = self.key.renewed()
        if fingerprint is None:
            return False
        self.prefetcher.cancel()
        await self.compactor.flights.cancel("rekeyed")
        self.key.adopt(fingerprint)
        self.history.rekey(fingerprint)
        return not self.state.segments

    def _reset(self, messages: list[Message]) -> None:
        self.compactor.start_over(self._history_of(messages), CompactionState())

    def _history_of(self, messages: list[Message], counting: bool = True) -> History:
        c = self.config
        history = History(self.counter, self.fingerprint, c.preserve_system, counting=counting)
        history.pin_rule, history.pin_room, history.spill = self._pin_rule, self.view.pin_room(), self.spill.hook
        history.recent_user_turns = c.preserve_recent_user_turns
        for message in messages:
            history.append(message)
        return history

    async def _emit(self, payload: events.Payload) -> Any:
        self._stats.observe(payload)  # the stats agree with what hooks saw
        return await self.reports.send(self.hooks, payload)
