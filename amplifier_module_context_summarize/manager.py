"""The context manager: stored history, derived compaction state, and the request view.

History is never changed by compaction. The state derived from it — groups, token counts, chain
hashes and the summary segments — can always be rebuilt from the history plus the summary cache,
which is what makes resume and fork free.
"""

from __future__ import annotations

import asyncio
import heapq
import logging
import time
from bisect import bisect_left
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from . import events
from .backends.base import CIRCUIT_OPEN, COOLDOWN, DEADLINE, ERROR
from .breaker import CircuitBreaker
from .budget import request_budget
from .cache import CachedSummary, MemoryCache, SummaryCache
from .clip import clip_text, clip_tool_outputs
from .config import Config
from .messages import (
    Grouper,
    Message,
    canonical_json,
    content_hash,
    copy_message,
    is_user_turn,
    message_text,
    sanitize,
    strip_tool_blocks,
    validate_message,
)
from .plan import Limits, choose_boundary, needs_compaction, split_for_tiers
from .summarize import Outcome, SpanSummarizer
from .tokens import TokenCounter
from .wire import ToolSchemaMeter, UsageCalibration, without_response_chain

logger = logging.getLogger(__name__)

SUMMARY_MARKER = "[CONTEXT SUMMARY]"
SUMMARY_PREAMBLE = (
    "This is an automatic summary of the earlier part of this conversation, written when it outgrew the "
    "context window. Treat it as established context; the messages after it continue from where it ends."
)
FINGERPRINT_VERSION = "1"
PIN_MAX_CHARS_PER_TOKEN = 3
TRUNCATION_MARKER = "[CONTEXT TRUNCATED] {count} earlier messages were left out to fit the context window."
TRUNCATION_MARKER_TOKENS = 32
"""Room kept for the marker, which also makes sure the first message after the system ones is a user's
(Anthropic rejects a conversation that opens with an assistant message)."""
EXTRA_SUMMARY_PASSES = 2
"""Further segments a compaction may summarize when its first summary left the view over budget."""
MIN_PLAN_SHARE = 4
"""Tool schemas and calibration never shrink the room for messages below 1/4 of the budget."""
SystemPromptFactory = Callable[[], Awaitable[str]]


@dataclass(frozen=True)
class Segment:
    """Groups ``[start, end)`` stood for by ``text`` in the summary message."""

    start: int
    end: int
    text: str
    tokens: int
    tier: int = 0


@dataclass
class CompactionReport:
    tokens_before: int = 0
    tokens_after: int = 0
    provider_calls: int = 0
    cache_hits: int = 0
    fallback: str | None = None
    clipped: bool = False
    deadline: float | None = None


