"""SqliteStore's hardening: the file on disk, other processes, damage, and faults that must read as misses."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from amplifier_module_context_summarize.stores import CachedSummary, SqliteStore
from amplifier_module_context_summarize.stores.sqlite import APPLICATION_ID, SCHEMA_VERSION

REPO_ROOT = Path(__file__).resolve().parents[1]
LOGGER = "amplifier_module_context_summarize.stores.sqlite"

# Writes n entries tagged argv[2] into argv[1], printing each index once its put has returned.
WRITER = r"""
import asyncio, logging, sys, time
logging.basicConfig(level=logging.WARNING)
from amplifier_module_context_summarize.stores import CachedSummary, SqliteStore
path, tag, n, t0 = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])

async def main():
    time.sleep(max(0.0, t0 - time.time()))
    async with SqliteStore(path) as store:
        for i in range(n):
            await store.put(CachedSummary(f"{tag}-s{i}", f"{tag}-e{i}", f"{tag} summary {i} " + "x" * 2000, 600, 1))
            print(i, flush=True)

asyncio.run(main())
"""


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def entry(i: int, *, start: str | None = None, text: str | None = None, tier: int = 0) -> CachedSummary:
    return CachedSummary(start or f"s{i}", f"e{i}", text if text is not None else f"summary {i}", 3 + i % 7, 2, tier)


def writer(path: Path, tag: str, n: int, t0: float) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), tag, str(n), str(t0)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def raw(path: Path) -> contextlib.closing[sqlite3.Connection]:
    return contextlib.closing(sqlite3.connect(path, isolation_level=None))


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def siblings(path: Path, kind: str) -> list[Path]:
    """Moved-aside databases, without the -wal/-shm files that travel with them."""
    return sorted(p for p in path.parent.glob(f"{path.name}.{kind}-*") if not p.name.endswith(("-wal", "-shm")))


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "cache" / "summaries.sqlite"


# -- persistence and sharing -------------------------------------------------------------------------


async def test_persists_across_instances(path: Path) -> None:
    async with SqliteStore(path) as store:
        for i in range(5):
            await store.put(entry(i))
    async with SqliteStore(path) as store:
        assert await store.count() == 5
        assert [await store.get(f"s{i}", f"e{i}") for i in range(5)] == [entry(i) for i in range(5)]
    with raw(path) as conn:
        assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        plan = " ".join(str(r) for r in conn.execute("EXPLAIN QUERY PLAN SELECT * FROM summaries WHERE start = 'x'"))
        assert "USING INDEX" in plan


async def test_concurrent_tasks_share_one_instance(path: Path) -> None:
    """The calls run on several executor threads at once; the store's lock keeps the connection sane."""
    async with SqliteStore(path) as store:

        async def work(t: int) -> None:
            for i in range(50):
                e = entry(i, start=f"t{t}")
                await store.put(e)
                assert await store.get(e.start, e.end) == e

        await asyncio.gather(*(work(t) for t in range(4)))
        assert await store.count() == 200
        assert len(await store.starting_at("t3")) == 50


async def test_waiting_for_another_writer_does_not_block_the_loop(path: Path) -> None:
    async with SqliteStore(path) as store:
        await store.put(entry(1))
        with raw(path) as other:
            other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
            put = asyncio.create_task(store.put(entry(2)))
            with pytest.raises(TimeoutError):  # inline, the loop itself would sit in SQLite's busy wait
                await asyncio.wait_for(asyncio.shield(put), 0.05)
            other.execute("COMMIT")
        await put
        assert await store.get("s2", "e2") == entry(2)


async def test_close_works_after_the_default_executor_is_gone(path: Path) -> None:
    store = SqliteStore(path)
    await store.put(entry(1))
    await asyncio.get_running_loop().shutdown_default_executor()
    await store.close()  # runs inline instead of raising
    assert store._conn is None


# -- bounds ----------------------------------------------------------------------------------------


