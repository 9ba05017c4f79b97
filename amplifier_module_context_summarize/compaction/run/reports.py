"""The events a request sends beside its compaction: ``context:usage`` crossings, ``context:pins_dropped``, a
prefetch's outcome; and the slow-summarizer watch every payload feeds (``summarizer.pace.SlowWarning``)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from amplifier_core.models import HookResult

from ... import events
from ...config import Config
from ...core.plan import Limits
from ...core.state import extra_pins, pin_tokens
from ...core.wire import UsageCalibration
from ...summarizer.pace import SlowWarning
from ...summarizer.span import Outcome
from ..view.request import RequestView

logger = logging.getLogger(__name__)

Emit = Callable[[events.Payload], Awaitable[Any]]


class Reports:
    """What the manager reports after each request, once per change (it keeps what it last reported)."""

    def __init__(
        self, config: Config, emit: Emit, slow: SlowWarning, degraded: Callable[[], Sequence[events.Payload]]
    ) -> None:
        self.config, self.emit, self.slow = config, emit, slow
        self.degraded = degraded
        """Degradations noticed where no event can be sent (spilling, inside ``History.append``), sent here."""
        self._crossed: set[tuple[str, float]] = set()
        """The usage fractions the view is at or above (``context:usage`` fires on crossing into this set)."""
        self._dropped_pins: tuple[object, ...] = (None, ())

    async def usage(self, tokens: int, limits: Limits) -> None:
        """``context:usage`` once per upward crossing of each configured fraction (of the budget, of the threshold);
        a fraction the view falls back below may be crossed again. Pending degradations go out first."""
        for payload in self.degraded():
            await self.emit(payload)
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
                    await self.emit(
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

    async def pins(self, view: RequestView) -> None:
        """``context:pins_dropped`` when pinned messages stop fitting their room, or when the request's fitted copy
        of the view let pins go on a rung of the fit ladder (left out or clipped: the truncation marker's cut, the
        pins giving way to the newest groups): once per change of the set."""
        history, state, given_way = view.history, view.state, view.pins_given_way
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
            await self.emit(
                events.PinsDropped(
                    dropped=len(set(past_room).union(given_way)),
                    kept=len(kept),
                    pin_tokens=sum(pin_tokens(history, i) for i in kept),
                    pin_room=history.pin_room,
                    dropped_indices=sorted(set(past_room).union(given_way)),
                )
            )

    async def prefetched(self, outcome: Outcome) -> None:
        """A prefetch's summary: written (``context:summary_prefetched``), else ``context:summary_failed``."""
        if outcome.cacheable:
            payload: events.Payload = events.SummaryPrefetched(
                outcome.provider_calls, outcome.input_tokens, outcome.output_tokens
            )
        else:
            payload = events.SummaryFailed("prefetch", outcome.fallback, outcome.provider_calls)
        await self.emit(payload)

    async def send(self, hooks: Any | None, payload: events.Payload) -> Any:
        """Emit ``payload`` to ``hooks``; return what they answered, or None (amplifier-core folds the handlers'
        ``HookResult``s into one: ``deny`` stops the chain, ``modify`` chains ``data``, injections are collected)."""
        self.watch_pace(payload)
        if hooks is None:
            return None
        try:
            return await hooks.emit(payload.event, payload.to_dict())
        except Exception as exc:  # an observer's fault is not the agent's
            logger.warning("hook for %s failed: %s", payload.event, type(exc).__name__)
            return None

    def watch_pace(self, payload: events.Payload) -> None:
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


def listen_to_usage(config: Config, calibration: UsageCalibration, hooks: Any) -> None:
    """Calibrate the counts against the usage the provider reports in ``llm:response`` events (``mount`` wires it)."""
    if not config.calibrate_from_usage or not callable(getattr(hooks, "register", None)):
        return
    calibration.initial = config.initial_calibration
    calibration.enabled = True

    async def on_response(_event: str, data: Any) -> HookResult:
        calibration.observe(data)
        return HookResult(action="continue")

    hooks.register(events.LLM_RESPONSE, on_response, priority=50, name="context-summarize-calibration")


def answers_pre_compact(hooks: Any | None) -> bool:
    """Whether a ``context:pre_compact`` handler is registered, one that could steer or postpone a compaction (a
    registry that cannot say is taken to have one)."""
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
