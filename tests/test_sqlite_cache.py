from __future__ import annotations

import contextlib
import logging
import os
import signal
import sqlite3
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from amplifier_module_context_summarize.cache import CachedSummary
from amplifier_module_context_summarize.sqlite_cache import APPLICATION_ID, SCHEMA_VERSION, SqliteCache

REPO_ROOT = Path(__file__).resolve().parents[1]
LOGGER = "amplifier_module_context_summarize.sqlite_cache"

# Writes n entries tagged argv[2] into argv[1], printing each index once its put has returned.
WRITER = r"""
import logging, sys, time
logging.basicConfig(level=logging.WARNING)
from amplifier_module_context_summarize.cache import CachedSummary
from amplifier_module_context_summarize.sqlite_cache import SqliteCache
path, tag, n, t0 = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
time.sleep(max(0.0, t0 - time.time()))
with SqliteCache(path) as cache:
    for i in range(n):
        cache.put(CachedSummary(f"{tag}-s{i}", f"{tag}-e{i}", f"{tag} summary {i} " + "x" * 2000, i, 1))
        print(i, flush=True)
"""


def entry(i: int, *, start: str | None = None, text: str | None = None, tier: int = 0) -> CachedSummary:
    return CachedSummary(start or f"s{i}", f"e{i}", text if text is not None else f"summary {i}", 10 + i, 2, tier)


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


# -- protocol ------------------------------------------------------------------------------------


def test_round_trip(path: Path) -> None:
    with SqliteCache(path) as cache:
        assert len(cache) == 0
        assert cache.get("s1", "e1") is None
        assert cache.starting_at("s1") == []

        a, b, c = entry(1, start="root"), entry(2, start="root", tier=1), entry(3, text="héllo ✓")
        for e in (a, b, c):
            cache.put(e)
        assert cache.get("root", "e1") == a
        assert cache.get("root", "e2") == b
        assert cache.get("s3", "e3") == c
        assert cache.get("root", "e3") is None
        assert cache.starting_at("root") == [a, b]
        assert cache.starting_at("s3") == [c]
        assert len(cache) == 3

        replaced = CachedSummary("root", "e1", "better", 5, 2, 0)
        cache.put(replaced)
        assert cache.get("root", "e1") == replaced
        assert len(cache) == 3
        assert cache.total_bytes == sum(len(e.text.encode()) + len(e.start) + len(e.end) for e in (replaced, b, c))


def test_persists_across_instances(path: Path) -> None:
    with SqliteCache(path) as cache:
        for i in range(5):
            cache.put(entry(i))
    with SqliteCache(path) as cache:
        assert len(cache) == 5
        assert [cache.get(f"s{i}", f"e{i}") for i in range(5)] == [entry(i) for i in range(5)]
    with raw(path) as conn:
        assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        plan = " ".join(str(r) for r in conn.execute("EXPLAIN QUERY PLAN SELECT * FROM summaries WHERE start = 'x'"))
        assert "USING INDEX" in plan


def test_threads_share_one_instance(path: Path) -> None:
    with SqliteCache(path) as cache:

        def work(t: int) -> None:
            for i in range(50):
                e = entry(i, start=f"t{t}")
                cache.put(e)
                assert cache.get(e.start, e.end) == e

        threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(cache) == 200


# -- bounds ----------------------------------------------------------------------------------------


def test_lru_eviction_by_count(path: Path) -> None:
    with SqliteCache(path, max_entries=10) as cache:
        cache.touch_interval_s = 0
        for i in range(10):
            cache.put(entry(i))
        assert len(cache) == 10
        assert cache.get("s0", "e0") is not None  # now the most recently used
        cache.put(entry(10))
        # 11 > 10: trimmed to 9, oldest first, sparing the touched entry.
        assert len(cache) == 9
        assert cache.get("s1", "e1") is None
        assert cache.get("s2", "e2") is None
        assert all(cache.get(f"s{i}", f"e{i}") is not None for i in (0, *range(3, 11)))


