"""A resume serves the working set stored beside the segments, and falls back to rendering it when it cannot.

The summary's working set is a function of the summarized groups, its room and the counter; a session stores the
text it rendered (``compaction/run/install.py``), so a resumed session shows the same view without extracting the
facts of every summarized group. A store without that row (written before, evicted, faulty, or a row that does
not fit its room) resumes the same view by rendering afresh.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from amplifier_module_context_summarize import create_manager
from amplifier_module_context_summarize.benchmark.coding import CodingSession
from amplifier_module_context_summarize.benchmark.synth import SMALL
from amplifier_module_context_summarize.stores import CachedSummary, MemoryStore, SqliteStore
from amplifier_module_context_summarize.stores.records import WORKING_SET_MARK
from amplifier_module_context_summarize.testing import RedisServer, replay
from amplifier_module_context_summarize.working_set.index import index_of

BUDGET = 20_000
CONFIG = {"max_tokens": BUDGET, "compaction_strategy": "extractive", "background_compaction": False}
"""In band: the offline summaries are written after the hooks are asked, in the background by default, where when
one lands depends on a worker thread; two sessions compared request by request need them to land alike."""


def session(messages: int = 1_500) -> list[dict[str, Any]]:
    return CodingSession(SMALL, seed=11).history(messages)


async def live(store: Any, messages: list[dict[str, Any]]) -> tuple[Any, list[dict[str, Any]]]:
    manager = create_manager(CONFIG, store=store)
    await replay(manager, messages, budget=BUDGET)
    assert manager.state.segments
    return manager, await manager.get_messages_for_request(token_budget=BUDGET)


async def resumed(store: Any, messages: list[dict[str, Any]], fold: bool = False) -> tuple[Any, list[dict[str, Any]]]:
    """A new manager on ``store``; unless ``fold``, without the working set's folding between requests, so what
    the first request extracted is what it rendered."""
    manager = create_manager(CONFIG, store=store)
    await manager.set_messages(messages)
    if not fold:
        manager.compactor.stop_folding()
    return manager, await manager.get_messages_for_request(token_budget=BUDGET)


def working_set_rows(store: MemoryStore) -> list[CachedSummary]:
    return [entry for key, entry in store._entries.items() if key[0].startswith(WORKING_SET_MARK)]


async def test_a_resume_serves_the_stored_working_set_and_extracts_nothing() -> None:
    store, messages = MemoryStore(), session()
    first, view = await live(store, messages)
    assert working_set_rows(store)

    second, again = await resumed(store, messages)

    assert again == view
    assert index_of(second.history).extracted == 0  # no summarized group was extracted


@pytest.mark.slow
async def test_after_a_served_resume_the_session_goes_on_as_it_would_have() -> None:
    """The next compaction folds the working set from the first group: the views of a resume that rendered it."""
    messages = session(2_400)
    store = MemoryStore()
    await live(store, messages[:1_500])
    before = MemoryStore()  # the same store as written before working sets were kept
    for entry in store._entries.values():
        if not entry.start.startswith(WORKING_SET_MARK):
            await before.put(entry)

    views = []
    for source in (store, before):
        manager, view = await resumed(source, messages[:1_500])
        views.append([view])
        compactions = manager.stats["compactions"]
        for message in messages[1_500:]:
            await manager.add_message(message)
            if message.get("role") == "user":
                views[-1].append(await manager.get_messages_for_request(token_budget=BUDGET))
        assert manager.stats["compactions"] > compactions

    assert views[0] == views[1]


@pytest.mark.slow
async def test_the_store_keeps_one_working_set_per_session_however_long_it_runs() -> None:
    store, messages = MemoryStore(), session(2_400)
    manager, _ = await live(store, messages)
    rows = working_set_rows(store)

    assert manager.stats["compactions"] >= 5
    assert len(rows) == 1
    head = max(rows, key=lambda row: row.groups).text.partition("\n")[0]
    assert head.split(" ")[0] == manager.history.chain_at(manager.state.summarized_end)


@pytest.mark.slow
async def test_a_row_rewritten_for_another_end_is_not_served() -> None:
    store, messages = MemoryStore(), session()
    _, view = await live(store, messages)
    for row in working_set_rows(store):  # as a fork of the same line would leave it, one group further
        await store.put(replace(row, groups=row.groups + 1))

    second, again = await resumed(store, messages)

    assert again == view
    assert index_of(second.history).extracted > 0


@pytest.mark.slow
async def test_a_store_written_before_resumes_the_same_view_by_rendering() -> None:
    store, messages = MemoryStore(), session()
    _, view = await live(store, messages)
    for row in working_set_rows(store):
        del store._entries[(row.start, row.end)]
        store._by_start.pop(row.start, None)

    second, again = await resumed(store, messages)

    assert again == view
    assert index_of(second.history).extracted > 0


@pytest.mark.slow
async def test_a_row_that_does_not_fit_its_room_or_names_another_version_is_not_served() -> None:
    store, messages = MemoryStore(), session()
    _, view = await live(store, messages)
    for row in working_set_rows(store):
        head, _, text = row.text.partition("\n")
        await store.put(replace(row, end=f"v0:{row.end.partition(':')[2]}", text=f"{head}\nstale render"))
        room = int(head.split(" ")[1])  # the row names the end and room it renders: these, but too big for its room
        await store.put(replace(row, text=f"{head}\n" + "word " * (3 * room), tokens=3 * room))

    second, again = await resumed(store, messages)

    assert again == view
    assert index_of(second.history).extracted > 0


class FaultyReads(MemoryStore):
    """Every read of a working-set row fails, as a store losing its connection would."""

    async def starting_at(self, start: str) -> list[CachedSummary]:
        if start.startswith(WORKING_SET_MARK):
            raise ConnectionError("gone")
        return await super().starting_at(start)


@pytest.mark.slow
async def test_a_store_fault_reading_the_working_set_resumes_by_rendering() -> None:
    messages = session()
    store = FaultyReads()
    _, view = await live(store, messages)

    _, again = await resumed(store, messages)

    assert again == view


@pytest.mark.slow
async def test_a_sqlite_store_keeps_the_working_set_for_a_new_process(tmp_path: Path) -> None:
    messages = session()
    path = tmp_path / "summaries.db"
    async with SqliteStore(path) as store:
        _, view = await live(store, messages)
    async with SqliteStore(path) as store:
        second, again = await resumed(store, messages)

    assert again == view
    assert index_of(second.history).extracted == 0


@pytest.mark.slow
async def test_a_redis_store_keeps_the_working_set_for_another_host(redis_server: RedisServer) -> None:
    """Only the shared store holds it: each manager has its own empty local store (another host, another process)."""
    messages = session()
    config = {**CONFIG, "storage_url": redis_server.url}
    first = create_manager(config)
    await replay(first, messages, budget=BUDGET)
    view = await first.get_messages_for_request(token_budget=BUDGET)
    second = create_manager(config)
    await second.set_messages(messages)
    second.compactor.stop_folding()

    assert await second.get_messages_for_request(token_budget=BUDGET) == view
    assert index_of(second.history).extracted == 0
    for manager in (first, second):
        await manager.store.close()


@pytest.mark.slow
async def test_after_a_served_resume_the_working_set_is_folded_between_requests() -> None:
    """While the agent awaits its model, the summarized groups are extracted and folded in slices; the session then
    goes on with the views of a resume that rendered the working set, its next compaction folding only new groups."""
    messages = session(2_400)
    store = MemoryStore()
    await live(store, messages[:1_500])
    before = MemoryStore()
    for entry in store._entries.values():
        if not entry.start.startswith(WORKING_SET_MARK):
            await before.put(entry)

    served, _ = await resumed(store, messages[:1_500], fold=True)
    index, end = index_of(served.history), served.state.summarized_end
    for _ in range(100_000):  # the agent awaiting its model: the loop runs the fold's slices, no time passes
        if index.folded >= end:
            break
        await asyncio.sleep(0)
    assert index.folded == end and index.extracted >= end

    rendered, _ = await resumed(before, messages[:1_500])
    views: list[list[Any]] = [[], []]
    for message in messages[1_500:]:
        for manager, seen in zip((served, rendered), views, strict=True):
            await manager.add_message(message)
            if message.get("role") == "user":
                seen.append(await manager.get_messages_for_request(token_budget=BUDGET))
    assert views[0] == views[1] and served.stats["compactions"] >= 1


@pytest.mark.slow
async def test_replacing_the_history_stops_folding_the_one_before() -> None:
    store, messages = MemoryStore(), session()
    await live(store, messages)
    manager, _ = await resumed(store, messages, fold=True)
    index, end = index_of(manager.history), manager.state.summarized_end

    folded = index.folded
    await manager.set_messages(messages[:10])
    for _ in range(1_000):  # loop turns enough for many of the fold's slices, had it not been stopped
        await asyncio.sleep(0)

    assert index.folded == folded < end  # nothing more was folded for the history that was replaced
