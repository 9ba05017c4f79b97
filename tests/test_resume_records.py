"""A resume shows exactly the live session's view whatever the plan installed (feature-matrix seams of issue 43):
a fallback summary (the LLM failed), the groups the mask strategy's truncation dropped, and the cut ``truncate``
made after a denying hook postponed compactions. A fresh manager over the same store, given the history by
``set_messages`` (a CLI's next turn, a new process), must show the same view and pay for nothing again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from amplifier_core.models import HookResult
from amplifier_core.testing import MockCoordinator

from amplifier_module_context_summarize import create_manager
from amplifier_module_context_summarize.core.state import SUMMARY_MARKER, TRUNCATION_MARKER
from amplifier_module_context_summarize.stores import MemoryStore, SqliteStore
from amplifier_module_context_summarize.testing import FakeProvider, mixed_history, replay


def turn(i: int, size: int = 60) -> list[dict[str, Any]]:
    filler = " ".join(f"word{i}_{k}" for k in range(size))
    return [
        {"role": "user", "content": f"Request {i}: please look at part {i}. {filler}"},
        {"role": "assistant", "content": f"Done with part {i}. {filler}"},
    ]


def big_outputs_early(turns: int, chars: int = 160_000) -> list[dict[str, Any]]:
    """Two huge tool outputs in the first turns, then ordinary ones."""
    messages = mixed_history(turns)
    for n, i in enumerate(k for k, m in enumerate(messages) if m["role"] == "tool"):
        if n < 2:
            messages[i] = {**messages[i], "content": f"line {n}\n" + "x" * chars}
    return messages


def store_of(kind: str, tmp_path: Path) -> Any:
    return SqliteStore(str(tmp_path / "summaries.db")) if kind == "sqlite" else MemoryStore()


async def resumed_view(config: dict[str, Any], store: Any, messages: list[dict[str, Any]], budget: int, **kw: Any):
    manager = create_manager(config, store=store, **kw)
    await manager.set_messages(messages)
    return manager, await manager.get_messages_for_request(token_budget=budget, provider=kw.get("provider"))


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_a_fallback_summary_is_rebuilt_by_a_resume_and_paid_for_by_none(kind: str, tmp_path: Path) -> None:
    """The LLM fails every call, so each segment is the extractive fallback: a resume shows those summaries (the
    cut carries the text the plan installed) without asking the provider, and the fallback is never served as a
    paid summary of the span (it is not stored as a segment)."""
    budget, store = 4_000, store_of(kind, tmp_path)
    config = {"max_tokens": budget, "background_compaction": False, "safety_margin": 0}
    messages = [m for i in range(30) for m in turn(i)]
    failing = FakeProvider(fail_with=RuntimeError("provider down"))
    live = create_manager(config, store=store)
    await replay(live, messages, failing, budget=budget)
    view = await live.get_messages_for_request(token_budget=budget, provider=failing)
    assert SUMMARY_MARKER in str(view) and live.state.segments, "the view shows fallback summaries"

    asked = FakeProvider(reply="### State\nan LLM summary")
    manager, again = await resumed_view(config, store, messages, budget)
    assert again == view
    assert manager.state.segments == live.state.segments
    await manager.get_messages_for_request(token_budget=budget, provider=asked)
    assert asked.requests == [], "a resume pays for nothing the live session showed"
    segments = manager.compactor.segments
    first = live.state.segments[0]
    assert await segments.store.get(*segments.key(live.history, first.start, first.end)) is None, (
        "a fallback is not stored as the span's summary: a later LLM call may still pay for it"
    )
    await store.close()


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_a_resume_drops_the_groups_the_mask_strategys_truncation_dropped(kind: str, tmp_path: Path) -> None:
    budget, store = 12_000, store_of(kind, tmp_path)
    config = {"max_tokens": budget, "background_compaction": False, "compaction_strategy": "mask"}
    messages = big_outputs_early(40)
    live = create_manager(config, store=store)
    await replay(live, messages, budget=budget)
    view = await live.get_messages_for_request(token_budget=budget)
    assert live.state.boundary > 0 and not live.state.segments, "masking alone was not enough: truncation dropped"

    manager, again = await resumed_view(config, store, messages, budget)
    assert manager.state == live.state
    assert again == view
    await store.close()


@pytest.mark.parametrize("denying", [True, False])
async def test_a_resume_takes_the_cut_truncate_made(denying: bool) -> None:
    """Between compactions (hysteresis) and after a denying hook postponed some, the live session's cut is not the
    one a plan recomputed from the whole history makes: the cut is stored, and the resume takes it."""

    async def deny(event: str, data: dict[str, Any]) -> HookResult:
        return HookResult(action="deny", reason="checkpoint first")

    def hooks() -> Any:
        registry = MockCoordinator().hooks
        if denying:
            registry.register("context:pre_compact", deny, priority=10, name="deny")
        return registry

    budget, store = 1_500, MemoryStore()
    config = {"max_tokens": budget, "background_compaction": False, "compaction_strategy": "truncate"}
    messages = [m for i in range(12) for m in turn(i, 40)]
    live = create_manager(config, store=store, hooks=hooks())
    await replay(live, messages, budget=budget)
    view = await live.get_messages_for_request(token_budget=budget)
    assert live.state.boundary > 0 and TRUNCATION_MARKER.split("{")[0] in str(view)

    manager, again = await resumed_view(config, store, messages, budget, hooks=hooks())
    assert manager.state == live.state
    assert again == view