def test_lru_eviction_by_bytes(path: Path) -> None:
    def sized(i: int, n: int = 100) -> CachedSummary:
        return CachedSummary(f"s{i:02d}", f"e{i:02d}", "x" * n, 1, 1)

    size = 100 + 3 + 3  # text + keys
    with SqliteCache(path, max_bytes=10 * size) as cache:
        cache.touch_interval_s = 0
        for i in range(10):
            cache.put(sized(i))
        assert cache.total_bytes == 10 * size
        cache.get("s00", "e00")
        cache.put(sized(10))
        # 11 entries > the bound: trimmed to 90% of it, least recently used first.
        assert cache.total_bytes == 9 * size
        assert cache.get("s00", "e00") is not None
        assert cache.get("s01", "e01") is None and cache.get("s02", "e02") is None

        cache.put(sized(11, 20 * size))  # larger than the whole bound: it cannot stay
        assert cache.total_bytes <= 10 * size
        assert cache.get("s11", "e11") is None


def test_recent_touch_is_not_rewritten(path: Path) -> None:
    with SqliteCache(path) as cache:
        cache.put(entry(1))
        with raw(path) as conn:
            before = conn.execute("SELECT last_used FROM summaries").fetchone()[0]
            cache.get("s1", "e1")
            assert conn.execute("SELECT last_used FROM summaries").fetchone()[0] == before
            cache.touch_interval_s = 0
            cache.get("s1", "e1")
            assert conn.execute("SELECT last_used FROM summaries").fetchone()[0] > before


# -- files on disk ---------------------------------------------------------------------------------


def test_files_are_owner_only(path: Path) -> None:
    old = os.umask(0o022)
    try:
        with SqliteCache(path) as cache:
            cache.put(entry(1))
            assert os.umask(0o022) == 0o022  # restored after creation
            assert mode(path.parent) == 0o700
            assert mode(path) == 0o600
            for suffix in ("-wal", "-shm"):
                assert mode(Path(f"{path}{suffix}")) == 0o600
    finally:
        os.umask(old)


