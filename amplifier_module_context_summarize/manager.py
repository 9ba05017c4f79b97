"""The Amplifier ContextManager protocol, adapted onto the pieces that do the work.

It holds the lock, the history and the compaction state (in its ``RequestView``), the request's budget
(``core.budget.RequestBudget``: tool schemas, calibration, the system prompt) and the events. When the view
passes the threshold, ``compaction.run.compactor.Compactor`` decides in band, at the soft threshold or in the
background, and lands what the background wrote. History is never changed by compaction: the state can always
be rebuilt from the history plus the summary store, which is what makes resume and fork free.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from amplifier_core.models import HookResult

from . import events
from .backends.base import Closable, LearnsDefaultModel
from .compaction.cache.breaker import CircuitBreaker
from .compaction.cache.keys import fingerprint as fingerprint_of
from .compaction.cache.segments import SegmentSource
from .compaction.plan.strategies import Strategy, strategy_for
from .compaction.plan.warm import let_loop_run
from .compaction.run.compactor import FOCUS_MAX_CHARS, Compactor
from .compaction.run.prefetch import Prefetcher
from .compaction.view.masking import Masks, MaskSettings
from .compaction.view.request import RequestView
from .config import Config
from .core.budget import RequestBudget, SystemPromptFactory, request_budget
from .core.clock import now
from .core.history import History
from .core.invariants import last_allowed_cut
from .core.messages import Message, copy_message, scrub_value, validate_message
from .core.plan import Limits, needs_compaction
from .core.state import SUMMARY_MARKER, CompactionState, Segment, extra_pins, pin_matcher, pin_tokens
from .core.tokens import TokenCounter
from .core.wire import ToolSchemaMeter
from .spill import spiller_for
from .stores import CheckedStore, MemoryStore, Scoped, SummaryStore
from .stores.base import OVERSIZE_FACTOR
from .summarizer.pace import SlowWarning
from .summarizer.span import MIN_SPAN_TOKENS, Outcome, SpanSummarizer

logger = logging.getLogger(__name__)

__all__ = ["SUMMARY_MARKER", "Segment", "SummarizingContextManager"]

HORIZON_BUDGETS = 4
"""A history resumed with nothing stored is counted exactly back from its newest group as far as this many times
the budget; the older groups' counts are upper bounds until the first request is answered (``History.count_from``).
"""
CANCEL_GRACE_S = 1.0
"""At close, how long a cancelled background task is given to end before the store and the backend close."""


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
        self.summarizer = summarizer
        backend = summarizer.backend
        self._model_learner = backend if isinstance(backend, LearnsDefaultModel) else None
        """Asked once: a runtime protocol check costs microseconds, and every request asks whether it learns."""
        self.hooks = hooks
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
        self.prefetcher = Prefetcher(self.segments, c.prefetch_threshold, self._report_prefetch)
        self._stats = events.Stats()
        self.slow = SlowWarning(summarizer.pace, c.compaction_deadline_s, c.summarizer.timeout_s)
        """Says once when summaries keep falling back because the summarizer is slower than its time."""
        self._system_prompt_factory: SystemPromptFactory | None = None
        """Name kept from context-simple: amplifier-foundation's peers read and re-wrap it."""
        self._lock = asyncio.Lock()
        self._resumed_at: int | None = None
        """The budget ``set_messages`` resumed under, until the first request says which one the session has."""
        masking = strategy.masks(c.observation_masking)
        self.mask_settings = MaskSettings(c.mask_min_chars, c.mask_keep_recent, c.recall_tool_name) if masking else None
        self.view = RequestView(c, self.counter, self.budget)
        self.compactor = Compactor(
            c, self.view, strategy, self.segments, self.breaker, self.prefetcher, self.mask_settings, self._emit
        )
        self.background = self.compactor.background
        self.spill = spiller_for(c, self.store, self.counter)
        self.fingerprint = fingerprint_of(self.summarizer, self.config, self.mask_settings, self.spill.key)
        self._pin_rule = pin_matcher(c.pin_patterns)
        self._crossed: set[tuple[str, float]] = set()
        """The usage fractions the view is at or above (``context:usage`` fires on crossing into this set)."""
        self._dropped_pins: tuple[object, ...] = (None, ())
        self._closed = False
        """``close`` has closed the store and the backend (a second close only stops background work again)."""
        self._scope_store()
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
        self.view.state = state

    async def add_message(self, message: dict[str, Any]) -> None:
        try:
            validate_message(message)
        except ValueError as exc:  # named by the index it would have had, as set_messages names it
            raise ValueError(f"messages[{len(self.history.messages)}]: {exc}") from None
        self.history.append(copy_message(message))

    async def get_messages(self) -> list[dict[str, Any]]:
        return list(self.history.messages)

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
            history = self._history_of([copy_message(m) for m in messages], counting=False)
            state = await self.compactor.resumed(history, self.budget.wire)
            injected = await self.compactor.resumed_injection(history, state, self.budget.wire)
            # What the state summarizes is counted only if a plan reads it; with nothing stored, only the newest
            # groups are counted and the older ones bounded for the first plan (``_first_plan_horizon``).
            cold = not state.segments and state.tail_start == 0
            history.count_from(state.boundary, HORIZON_BUDGETS * self.budget.wire if cold else None)
            await self.compactor.cancel_background("replaced")
            self._install(history, state)
            self.view.inject(injected)
            self._resumed_at = self.budget.wire
            self.compactor.fold_after_resume(history, state)

    async def clear(self) -> None:
        async with self._lock:
            await self.compactor.cancel_background("cleared")
            self._reset([])

    async def get_messages_for_request(
        self, token_budget: int | None = None, provider: Any | None = None
    ) -> list[dict[str, Any]]:
        c = self.config
        wire_budget = await request_budget(token_budget, provider, c.safety_margin, c.max_tokens, c.budget_fallback)
        factory = self._system_prompt_factory
        system_prompt = await self.budget.render_system_prompt(factory) if factory is not None else None
        async with self._lock:
            if self._learns_model(provider) and await self._rekeyed():
                await self._resume(wire_budget)
            elif self._resumed_at is not None and self._resumed_at != wire_budget:
                await self._resume(wire_budget)  # resumed before the budget was known: take that plan's cuts
            self._resumed_at = None
            self.budget.use_system_prompt(system_prompt)
            limits = self.budget.limits(self.budget.plan(wire_budget))
            if self.history.estimating:
                self._first_plan_horizon(limits)
            if self.compactor.may_land():
                await self.compactor.land()
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
            await self._report_usage(sent, limits)
            await self._report_pins()
            for degraded in self.spill.take_events():
                await self._emit(degraded)
            prefetching = (c.prefetch or self.compactor.slow(limits)) and self.strategy.summarizes
            steer = self.compactor.prefetch_steer(self._hooks_answer_pre_compact()) if prefetching else None
            if steer is not None:  # written with what the hooks steer with, never before they were asked
                fixed = self.view.system_view_tokens() + self.view.shown().summary_tokens + c.summary_output_tokens
                span_of = self.masks.span if self.masks is not None else None
                saves = self.view.mask_savings if self.masks is not None else None
                await self.prefetcher.maybe_start(
                    self.history, self.state, limits, tokens, fixed, provider, span_of, saves, steer.focus
                )
            return view

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
            self.history.stop_estimating()  # its plan was not checked against the bounds (``_first_plan_horizon``)
            limits = self.budget.limits(self.budget.last)
            await self.compactor.settle_background(now() + self.config.compaction_deadline_s)
            before = self.view.sent_tokens(limits.budget)
            await self.compactor.in_band(limits, None, force=True, focus=focus or None)
            return max(before - self.view.sent_tokens(limits.budget), 0)

    async def close(self, wait_s: float = 10.0) -> None:
        """End of the session (a mounted session's cleanup calls it): let summaries still being written in the
        background reach the store (for up to ``wait_s``; a summary landing after the last request is then found by
        the next process), cancel what is still running and wait for it to end (a compaction never installed reports
        ``cancelled``), then close the store and the summarizer's backend, once. Each step's fault is logged and the
        next step still runs; never raises."""
        deadline = now() + wait_s
        await _quietly("waiting for background summaries", lambda: self._settle(deadline))
        await _quietly("cancelling the background compaction", self._cancel_flight)
        await _quietly("cancelling prefetches", lambda: self.prefetcher.stop(CANCEL_GRACE_S))
        await _quietly("stopping the working set's folding", self._stop_folding)
        if self._closed:
            return
        self._closed = True
        await _quietly("closing the summary store", lambda: self.store.close())
        backend = self.summarizer.backend
        if isinstance(backend, Closable):
            await _quietly("closing the summarizer backend", backend.aclose)

    async def _settle(self, deadline: float) -> None:
        await self.background.wait(deadline)
        await self.prefetcher.drain(deadline)

    async def _cancel_flight(self) -> None:
        pending = self.background.flight
        flight = self.background.cancel()
        if flight is not None:
            await asyncio.wait({flight.task}, timeout=CANCEL_GRACE_S)  # let it end before the store closes
        if pending is not None:  # never installed: its pre gets its post (cancelled)
            await self.compactor.pay_flight(pending)

    async def _stop_folding(self) -> None:
        self.compactor.stop_folding()
        await let_loop_run()  # a cancelled fold ends at its next turn: it yields only to the loop, never waits

    def listen_to_usage(self, hooks: Any) -> None:
        """Calibrate our counts against the usage the provider reports in ``llm:response`` events."""
        if not self.config.calibrate_from_usage or not callable(getattr(hooks, "register", None)):
            return
        self.calibration.initial = self.config.initial_calibration
        self.calibration.enabled = True

        async def on_response(_event: str, data: Any) -> Any:
            self.calibration.observe(data)
            return HookResult(action="continue")

        hooks.register(events.LLM_RESPONSE, on_response, priority=50, name="context-summarize-calibration")

    async def set_system_prompt_factory(self, factory: SystemPromptFactory | None) -> None:
        """amplifier-foundation's hook: the system prompt is rendered afresh for every request.

        The rendered prompt leads the view; system messages stored in history are then left out, except
        those hooks injected (``metadata.source == "hook"``), as context-simple does.
        """
        self._system_prompt_factory = factory
        if factory is None:
            async with self._lock:
                self.budget.use_system_prompt(None)

    async def _report_usage(self, tokens: int, limits: Limits) -> None:
        """``context:usage`` once per upward crossing of each configured fraction (of the budget, of the threshold);
        a fraction the view falls back below may be crossed again."""
        c = self.config
        for of, base, fractions in (
            ("budget", limits.budget, c.usage_fractions),
            ("threshold", limits.compact_at, c.usage_threshold_fractions),
        ):
            for fraction in fractions:
                key = (of, fraction)
                above = tokens >= fraction * base
                if above and key not in self._crossed:
                    self._crossed.add(key)
                    await self._emit(
                        events.Usage(
                            tokens=tokens,
                            budget=limits.budget,
                            fraction=fraction,
                            of=of,
                            usage=round(tokens / max(limits.budget, 1), 4),
                            compact_at=limits.compact_at,
                            tokens_to_compaction=max(limits.compact_at - tokens, 0),
                        )
                    )
                elif not above:
                    self._crossed.discard(key)

    def _hooks_answer_pre_compact(self) -> bool:
        """Whether a ``context:pre_compact`` handler is registered, one that could steer or postpone a compaction (a
        registry that cannot say is taken to have one)."""
        hooks = self.hooks
        if hooks is None:
            return False
        listing = getattr(hooks, "list_handlers", None)
        if not callable(listing):
            return True
        try:
            handlers = listing(events.PRE_COMPACT)
        except Exception:  # another registry's signature: assume a handler could answer
            return True
        if isinstance(handlers, dict):
            handlers = handlers.get(events.PRE_COMPACT)
        return bool(handlers) if isinstance(handlers, (list, tuple, set, dict)) else True

    async def _report_pins(self) -> None:
        """``context:pins_dropped`` when pinned messages stop fitting their room, or when the request's fitted copy
        of the view let pins go on a rung of the fit ladder (left out or clipped: the truncation marker's cut, the
        pins giving way to the newest groups): once per change of the set."""
        history, state, given_way = self.history, self.state, self.view.pins_given_way
        if not (history.marked or history.recent_user_turns):
            return
        choice = extra_pins(history, history.groups[state.boundary - 1].end) if state.boundary > 0 else None
        signature = (choice.signature if choice is not None else None, given_way)
        if signature == self._dropped_pins:
            return
        self._dropped_pins = signature
        past_room = choice.dropped(history.marked) if choice is not None else []
        if past_room or given_way:
            kept = [i for i in choice.kept if i not in given_way] if choice is not None else []
            await self._emit(
                events.PinsDropped(
                    dropped=len(set(past_room).union(given_way)),
                    kept=len(kept),
                    pin_tokens=sum(pin_tokens(history, i) for i in kept),
                    pin_room=history.pin_room,
                    dropped_indices=sorted(set(past_room).union(given_way)),
                )
            )

    def _first_plan_horizon(self, limits: Limits) -> None:
        """Keep the bounds a cold resume lent only when the groups counted exactly decide the first plan alone.

        Every cut, masking reach and fit the plan works out is a comparison of the view's newest groups against
        the budget; bounds on the older groups leave each such answer as exact counts would give it when the
        newest groups counted (as the plan shows them, masked as far as masking may reach) already hold more than
        twice the budget and a span worth a summary: the cut then falls among them and the span summarized
        reaches them. Otherwise every group is counted exactly before the plan reads any."""
        history, masks = self.history, self.masks
        start, newest = history.bounded, history.last_cuttable
        shown = history.prefix[-1] - history.prefix[start]
        if masks is not None:
            reach = max(min(masks.limit(), last_allowed_cut(history)), start)
            shown -= history.prefix[reach] - history.prefix[start] - masks.tokens(start, reach)
        if start > newest or shown <= 2 * limits.budget + MIN_SPAN_TOKENS:
            history.stop_estimating()

    def _learns_model(self, provider: Any | None) -> bool:
        """The summarizer writes with the session provider's default model and has just learned a new one (the
        usual request learns nothing: no hashing, no await)."""
        learner = self._model_learner
        return learner is not None and bool(learner.learn_default_model(provider))

    async def _rekeyed(self) -> bool:
        """Key summaries by the model that writes them, once the backend has learned a new default model.

        True when the key changed and nothing is summarized yet, so the store may hold this history's state.
        Summaries in flight were keyed by the old model: they are cancelled, else one finished by the new model
        (or begun by the old) would be stored under the key the history chain has by then.
        """
        fingerprint = fingerprint_of(self.summarizer, self.config, self.mask_settings, self.spill.key)
        if fingerprint == self.fingerprint:
            return False
        self.prefetcher.cancel()
        await self.compactor.cancel_background("rekeyed")
        self.fingerprint = fingerprint
        self.history.rekey(fingerprint)
        self._scope_store()
        return not self.state.segments

    def _scope_store(self) -> None:
        """A shared store (Redis) files summaries under the fingerprint, so one summarizer's can be found or dropped."""
        if isinstance(self.store, Scoped):
            self.store.scope(self.fingerprint)

    def _reset(self, messages: list[Message]) -> None:
        self._install(self._history_of(messages), CompactionState())

    def _history_of(self, messages: list[Message], counting: bool = True) -> History:
        c = self.config
        history = History(self.counter, self.fingerprint, c.preserve_system, counting=counting)
        history.pin_rule = self._pin_rule
        history.recent_user_turns = c.preserve_recent_user_turns
        history.pin_room = self.view.pin_room()
        history.spill = self.spill.shown if self.spill.enabled else None
        for message in messages:
            history.append(message)
        return history

    def _install(self, history: History, state: CompactionState) -> None:
        self.prefetcher.cancel()
        self.compactor.stop_folding()
        self.background.cancel()
        self.compactor.in_band_next = False
        self.view.install(history, Masks(history, self.mask_settings) if self.mask_settings else None, state)

    async def _resume(self, wire_budget: int) -> None:
        if self.strategy.stores_cuts:
            self.state = await self.compactor.resumed(self.history, wire_budget)
            injected = await self.compactor.resumed_injection(self.history, self.state, wire_budget)
            self.view.inject(injected, wire_budget)
            self.compactor.fold_after_resume(self.history, self.state)

    def _watch_pace(self, payload: events.Payload) -> None:
        """Feed ``SlowWarning``: a compaction or prefetch the LLM wrote ends a run of cut summaries; one cut by the
        deadline or a timeout extends it (a compaction's ``summary_failed`` repeats its post's fallback)."""
        if isinstance(payload, events.PostCompact):
            if payload.fallback is not None:
                self.slow.fell_back(payload.fallback)
            elif payload.summaries:
                self.slow.written()
        elif isinstance(payload, events.SummaryFailed) and payload.reason == "prefetch":
            self.slow.fell_back(payload.fallback)
        elif isinstance(payload, events.SummaryPrefetched):
            self.slow.written()

    async def _report_prefetch(self, outcome: Outcome) -> None:
        if outcome.cacheable:
            payload: events.Payload = events.SummaryPrefetched(
                outcome.provider_calls, outcome.input_tokens, outcome.output_tokens
            )
        else:
            payload = events.SummaryFailed("prefetch", outcome.fallback, outcome.provider_calls)
        await self._emit(payload)

    async def _emit(self, payload: events.Payload) -> Any:
        """Emit ``payload``; return what the hooks answered, or None (amplifier-core folds the handlers'
        ``HookResult``s into one: ``deny`` stops the chain, ``modify`` chains ``data``, injections are collected)."""
        self._stats.observe(payload)
        self._watch_pace(payload)
        if self.hooks is None:
            return None
        try:
            return await self.hooks.emit(payload.event, payload.to_dict())
        except Exception as exc:  # an observer's fault is not the agent's
            logger.warning("hook for %s failed: %s", payload.event, type(exc).__name__)
            return None


async def _quietly(what: str, step: Callable[[], Awaitable[object]]) -> None:
    """Run one step of ``close``: its fault is logged (by class name: it may echo a key) and never raised."""
    try:
        await step()
    except Exception as exc:
        logger.warning("%s at close failed (%s)", what, type(exc).__name__)