class SummarizingContextManager:
    """Amplifier ContextManager that summarizes the oldest groups into one ``[CONTEXT SUMMARY]`` message."""

    def __init__(
        self,
        config: Config | None = None,
        *,
        summarizer: SpanSummarizer,
        hooks: Any | None = None,
        cache: SummaryCache | None = None,
        counter: TokenCounter | None = None,
        tools: ToolSchemaMeter | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.config = config or Config()
        self.summarizer = summarizer
        self.hooks = hooks
        self.cache: SummaryCache = cache if cache is not None else MemoryCache(self.config.cache_max_entries)
        self.counter = counter or TokenCounter(self.config.token_encoding)
        self.tools = tools
        self.clock = clock or time.monotonic
        """Times cooldowns and the circuit breaker (tests pass a fake one); deadlines use real time."""
        self.calibration = UsageCalibration(initial=1.0, enabled=False)
        """Off until ``listen_to_usage`` wires it to the provider's reports (``mount`` does)."""
        s = self.config.summarizer
        self.breaker = CircuitBreaker(s.circuit_failures, s.circuit_open_s, self.clock)
        self._system_prompt_factory: SystemPromptFactory | None = None
        """Name kept from context-simple: amplifier-foundation's peers read and re-wrap it."""
        self._dynamic_system: tuple[str, Message, int] | None = None
        self.fingerprint = self._fingerprint()
        self._lock = asyncio.Lock()
        self._failed: dict[tuple[str, str], float] = {}
        self._inflight: dict[tuple[str, str], asyncio.Task[None]] = {}
        self._last_budget = self.config.budget_fallback
        self._wire_budget = self._last_budget
        self._tool_tokens = 0
        self._limits_memo: tuple[Config, Limits] | None = None
        self.stats = {
            "compactions": 0,
            "provider_calls": 0,
            "cache_hits": 0,
            "summarizer_input_tokens": 0,
            "summarizer_output_tokens": 0,
        }
        self._reset([])

    def __repr__(self) -> str:
        return (
            f"SummarizingContextManager(messages={len(self._messages)}, boundary={self._boundary}, "
            f"strategy={self.config.compaction_strategy!r}, summarizer={self.summarizer.name!r})"
        )

    # ------------------------------------------------------------------ protocol

    async def add_message(self, message: dict[str, Any]) -> None:
        validate_message(message)
        self._append(copy_message(message))

    async def get_messages(self) -> list[dict[str, Any]]:
        return list(self._messages)

    async def set_messages(self, messages: list[dict[str, Any]]) -> None:
        if not isinstance(messages, list):
            raise ValueError(f"set_messages expects a list of messages, got {type(messages).__name__}")
        for i, message in enumerate(messages):
            try:
                validate_message(message)
            except ValueError as exc:
                raise ValueError(f"messages[{i}]: {exc}") from None
        async with self._lock:
            self._reset([copy_message(m) for m in messages])
            self._rebuild_from_cache()

    async def clear(self) -> None:
        async with self._lock:
            self._reset([])

    async def get_messages_for_request(
        self, token_budget: int | None = None, provider: Any | None = None
    ) -> list[dict[str, Any]]:
        c = self.config
        wire_budget = await request_budget(token_budget, provider, c.safety_margin, c.max_tokens, c.budget_fallback)
        system_prompt = await self._render_system_prompt()
        async with self._lock:
            self._sync_fingerprint(provider)
            self._use_system_prompt(system_prompt)
            budget = self._plan_budget(wire_budget)
            limits = self._limits(budget)
            tokens = self._view_tokens()
            if needs_compaction(tokens, limits):
                try:
                    await self._compact(limits, provider, force=False)
                except Exception as exc:  # a bug or fault here must never stop the agent loop
                    logger.exception("compaction failed (%s); truncating", type(exc).__name__)
                    await self._truncate_to(limits, fallback=ERROR)
                tokens = self._view_tokens()
            view = self._build_view()
            if tokens > budget:
                view, tokens = clip_tool_outputs(view, budget, self.counter.count_messages)
            self.calibration.expect(tokens + self._tool_tokens)
            self._maybe_prefetch(limits, provider)
            return view

    # ------------------------------------------------------- the wire and the ecosystem

    def listen_to_usage(self, hooks: Any) -> None:
        """Calibrate our counts against the usage the provider reports in ``llm:response`` events."""
        if not self.config.calibrate_from_usage or not callable(getattr(hooks, "register", None)):
            return
        self.calibration.initial = self.config.initial_calibration
        self.calibration.enabled = True

        async def on_response(_event: str, data: Any) -> Any:
            self.calibration.observe(data)
            return _continue()

        hooks.register(events.LLM_RESPONSE, on_response, priority=50, name="context-summarize-calibration")

    async def set_system_prompt_factory(self, factory: SystemPromptFactory | None) -> None:
        """amplifier-foundation's hook: the system prompt is rendered afresh for every request.

        The rendered prompt leads the view; system messages stored in history are then left out, except
        those hooks injected (``metadata.source == "hook"``), as context-simple does.
        """
        self._system_prompt_factory = factory
        if factory is None:
            async with self._lock:
                self._use_system_prompt(None)

    def _plan_budget(self, wire_budget: int) -> int:
        """Room for the messages, in our tokens: the provider's budget less tool schemas, over the calibration."""
        self._wire_budget = wire_budget
        self._tool_tokens = self.tools.tokens() if self.tools is not None else 0
        room = int(wire_budget / self.calibration.factor) - self._tool_tokens
        budget = max(room, wire_budget // MIN_PLAN_SHARE, 1)
        self._last_budget = budget
        return budget

    async def _render_system_prompt(self) -> str | None:
        factory = self._system_prompt_factory
        if factory is None:
            return None
        try:
            text = await factory()
        except Exception as exc:  # a failing factory keeps the last prompt it rendered
            logger.warning("system prompt factory failed (%s); keeping the previous prompt", type(exc).__name__)
            return self._dynamic_system[0] if self._dynamic_system else None
        return text if isinstance(text, str) else None

    def _use_system_prompt(self, text: str | None) -> None:
        current = self._dynamic_system
        if current is not None and current[0] == text:
            return
        if text is None:
            self._dynamic_system = None
        else:
            message: Message = {"role": "system", "content": text}
            self._dynamic_system = (text, message, self.counter.count_message(message))

    def _sync_fingerprint(self, provider: Any | None) -> None:
        """Key summaries by the model that writes them: the session provider's default when none is configured."""
        learn = getattr(self.summarizer.backend, "learn_default_model", None)
        if learn is None:
            return
        learn(provider)
        fingerprint = self._fingerprint()
        if fingerprint != self.fingerprint:
            self.fingerprint = fingerprint
            self._chain = [fingerprint]
            if not self._segments:
                self._rebuild_from_cache()

    # ------------------------------------------------------- guide API (older callers)

    async def get_token_count(self) -> int:
        """Tokens of the view the next request would send, before any further compaction."""
        return self._view_tokens()

    async def should_compact(self) -> bool:
        return needs_compaction(self._view_tokens(), self._limits(self._last_budget))

    async def compact(self) -> int:
        """Compact the view now, even under the threshold; return the tokens it saved. History is untouched."""
        async with self._lock:
            before = self._view_tokens()
            await self._compact(self._limits(self._last_budget), None, force=True)
            return max(before - self._view_tokens(), 0)

    # ------------------------------------------------------------------ state

    def _reset(self, messages: list[Message]) -> None:
        self._cancel_background()
        self._messages: list[Message] = []
        self._grouper = Grouper()
        self._prefix: list[int] = [0]
        self._system: list[int] = []
        self._system_tokens = 0
        self._hook_system_tokens = 0
        self._irregular: list[int] = []
        self._replacements: dict[int, list[Message]] = {}
        self._chain: list[str] = [self.fingerprint]
        self._last_user = -1
        self._boundary = 0
        self._segments: list[Segment] = []
        self._summary_message: Message | None = None
        self._summary_tokens = 0
        self._pin: tuple[Message, int] | None = None
        self._settled: list[Message] = []  # view of closed groups [_settled_from, _settled_upto)
        self._settled_from = self._settled_upto = 0
        self._open_view: tuple[int, int, list[Message]] | None = None
        for message in messages:
            self._append(message)

    def _append(self, message: Message) -> None:
        index = len(self._messages)
        self._messages.append(message)
        is_system = message.get("role") == "system" and self.config.preserve_system
        tokens = self.counter.count_message(message)
        groups = self._grouper.groups
        joined = self._grouper.push(message, index)
        if joined:
            self._prefix[-1] += tokens
        else:
            if len(groups) >= 2:
                self._settle(len(groups) - 2)
            self._prefix.append(self._prefix[-1] + (0 if is_system else tokens))
        if is_system:
            self._system.append(index)
            self._system_tokens += tokens
            if _from_hook(message):
                self._hook_system_tokens += tokens
        if is_user_turn(message):
            self._last_user = index
            self._pin = None  # the new request is in the verbatim tail

    def _settle(self, group_index: int) -> None:
        """A group just closed: note whether the view must show it differently from storage."""
        group = self._grouper.groups[group_index]
        messages = self._messages[group.start : group.end]
        if group.size == 1 and messages[0].get("role") == "system" and self.config.preserve_system:
            replacement: list[Message] | None = []
        else:
            cleaned = _as_sent(messages)
            replacement = None if cleaned is messages else cleaned
        if replacement is not None:
            self._replacements[group_index] = replacement
            self._irregular.append(group_index)

    # ------------------------------------------------------------------ hashing

    def _fingerprint(self) -> str:
        c = self.config
        return content_hash(
            canonical_json(
                {
                    "v": FINGERPRINT_VERSION,
                    "strategy": c.compaction_strategy,
                    "summarizer": self.summarizer.name,
                    "model": self.summarizer.model,
                    "prompts": self.summarizer.prompts.version,
                    "summary_max_tokens": c.summary_output_tokens,
                    "preserve_system": c.preserve_system,
                }
            )
        )

    def _chain_at(self, group_index: int) -> str:
        """Chain hash after groups ``[0, group_index)``; only closed groups are ever hashed."""
        groups = self._grouper.groups
        while len(self._chain) <= group_index:
            g = groups[len(self._chain) - 1]
            group_hash = content_hash(canonical_json(self._messages[g.start : g.end]))
            self._chain.append(content_hash(self._chain[-1], group_hash))
        return self._chain[group_index]

    # ------------------------------------------------------------------ measuring

    def _limits(self, budget: int) -> Limits:
        """Limits for ``budget``; the last one is kept, as the budget rarely changes between requests."""
        c = self.config
        memo = self._limits_memo
        if memo is None or memo[0] is not c or memo[1].budget != budget:
            memo = self._limits_memo = (
                c,
                Limits.for_budget(budget, c.compact_threshold, c.target_usage, c.preserve_recent_ratio),
            )
        return memo[1]

    def _pin_for(self, boundary: int) -> tuple[Message, int] | None:
        """The latest user request, stripped of tool results, when groups before ``boundary`` hold it.

        It is kept right after the summary (a huge one clipped head and tail to about a summary's size),
        so the request being worked on is never only paraphrased. It depends on the history and the
        boundary alone, so a resumed session pins the same message.
        """
        groups = self._grouper.groups
        if boundary <= 0 or not 0 <= self._last_user < groups[boundary - 1].end:
            return None
        message = strip_tool_blocks(self._messages[self._last_user], keep_calls=set(), keep_results=set())
        if message is None:
            return None
        limit = PIN_MAX_CHARS_PER_TOKEN * self.config.summary_output_tokens
        clipped = clip_text(message, limit)
        tokens = self.counter.count_message(clipped)
        if clipped is not message and len(message_text(message)) <= 2 * limit:  # only just over: worth clipping?
            whole = self.counter.count_message(message)
            if tokens >= whole:
                return message, whole  # the clip marker would cost more than the text it takes out
        return clipped, tokens

    def _repin(self) -> None:
        self._pin = self._pin_for(self._boundary)

    def _system_view_tokens(self) -> int:
        if self._dynamic_system is None:
            return self._system_tokens
        return self._dynamic_system[2] + self._hook_system_tokens

    def _fixed_tokens(self) -> int:
        return self._system_view_tokens() + self._summary_tokens + (self._pin[1] if self._pin else 0)

    def _view_tokens(self) -> int:
        return self._fixed_tokens() + self._prefix[-1] - self._prefix[self._boundary]

    def _last_cuttable(self) -> int:
        """Groups before this index may be summarized; the newest group always stays verbatim."""
        return max(len(self._grouper.groups) - 1, 0)

    # ------------------------------------------------------------------ view

    def _system_view(self) -> list[Message]:
        if self._dynamic_system is None:
            return [self._messages[i] for i in self._system]
        return [self._dynamic_system[1], *(self._messages[i] for i in self._system if _from_hook(self._messages[i]))]

    def _build_view(self) -> list[Message]:
        view = self._system_view()
        if self._summary_message is not None:
            view.append(self._summary_message)
        if self._pin:
            view.append(self._pin[0])
        groups = self._grouper.groups
        if not groups or self._boundary >= len(groups):
            return view
        view += self._settled_view()
        view += self._view_of_open_group()
        return view

    def _settled_view(self) -> list[Message]:
        """The view of the closed groups from the boundary on, kept between requests.

        Closed groups never change, so this list only grows as groups close and is rebuilt when the
        boundary moves: a request copies it once instead of re-slicing the history (callers get a copy).
        """
        groups = self._grouper.groups
        closed = len(groups) - 1
        if self._settled_from != self._boundary:
            self._settled, self._settled_from, self._settled_upto = [], self._boundary, self._boundary
        if self._settled_upto < closed:
            settled, position, stop = self._settled, groups[self._settled_upto].start, groups[closed].start
            for g in self._irregular[bisect_left(self._irregular, self._settled_upto) :]:
                if g >= closed:
                    break
                settled += self._messages[position : groups[g].start]
                settled += self._replacements[g]
                position = groups[g].end
            settled += self._messages[position:stop]
            self._settled_upto = closed
        return self._settled

    def _view_of_open_group(self) -> list[Message]:
        group = self._grouper.groups[-1]
        if self._open_view is not None and self._open_view[0] == group.start and self._open_view[1] == group.end:
            return self._open_view[2]
        messages = self._messages[group.start : group.end]
        if group.size == 1 and messages[0].get("role") == "system" and self.config.preserve_system:
            shown: list[Message] = []
        else:
            shown = _as_sent(messages)
        self._open_view = (group.start, group.end, shown)
        return shown

    def _set_segments(self, segments: list[Segment], boundary: int) -> None:
        self._segments = segments
        self._boundary = boundary
        self._repin()
        if not segments:
            self._summary_message, self._summary_tokens = None, 0
            return
        body = "\n\n".join(s.text for s in segments)
        self._summary_message = {"role": "user", "content": f"{SUMMARY_MARKER}\n{SUMMARY_PREAMBLE}\n\n{body}"}
        self._summary_tokens = self.counter.count_message(self._summary_message)

    # ------------------------------------------------------------------ compaction

    def _rebuild_from_cache(self) -> None:
        """Walk the chain from the fingerprint along cached segments: resume and fork for free.

        A shared cache can hold several cuts of one prefix (a fork with another budget, a prefetch), so a
        greedy walk could stop early on another session's segment: the walk that reaches furthest wins,
        then the one with fewest segments (tier merges), then the one with longer segments first.
        """
        if self.config.compaction_strategy == "truncate":
            return
        limit = self._last_cuttable()
        paths: dict[int, list[Segment]] = {0: []}
        pending = [0]
        while pending:
            position = heapq.heappop(pending)  # every walk into it came from a smaller position: final
            path = paths[position]
            for entry in self.cache.starting_at(self._chain_at(position)):
                end = position + entry.groups
                if not position < end <= limit or self._chain_at(end) != entry.end:
                    continue
                candidate = [*path, Segment(position, end, entry.text, entry.tokens, entry.tier)]
                known = paths.get(end)
                if known is None:
                    heapq.heappush(pending, end)
                elif (len(candidate), [-s.end for s in candidate]) >= (len(known), [-s.end for s in known]):
                    continue
                paths[end] = candidate
        position = max(paths)
        if position:
            self._set_segments(paths[position], position)

    async def _compact(self, limits: Limits, provider: Any | None, force: bool) -> None:
        started = time.perf_counter()
        messages_before = len(self._build_view())
        report = CompactionReport(
            tokens_before=self._view_tokens(), deadline=time.monotonic() + self.config.compaction_deadline_s
        )
        await self._emit(
            events.PRE_COMPACT,
            {
                "message_count": len(self._messages),
                "token_count": report.tokens_before,
                "budget": limits.budget,
                "strategy": self.config.compaction_strategy,
                "threshold": limits.compact_at,
                "forced": force,
            },
        )
        target_limits = limits if not force else Limits(limits.budget, 0, limits.target, limits.preserve_recent)
        if self.config.compaction_strategy == "truncate":
            await self._truncate_to(target_limits, fallback=None, report=report)
        else:
            try:
                await self._summarize_to(target_limits, provider, report)
            except Exception as exc:  # a bug, not a provider fault (those are handled below this)
                logger.exception("summarizing failed (%s); dropping whole groups instead", type(exc).__name__)
                await self._truncate_to(limits, fallback=ERROR, report=report)
        if self._view_tokens() > limits.budget:
            report.clipped = True
        report.tokens_after = self._view_tokens()
        self.stats["compactions"] += 1
        messages_after = len(self._build_view())
        summarized = self._messages_before(self._boundary)
        await self._emit(
            events.POST_COMPACT,
            {
                "message_count": messages_after,
                "token_count": report.tokens_after,
                "tokens_before": report.tokens_before,
                "budget": limits.budget,
                "wire_budget": self._wire_budget,
                "tool_tokens": self._tool_tokens,
                "calibration": round(self.calibration.factor, 4),
                "strategy": self.config.compaction_strategy,
                "summarized_messages": summarized,
                "segments": len(self._segments),
                "provider_calls": report.provider_calls,
                "cache_hits": report.cache_hits,
                "summary_tokens": self._summary_tokens,
                "duration_ms": round((time.perf_counter() - started) * 1000, 3),
                "fallback": report.fallback,
                "circuit": self.breaker.state,
                "clipped": report.clipped,
            },
        )
        await self._emit(
            events.COMPACTION,
            {
                "before_tokens": report.tokens_before,
                "after_tokens": report.tokens_after,
                "before_messages": messages_before,
                "after_messages": messages_after,
                "messages_removed": max(messages_before - messages_after, 0),
                "messages_summarized": summarized if self._segments else 0,
                "messages_truncated": 0 if self._segments else summarized,
                "budget": limits.budget,
                "target_tokens": limits.target,
                "strategy": self.config.compaction_strategy,
                "strategy_level": report.fallback or self.config.compaction_strategy,
                "module": "context-summarize",
            },
        )

    def _messages_before(self, group_index: int) -> int:
        groups = self._grouper.groups
        if group_index <= 0 or not groups:
            return 0
        end = groups[group_index - 1].end
        return end - bisect_left(self._system, end) if self.config.preserve_system else end

    async def _truncate_to(self, limits: Limits, fallback: str | None, report: CompactionReport | None = None) -> None:
        """Drop whole oldest groups (the bottom rung of the ladder, and the ``truncate`` strategy).

        A summary already in the view stays; the groups dropped now are simply not represented.
        """
        marker_room = self._summary_tokens if self._segments else TRUNCATION_MARKER_TOKENS
        self._boundary = self._fitting_boundary(limits, marker_room)
        self._repin()
        if not self._segments and self._boundary > 0:
            dropped = self._messages_before(self._boundary)
            self._summary_message = {"role": "user", "content": TRUNCATION_MARKER.format(count=dropped)}
            self._summary_tokens = self.counter.count_message(self._summary_message)
        if report is not None:
            report.fallback = fallback

    async def _summarize_to(self, limits: Limits, provider: Any | None, report: CompactionReport) -> None:
        for task in list(self._inflight.values()):  # a prefetch for this boundary may be about to land
            await asyncio.wait([task])
        allowance = self.config.summary_output_tokens
        new_boundary = self._ready_boundary(limits) or self._fitting_boundary(limits, self._summary_tokens + allowance)
        if new_boundary <= self._boundary or self._prefix[new_boundary] == self._prefix[self._boundary]:
            return  # nothing to cut, or only system messages (kept anyway): a summary of them could only add
        segment = await self._summarize_segment(self._boundary, new_boundary, provider, report)
        self._set_segments([*self._segments, segment], new_boundary)
        await self._merge_tiers(limits, provider, report)
        # The summary can come out larger than its allowance (preamble, ledger, a long reply): while the view
        # still does not fit, summarize the next groups measured with the real summary; then drop whole groups.
        for _ in range(EXTRA_SUMMARY_PASSES):
            if self._view_tokens() <= limits.budget:
                return
            end = self._fitting_boundary(limits, self._summary_tokens + allowance)
            if end <= self._boundary or self._prefix[end] == self._prefix[self._boundary]:
                break
            segment = await self._summarize_segment(self._boundary, end, provider, report)
            self._set_segments([*self._segments, segment], end)
            await self._merge_tiers(limits, provider, report)
        if self._view_tokens() > limits.budget:
            self._boundary = self._fitting_boundary(Limits(limits.budget, 0, limits.budget, 0), self._summary_tokens)
            self._repin()

    def _fitting_boundary(self, limits: Limits, summary_tokens: int) -> int:
        """``choose_boundary`` for a view with this much summary, counting the request that will be pinned."""
        fixed = self._system_view_tokens() + summary_tokens
        end = choose_boundary(self._prefix, self._boundary, self._last_cuttable(), fixed, limits)
        pinned = self._pin_for(end)
        if pinned is not None:
            end = choose_boundary(self._prefix, self._boundary, self._last_cuttable(), fixed + pinned[1], limits)
        return end

    def _ready_boundary(self, limits: Limits) -> int | None:
        """End of an already-cached segment from the boundary (a prefetch) that brings the view near the target.

        Taking it turns the threshold compaction into a cache hit; "near" is the lower quarter of the
        hysteresis band, and the recent share must still be kept verbatim.
        """
        if not self.config.prefetch:
            return None
        here, total, best = self._chain_at(self._boundary), self._prefix[-1], None
        acceptable = limits.target + (limits.compact_at - limits.target) // 4
        for entry in self.cache.starting_at(here):
            end = self._boundary + entry.groups
            if end > self._last_cuttable() or self._chain_at(end) != entry.end:
                continue
            tail = total - self._prefix[end]
            view = self._system_view_tokens() + self._summary_tokens + entry.tokens + tail
            if tail >= limits.preserve_recent and view <= acceptable and (best is None or end > best):
                best = end
        return best

    def _maybe_prefetch(self, limits: Limits, provider: Any | None) -> None:
        """Above the lower watermark, summarize the segment the next compaction will want, in the background."""
        if not self.config.prefetch or self.config.compaction_strategy == "truncate" or self._inflight:
            return
        view = self._view_tokens()
        if not (limits.budget * self.config.prefetch_threshold < view <= limits.compact_at):
            return
        fixed = self._system_view_tokens() + self._summary_tokens + self.config.summary_output_tokens
        growth = limits.compact_at - view + 1
        end = choose_boundary(self._prefix, self._boundary, self._last_cuttable(), fixed, limits, growth=growth)
        if end <= self._boundary:
            return
        key = (self._chain_at(self._boundary), self._chain_at(end))
        if self.cache.get(*key) is not None:
            return
        span = self._span_messages(self._boundary, end)
        previous = "\n\n".join(seg.text for seg in self._segments) or None
        task = asyncio.get_running_loop().create_task(
            self._prefetch(key, end - self._boundary, span, previous, provider)
        )
        self._inflight[key] = task
        task.add_done_callback(lambda _t, k=key: self._inflight.pop(k, None))

    async def _prefetch(
        self, key: tuple[str, str], groups: int, span: list[Message], previous: str | None, provider: Any | None
    ) -> None:
        if self._cooling_down(key) or not self.breaker.allows_call():
            return
        try:
            with self.calibration.quiet():
                outcome = await self.summarizer.summarize(span, previous, provider)
            self._note_health(outcome)
        except Exception as exc:  # background work reports; it never raises into the loop
            self._failed[key] = self.clock()
            await self._emit(
                events.SUMMARY_FAILED, {"reason": "prefetch", "fallback": type(exc).__name__, "provider_calls": 0}
            )
            return
        self.stats["provider_calls"] += outcome.provider_calls
        self.stats["summarizer_input_tokens"] += outcome.input_tokens
        self.stats["summarizer_output_tokens"] += outcome.output_tokens
        if outcome.cacheable:
            self.cache.put(CachedSummary(key[0], key[1], outcome.text, self.counter.count_text(outcome.text), groups))
        else:
            self._failed[key] = self.clock()
            await self._emit(
                events.SUMMARY_FAILED,
                {"reason": "prefetch", "fallback": outcome.fallback, "provider_calls": outcome.provider_calls},
            )

    def _cancel_background(self) -> None:
        for task in self._inflight.values():
            task.cancel()
        self._inflight.clear()

    async def _summarize_segment(self, start: int, end: int, provider: Any | None, report: CompactionReport) -> Segment:
        key = (self._chain_at(start), self._chain_at(end))
        cached = self.cache.get(*key)
        if cached is not None:
            report.cache_hits += 1
            self.stats["cache_hits"] += 1
            return Segment(start, end, cached.text, cached.tokens, cached.tier)
        span = self._span_messages(start, end)
        previous = "\n\n".join(s.text for s in self._segments) or None
        if self._cooling_down(key):
            outcome = self.summarizer.extractive(span, previous, fallback=COOLDOWN)
        elif self.summarizer.backend is not None and not self.breaker.allows_call():
            outcome = self.summarizer.extractive(span, previous, fallback=CIRCUIT_OPEN)
        else:
            with self.calibration.quiet():
                outcome = await self.summarizer.summarize(span, previous, provider, deadline=report.deadline)
            self._note_health(outcome)
        return self._record(key, start, end, outcome, tier=0, report=report)

    def _note_health(self, outcome: Outcome) -> None:
        """Feed the circuit breaker: a summary from the LLM closes it, a provider fault counts toward opening it."""
        if outcome.fallback is None:
            self.breaker.record_success()
        elif outcome.provider_calls or outcome.fallback in (DEADLINE,):
            self.breaker.record_failure()

    def _record(
        self,
        key: tuple[str, str],
        start: int,
        end: int,
        outcome: Outcome,
        tier: int,
        report: CompactionReport,
        keep: bool = True,
    ) -> Segment:
        report.provider_calls += outcome.provider_calls
        self.stats["provider_calls"] += outcome.provider_calls
        self.stats["summarizer_input_tokens"] += outcome.input_tokens
        self.stats["summarizer_output_tokens"] += outcome.output_tokens
        report.fallback = report.fallback or outcome.fallback
        tokens = self.counter.count_text(outcome.text)
        if outcome.cacheable and keep:
            self._failed.pop(key, None)
            self.cache.put(CachedSummary(key[0], key[1], outcome.text, tokens, end - start, tier))
        elif outcome.fallback not in (COOLDOWN, CIRCUIT_OPEN):
            self._failed[key] = self.clock()
        return Segment(start, end, outcome.text, tokens, tier)

    def _cooling_down(self, key: tuple[str, str]) -> bool:
        failed_at = self._failed.get(key)
        return failed_at is not None and self.clock() - failed_at < self.config.failure_cooldown_s

    def _span_messages(self, start: int, end: int) -> list[Message]:
        groups = self._grouper.groups
        span: list[Message] = []
        for g in range(start, end):
            group = groups[g]
            messages = self._replacements.get(g, self._messages[group.start : group.end])
            span.extend(messages)
        return span

    async def _merge_tiers(self, limits: Limits, provider: Any | None, report: CompactionReport) -> None:
        """Fold the oldest segment summaries into one higher tier while the summary is over its share."""
        allowance = int(limits.budget * self.config.summary_budget_ratio)
        while True:
            count = split_for_tiers([s.tokens for s in self._segments], allowance)
            if count == 0:
                return
            parts = self._segments[:count]
            start, end = parts[0].start, parts[-1].end
            key = (self._chain_at(start), self._chain_at(end))
            tier = max(p.tier for p in parts) + 1
            cached = self.cache.get(*key)
            if cached is not None and cached.tier > 0:
                report.cache_hits += 1
                merged = Segment(start, end, cached.text, cached.tokens, cached.tier)
            else:
                outcome = await self._merge(parts, start, end, provider, report.deadline)
                # A merge no smaller than its parts goes unused, so it is not cached either (a resume walking
                # the cache would take it); the cooldown keeps an LLM merge from being asked again at once.
                smaller = self.counter.count_text(outcome.text) < sum(p.tokens for p in parts)
                merged = self._record(key, start, end, outcome, tier, report, keep=smaller)
            if merged.tokens >= sum(p.tokens for p in parts):
                return
            self._set_segments([merged, *self._segments[count:]], self._boundary)

    async def _merge(
        self, parts: list[Segment], start: int, end: int, provider: Any | None, deadline: float | None
    ) -> Outcome:
        """Merge with the LLM; the extractive summary of the whole range is the fallback (and the offline way)."""
        span = self._span_messages(start, end)
        if self.summarizer.backend is None:
            return self.summarizer.extractive(span, None, fallback=None)
        if self._cooling_down((self._chain_at(start), self._chain_at(end))):
            return self.summarizer.extractive(span, None, fallback=COOLDOWN)
        if not self.breaker.allows_call():
            return self.summarizer.extractive(span, None, fallback=CIRCUIT_OPEN)
        try:
            with self.calibration.quiet():
                outcome = await self.summarizer.merge([p.text for p in parts], provider, deadline=deadline)
        except Exception as exc:
            self.breaker.record_failure()
            return self.summarizer.extractive(span, None, fallback=getattr(exc, "category", ERROR))
        self.breaker.record_success()
        return outcome

    async def _emit(self, event: str, data: dict[str, Any]) -> None:
        if self.hooks is None:
            return
        try:
            await self.hooks.emit(event, data)
        except Exception as exc:  # an observer's fault is not the agent's
            logger.warning("hook for %s failed: %s", event, type(exc).__name__)


def _as_sent(messages: list[Message]) -> list[Message]:
    """A group as the view shows it (``messages`` itself when unchanged): sanitized, and with no OpenAI
    response-chain id, which would make the server add its stored, uncompacted history to the request."""
    cleaned = sanitize(messages)
    unchained = [without_response_chain(m) for m in cleaned]
    if any(a is not b for a, b in zip(unchained, cleaned, strict=True)):
        return unchained
    return cleaned


def _from_hook(message: Message) -> bool:
    metadata = message.get("metadata")
    return isinstance(metadata, dict) and metadata.get("source") == "hook"


def _continue() -> Any:
    from amplifier_core.models import HookResult

    return HookResult(action="continue")