def test_corrupt_file_is_moved_aside(path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path.parent.mkdir()
    garbage = b"this is not a database\x00\xff" * 400
    path.write_bytes(garbage)
    with caplog.at_level(logging.WARNING, logger=LOGGER), SqliteCache(path) as cache:
        cache.put(entry(1))
        assert cache.get("s1", "e1") == entry(1)
    [aside] = siblings(path, "corrupt")
    assert aside.read_bytes() == garbage
    assert any("corrupt" in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records)


def test_damaged_pages_are_moved_aside(path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with SqliteCache(path) as cache:
        for i in range(200):
            cache.put(entry(i, text="z" * 500))
    data = bytearray(path.read_bytes())
    page = 4096
    data[2 * page : 2 * page + 64] = b"\xa5" * 64  # smash a b-tree page header, keep the file header
    path.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING, logger=LOGGER), SqliteCache(path) as cache:
        cache.put(entry(1))
        assert len(cache) == 1
    assert siblings(path, "corrupt")
    assert any("corrupt" in r.getMessage() for r in caplog.records)


def _other_table(path: Path) -> None:
    with raw(path) as conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
        conn.execute("INSERT INTO notes VALUES ('precious')")


def _wrong_version(path: Path) -> None:
    SqliteCache(path).close()
    with raw(path) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")


def _other_app(path: Path) -> None:
    SqliteCache(path).close()
    with raw(path) as conn:
        conn.execute("PRAGMA application_id = 1234")


@pytest.mark.parametrize("make", [_other_table, _wrong_version, _other_app])
def test_foreign_database_is_moved_aside(path: Path, caplog: pytest.LogCaptureFixture, make) -> None:
    path.parent.mkdir()
    make(path)
    with caplog.at_level(logging.WARNING, logger=LOGGER), SqliteCache(path) as cache:
        assert len(cache) == 0
        cache.put(entry(1))
        assert cache.get("s1", "e1") == entry(1)
    [aside] = siblings(path, "foreign")
    with raw(aside) as conn:  # kept intact, not deleted
        assert conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"
    if make is _other_table:
        with raw(aside) as conn:
            assert conn.execute("SELECT body FROM notes").fetchall() == [("precious",)]
    assert any("foreign" in r.getMessage() for r in caplog.records)


# -- several processes -----------------------------------------------------------------------------


def test_two_processes_write_concurrently(path: Path) -> None:
    t0 = time.time() + 0.5  # both open the not-yet-existing file at the same moment
    procs = [writer(path, tag, 200, t0) for tag in ("a", "b")]
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        assert out.split() == [str(i) for i in range(200)]
        assert "WARNING" not in err, err
    with SqliteCache(path) as cache:
        assert len(cache) == 400
        for tag in ("a", "b"):
            for i in range(200):
                got = cache.get(f"{tag}-s{i}", f"{tag}-e{i}")
                assert got is not None and got.text.startswith(f"{tag} summary {i} ")


def test_writer_killed_mid_loop_leaves_a_readable_cache(path: Path, caplog: pytest.LogCaptureFixture) -> None:
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

    with caplog.at_level(logging.WARNING, logger=LOGGER), SqliteCache(path) as cache:
        assert len(cache) >= committed + 1
        for i in range(committed + 1):
            assert cache.get(f"k-s{i}", f"k-e{i}") is not None
        cache.put(entry(1))
        assert cache.get("s1", "e1") == entry(1)
    assert not caplog.records
    assert not siblings(path, "corrupt") and not siblings(path, "foreign")
    with raw(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


# -- degrading instead of raising ------------------------------------------------------------------


def test_uncreatable_location_degrades(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with caplog.at_level(logging.WARNING, logger=LOGGER), SqliteCache(blocker / "cache.sqlite") as cache:
        cache.put(entry(1))
        assert cache.get("s1", "e1") is None
        assert cache.starting_at("s1") == []
        assert len(cache) == 0
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 1


def test_read_only_database_degrades(path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with SqliteCache(path) as cache:
        cache.put(entry(1))
        assert cache._conn is not None
        cache._conn.execute("PRAGMA query_only = ON")  # every write now fails as on a read-only disk
        cache.touch_interval_s = 0
        with caplog.at_level(logging.WARNING, logger=LOGGER):
            for i in range(2, 5):
                cache.put(entry(i))
            assert cache.get("s1", "e1") == entry(1)  # the failed LRU touch doesn't cost the hit
            assert cache.get("s1", "e1") == entry(1)
            assert cache.get("s2", "e2") is None
        assert len(cache) == 1
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(messages) == 2  # once for put, once for touch, however often they fail
    assert any("put failed" in m for m in messages) and any("touch failed" in m for m in messages)


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions")
def test_unwritable_file_degrades(path: Path) -> None:
    with SqliteCache(path) as cache:
        cache.put(entry(1))
    path.chmod(0o400)
    path.parent.chmod(0o500)
    try:
        with SqliteCache(path) as cache:
            cache.put(entry(2))
            assert cache.get("s2", "e2") is None
    finally:
        path.parent.chmod(0o700)
        path.chmod(0o600)


def test_closed_cache_degrades(path: Path) -> None:
    cache = SqliteCache(path)
    cache.put(entry(1))
    cache.close()
    cache.close()
    cache.put(entry(2))
    assert cache.get("s1", "e1") is None
    assert len(cache) == 0
    with SqliteCache(path) as again:
        assert again.get("s1", "e1") == entry(1)
        assert again.get("s2", "e2") is None


def test_rejects_nonsense_bounds(path: Path) -> None:
    with pytest.raises(ValueError):
        SqliteCache(path, max_entries=0)
