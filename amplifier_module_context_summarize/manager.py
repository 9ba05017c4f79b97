"""The Amplifier ContextManager protocol, adapted onto the pieces that do the work.

It holds the lock, the history and the compaction state, measures the budget, asks the configured
strategy for a new state when the view passes the threshold (in band while masking and stored summaries are
enough, or when the view would not fit; else in the background, ``compaction/background.py``), and emits the events.
History is never changed by compaction: the state can always be rebuilt from the history plus the summary
store, which is what makes resume and fork free.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from amplifier_core.models import HookResult

from . import events
from .compaction.background import CANCELLED, FAILED, LANDED, STARTED, BackgroundCompactor, Flight, Landed
from .compaction.breaker import CircuitBreaker
from .compaction.flight import BACKGROUND_CLAIM_S
from .compaction.job import Compaction, CompactionReport, Strategy, SummarizerNeeded
from .compaction.losses import Account, account, newly_hidden
from .compaction.masking import Masks, MaskSettings
from .compaction.prefetch import Prefetcher
from .compaction.resume import walk
from .compaction.segments import SegmentSource
from .compaction.splice import shown, summary_message, working_set_room
from .compaction.strategies import STRATEGIES
from .compaction.view import TailView
from .config import Config
from .core.budget import RequestBudget, SystemPromptFactory, request_budget
from .core.clip import clip_tool_outputs
from .core.history import History, from_hook
from .core.invariants import last_allowed_cut
from .core.messages import (
    Message,
    canonical_json,
    content_hash,
    copy_message,
    message_text,
    scrub_value,
    validate_message,
)
from .core.plan import Limits, needs_compaction
from .core.state import (
    SUMMARY_MARKER,
    CompactionState,
    Segment,
    Shown,
    pins_for,
    truncation_marker,
)
from .core.tokens import TokenCounter
from .core.wire import ToolSchemaMeter
from .stores import CachedSummary, CheckedStore, MemoryStore, SummaryStore
from .stores.base import OVERSIZE_FACTOR
from .summarizer.span import Outcome, SpanSummarizer
from .working_set.index import index_of

logger = logging.getLogger(__name__)

__all__ = ["SUMMARY_MARKER", "Segment", "SummarizingContextManager"]

FINGERPRINT_VERSION = "3"
"""2: the strategy name left the fingerprint (``extractive`` strategy and summarizer share summaries).
3: segment summaries no longer end with their own artifact ledger (the summary message ends with the working set)."""
MASK_MARK = "mask:"
"""Store namespace of mask ends: a summary-less row keyed by the chain at the boundary, ending at the mask end."""
BACKGROUND_DEADLINE_S = BACKGROUND_CLAIM_S
"""A background compaction's summarizer calls end by then (no request waits for it unless its view would not
fit, and such a request cancels it at its own deadline)."""
LANDING_GRACE_S = 0.25
"""How long a request whose view would not fit waits for a background summary before it masks further instead,
when masking alone fits: a summary landing that soon gives the smaller view; the seconds an LLM call may still
take are not worth waiting for."""
LOW_LANDING = 0.5
"""A view that still fits is not compacted to below this share of the target: only hiding one group larger than
the room between the target and the threshold (a huge tool output) lands that low, and that same group would go
anyway once the view no longer fits, with the newest groups then in its place."""


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
        self.hooks = hooks
        self.store: SummaryStore = store if store is not None else MemoryStore(c.cache_max_entries)
        self.counter = counter or TokenCounter(c.token_encoding)
        self.tools = tools
        self.clock = clock or time.monotonic
        """Times cooldowns and the circuit breaker (tests pass a fake one); deadlines use real time."""
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
        self.strategy: Strategy = strategy or STRATEGIES[c.compaction_strategy](
            self.segments, c.summary_budget_ratio, c.prefetch
        )
        """Decides each compaction; the configured one unless another is given (the evaluation's baselines)."""
        self.prefetcher = Prefetcher(self.segments, c.prefetch_threshold, self._report_prefetch)
        self.background = BackgroundCompactor(self._run_background)
        """The soft threshold's compaction, when it needs the summarizer (``background_compaction``)."""
        self._in_band_next = False
        """After a background compaction failed, the next compaction runs in band (no retry loop of failures)."""
        self._stats = events.Stats()
        self._system_prompt_factory: SystemPromptFactory | None = None
        """Name kept from context-simple: amplifier-foundation's peers read and re-wrap it."""
        self._lock = asyncio.Lock()
        self._tail = TailView()
        self.mask_settings = (
            MaskSettings(c.mask_min_chars, c.mask_keep_recent, c.recall_tool_name) if c.masking else None
        )
        self._masked_view: tuple[int, int, list[Message]] | None = None
        self.fingerprint = self._fingerprint()
        self._scope_store()
        self._reset([])

    def __repr__(self) -> str:
        return (
            f"SummarizingContextManager(messages={len(self.history.messages)}, boundary={self.state.boundary}, "
            f"strategy={self.config.compaction_strategy!r}, summarizer={self.summarizer.name!r})"
        )

    @property
    def stats(self) -> dict[str, int]:
        """Totals folded from the events this manager emitted (so they agree with what hooks saw)."""
        return self._stats.as_dict()

    # ------------------------------------------------------------------ protocol

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
            history = self._history_of([copy_message(m) for m in messages])
            state = await self._resumed(history)
            await self._cancel_background("replaced")
            self._install(history, state)

    async def clear(self) -> None:
        async with self._lock:
            await self._cancel_background("cleared")
            self._reset([])

    async def get_messages_for_request(
        self, token_budget: int | None = None, provider: Any | None = None
    ) -> list[dict[str, Any]]:
        c = self.config
        wire_budget = await request_budget(token_budget, provider, c.safety_margin, c.max_tokens, c.budget_fallback)
        system_prompt = await self.budget.render_system_prompt(self._system_prompt_factory)
        async with self._lock:
            if await self._rekeyed(provider):
                await self._resume()
            self.budget.use_system_prompt(system_prompt)
            limits = self.budget.limits(self.budget.plan(wire_budget))
            await self._land()
            tokens = self._view_tokens()
            if needs_compaction(tokens, limits):
                await self._compact_for_request(limits, provider, tokens)
                tokens = self._view_tokens()
            view, sent = self._fitted_view(limits.budget)
            if self.history.unencodable:  # lone surrogates go out as U+FFFD: no client or provider encodes them
                view = [scrub_value(m) for m in view]
            self.calibration.expect(sent + self.budget.tool_tokens)
            if c.prefetch and c.compaction_strategy not in ("truncate", "mask"):
                fixed = self._system_view_tokens() + self._shown().summary_tokens + c.summary_output_tokens
                span_of = self.masks.span if self.masks is not None else None
                saves = self._mask_savings if self.masks is not None else None
                await self.prefetcher.maybe_start(
                    self.history, self.state, limits, tokens, fixed, provider, span_of, saves
                )
            return view

    # ------------------------------------------------------- guide API (older callers)

    async def get_token_count(self) -> int:
        """Tokens of the view the next request would send, before any further compaction."""
        return self._sent_tokens(self.budget.last)

    @property
    def planned_tokens(self) -> int:
        """Tokens of the view as compaction plans it, before a request past the budget fits its copy in band."""
        return self._view_tokens()

    async def should_compact(self) -> bool:
        return needs_compaction(self._view_tokens(), self.budget.limits(self.budget.last))

    async def compact(self) -> int:
        """Compact the view now, even under the threshold; return the tokens it saved. History is untouched."""
        async with self._lock:
            limits = self.budget.limits(self.budget.last)
            await self._settle_background(time.monotonic() + self.config.compaction_deadline_s)
            before = self._sent_tokens(limits.budget)
            await self._compact(limits, None, force=True)
            return max(before - self._sent_tokens(limits.budget), 0)

    # ------------------------------------------------------- the wire and the ecosystem

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

    async def _rekeyed(self, provider: Any | None) -> bool:
        """Key summaries by the model that writes them: the session provider's default when none is configured.

        True when the key changed and nothing is summarized yet, so the store may hold this history's state.
        Summaries in flight were keyed by the old model: they are cancelled, else one finished by the new model
        (or begun by the old) would be stored under the key the history chain has by then.
        """
        learn = getattr(self.summarizer.backend, "learn_default_model", None)
        if learn is None or not learn(provider):
            return False  # the usual request: nothing new, no hashing
        fingerprint = self._fingerprint()
        if fingerprint == self.fingerprint:
            return False
        self.prefetcher.cancel()
        await self._cancel_background("rekeyed")
        self.fingerprint = fingerprint
        self.history.rekey(fingerprint)
        self._scope_store()
        return not self.state.segments

    def _scope_store(self) -> None:
        """A shared store (Redis) files summaries under the fingerprint, so one summarizer's can be found or dropped."""
        scope = getattr(self.store, "scope", None)
        if callable(scope):
            scope(self.fingerprint)

    # ------------------------------------------------------------------ state and view

    def _reset(self, messages: list[Message]) -> None:
        self._install(self._history_of(messages), CompactionState())

    def _history_of(self, messages: list[Message]) -> History:
        history = History(self.counter, self.fingerprint, self.config.preserve_system)
        for message in messages:
            history.append(message)
        return history

    def _install(self, history: History, state: CompactionState) -> None:
        self.prefetcher.cancel()
        self.background.cancel()
        self._in_band_next = False
        self.history = history
        self.masks = Masks(history, self.mask_settings) if self.mask_settings is not None else None
        self._masked_view = None
        self.state = state
        self._shown_memo: tuple[CompactionState, int, Shown] | None = None

    async def _resume(self) -> None:
        if self.config.compaction_strategy != "truncate":
            self.state = await self._resumed(self.history)

    async def _resumed(self, history: History) -> CompactionState:
        """The state stored summaries and the mask end give ``history`` (none for ``truncate``: it stores nothing)."""
        if self.config.compaction_strategy == "truncate":
            return CompactionState()
        state = await walk(history, self.segments.store, history.last_cuttable)
        if self.mask_settings is not None:
            state = state.masked_to(await self._stored_mask_end(history, state.boundary))
        return state

    async def _stored_mask_end(self, history: History, boundary: int) -> int:
        """The furthest mask end recorded for this history at ``boundary`` (0 when none)."""
        best = 0
        for entry in await self.segments.store.starting_at(MASK_MARK + history.chain_at(boundary)):
            end = boundary + entry.groups
            if best < end <= history.last_cuttable and history.chain_at(end) == entry.end:
                best = end
        return best

    async def _record_mask_end(self, before: CompactionState) -> None:
        """Store where masking reached, so a resumed session shows the same masked view."""
        state, history = self.state, self.history
        if self.masks is None or state.mask_end <= state.boundary:
            return
        if state.mask_end == before.mask_end and state.boundary == before.boundary:
            return
        start = MASK_MARK + history.chain_at(state.boundary)
        await self.segments.store.put(
            CachedSummary(start, history.chain_at(state.mask_end), "", 0, state.mask_end - state.boundary)
        )

    def _fingerprint(self) -> str:
        c = self.config
        shape = {
            "v": FINGERPRINT_VERSION,
            "summarizer": self.summarizer.name,
            "model": self.summarizer.model,
            "prompts": self.summarizer.prompts.version,
            "summary_max_tokens": c.summary_output_tokens,
            "preserve_system": c.preserve_system,
        }
        if self.mask_settings is not None:  # the summarizer reads masked groups
            shape["mask"] = self.mask_settings.key
        if c.recall_tool_name:  # the summary's preamble names the tool
            shape["recall"] = c.recall_tool_name
        return content_hash(canonical_json(shape))

    def _shown(self) -> Shown:
        """What the state shows; re-derived when the state or the latest request (the pin) changes."""
        memo, latest, allowance = self._shown_memo, self.history.latest_request, self.config.summary_output_tokens
        if memo is None or memo[0] is not self.state:
            c = self.config  # rooms from the uncalibrated budget: a resume renders the same
            ws, room = c.working_set_tokens(self.budget.wire), c.summary_room(self.budget.wire)
            memo = self._shown_memo = (
                self.state,
                latest,
                shown(self.state, self.history, self.counter, allowance, ws, c.recall_tool_name, room),
            )
        elif memo[1] != latest:  # a new request arrived: only the pin can change, not the summary
            pinned = pins_for(self.history, self.state.boundary, self.counter, allowance)
            memo = self._shown_memo = (self.state, latest, memo[2].pinning(pinned))
        return memo[2]

    def _system_view(self) -> list[Message]:
        history = self.history
        if self.budget.system_prompt is None:
            return [history.messages[i] for i in history.system]
        return [
            self.budget.system_prompt[1],
            *(history.messages[i] for i in history.system if from_hook(history.messages[i])),
        ]

    def _system_view_tokens(self) -> int:
        if self.budget.system_prompt is None:
            return self.history.system_tokens
        return self.budget.system_prompt[2] + self.history.hook_system_tokens

    def _view_tokens(self) -> int:
        prefix, state = self.history.prefix, self.state
        tail = state.tail_start
        masked = self.masks.tokens(state.boundary, tail) if self.masks is not None else 0
        return self._system_view_tokens() + self._shown().tokens + masked + prefix[-1] - prefix[tail]

    def _mask_savings(self, end: int) -> int:
        """Tokens masking saves from the mask end to ``end`` (or as far as it may reach, if further): what the
        strategy tries before it pays for a summary ending at ``end``."""
        masks, start, prefix = self.masks, self.state.tail_start, self.history.prefix
        if masks is None:
            return 0
        end = min(max(end, masks.limit()), last_allowed_cut(self.history))
        return prefix[end] - prefix[start] - masks.tokens(start, end) if end > start else 0

    def _sent_tokens(self, budget: int) -> int:
        """Tokens of the view a request at ``budget`` sends: the view's own, or those of its fitted copy."""
        tokens = self._view_tokens()
        return tokens if tokens <= budget else self._fitted_view(budget)[1]

    def _fitted_view(self, budget: int) -> tuple[list[Message], int]:
        """The view and its tokens, fitted to ``budget`` in the copy sent (never in the state or the history).

        Only the newest groups and pinned requests can leave no room (they are never cut): first the working
        set gives up its share, then the newest tool outputs are clipped, and only then does the truncation
        marker stand in for the summary, for this request alone (the state keeps it for the next).
        """
        view, tokens = self._build_view(), self._view_tokens()
        if tokens <= budget:
            return view, tokens
        count, at = self.counter.count_messages, len(self._system_view())
        summary = self._shown().summary
        if summary is not None and self.state.segments:
            shorter = self._summary_within(tokens - budget)
            view[at] = shorter
            tokens = count(view)
        if tokens > budget:
            view, _ = clip_tool_outputs(view, budget, count)
            tokens = count(view)
        if tokens > budget and summary is not None and self.state.segments:
            view[at] = truncation_marker(self.history, self.state.boundary)
            tokens = count(view)
            if tokens > budget:  # the smallest view there is: the marker, the pinned requests, the newest groups
                view, _ = clip_tool_outputs(self._truncated_view(), budget, count)
                tokens = count(view)
        return view, tokens

    def _truncated_view(self) -> list[Message]:
        """The view cut as far as a cut may go, the marker standing for everything before."""
        history, cut = self.history, last_allowed_cut(self.history)
        pinned = pins_for(history, cut, self.counter, self.config.summary_output_tokens)
        return [
            *self._system_view(),
            truncation_marker(history, cut),
            *(message for message, _ in pinned),
            *history.span(cut, len(history.groups)),
        ]

    def _summary_within(self, excess: int) -> Message:
        """The summary message with its working set ``excess`` tokens shorter (left out when that is all of it)."""
        c, state, history = self.config, self.state, self.history
        count = self.counter.count_text
        room = working_set_room(state, c.working_set_tokens(self.budget.wire), c.summary_room(self.budget.wire))
        rendered = index_of(history).render(state.summarized_end, room, count)
        smaller = max(count(rendered) - excess, 0) if rendered else 0
        message = summary_message(state, history, smaller, c.recall_tool_name)
        assert message is not None  # the state has segments
        return message

    def _build_view(self) -> list[Message]:
        view = self._system_view()
        view += self._shown().messages
        state = self.state
        if self.masks is not None and state.tail_start > state.boundary:
            known = self._masked_view
            if known is None or known[:2] != (state.boundary, state.tail_start):
                known = self._masked_view = (
                    state.boundary,
                    state.tail_start,
                    self.masks.span(state.boundary, state.tail_start),
                )
            view += known[2]
        self._tail.extend(view, self.history, state.tail_start)
        return view

    # ------------------------------------------------------------------ compaction

    async def _compact_for_request(self, limits: Limits, provider: Any | None, tokens: int) -> None:
        """The view passed the threshold. While it still fits, nothing waits for the summarizer (the soft
        threshold); a view that would not fit is masked further when that alone fits, else it waits, up to the
        compaction deadline, then the cheaper rungs answer."""
        deadline = time.monotonic() + self.config.compaction_deadline_s
        if not self.config.background_compaction:
            await self._compact(limits, provider, force=False, deadline=deadline)
            return
        if tokens > limits.budget and self.background.running:
            # A summary about to land beats masking further; past a short grace, masking that fits beats waiting.
            await self.background.wait(min(deadline, time.monotonic() + LANDING_GRACE_S))
            if self.background.running and await self._mask_beside_flight(limits, provider):
                return  # the summary under way lands onto this masking later
            await self.background.wait(deadline)
            await self._land()
            tokens = self._view_tokens()
            if not needs_compaction(tokens, limits):
                return
        if tokens <= limits.budget and not self._in_band_next:
            if not self.background.running:
                await self._compact_soft(limits, provider, over_budget=False)
            return
        running, in_band = self.background.running, self._in_band_next
        if not (running or in_band) and await self._compact_soft(limits, provider, over_budget=True):
            return  # masking alone made it fit: the summary is written in the background
        self._in_band_next = False
        await self._settle_background(deadline)
        if needs_compaction(self._view_tokens(), limits):
            await self._compact(limits, provider, force=False, deadline=deadline)

    async def _compact_soft(self, limits: Limits, provider: Any | None, over_budget: bool) -> bool:
        """Plan the compaction offline and install it now; if it needs the summarizer, run it in the background.

        A view that fits is left as it is while the summary is written. One ``over_budget`` is first masked as far
        as the plan got, when that fits; if it does not, nothing happens here (False) and the request compacts
        in band.
        """
        started = time.perf_counter()
        tokens_before, messages_before = self._view_tokens(), len(self._build_view())
        job, before = self._job(limits, provider, force=False, deadline=None, offline=True), self.state
        try:
            state = await self.strategy.compact(job)
        except SummarizerNeeded as needed:
            if over_budget and needed.fitting is None:
                return False
            if over_budget:  # the masking installed now is a compaction of its own; the summary's lands later
                await self._emit_pre_compact(limits, tokens_before, force=False)
                await self._finish(job, before, needed.fitting, tokens_before, messages_before, started, force=False)
            deadline = time.monotonic() + BACKGROUND_DEADLINE_S
            flight = self.background.start(
                self._job(limits, provider, force=False, deadline=deadline), self.state, self.history, tokens_before
            )
            await self._emit_background(flight, STARTED)
            return True
        except Exception as exc:  # a bug here must never stop the agent loop
            logger.exception("compaction failed (%s); truncating", type(exc).__name__)
            job.report.note_fallback("error")
            state = job.truncated(self.state, limits)
        if not over_budget and job.view_tokens(state) < limits.target * LOW_LANDING:
            return True  # an overshoot: wait until the view does not fit (``LOW_LANDING``)
        await self._emit_pre_compact(limits, tokens_before, force=False)
        await self._finish(job, before, state, tokens_before, messages_before, started, force=False)
        return True

    async def _mask_beside_flight(self, limits: Limits, provider: Any | None) -> bool:
        """A view past the budget while a background summary is written: when masking further alone fits, install
        that in band (True) instead of waiting; the summary then lands onto the masked state (``_land``).

        A fast agent step with a large output gets here: the output arrives before the summary does.
        """
        if self.masks is None:  # masking is off: there is nothing to install but the summary
            return False
        started = time.perf_counter()
        tokens_before, messages_before = self._view_tokens(), len(self._build_view())
        job, before = self._job(limits, provider, force=False, deadline=None, offline=True), self.state
        try:
            state: CompactionState | None = await self.strategy.compact(job)
        except SummarizerNeeded as needed:
            state = needed.fitting
        except Exception as exc:  # only a plan: the request waits for the summary as before
            logger.exception("planning beside a background compaction failed (%s)", type(exc).__name__)
            return False
        if state is None or not _masks_further(before, state) or not job.fits(state):
            return False
        await self._emit_pre_compact(limits, tokens_before, force=False)
        await self._finish(job, before, state, tokens_before, messages_before, started, force=False)
        return True

    async def _compact(self, limits: Limits, provider: Any | None, force: bool, deadline: float | None = None) -> None:
        """Compact in band: the request waits for the summarizer (until ``deadline``, a ``time.monotonic()`` value)."""
        started = time.perf_counter()
        # One deadline for all this request waits for: a background summary, then every summarizer call.
        deadline = time.monotonic() + self.config.compaction_deadline_s if deadline is None else deadline
        await self.prefetcher.drain(deadline)
        tokens_before, messages_before = self._view_tokens(), len(self._build_view())
        await self._emit_pre_compact(limits, tokens_before, force)
        job, before = self._job(limits, provider, force, deadline), self.state
        try:
            state = await self.strategy.compact(job)
        except Exception as exc:  # a bug here must never stop the agent loop
            logger.exception("compaction failed (%s); truncating", type(exc).__name__)
            job.report.note_fallback("error")
            state = job.truncated(self.state, limits)
        await self._finish(job, before, state, tokens_before, messages_before, started, force)

    def _job(
        self, limits: Limits, provider: Any | None, force: bool, deadline: float | None, offline: bool = False
    ) -> Compaction:
        c = self.config
        job = Compaction(
            history=self.history,
            state=self.state,
            limits=limits if not force else Limits(limits.budget, 0, limits.target, limits.preserve_recent),
            system_tokens=self._system_view_tokens(),
            counter=self.counter,
            summary_allowance=c.summary_output_tokens,
            provider=provider,
            deadline=deadline,
            masks=self.masks,
            working_set_tokens=c.working_set_tokens(self.budget.wire),
            summary_room=c.summary_room(self.budget.wire),
            recall_tool=c.recall_tool_name,
            offline=offline,
        )
        job.remember(self.state, self._shown())
        return job

    async def _finish(
        self,
        job: Compaction,
        before: CompactionState,
        state: CompactionState,
        tokens_before: int,
        messages_before: int,
        started: float,
        force: bool,
    ) -> None:
        """Install a compaction made in band and report it."""
        self.state = state
        self._shown_memo = (self.state, self.history.latest_request, job.shown(self.state))
        await self._after_install(before)
        artifacts = self._artifacts_hidden(before, self.state, self._shown())
        duration_ms = round((time.perf_counter() - started) * 1000, 3)
        await self._report_compaction(
            job.report, job.limits, tokens_before, messages_before, duration_ms, force, artifacts
        )

    async def _after_install(self, before: CompactionState) -> None:
        if self.masks is not None:
            self.masks.forget_before(self.state.boundary)
            await self._record_mask_end(before)

    # ------------------------------------------------------------------ background compaction

    async def _run_background(self, job: Compaction, before: CompactionState) -> Landed:
        """The background task: a prefetch under way is let land first (single flight), then the strategy runs.

        The summary message and the artifact account are worked out here too, off the request path.
        """
        await self.prefetcher.drain(job.deadline)
        try:
            state = await self.strategy.compact(job)
        except Exception as exc:  # as in band: a bug in a strategy truncates, it does not fail the compaction
            logger.exception("compaction failed (%s); truncating", type(exc).__name__)
            job.report.note_fallback("error")
            state = job.truncated(job.state, job.limits)
        shows = job.shown(state)
        return Landed(state, shows, self._artifacts_hidden(before, state, shows))

    async def _land(self) -> None:
        """Install a background compaction that has landed, if it still applies; report how it ended."""
        flight = self.background.landed()
        if flight is None:
            return
        landed = None if flight.task.cancelled() else flight.task.result()
        if landed is None:
            self._in_band_next = True
            await self._emit_background(flight, FAILED, flight.error or "error")
            return
        current = self.state
        applies = current is flight.before or _masks_further(flight.before, current)
        if flight.history is not self.history or not applies:
            await self._emit_background(flight, CANCELLED, "superseded")
            return
        state = landed.state
        if current.mask_end > state.boundary:  # masked further in band meanwhile: keep that masking
            state = state.masked_to(current.mask_end)
        tokens_before, messages_before = self._view_tokens(), len(self._build_view())
        await self._emit_pre_compact(flight.job.limits, tokens_before, force=False)  # each post has its pre
        self.state = state
        self._shown_memo = (state, -1, landed.shown)  # masking leaves the summary as is; -1: the pin is re-derived
        await self._after_install(current)
        await self._emit_background(flight, LANDED)
        await self._report_compaction(
            flight.job.report,
            flight.job.limits,
            tokens_before,
            messages_before,
            flight.elapsed_ms(),
            False,
            landed.artifacts,
        )

    async def _settle_background(self, deadline: float) -> None:
        """Before compacting in band: let a running background compaction land until ``deadline``, else cancel it."""
        if not self.background.running:
            await self._land()
            return
        await self.background.wait(deadline)
        await self._land()
        await self._cancel_background("deadline")

    async def _cancel_background(self, reason: str) -> None:
        flight = self.background.cancel()
        if flight is not None:
            await self._emit_background(flight, CANCELLED, reason)

    async def _emit_background(self, flight: Flight, phase: str, reason: str | None = None) -> None:
        await self._emit(
            events.BackgroundCompaction(
                phase=phase,
                reason=reason,
                token_count=flight.tokens,
                budget=flight.job.limits.budget,
                elapsed_ms=0.0 if phase == STARTED else flight.elapsed_ms(),
                waited_ms=round(flight.waited * 1000, 3),
            )
        )

    async def _emit_pre_compact(self, limits: Limits, tokens: int, force: bool) -> None:
        await self._emit(
            events.PreCompact(
                message_count=len(self.history.messages),
                token_count=tokens,
                budget=limits.budget,
                strategy=self.config.compaction_strategy,
                threshold=limits.compact_at,
                forced=force,
            )
        )

    def _artifacts_hidden(self, before: CompactionState, state: CompactionState, shows: Shown) -> Account:
        """The newly summarized or masked groups' artifacts, kept or lost by the text that now stands for them.

        O(span): one ledger of the span, tested against the summary (and pins) and the span's masked form.
        """
        history = self.history
        spans = newly_hidden(before.boundary, before.tail_start, state.boundary, state.tail_start)
        stored: list[Message] = []
        texts = [message_text(m) for m in shows.messages]
        for start, end in spans:
            stored += history.messages[history.groups[start].start : history.groups[end - 1].end]
            if start >= state.boundary and self.masks is not None:
                texts += [message_text(m) for m in self.masks.span(start, end)]
        return account(stored, "\n".join(texts))

    async def _report_compaction(
        self,
        report: CompactionReport,
        limits: Limits,
        tokens_before: int,
        messages_before: int,
        duration_ms: float,
        force: bool,
        artifacts: Account,
    ) -> None:
        tokens_after, messages_after = self._sent_tokens(limits.budget), len(self._build_view())
        summarized = self.history.messages_before(self.state.boundary)
        for category, calls in report.failures:
            await self._emit(events.SummaryFailed("compaction", category, calls))
        strategy = self.config.compaction_strategy
        await self._emit(
            events.PostCompact(
                message_count=messages_after,
                token_count=tokens_after,
                tokens_before=tokens_before,
                budget=limits.budget,
                wire_budget=self.budget.wire,
                tool_tokens=self.budget.tool_tokens,
                calibration=round(self.calibration.factor, 4),
                strategy=strategy,
                summarized_messages=summarized,
                segments=len(self.state.segments),
                provider_calls=report.provider_calls,
                cache_hits=report.cache_hits,
                summaries=report.summaries,
                summarizer_input_tokens=report.input_tokens,
                summarizer_output_tokens=report.output_tokens,
                summary_tokens=self._shown().summary_tokens,
                duration_ms=duration_ms,
                fallback=report.fallback,
                circuit=self.breaker.state,
                clipped=tokens_after > limits.budget,
                artifacts_kept=artifacts.kept_count,
                artifacts_lost=artifacts.lost_count,
            )
        )
        await self._emit(
            events.Compaction(
                before_tokens=tokens_before,
                after_tokens=tokens_after,
                before_messages=messages_before,
                after_messages=messages_after,
                messages_removed=max(messages_before - messages_after, 0),
                messages_summarized=summarized if self.state.segments else 0,
                messages_truncated=0 if self.state.segments else summarized,
                budget=limits.budget,
                target_tokens=limits.target,
                strategy=strategy,
                strategy_level=report.fallback or strategy,
            )
        )

    async def _report_prefetch(self, outcome: Outcome) -> None:
        if outcome.cacheable:
            payload: events.Payload = events.SummaryPrefetched(
                outcome.provider_calls, outcome.input_tokens, outcome.output_tokens
            )
        else:
            payload = events.SummaryFailed("prefetch", outcome.fallback, outcome.provider_calls)
        await self._emit(payload)

    async def _emit(self, payload: events.Payload) -> None:
        self._stats.observe(payload)
        if self.hooks is None:
            return
        try:
            await self.hooks.emit(payload.event, payload.to_dict())
        except Exception as exc:  # an observer's fault is not the agent's
            logger.warning("hook for %s failed: %s", payload.event, type(exc).__name__)


def _masks_further(before: CompactionState, after: CompactionState) -> bool:
    """Whether ``after`` differs from ``before`` only in masking more groups (same summary, same boundary)."""
    return after.boundary == before.boundary and after.segments == before.segments and after.mask_end > before.mask_end
