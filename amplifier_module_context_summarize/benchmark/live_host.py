"""The event loop as a user sees it in a host that decodes each message as it arrives.

The long-session replay (``long_session.py``) builds the whole session in one go and keeps it, and the manager keeps
its own copies besides: a heap no agent has (its messages are laid out side by side, so a full collection of them
is unusually quick), with every copy the module makes on top of it. An agent's loop instead decodes each message
from what a provider or a tool sent (here: its JSON line), hands it to its context manager and keeps nothing but
the view it sends. So here the same session is replayed that way twice, from the same second-to-last checkpoint:

- with ``ListContext``, the context contract's reference manager (it keeps the caller's messages in a list and
  returns a copy of it, as ``context-simple`` does): what the host pays with no module of ours, the yardstick;
- with this module, as ``long_session.py`` configures it.

Each run reports the longest heartbeat lag with the collector's pauses and without, the full collections in that
stretch, and one full collection of the process with the run's context still holding the session (back to back,
the median, as ``long_session.LongCosts.host_collection_s`` is timed).
"""

from __future__ import annotations

import asyncio
import gc
import json
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..testing.replay import request_due
from .coding import CodingSession
from .collector import collection_times
from .heartbeat import Heartbeat
from .synth import SMALL, TextSource

COMPACT_AT = 0.92
"""``ListContext`` compacts past this share of the budget (the contract's ``compact_threshold`` default)."""
COMPACT_TO = 0.5
"""... down to this share, dropping its oldest messages."""


class ListContext:
    """The context contract's reference manager: the caller's own messages in a list, a copy of it per request,
    the oldest dropped once they pass ``COMPACT_AT`` of the budget (tokens estimated as characters / 4)."""

    def __init__(self) -> None:
        self._messages: list[dict[str, Any]] = []
        self._tokens: list[int] = []
        self._total = 0
        self._start = 0

    async def add_message(self, message: dict[str, Any]) -> None:
        tokens = len(json.dumps(message)) // 4
        self._messages.append(message)
        self._tokens.append(tokens)
        self._total += tokens

    async def get_messages_for_request(self, token_budget: int) -> list[dict[str, Any]]:
        if self._total > COMPACT_AT * token_budget:
            while self._start < len(self._messages) and self._total > COMPACT_TO * token_budget:
                self._total -= self._tokens[self._start]
                self._start += 1
        return self._messages[self._start :]


@dataclass
class LoopSeen:
    """One context's run: the heartbeat from the window's first message to the last."""

    lag_raw_s: float = 0.0
    """Longest heartbeat lag, the collector's pauses included."""
    lag_s: float = 0.0
    """The same less the collector's pauses in that beat."""
    full_collections: int = 0
    """Full collections (generation 2) within the window."""
    collection_s: float = 0.0
    """One full collection with the context holding the whole session (the host holding nothing else)."""


@dataclass
class LiveHost:
    messages: int
    window_from: int
    list_context: LoopSeen
    module: LoopSeen


def session_lines(messages: int, seed: int, text: TextSource) -> tuple[list[str], list[bool]]:
    """The session as the JSON lines a host decodes, and after which of them it requests a view."""
    history = CodingSession(SMALL, seed=seed, text=text).history(messages)
    return [json.dumps(m) for m in history], [request_due(history, i) for i in range(len(history))]


async def _replay(context: Any, lines: list[str], due: list[bool], budget: int, window_from: int) -> LoopSeen:
    heartbeat = Heartbeat()
    heartbeat.start()
    view: list[dict[str, Any]] | None = None
    try:
        for i, line in enumerate(lines):
            await context.add_message(json.loads(line))
            if i == window_from:
                heartbeat.reset()
            await asyncio.sleep(0)  # the agent's own awaits (its model call) between steps
            if due[i]:
                view = None  # the model has answered: the host lets the last view go
                view = await context.get_messages_for_request(token_budget=budget)
        await asyncio.sleep(2 * heartbeat.interval_s)
    finally:
        await heartbeat.stop()
    del view
    seen = LoopSeen(heartbeat.max_raw_lag_s, heartbeat.max_lag_s, heartbeat.full_collections)
    seen.collection_s = statistics.median(collection_times())
    return seen


async def measure_live_host(
    make_module: Callable[[], Any], lines: list[str], due: list[bool], budget: int, window_from: int
) -> LiveHost:
    """Both contexts over the same lines, the list first (the yardstick), each alone in the process."""
    gc.collect()
    list_context = await _replay(ListContext(), lines, due, budget, window_from)
    gc.collect()
    module = await _replay(make_module(), lines, due, budget, window_from)
    return LiveHost(len(lines), window_from, list_context, module)
