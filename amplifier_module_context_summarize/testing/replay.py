"""Replays a history through a context manager the way an orchestrator drives it.

An orchestrator adds each message as it happens and asks for a view right before the model speaks: after the
message that the next assistant message answers (``request_due``). ``replay`` does exactly that and returns
the views; ``replay_steps`` is the same loop as an async iterator, for callers that count, time or sample
around each request themselves::

    views = await replay(manager, history, provider, budget=12_000)  # every view checked: valid, fits

    async for step in replay_steps(manager, history, budget=12_000):
        if step.due:
            started = time.perf_counter()
            view = await step.request()
            elapsed = time.perf_counter() - started
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

from ..core.invariants import check_view

__all__ = ["REPLAY_DEADLINE_S", "ReplayStep", "extends", "replay", "replay_steps", "request_due"]

REPLAY_DEADLINE_S = 600.0
"""``compaction_deadline_s`` and ``summarizer.timeout_s`` of an offline replay (``compact``, ``eval``): nobody waits
for its requests, so a summary is given the time its calls take rather than a live request's 30 s, which a small
local model misses on every span of 6,000 tokens or more (5-6 ms a prompt token on two idle cores; 40 ms on busy
ones, where one call takes minutes)."""


def request_due(messages: Sequence[dict[str, Any]], index: int, *, at_end: bool = False) -> bool:
    """True when an orchestrator asks for a view after adding ``messages[index]``: the next message is the
    assistant's; with ``at_end``, also after the last message (a caller that wants the view the model would get
    next)."""
    if index + 1 == len(messages):
        return at_end
    return messages[index + 1].get("role") == "assistant"


class ReplayStep:
    """One message just added: ``index`` and ``message``; ``due`` when an orchestrator would request a view now;
    ``await request()`` asks the manager for it with the replay's provider and budget."""

    __slots__ = ("_manager", "_request", "due", "index", "message")

    def __init__(self, manager: Any, request: dict[str, Any], index: int, message: dict[str, Any], due: bool) -> None:
        self._manager, self._request = manager, request
        self.index, self.message, self.due = index, message, due

    async def request(self) -> list[dict[str, Any]]:
        return await self._manager.get_messages_for_request(**self._request)


async def replay_steps(
    manager: Any,
    messages: Sequence[dict[str, Any]],
    provider: Any = None,
    budget: int | None = None,
    *,
    at_end: bool = False,
) -> AsyncIterator[ReplayStep]:
    """Add each message to ``manager`` and yield a ``ReplayStep`` after it; the caller makes the request.

    ``provider`` and ``budget`` are passed to ``get_messages_for_request`` only when given, so a manager (or a
    stand-in) that takes neither works. Nothing else happens between a yield and the next ``add_message``.
    """
    request: dict[str, Any] = {}
    if budget is not None:
        request["token_budget"] = budget
    if provider is not None:
        request["provider"] = provider
    for i, message in enumerate(messages):
        await manager.add_message(message)
        yield ReplayStep(manager, request, i, message, request_due(messages, i, at_end=at_end))


async def replay(
    manager: Any,
    messages: Sequence[dict[str, Any]],
    provider: Any = None,
    budget: int | None = None,
    *,
    check: bool = True,
    at_end: bool = False,
) -> list[list[dict[str, Any]]]:
    """Add ``messages`` to ``manager``, requesting a view where an orchestrator would; returns the views.

    With ``check`` (the default) every view must be valid input for a provider (``invariants.check_view``)
    and, when ``budget`` is given, fit it by the manager's own counter; otherwise ``AssertionError``.
    """
    views = []
    async for step in replay_steps(manager, messages, provider, budget, at_end=at_end):
        if not step.due:
            continue
        view = await step.request()
        if check:
            problems = check_view(view)
            if problems:
                raise AssertionError(f"view after message {step.index} is not valid: {problems}")
            if budget is not None and (tokens := manager.counter.count_messages(view)) > budget:
                raise AssertionError(f"view after message {step.index} has {tokens} tokens, over the budget {budget}")
        views.append(view)
    return views


def extends(previous: Sequence[Any], current: Sequence[Any]) -> bool:
    """True when ``current`` starts with ``previous``: a provider's prompt cache still holds the old prefix."""
    return len(current) >= len(previous) and current[: len(previous)] == previous
