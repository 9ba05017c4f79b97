"""Seam "pins" of the feature matrix: every pin is in the view verbatim or reported dropped
(``context:pins_dropped``) on every rung of the fit ladder, the truncation marker's included: a request whose
newest groups leave no room for the summary falls back to ``[CONTEXT TRUNCATED]``, the view is cut as far as a
cut may go, and the pins then give way to the latest request."""

from __future__ import annotations

from typing import Any

from amplifier_core.models import HookResult
from amplifier_core.testing import MockCoordinator

from amplifier_module_context_summarize import create_manager
from amplifier_module_context_summarize.core.messages import message_text
from amplifier_module_context_summarize.core.state import SUMMARY_MARKER

BUDGET = 4_000


def turn(i: int, size: int = 60) -> list[dict[str, Any]]:
    filler = " ".join(f"word{i}_{k}" for k in range(size))
    return [
        {"role": "user", "content": f"Request {i}: please look at part {i}. {filler}"},
        {"role": "assistant", "content": f"Done with part {i}. {filler}"},
    ]


def fact(i: int) -> str:
    return f"FACT-{i}: the deploy key for region {i} rotates every {i + 2} days."


def recorded() -> tuple[Any, list[dict[str, Any]]]:
    hooks, dropped = MockCoordinator().hooks, []

    async def record(event: str, data: dict[str, Any]) -> HookResult:
        dropped.append(data)
        return HookResult(action="continue")

    hooks.register("context:pins_dropped", record, priority=0, name="record")
    return hooks, dropped


def unaccounted(view: list[dict[str, Any]], history: list[dict[str, Any]], dropped: list[dict[str, Any]]) -> list:
    """Pinned messages neither shown verbatim in ``view`` nor reported dropped."""
    reported = {i for event in dropped for i in event["dropped_indices"]}
    texts = [message_text(m) for m in view]
    return [
        i
        for i, m in enumerate(history)
        if m.get("metadata", {}).get("pin") and i not in reported and not any(m["content"] in t for t in texts)
    ]


async def test_pins_given_way_past_the_truncation_marker_are_reported():
    hooks, dropped = recorded()
    manager = create_manager(
        {"max_tokens": BUDGET, "safety_margin": 0, "background_compaction": False, "summarizer": "extractive"},
        hooks=hooks,
    )
    history: list[dict[str, Any]] = []
    for i in range(30):
        history += turn(i)
        if i < 6:
            history += [{"role": "user", "content": fact(i), "metadata": {"pin": True}}]
            history += [{"role": "assistant", "content": "Noted."}]
    for message in history:
        await manager.add_message(message)
        if message["role"] == "user":
            await manager.get_messages_for_request(BUDGET)
    assert manager.state.segments, "the pins stand after a summary"
    # The latest request alone nearly fills the budget: the summary cannot fit, the marker stands in for it, the
    # view is cut as far as a cut may go, and the pins give way to the request.
    huge = {"role": "user", "content": "Now the big one: " + " ".join(f"item{k}" for k in range(1_640))}
    history.append(huge)
    await manager.add_message(huge)
    view = await manager.get_messages_for_request(BUDGET)
    assert manager.counter.count_messages(view) <= BUDGET
    assert not any(SUMMARY_MARKER in message_text(m) for m in view), "the marker step ran"
    assert any("[CONTEXT TRUNCATED]" in message_text(m) for m in view) or len(view) <= 3
    assert huge["content"] in [message_text(m) for m in view]
    assert unaccounted(view, history, dropped) == []
