"""One behavioural suite for every summary store, plus the entry check they all share and the factory."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from amplifier_module_context_summarize.stores import (
    CachedSummary,
    MemoryStore,
    SqliteStore,
    SummaryStore,
    is_valid_entry,
    open_store,
)
from amplifier_module_context_summarize.stores.base import MAX_CHARS_PER_TOKEN, MAX_TEXT_CHARS

Store = MemoryStore | SqliteStore


class Ticks:
    """A wall clock that moves 10 s per reading: every hit refreshes LRU, and no two stamps tie."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        self.now += 10.0
        return self.now


def entry(i: int, *, start: str | None = None, text: str | None = None, tier: int = 0) -> CachedSummary:
    return CachedSummary(start or f"s{i}", f"e{i}", text if text is not None else f"summary {i}", 3 + i % 7, 2, tier)


@pytest.fixture(params=["memory", "sqlite"])
def kind(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "store" / "summaries.sqlite"


@pytest.fixture
async def make(kind: str, path: Path) -> AsyncIterator[Callable[..., Store]]:
    made: list[Store] = []

    def factory(max_entries: int = 20_000) -> Store:
        store: Store
        if kind == "memory":
            store = MemoryStore(max_entries)
        else:
            store = SqliteStore(path, max_entries=max_entries, clock=Ticks())
        made.append(store)
        return store

    yield factory
    for store in made:
        await store.close()


def plant(store: Store, path: Path, bad: CachedSummary) -> None:
    """Put ``bad`` where the store keeps its entries, past its own checks (as damage or another writer would)."""
    if isinstance(store, MemoryStore):
        store._entries[(bad.start, bad.end)] = bad
        store._by_start.setdefault(bad.start, set()).add(bad.end)
        return
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute(
            "INSERT INTO summaries VALUES (?, ?, ?, ?, ?, 0, 0, ?, ?)",
            (bad.start, bad.end, bad.tokens, bad.groups, bad.tier, 100, bad.text),
        )


BAD_ENTRIES = {
    "tokens-text": CachedSummary("bad", "e-tokens-text", "summary", "many", 2),  # type: ignore[arg-type]
    "tokens-real": CachedSummary("bad", "e-tokens-real", "summary", 2.5, 2),  # type: ignore[arg-type]
    "tokens-negative": CachedSummary("bad", "e-tokens-negative", "summary", -1, 2),
    "groups-zero": CachedSummary("bad", "e-groups-zero", "summary", 3, 0),
    "tier-negative": CachedSummary("bad", "e-tier-negative", "summary", 3, 2, -1),
    "huge-text": CachedSummary("bad", "e-huge-text", "x" * 2_000_000, 10, 2),
    "tokens-beyond-text": CachedSummary("bad", "e-tokens-beyond-text", "hi", 1_000_000, 2),
}


# -- the SummaryStore interface -----------------------------------------------------------------------


async def test_stores_satisfy_the_protocol(make: Callable[..., Store]) -> None:
    store: SummaryStore = make()  # a type checker holds this line to the Protocol
    assert callable(store.get) and callable(store.put) and callable(store.starting_at) and callable(store.close)


async def test_round_trip(make: Callable[..., Store]) -> None:
    store = make()
    assert await store.count() == 0
    assert await store.get("s1", "e1") is None
    assert await store.starting_at("s1") == []

    a, b, c = entry(1, start="root"), entry(2, start="root", tier=1), entry(3, text="héllo ✓")
    for e in (a, b, c):
        await store.put(e)
    assert await store.get("root", "e1") == a
    assert await store.get("root", "e2") == b
    assert await store.get("s3", "e3") == c
    assert await store.get("root", "e3") is None
    assert await store.starting_at("root") == [a, b]
    assert await store.starting_at("s3") == [c]
    assert await store.count() == 3

    replaced = CachedSummary("root", "e1", "better", 5, 2, 0)
    await store.put(replaced)
    assert await store.get("root", "e1") == replaced
    assert await store.starting_at("root") == [replaced, b]
    assert await store.count() == 3


async def test_lru_eviction_by_count_spares_the_recently_used(make: Callable[..., Store]) -> None:
    store = make(max_entries=10)
    for i in range(10):
        await store.put(entry(i))
    assert await store.count() == 10
    assert await store.get("s0", "e0") is not None  # now the most recently used
    await store.put(entry(10))
    assert await store.count() <= 10
    assert await store.get("s1", "e1") is None  # the least recently used goes first
    assert await store.get("s0", "e0") is not None
    assert await store.get("s10", "e10") is not None
    assert all([await store.get(f"s{i}", f"e{i}") is not None for i in range(3, 10)])
    assert await store.starting_at("s1") == []


async def test_eviction_slack_differs_by_store(kind: str, make: Callable[..., Store]) -> None:
    """Memory drops exactly the overflow; SQLite trims to 90% so it evicts once per many puts, not per put."""
    store = make(max_entries=10)
    for i in range(11):
        await store.put(entry(i))
    assert await store.count() == (10 if kind == "memory" else 9)


async def test_close_turns_every_call_into_a_miss(make: Callable[..., Store]) -> None:
    store = make()
    await store.put(entry(1))
    await store.close()
    await store.close()  # idempotent
    await store.put(entry(2))
    assert await store.get("s1", "e1") is None
    assert await store.get("s2", "e2") is None
    assert await store.starting_at("s1") == []
    assert await store.count() == 0


@pytest.mark.parametrize("name", BAD_ENTRIES)
async def test_bad_rows_are_misses(make: Callable[..., Store], path: Path, name: str) -> None:
    store = make()
    good = CachedSummary("bad", "e-good", "fine", 1, 1)
    await store.put(good)  # also opens (creates) the SQLite file
    bad = BAD_ENTRIES[name]
    plant(store, path, bad)
    assert await store.get(bad.start, bad.end) is None
    assert await store.starting_at("bad") == [good]
    assert await store.get("bad", "e-good") == good

    replacement = CachedSummary(bad.start, bad.end, "mended", 2, 1)
    await store.put(replacement)  # the next put under the key replaces the bad row
    assert await store.get(bad.start, bad.end) == replacement


@pytest.mark.parametrize("name", BAD_ENTRIES)
async def test_malformed_puts_are_refused(make: Callable[..., Store], name: str) -> None:
    store = make()
    bad = BAD_ENTRIES[name]
    await store.put(bad)
    assert await store.count() == 0
    assert await store.starting_at(bad.start) == []


# -- the shared entry check -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields, ok",
    [
        (("s", "e", "summary", 3, 1, 0), True),
        (("s", "e", "", 0, 1, 0), True),
        (("s", "e", "x" * MAX_CHARS_PER_TOKEN, 1, 1, 0), True),
        (("s", "e", "x" * (MAX_CHARS_PER_TOKEN + 1), 1, 1, 0), False),
        (("s", "e", "✓" * 10, 41, 1, 0), True),  # up to one token per UTF-8 byte (plus one)
        (("s", "e", "✓" * 10, 42, 1, 0), False),
        (("s", "e", "x" * (MAX_TEXT_CHARS + 1), MAX_TEXT_CHARS, 1, 0), False),
        (("s", "e", "summary", True, 1, 0), False),  # bool is an int, but not a token count
        (("s", "e", "summary", 3, 1, 2), True),
        (("s", "e", "summary", 3, 1, -1), False),
        (("s", "e", "summary", 3, 0, 0), False),
        (("s", "e", "summary", 3, "1", 0), False),
        (("s", "e", b"summary", 3, 1, 0), False),
        ((b"s", "e", "summary", 3, 1, 0), False),
        (("s", None, "summary", 3, 1, 0), False),
    ],
)
def test_is_valid_entry(fields: tuple[Any, ...], ok: bool) -> None:
    assert is_valid_entry(CachedSummary(*fields)) is ok


def test_is_valid_entry_wants_a_cached_summary() -> None:
    assert not is_valid_entry(("s", "e", "summary", 3, 1, 0))
    assert not is_valid_entry(None)


# -- the factory ------------------------------------------------------------------------------------


@pytest.mark.parametrize("storage_path", [None, ""])
async def test_open_store_without_a_path_is_memory(storage_path: str | None) -> None:
    store = open_store(storage_path, 7)
    assert isinstance(store, MemoryStore) and store.max_entries == 7
    await store.close()


async def test_open_store_with_a_path_is_sqlite_and_expands_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    store = open_store("~/deep/summaries.sqlite", 7)
    assert isinstance(store, SqliteStore)
    assert store.path == tmp_path / "deep" / "summaries.sqlite" and store.max_entries == 7
    assert not store.path.parent.exists()  # nothing touches the disk until first use, off the event loop
    await store.put(entry(1))
    assert store.path.exists()
    assert await store.get("s1", "e1") == entry(1)
    await store.close()
