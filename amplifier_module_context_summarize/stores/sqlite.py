"""Summaries in a SQLite file, so they outlive the process and are shared with sub-agents.

The file work runs on the loop's default executor: the hand-off costs ~0.2 ms a call (measured medians,
get 67 -> 240 us, put 87 -> 260 us), next to seconds for the summary it saves. Inline, a put waiting up
to ``BUSY_TIMEOUT_S`` for another process's write lock, a WAL checkpoint's fsync, or the first call's
open and quick_check would stall the event loop instead. One lock serialises the connection between
those threads. Disk trouble is logged and turned into misses rather than raised into the agent loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
import math
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TypeVar

from ..core.messages import encodable, scrub_text
from .base import CachedSummary, is_valid_entry
from .sqlite_file import (
    APPLICATION_ID,
    BUSY_TIMEOUT_S,
    SCHEMA_VERSION,
    classify,
    connect,
    create_private,
    prepare,
    write_transaction,
)

__all__ = ["APPLICATION_ID", "BUSY_TIMEOUT_S", "SCHEMA_VERSION", "SqliteStore"]

log = logging.getLogger(__name__)
T = TypeVar("T")

_UPSERT = """
INSERT INTO summaries (start, "end", tokens, "groups", tier, created, last_used, size_bytes, text)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (start, "end") DO UPDATE SET
    tokens = excluded.tokens, "groups" = excluded."groups", tier = excluded.tier,
    last_used = excluded.last_used, size_bytes = excluded.size_bytes, text = excluded.text
