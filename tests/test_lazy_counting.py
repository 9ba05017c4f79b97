"""``set_messages`` counts the groups a resumed state summarizes only when a plan reads them.

A history built with ``counting=False`` and counted from a boundary (``History.count_from``) gives the same
differences of prefix sums as one counted message by message; an entry before the boundary is worked out when
read; plans search from the current boundary, so they never read one; and a resumed session goes on exactly as
the session it resumes.
"""

from __future__ import annotations

import random
from bisect import bisect_left, bisect_right
from typing import Any

import pytest

from amplifier_module_context_summarize import create_manager
from amplifier_module_context_summarize.benchmark.coding import CodingSession
from amplifier_module_context_summarize.benchmark.synth import SMALL
from amplifier_module_context_summarize.core.history import History
from amplifier_module_context_summarize.core.plan import Limits, choose_boundary
from amplifier_module_context_summarize.core.tokens import TokenCounter
from amplifier_module_context_summarize.stores import MemoryStore
from amplifier_module_context_summarize.testing import replay

COUNTER = TokenCounter()
BUDGET = 20_000
CONFIG = {"max_tokens": BUDGET, "compaction_strategy": "extractive", "background_compaction": False}
"""In band: two sessions compared request by request need their offline summaries to land alike (written after the
hooks are asked, in the background by default, where one lands when a worker thread ends)."""


def messages(count: int = 600) -> list[dict[str, Any]]:
    history = CodingSession(SMALL, seed=5).history(count)
    history.insert(3, {"role": "system", "content": "Mind the tests.", "metadata": {"source": "hook"}})
    history.insert(0, {"role": "system", "content": "You are a coding agent."})
    return history


def built(items: list[dict[str, Any]], counting: bool) -> History:
    history = History(COUNTER, "fp", counting=counting)
    for message in items:
        history.append(message)
    return history


def test_counting_from_a_boundary_gives_the_same_differences_and_works_out_the_rest_when_read() -> None:
    items = messages()
    eager = built(items, counting=True)
    for boundary in (0, 1, 57, len(eager.groups) - 2, len(eager.groups) - 1):
        lazy = built(items, counting=False)
        lazy.count_from(boundary)

        assert lazy.system_tokens == eager.system_tokens and lazy.hook_system_tokens == eager.hook_system_tokens
        n = len(eager.groups)
        assert [lazy.prefix[i] - lazy.prefix[boundary] for i in range(boundary, n + 1)] == [
            eager.prefix[i] - eager.prefix[boundary] for i in range(boundary, n + 1)
        ]
        assert lazy.prefix.waiting == boundary  # nothing before the boundary was counted
        assert lazy.tokens == eager.tokens  # reads prefix[0]: works out the entries before the boundary
        assert lazy.prefix.waiting == 0
        assert [p - lazy.prefix[0] for p in lazy.prefix] == list(eager.prefix)


def test_waiting_entries_worked_out_a_few_groups_at_a_time_read_as_one_fill_gives_them() -> None:
    """A resumed stand-in's rewrite counts the groups before the boundary in slices (``count_waiting``), the loop let
    run between, rather than all at its first read: each step leaves the entries worked out exact, a read below them
    still fills the rest, and the steps end with nothing waiting."""
    items = messages()
    eager = built(items, counting=True)
    boundary = len(eager.groups) - 3
    stepped = built(items, counting=False)
    stepped.count_from(boundary)
    steps = 0
    while stepped.count_waiting(7):
        steps += 1
        low = stepped.prefix.waiting
        assert 0 < low < boundary and low == boundary - 7 * steps
        assert [stepped.prefix[i] - stepped.prefix[boundary] for i in range(low, boundary + 1)] == [
            eager.prefix[i] - eager.prefix[boundary] for i in range(low, boundary + 1)
        ]
    assert stepped.prefix.waiting == 0 and steps == -(-boundary // 7) - 1
    assert [p - stepped.prefix[0] for p in stepped.prefix] == list(eager.prefix)
    assert not stepped.count_waiting(7)

    halfway = built(items, counting=False)
    halfway.count_from(boundary)
    halfway.count_waiting(10)
    assert halfway.tokens == eager.tokens  # a read below the stepped entries fills the rest at once
    assert [p - halfway.prefix[0] for p in halfway.prefix] == list(eager.prefix)


def test_appends_after_counting_from_a_boundary_count_as_they_would_have() -> None:
    items = messages()
    head, rest = items[:400], items[400:]
    eager = built(items, counting=True)
    lazy = built(head, counting=False)
    lazy.count_from(len(lazy.groups) // 2)
    for message in rest:
        lazy.append(message)

    assert lazy.prefix.waiting > 0
    assert [p - lazy.prefix[0] for p in lazy.prefix] == list(eager.prefix)


def test_plans_search_from_the_current_boundary_and_cut_where_a_search_of_all_of_it_would() -> None:
    def unrestricted(prefix: list[int], current: int, last: int, fixed: int, limits: Limits) -> int:
        total = prefix[-1]
        to_target = bisect_left(prefix, total - (limits.target - fixed))
        keep_recent = bisect_right(prefix, total - limits.preserve_recent) - 1
        boundary = max(current, min(to_target, keep_recent))
        if total - prefix[boundary] > limits.budget - fixed:
            boundary = max(boundary, bisect_left(prefix, total - (limits.budget - fixed)))
        return max(current, min(boundary, last))

    rng = random.Random(3)
    for _ in range(2_000):
        sizes = [rng.choice((0, 1, 5, 40, 400)) for _ in range(rng.randint(1, 40))]
        prefix = [0]
        for size in sizes:
            prefix.append(prefix[-1] + size)
        current = rng.randint(0, len(sizes) - 1)
        last = rng.randint(current, len(sizes))
        limits = Limits(rng.randint(1, 3_000), 0, rng.randint(1, 2_000), rng.randint(0, 800))
        fixed = rng.randint(0, 300)
        assert choose_boundary(prefix, current, last, fixed, limits) == unrestricted(
            prefix, current, last, fixed, limits
        )


@pytest.mark.slow
async def test_a_resumed_session_goes_on_exactly_as_the_session_it_resumes() -> None:
    items = CodingSession(SMALL, seed=9).history(2_200)
    store = MemoryStore()
    live = create_manager(CONFIG, store=store)
    await replay(live, items[:1_400], budget=BUDGET)
    resumed = create_manager(CONFIG, store=store)
    await resumed.set_messages(items[:1_400])
    assert resumed.history.prefix.waiting > 0  # the summarized groups are not counted

    compactions = resumed.stats["compactions"]
    for message in items[1_400:]:
        for manager in (live, resumed):
            await manager.add_message(message)
        if message.get("role") == "user":
            views = [await m.get_messages_for_request(token_budget=BUDGET) for m in (live, resumed)]
            assert views[0] == views[1]
            assert await live.get_token_count() == await resumed.get_token_count()
    assert resumed.stats["compactions"] > compactions
    assert resumed.history.prefix.waiting > 0  # planning never read the groups before the boundary