async def test_lru_eviction_by_bytes(path: Path) -> None:
    def sized(i: int, n: int = 100) -> CachedSummary:
        return CachedSummary(f"s{i:02d}", f"e{i:02d}", "x" * n, n // 10, 1)

    size = 100 + 3 + 3  # text + keys
    clock = Clock()
    async with SqliteStore(path, max_bytes=10 * size, clock=clock) as store:
        for i in range(10):
            clock.now += 10
            await store.put(sized(i))
        assert await store.total_bytes() == 10 * size
        clock.now += 10
        await store.get("s00", "e00")
        clock.now += 10
        await store.put(sized(10))
        # 11 entries > the bound: trimmed to 90% of it, least recently used first.
        assert await store.total_bytes() == 9 * size
        assert await store.get("s00", "e00") is not None
        assert await store.get("s01", "e01") is None and await store.get("s02", "e02") is None

        await store.put(sized(11, 20 * size))  # larger than the whole bound: it cannot stay
        assert await store.total_bytes() <= 10 * size
        assert await store.get("s11", "e11") is None


async def test_recent_touch_is_not_rewritten(path: Path) -> None:
    clock = Clock()
    async with SqliteStore(path, clock=clock) as store:
        await store.put(entry(1))
        with raw(path) as conn:
            before = conn.execute("SELECT last_used FROM summaries").fetchone()[0]
            clock.now += store.touch_interval_s / 2
            await store.get("s1", "e1")
            assert conn.execute("SELECT last_used FROM summaries").fetchone()[0] == before
            clock.now += store.touch_interval_s
            await store.get("s1", "e1")
            assert conn.execute("SELECT last_used FROM summaries").fetchone()[0] == clock.now


async def test_rejects_nonsense_bounds(path: Path) -> None:
    with pytest.raises(ValueError):
        SqliteStore(path, max_entries=0)
    with pytest.raises(ValueError):
        SqliteStore(path, max_bytes=0)


# -- damaged rows, written straight into the file ----------------------------------------------------


def insert(path: Path, values: str) -> None:
    """One row as SQL literals: (start, end, tokens, groups, tier, created, last_used, size_bytes, text)."""
    with raw(path) as conn:
        conn.execute(f"INSERT INTO summaries VALUES ({values})")


async def test_rows_sqlite_cannot_even_type_are_misses(path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async with SqliteStore(path) as store:
        good = CachedSummary("k", "good", "fine", 1, 1)
        await store.put(good)
        insert(path, "'k', 'blob-text', 3, 1, 0, 0, 0, 4, x'00ff'")
        insert(path, "'k', 'not-utf8', 3, 1, 0, 0, 0, 4, CAST(x'ff' AS TEXT)")
        insert(path, "'k', CAST(x'fe' AS TEXT), 3, 1, 0, 0, 0, 4, 'bad end key'")
        insert(path, "'k', 'blob-tokens', x'03', 1, 0, 0, 0, 4, 'text'")
        with caplog.at_level(logging.WARNING, logger=LOGGER):
            for end in ("blob-text", "not-utf8", "blob-tokens"):
                assert await store.get("k", end) is None
            assert await store.starting_at("k") == [good]
            assert await store.starting_at("k") == [good]
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 1 and "malformed" in warnings[0]


async def test_a_bad_lru_stamp_still_serves_the_hit_and_is_mended(path: Path) -> None:
    async with SqliteStore(path) as store:
        await store.put(entry(0))  # creates the file
        insert(path, "'s1', 'e1', 4, 2, 0, 0, 'yesterday', 9, 'summary 1'")
        assert await store.get("s1", "e1") == entry(1)
        with raw(path) as conn:
            assert conn.execute("SELECT typeof(last_used) FROM summaries WHERE start = 's1'").fetchone()[0] == "real"


async def test_a_bad_size_does_not_break_eviction(path: Path) -> None:
    async with SqliteStore(path, max_entries=5) as store:
        await store.put(entry(0))
        insert(path, "'s1', 'e1', 4, 2, 0, 0, 0, 'lots', 'summary 1'")
        for i in range(2, 12):
            await store.put(entry(i))
        assert await store.count() <= 5
        assert await store.get("s11", "e11") == entry(11)
        assert await store.total_bytes() >= 0


async def test_a_missing_totals_row_degrades(path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async with SqliteStore(path) as store:
        await store.put(entry(0))
        with raw(path) as conn:
            conn.execute("DELETE FROM totals")
        with caplog.at_level(logging.WARNING, logger=LOGGER):
            await store.put(entry(1))  # the eviction check can't read the totals: the put rolls back
            assert await store.get("s0", "e0") == entry(0)
            assert await store.count() == 0
    assert any("put failed" in r.getMessage() for r in caplog.records)


# -- files on disk ---------------------------------------------------------------------------------


async def test_files_are_owner_only(path: Path) -> None:
    old = os.umask(0o022)
    try:
        async with SqliteStore(path) as store:
            await store.put(entry(1))
            assert os.umask(0o022) == 0o022  # restored after creation
            assert mode(path.parent) == 0o700
            assert mode(path) == 0o600
            for suffix in ("-wal", "-shm"):
                assert mode(Path(f"{path}{suffix}")) == 0o600
    finally:
        os.umask(old)


async def test_corrupt_file_is_moved_aside(path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path.parent.mkdir()
    garbage = b"this is not a database\x00\xff" * 400
    path.write_bytes(garbage)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        async with SqliteStore(path) as store:
            await store.put(entry(1))
            assert await store.get("s1", "e1") == entry(1)
    [aside] = siblings(path, "corrupt")
    assert aside.read_bytes() == garbage
    assert any("corrupt" in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records)


async def test_damaged_pages_are_moved_aside(path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async with SqliteStore(path) as store:
        for i in range(200):
            await store.put(entry(i, text="z" * 500))
    data = bytearray(path.read_bytes())
    page = 4096
    data[2 * page : 2 * page + 64] = b"\xa5" * 64  # smash a b-tree page header, keep the file header
    path.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        async with SqliteStore(path) as store:
            await store.put(entry(1))
            assert await store.count() == 1
    assert siblings(path, "corrupt")
    assert any("corrupt" in r.getMessage() for r in caplog.records)


def _other_table(path: Path) -> None:
    with raw(path) as conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
        conn.execute("INSERT INTO notes VALUES ('precious')")


async def _ours(path: Path) -> None:
    async with SqliteStore(path) as store:
        await store.count()  # opens, so creates, the file


async def _wrong_version(path: Path) -> None:
    await _ours(path)
    with raw(path) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")


async def _other_app(path: Path) -> None:
    await _ours(path)
    with raw(path) as conn:
        conn.execute("PRAGMA application_id = 1234")


@pytest.mark.parametrize("make", ["other_table", "wrong_version", "other_app"])
async def test_foreign_database_is_moved_aside(path: Path, caplog: pytest.LogCaptureFixture, make: str) -> None:
    path.parent.mkdir()
    if make == "other_table":
        _other_table(path)
    else:
        await {"wrong_version": _wrong_version, "other_app": _other_app}[make](path)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        async with SqliteStore(path) as store:
            assert await store.count() == 0
            await store.put(entry(1))
            assert await store.get("s1", "e1") == entry(1)
    [aside] = siblings(path, "foreign")
    with raw(aside) as conn:  # kept intact, not deleted
        assert conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"
        if make == "other_table":
            assert conn.execute("SELECT body FROM notes").fetchall() == [("precious",)]
    assert any("foreign" in r.getMessage() for r in caplog.records)


# -- several processes -----------------------------------------------------------------------------


async def test_two_processes_write_concurrently(path: Path) -> None:
    t0 = time.time() + 0.5  # both open the not-yet-existing file at the same moment
    procs = [writer(path, tag, 200, t0) for tag in ("a", "b")]
    for p in procs:
        out, err = await asyncio.to_thread(p.communicate, timeout=60)
        assert p.returncode == 0, err
        assert out.split() == [str(i) for i in range(200)]
        assert "WARNING" not in err, err
    async with SqliteStore(path) as store:
        assert await store.count() == 400
        for tag in ("a", "b"):
            for i in range(200):
                got = await store.get(f"{tag}-s{i}", f"{tag}-e{i}")
                assert got is not None and got.text.startswith(f"{tag} summary {i} ")


async def test_writer_killed_mid_loop_leaves_a_readable_store(path: Path, caplog: pytest.LogCaptureFixture) -> None:
    proc = writer(path, "k", 1_000_000, 0)
    committed = -1
    assert proc.stdout is not None
    try:
        for line in proc.stdout:
            committed = int(line)
            if committed >= 150:
                break
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        proc.stdout.close()
        assert proc.stderr is not None
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    assert committed >= 150

    with caplog.at_level(logging.WARNING, logger=LOGGER):
        async with SqliteStore(path) as store:
            assert await store.count() >= committed + 1
            for i in range(committed + 1):
                assert await store.get(f"k-s{i}", f"k-e{i}") is not None
            await store.put(entry(1))
            assert await store.get("s1", "e1") == entry(1)
    assert not caplog.records
    assert not siblings(path, "corrupt") and not siblings(path, "foreign")
    with raw(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


# -- degrading instead of raising ------------------------------------------------------------------


async def test_uncreatable_location_degrades(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        async with SqliteStore(blocker / "cache.sqlite") as store:
            await store.put(entry(1))
            assert await store.get("s1", "e1") is None
            assert await store.starting_at("s1") == []
            assert await store.count() == 0
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 1  # open is not retried


async def test_read_only_database_degrades(path: Path, caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    async with SqliteStore(path, clock=clock) as store:
        await store.put(entry(1))
        assert store._conn is not None
        store._conn.execute("PRAGMA query_only = ON")  # every write now fails as on a read-only disk
        with caplog.at_level(logging.WARNING, logger=LOGGER):
            for i in range(2, 5):
                await store.put(entry(i))
            for _ in range(2):
                clock.now += 10  # due for an LRU touch, which fails
                assert await store.get("s1", "e1") == entry(1)  # the failed touch doesn't cost the hit
            assert await store.get("s2", "e2") is None
        assert await store.count() == 1
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(messages) == 2  # once for put, once for touch, however often they fail
    assert any("put failed" in m for m in messages) and any("touch failed" in m for m in messages)


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions")
async def test_unwritable_file_degrades(path: Path) -> None:
    async with SqliteStore(path) as store:
        await store.put(entry(1))
    path.chmod(0o400)
    path.parent.chmod(0o500)
    try:
        async with SqliteStore(path) as store:
            await store.put(entry(2))
            assert await store.get("s2", "e2") is None
    finally:
        path.parent.chmod(0o700)
        path.chmod(0o600)


async def test_closed_store_keeps_what_was_put_before(path: Path) -> None:
    store = SqliteStore(path)
    await store.put(entry(1))
    await store.close()
    await store.put(entry(2))
    assert await store.get("s1", "e1") is None
    async with SqliteStore(path) as again:
        assert await again.get("s1", "e1") == entry(1)
        assert await again.get("s2", "e2") is None


async def test_closing_before_first_use_never_opens(path: Path) -> None:
    store = SqliteStore(path)
    await store.close()
    await store.put(entry(1))
    assert not path.exists()


# -- another process holding the write lock at open ---------------------------------------------------------------


def short_busy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lock waits of a fraction of a second, so a test that waits for one (as the code before this did for 10 s)
    fails fast instead of stalling."""
    from amplifier_module_context_summarize.stores import sqlite_file

    monkeypatch.setattr(sqlite_file, "BUSY_TIMEOUT_S", 0.2)
    monkeypatch.setattr(sqlite_file, "OPEN_BUSY_TIMEOUT_S", 0.2)


async def test_a_write_lock_held_at_open_does_not_keep_readers_out(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    short_busy(monkeypatch)
    async with SqliteStore(path) as store:
        for i in range(3):
            await store.put(entry(i))
    with raw(path) as other:
        other.execute("BEGIN IMMEDIATE")  # a suspended sibling, a sqlite3 shell, a backup
        other.execute("UPDATE totals SET entries = entries WHERE id = 0")
        async with SqliteStore(path) as store:
            assert await store.get("s1", "e1") == entry(1), "reading needs no write lock"
            assert await store.starting_at("s2") == [entry(2)]
            await store.put(entry(9))  # a write waits for the lock, fails, and is a miss; reads go on
            assert await store.get("s0", "e0") == entry(0)
        other.execute("ROLLBACK")


async def test_a_failed_open_is_tried_again_after_a_backoff(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    short_busy(monkeypatch)
    path.parent.mkdir(mode=0o700, parents=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    os.close(fd)
    now = [100.0]
    store = SqliteStore(path)
    store.monotonic = lambda: now[0]
    with raw(path) as other:
        other.execute("PRAGMA journal_mode = WAL")
        other.execute("BEGIN IMMEDIATE")  # holds the write lock of a file with no schema yet
        other.execute("CREATE TABLE held (x)")
        await store.put(entry(1))
        assert await store.get("s1", "e1") is None, "the schema cannot be created while the lock is held"
        other.execute("ROLLBACK")
    await store.put(entry(2))
    assert await store.get("s2", "e2") is None, "no new try before the backoff has passed"
    now[0] += 1.0
    await store.put(entry(3))
    assert await store.get("s3", "e3") == entry(3), "the open was tried again once the lock was gone"
    await store.close()


async def test_the_open_backoff_doubles_up_to_its_cap(path: Path) -> None:
    from amplifier_module_context_summarize.stores.sqlite import OPEN_RETRY_MAX_S, OPEN_RETRY_S

    path.parent.mkdir(mode=0o700, parents=True)
    os.symlink(path.parent / "elsewhere", path)  # refused at every open
    now = [0.0]
    store = SqliteStore(path)
    store.monotonic = lambda: now[0]
    tries = []
    real_open = store._open

    def counting_open() -> sqlite3.Connection:
        tries.append(now[0])
        return real_open()

    store._open = counting_open  # type: ignore[method-assign]
    for _ in range(2_000):
        await store.get("s", "e")
        now[0] += 0.5
    gaps = [b - a for a, b in zip(tries, tries[1:], strict=False)]
    assert gaps[:3] == [OPEN_RETRY_S, 2 * OPEN_RETRY_S, 4 * OPEN_RETRY_S]
    assert max(gaps) == OPEN_RETRY_MAX_S and len(tries) < 30


# ------------------------------------------------------------------------------- 10. the SQLite LRU and the clock


class SteppedClock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def summary(i: int, kind: str) -> CachedSummary:
    return CachedSummary(f"{kind}{i}", f"e{i}", f"summary {kind} {i}", 5, 2, 0)


@pytest.mark.parametrize("step_back", [5_000.0, 10.0, 1e9])
async def test_sqlite_lru_survives_the_clock_stepping_back(tmp_path: Path, step_back: float) -> None:
    clock = SteppedClock(1_700_000_000.0)
    async with SqliteStore(tmp_path / "s.sqlite", max_entries=10, clock=clock) as store:
        for i in range(10):
            await store.put(summary(i, "stale"))
        clock.now -= step_back  # NTP correction, or a VM restored from a snapshot
        await store.put(summary(0, "fresh"))
        for i in range(1, 10):
            assert await store.get("fresh0", "e0") is not None  # hits keep it the most recently used
            await store.put(summary(i, "fresh"))
        fresh = [i for i in range(10) if await store.get(f"fresh{i}", f"e{i}") is not None]
        stale = [i for i in range(10) if await store.get(f"stale{i}", f"e{i}") is not None]
    assert fresh == list(range(10)) and stale == [], (fresh, stale)


async def test_sqlite_lru_reads_stamps_of_a_file_written_before(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    async with SqliteStore(path, max_entries=10, clock=lambda: 1_800_000_000.0) as store:  # a fast clock
        for i in range(10):
            await store.put(summary(i, "old"))
    clock = SteppedClock(1_700_000_000.0)
    async with SqliteStore(path, max_entries=10, clock=clock) as store:
        for i in range(5):
            await store.put(summary(i, "new"))
        assert all([await store.get(f"new{i}", f"e{i}") for i in range(5)])
        assert await store.count() <= 10
