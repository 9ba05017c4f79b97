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
from amplifier_module_context_summarize.testing import FakeProvider, mixed_history, replay

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


async def test_parent_resume_is_unchanged_by_a_fork_that_cut_the_shared_prefix_differently():
    """A fork with a larger budget caches longer segments over the shared prefix: the parent's resume must
    still walk its own segments (the walk reaching furthest), not stop after the fork's."""
    cache = MemoryStore()
    history = mixed_history(60)
    # In band: with background compactions, whether a flight stored a summary the parent never installed depends
    # on the machine's load (a resume may then take a cut from the cache that the live parent has not made yet).
    in_band = {"background_compaction": False}
    parent = create_manager({"max_tokens": 12_000, **in_band}, store=cache)
    await replay(parent, history, FakeProvider(), budget=12_000)

    child = create_manager({"max_tokens": 14_000, **in_band}, store=cache)
    fork = [*history[:150], {"role": "user", "content": "child task " * 50}]
    await replay(child, fork, FakeProvider(), budget=14_000)
    assert child.state.segments[0].end != parent.state.segments[0].end  # the fork really cut the prefix differently
    # The parent's view once its background compaction (stored while the fork ran) has landed: what it sends next.
    live = await parent.get_messages_for_request(token_budget=12_000, provider=FakeProvider())

    resumed = create_manager({"max_tokens": 12_000, **in_band}, store=cache)
    await resumed.set_messages(history)
    provider = FakeProvider()
    view = await resumed.get_messages_for_request(token_budget=12_000, provider=provider)
    assert provider.requests == []
    assert view == live


async def test_a_tier_merge_that_was_not_used_is_not_walked_on_resume():
    """A merge that came out no smaller than its parts is discarded; caching it made a resume use it."""
    config = {"summarizer": "extractive", "max_tokens": 2000, "summary_max_tokens": 2000}
    cache = MemoryStore()
    history = mixed_history(60, size=1)
    manager = create_manager(config, store=cache)
    await replay(manager, history, None, budget=2000, check=False)
    live = await manager.get_messages_for_request(token_budget=2000)

    resumed = create_manager(config, store=cache)
    await resumed.set_messages(history)
    assert await resumed.get_messages_for_request(token_budget=2000) == live