"""
# CASTs: a hand-edited or damaged row must not turn the bookkeeping into a TypeError.
_TOTALS = "SELECT CAST(entries AS INTEGER), CAST(bytes AS INTEGER) FROM totals WHERE id = 0"
_LRU_ORDER = "SELECT rowid, CAST(size_bytes AS INTEGER) FROM summaries ORDER BY last_used, rowid"
_NEWEST = "SELECT last_used FROM summaries WHERE last_used < '' ORDER BY last_used DESC LIMIT 1"
"""The newest numeric LRU stamp (numbers sort before text in SQLite), read from the ``last_used`` index."""
_TOUCH = (
    f"UPDATE summaries SET last_used = MAX(CAST(last_used AS REAL), ?, COALESCE(({_NEWEST}), 0) + ?)"
    ' WHERE start = ? AND "end" = ?'
)
OPEN_RETRY_S = 1.0
"""Wait after the first failed open before the next try; doubled after each further failure, up to
``OPEN_RETRY_MAX_S``."""
OPEN_RETRY_MAX_S = 60.0
STAMP_STEP = 0.001
"""How far past the newest stamp a new one goes when the wall clock is behind it."""


class SqliteStore:
    """``SummaryStore`` on a SQLite file shared by a session and its sub-agents, LRU-bounded by count and bytes.

    The file is opened (created 0600, checked, a corrupt or foreign one moved aside) on first use, in the
    worker thread; if that fails the store logs once, every call is a miss, and the open is tried again after a
    backoff (``OPEN_RETRY_S`` doubling to ``OPEN_RETRY_MAX_S``).
    """

    touch_interval_s: float = 1.0
    """A hit this soon after the last one leaves last_used alone: LRU needn't be finer, reads stay reads."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        max_entries: int = 20_000,
        max_bytes: int = 256 * 2**20,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if max_entries < 1 or max_bytes < 1:
            raise ValueError("max_entries and max_bytes must be positive")
        self.path = Path(path)
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.clock = clock
        """Stamps created/last_used; wall time, because other processes compare the stamps too. A ``last_used``
        stamp is never below the newest one in the file, though: after the clock steps back (or a process with a
        fast clock wrote), the LRU order still puts the newest use last, so fresh summaries are never evicted
        before stale ones. Files written before keep their stamps: nothing to migrate."""
        self._lock = threading.Lock()
        self._warned: set[str] = set()
        self._conn: sqlite3.Connection | None = None
        self._closed = False
        self._open_failures = 0
        self._retry_open_at = -math.inf
        """``monotonic()`` time before which a failed open is not tried again (backoff: a lock held by another
        process, a full disk, a missing mount may go away; a call meanwhile is a miss without touching the disk)."""
        self.monotonic: Callable[[], float] = time.monotonic

    # -- SummaryStore -----------------------------------------------------------------------------

    async def get(self, start: str, end: str) -> CachedSummary | None:
        if not _storable(start, end):
            return None
        return await self._run(self._get, start, end)

    async def starting_at(self, start: str) -> list[CachedSummary]:
        if not _storable(start):
            return []
        return await self._run(self._starting_at, start)

    async def put(self, entry: CachedSummary) -> None:
        """Store ``entry``; its text with any lone surrogate as U+FFFD (as it is sent: SQLite holds UTF-8 only)."""
        if is_valid_entry(entry) and not _storable(entry.text):
            entry = dataclasses.replace(entry, text=scrub_text(entry.text))
        await self._run(self._put, entry)

    def within(self, max_tokens: int) -> SqliteStore:
        """Itself: this store serves any well-formed row, whatever its size (``CheckedStore`` bounds reads)."""
        return self

    async def close(self) -> None:
        await self._run(self._close)

    # -- housekeeping -------------------------------------------------------------------------------

    async def count(self) -> int:
        """Entries in the file, every process's (for tests and diagnostics; not part of ``SummaryStore``)."""
        return (await self._run(self._totals))[0]

    async def total_bytes(self) -> int:
        """Sum of the entries' sizes (text and keys, UTF-8), as the ``max_bytes`` bound counts them."""
        return (await self._run(self._totals))[1]

    async def __aenter__(self) -> SqliteStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"SqliteStore({str(self.path)!r}, max_entries={self.max_entries}, max_bytes={self.max_bytes})"

    # -- blocking halves, run on a worker thread ---------------------------------------------------------

    async def _run(self, fn: Callable[..., T], *args: object) -> T:
        loop = asyncio.get_running_loop()
        try:
            future = loop.run_in_executor(None, functools.partial(fn, *args))
        except RuntimeError:  # the default executor is already shut down (loop closing): block instead
            return fn(*args)
        return await future

    def _get(self, start: str, end: str) -> CachedSummary | None:
        with self._lock:
            conn = self._connection()
            if conn is None:
                return None
            try:
                row = conn.execute(
                    f'SELECT tokens, "groups", tier, last_used, text, ({_NEWEST}) FROM summaries'
                    ' WHERE start = ? AND "end" = ?',
                    (start, end),
                ).fetchone()
            except sqlite3.Error as exc:
                self._fault("get", exc)
                return None
            if row is None:
                return None
            tokens, groups, tier, last_used, text, newest = row
            entry = CachedSummary(start, end, text, tokens, groups, tier)
            if not is_valid_entry(entry):
                self._malformed()
                return None
            now = self.clock()
            if _touch_due(last_used, newest, now, self.touch_interval_s):
                try:
                    conn.execute(_TOUCH, (now, STAMP_STEP, start, end))
                except sqlite3.Error as exc:  # a stale LRU stamp is harmless; losing the hit isn't
                    self._fault("touch", exc)
            return entry

    def _starting_at(self, start: str) -> list[CachedSummary]:
        with self._lock:
            conn = self._connection()
            if conn is None:
                return []
            try:
                rows = conn.execute(
                    'SELECT "end", tokens, "groups", tier, text FROM summaries WHERE start = ? ORDER BY "end"',
                    (start,),
                ).fetchall()
            except sqlite3.Error as exc:
                self._fault("starting_at", exc)
                return []
            entries = [CachedSummary(start, end, text, tok, grp, tier) for end, tok, grp, tier, text in rows]
            valid = [e for e in entries if is_valid_entry(e)]
            if len(valid) < len(entries):
                self._malformed()
            return valid

    def _put(self, entry: CachedSummary) -> None:
        if not is_valid_entry(entry) or not _storable(entry.start, entry.end, entry.text):
            log.warning("summary store %s: refusing a malformed entry %r", self.path, entry)
            return
        size = len(entry.text.encode()) + len(entry.start.encode()) + len(entry.end.encode())
        with self._lock:
            conn = self._connection()
            if conn is None:
                return
            try:
                with write_transaction(conn):
                    now = self.clock()
                    stamp = _after(conn.execute(_NEWEST).fetchone(), now)
                    conn.execute(
                        _UPSERT,
                        (entry.start, entry.end, entry.tokens, entry.groups, entry.tier, now, stamp, size, entry.text),
                    )
                    self._evict(conn)
            except (sqlite3.Error, TypeError) as exc:  # TypeError: the totals row is gone
                self._fault("put", exc)

    def _close(self) -> None:
        with self._lock:
            self._closed = True
            conn, self._conn = self._conn, None
            if conn is not None:
                try:
                    conn.close()
                except sqlite3.Error as exc:
                    self._fault("close", exc)

    def _totals(self) -> tuple[int, int]:
        with self._lock:
            conn = self._connection()
            if conn is None:
                return 0, 0
            try:
                entries, size = conn.execute(_TOTALS).fetchone()
            except (sqlite3.Error, TypeError) as exc:
                self._fault("len", exc)
                return 0, 0
            return entries, size

    def _evict(self, conn: sqlite3.Connection) -> None:
        """Drop least-recently-used rows to ~90% of the bounds, so eviction runs once per many puts."""
        entries, size = conn.execute(_TOTALS).fetchone()
        if entries <= self.max_entries and size <= self.max_bytes:
            return
        keep_entries = max(1, self.max_entries * 9 // 10)
        keep_bytes = self.max_bytes * 9 // 10
        doomed: list[tuple[int]] = []
        cursor = conn.execute(_LRU_ORDER)
        try:
            for rowid, row_size in cursor:
                if entries <= keep_entries and size <= keep_bytes:
                    break
                doomed.append((rowid,))
                entries -= 1
                size -= row_size
        finally:
            cursor.close()
        conn.executemany("DELETE FROM summaries WHERE rowid = ?", doomed)

    # -- opening ------------------------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection | None:
        """The open connection, opening the file on first use and, after a failure, again once the backoff has
        passed (``OPEN_RETRY_S``); hold ``self._lock``."""
        if self._conn is not None or self._closed:
            return self._conn
        now = self.monotonic()
        if now < self._retry_open_at:
            return None
        try:
            self._conn = self._open()
        except (sqlite3.Error, OSError) as exc:
            self._open_failures += 1
            self._retry_open_at = now + min(OPEN_RETRY_S * 2 ** (self._open_failures - 1), OPEN_RETRY_MAX_S)
            self._fault("open", exc)
        return self._conn

    def _open(self) -> sqlite3.Connection:
        for _ in range(3):
            create_private(self.path)
            conn = connect(self.path)
            try:
                problem = classify(conn)
                if problem is None:
                    prepare(conn)
                    return conn
            except BaseException:
                conn.close()
                raise
            conn.close()
            self._move_aside(problem)
        raise sqlite3.DatabaseError(f"{self.path} keeps coming back unusable")

    def _move_aside(self, kind: str) -> None:
        """Keep the bad file for inspection (never delete it), and take its -wal/-shm along so a
        stale log can't be replayed into the fresh database."""
        aside = self.path.with_name(f"{self.path.name}.{kind}-{datetime.now():%Y%m%dT%H%M%S%f}")
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):  # another process may have moved it first
                os.replace(f"{self.path}{suffix}", f"{aside}{suffix}")
        log.warning("summary store %s is %s; moved it to %s and starting afresh", self.path, kind, aside)

    # -- reporting ----------------------------------------------------------------------------------

    def _fault(self, op: str, exc: BaseException) -> None:
        if self._first(f"{op}:{type(exc).__name__}"):
            log.warning("summary store %s: %s failed (%s); carrying on without it", self.path, op, exc)
        else:
            log.debug("summary store %s: %s failed again: %s", self.path, op, exc)

    def _malformed(self) -> None:
        if self._first("malformed"):
            log.warning("summary store %s: skipping malformed rows (read as misses)", self.path)

    def _first(self, kind: str) -> bool:
        """True the first time ``kind`` is reported, so a persistent fault logs one warning, not one per call."""
        if kind in self._warned:
            return False
        self._warned.add(kind)
        return True


def _storable(*texts: str) -> bool:
    """Every text is valid UTF-8 (no lone surrogate), which is all SQLite can bind: other keys are misses."""
    return all(encodable(text) for text in texts)


def _after(newest: tuple[object] | None, now: float) -> float:
    """``now``, or just past the newest stamp when the clock is behind it: LRU order never goes backwards."""
    top = newest[0] if newest else None
    if isinstance(top, int | float) and math.isfinite(top) and top >= now:
        return top + STAMP_STEP
    return now


def _touch_due(last_used: object, newest: object, now: float, interval: float) -> bool:
    """Whether a hit rewrites ``last_used``: once ``interval`` has passed on the clock; or, while the clock is
    behind the stamp (it stepped back), whenever the entry is not already the newest."""
    if not isinstance(last_used, int | float):
        return True
    if now - last_used >= interval:
        return True
    return last_used > now and isinstance(newest, int | float) and last_used < newest
