"""Replays a history through a manager the way an orchestrator does: a request before each assistant turn."""

from __future__ import annotations

from typing import Any

from amplifier_module_context_summarize.messages import view_problems


async def replay(
    manager: Any, history: list[dict], provider: Any = None, budget: int | None = None, check: bool = True
) -> list[list[dict]]:
    views = []
    for i, message in enumerate(history):
        await manager.add_message(message)
        if i + 1 < len(history) and history[i + 1]["role"] == "assistant":
            view = await manager.get_messages_for_request(token_budget=budget, provider=provider)
            if check:
                assert not view_problems(view), view_problems(view)
                if budget is not None:
                    assert manager.counter.count_messages(view) <= budget
            views.append(view)
    return views


def extends(previous: list[dict], current: list[dict]) -> bool:
    return current[: len(previous)] == previous
