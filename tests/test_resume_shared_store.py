"""A resume rebuilds the view this session had, even when the store is shared with sessions of other budgets or
strategies (a sub-agent at a small budget compacting the shared prefix the parent never needed to compact)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amplifier_module_context_summarize import create_manager
from amplifier_module_context_summarize.benchmark.coding import CodingSession
from amplifier_module_context_summarize.benchmark.synth import SMALL
from amplifier_module_context_summarize.stores import MemoryStore
from amplifier_module_context_summarize.testing import replay

BASE = {"background_compaction": False, "compaction_strategy": "extractive"}


def history(messages: int, seed: int = 5) -> list[dict[str, Any]]:
    return CodingSession(SMALL, seed=seed).history(messages)


async def live(store: Any, messages: list[dict[str, Any]], budget: int, **config: Any) -> list[dict[str, Any]]:
    manager = create_manager({**BASE, "max_tokens": budget, **config}, store=store)
    await replay(manager, messages, budget=budget)
    return await manager.get_messages_for_request(token_budget=budget)


async def resumed(store: Any, messages: list[dict[str, Any]], budget: int, **config: Any) -> list[dict[str, Any]]:
    manager = create_manager({**BASE, "max_tokens": budget, **config}, store=store)
    await manager.set_messages(messages)
    return await manager.get_messages_for_request(token_budget=budget)


async def test_a_parent_does_not_adopt_its_sub_agents_cut_of_the_shared_prefix() -> None:
    store, messages = MemoryStore(), history(180)
    parent_view = await live(store, messages, 100_000)
    assert len(parent_view) == len(messages), "the parent never needed to compact"
    await live(store, messages[:150], 5_000)  # the sub-agent: same prefix, same store, a small budget
    assert await resumed(store, messages, 100_000) == parent_view


async def test_a_resume_does_not_adopt_a_cut_of_another_strategy() -> None:
    store, messages = MemoryStore(), history(400)
    own = await live(store, messages, 12_000)
    await live(store, messages, 12_000, compaction_strategy="mask")  # same budget, another plan
    await live(store, messages[:300], 6_000)
    assert await resumed(store, messages, 12_000) == own


async def test_a_resume_before_the_budget_is_known_takes_the_cuts_of_the_budget_the_first_request_gives() -> None:
    store, messages = MemoryStore(), history(400)
    own = await live(store, messages, 12_000)
    manager = create_manager({**BASE, "max_tokens": 200_000}, store=store)  # resumed at another budget first
    await manager.set_messages(messages)
    assert await manager.get_messages_for_request(token_budget=12_000) == own


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    budgets=st.lists(st.sampled_from([4_000, 6_000, 9_000, 15_000, 40_000]), min_size=2, max_size=3, unique=True),
    lengths=st.lists(st.integers(min_value=60, max_value=260), min_size=3, max_size=3),
    seed=st.integers(min_value=0, max_value=3),
)
async def test_sessions_of_mixed_budgets_sharing_a_store_each_resume_their_own_view(
    budgets: list[int], lengths: list[int], seed: int
) -> None:
    """Sessions over one shared prefix, each at its own budget and length, write to one store in turn; each then
    resumes to exactly the view it had."""
    store, full = MemoryStore(), history(max(lengths), seed)
    views = []
    for budget, length in zip(budgets, lengths, strict=False):
        views.append(await live(store, full[:length], budget))
    for budget, length, view in zip(budgets, lengths, views, strict=False):
        assert await resumed(store, full[:length], budget) == view, f"budget {budget}, {length} messages"
