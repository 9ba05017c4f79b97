"""One short line on the user's screen when the context is compacted, and when summaries fall back or the
circuit opens, through Amplifier's own display path.

amplifier-core shows a hook result's ``user_message`` through the session's display system when the result is
processed (``coordinator.process_hook_result``: amplifier-app-cli's ``CLIDisplaySystem.show_message`` prints it
as ``[context-summarize] ...``). Results of ``hooks.emit`` are not processed, and app-cli registers no handler
for ``context:*``; so the notifier listens to the module's own events and hands each line to
``process_hook_result`` itself. ``notify: false`` mounts none.
"""

from __future__ import annotations

import inspect
import logging
from typing import Any, Literal

from amplifier_core.models import HookResult

from .backends.base import Fault, Skip
from .events import COMPACTED, POST_COMPACT, SUMMARY_FAILED, SUMMARY_PREFETCHED

Level = Literal["info", "warning", "error"]
"""The levels a ``HookResult`` user message takes."""
logger = logging.getLogger(__name__)

SOURCE = "context-summarize"


def _k(tokens: int) -> str:
    return f"{tokens / 1000:.1f}k" if tokens < 10_000 else f"{round(tokens / 1000)}k"


def compaction_line(data: dict[str, Any]) -> str | None:
    """``context compacted: 152k → 71k tokens (budget 180k); 84 messages summarized: 2 by the LLM, 1 from cache``;
    None for a compaction that was cancelled or ``unchanged`` (nothing was installed: the view is as it was).

    Says what this compaction did (``newly_summarized``, ``newly_masked``), not what the summary stands for in
    all: a compaction that only masked says so, never "summarized" nor "by summarize"."""
    if data.get("outcome", COMPACTED) != COMPACTED:
        return None
    line = (
        f"context compacted: {_k(data.get('tokens_before', 0))} → {_k(data.get('token_count', 0))} tokens "
        f"(budget {_k(data.get('budget', 0))})"
    )
    done = []
    summarized = data.get("newly_summarized", 0)
    if summarized and not data.get("segments"):  # no summary stands for them: the view starts after them
        done.append(f"{summarized} messages truncated")
    elif summarized:
        part = f"{summarized} messages summarized"
        written, cached, fallback = data.get("summaries", 0), data.get("cache_hits", 0), data.get("fallback")
        # ``summaries`` counts offline summaries too: "by the LLM" only when none of this compaction's fell back
        # and the LLM was asked (the extractive summarizer asks none).
        by_llm = not fallback and data.get("provider_calls", 0) > 0
        parts = [f"{written} by the LLM" if by_llm else f"{written} written"] if written else []
        parts += [f"{cached} from cache"] if cached else []
        if fallback:
            parts.append(f"offline summary ({fallback})")
        done.append(part + (": " + ", ".join(parts) if parts else ""))
    if data.get("newly_masked"):
        done.append(f"{data['newly_masked']} messages masked")
    return "; ".join([line, *done])


def failure_line(data: dict[str, Any]) -> str:
    fallback = data.get("fallback") or Fault.ERROR
    if fallback == Skip.CIRCUIT_OPEN:
        return "summaries paused: recent summaries kept failing; the offline summary stands in for a while"
    fault = Fault.named(fallback)  # the payload's member, or its string when a hook rewrote the data
    why = "the provider is busy or slow" if fault is not None and fault.transient else "see the log"
    return f"summary fell back to the offline summary ({fallback}: {why})"


class Notifier:
    """Listens to the module's events on ``coordinator.hooks``; shows a compaction every time, a fallback once per
    run of failures (again after a summary is written), and the circuit opening once each time it opens."""

    def __init__(self, coordinator: Any) -> None:
        self.coordinator = coordinator
        self.failing = False
        self.circuit_open = False
        self.shown: list[tuple[str, Level]] = []

    def register(self, hooks: Any) -> None:
        register = getattr(hooks, "register", None)
        if not callable(register):
            return
        for event in (POST_COMPACT, SUMMARY_FAILED, SUMMARY_PREFETCHED):
            register(event, self.on_event, priority=1000, name=f"{SOURCE}-notify")

    async def on_event(self, event: str, data: Any) -> HookResult:
        data = data if isinstance(data, dict) else {}
        try:
            line = self.line_for(event, data)
            if line is not None:
                await self.show(event, *line)
        except Exception as exc:  # the screen is a courtesy: never a fault of the agent loop
            logger.debug("showing %s failed (%s)", event, type(exc).__name__)
        return HookResult(action="continue")

    def line_for(self, event: str, data: dict[str, Any]) -> tuple[str, Level] | None:
        if event == SUMMARY_PREFETCHED:
            self.failing = self.circuit_open = False
            return None
        if event == SUMMARY_FAILED:
            opening = data.get("fallback") == Skip.CIRCUIT_OPEN
            if (opening and self.circuit_open) or (not opening and self.failing):
                return None
            self.circuit_open = self.circuit_open or opening
            self.failing = True
            return failure_line(data), "warning"
        if event == POST_COMPACT:
            if data.get("summaries") and not data.get("fallback"):
                self.failing = False
            if data.get("circuit") != "open":
                self.circuit_open = False
            line = compaction_line(data)
            return (line, "info") if line is not None else None
        return None

    async def show(self, event: str, message: str, level: Level) -> None:
        self.shown.append((message, level))
        display = getattr(self.coordinator, "display_system", None)
        if display is None:
            return
        if inspect.iscoroutinefunction(getattr(display, "show_message", None)):  # an async display: await it here
            await display.show_message(message, level, f"hook:{SOURCE}")
            return
        process = getattr(self.coordinator, "process_hook_result", None)
        if callable(process):
            result = HookResult(
                action="continue", user_message=message, user_message_level=level, user_message_source=SOURCE
            )
            await process(result, event, SOURCE)
