"""Summary cache in a SQLite file, so summaries outlive the process and are shared with sub-agents.

Several processes may open one file: WAL lets readers run during a write, and each put is a single
``BEGIN IMMEDIATE`` transaction, so a crash leaves the whole put or none of it. The cache only saves
money, so disk trouble is logged and turned into misses rather than raised into the agent loop.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from types import TracebackType

from .cache import CachedSummary

log = logging.getLogger(__name__)

APPLICATION_ID = 0x41435331
"""``PRAGMA application_id`` ("ACS1"): tells our file from any other SQLite database."""
SCHEMA_VERSION = 1
"""``PRAGMA user_version``; a file with any other version is moved aside, never guessed at."""
BUSY_TIMEOUT_S = 10.0

_SQLITE_CORRUPT = 11
_SQLITE_NOTADB = 26
_TABLES = frozenset({"summaries", "totals"})

# text goes last so LRU scans read size_bytes without following the text's overflow pages.
# The primary key's index already serves starting_at (a prefix lookup on start).
# totals is kept by triggers so the size checks after every put cost O(1), in every process.
_SCHEMA = (
    """CREATE TABLE summaries (
        start TEXT NOT NULL,
        "end" TEXT NOT NULL,
        tokens INTEGER NOT NULL,
        "groups" INTEGER NOT NULL,
        tier INTEGER NOT NULL,
        created REAL NOT NULL,
        last_used REAL NOT NULL,
        size_bytes INTEGER NOT NULL,
        text TEXT NOT NULL,
        PRIMARY KEY (start, "end")
    )""",
    "CREATE INDEX summaries_lru ON summaries (last_used)",
    "CREATE TABLE totals (id INTEGER PRIMARY KEY CHECK (id = 0), entries INTEGER NOT NULL, bytes INTEGER NOT NULL)",
    "INSERT INTO totals VALUES (0, 0, 0)",
    """CREATE TRIGGER summaries_ins AFTER INSERT ON summaries BEGIN
        UPDATE totals SET entries = entries + 1, bytes = bytes + NEW.size_bytes WHERE id = 0;
    END""",
    """CREATE TRIGGER summaries_del AFTER DELETE ON summaries BEGIN
        UPDATE totals SET entries = entries - 1, bytes = bytes - OLD.size_bytes WHERE id = 0;
    END""",
    """CREATE TRIGGER summaries_upd AFTER UPDATE OF size_bytes ON summaries BEGIN
        UPDATE totals SET bytes = bytes - OLD.size_bytes + NEW.size_bytes WHERE id = 0;
    END""",
    f"PRAGMA application_id = {APPLICATION_ID}",
    f"PRAGMA user_version = {SCHEMA_VERSION}",
)

_UPSERT = """
INSERT INTO summaries (start, "end", tokens, "groups", tier, created, last_used, size_bytes, text)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (start, "end") DO UPDATE SET
    tokens = excluded.tokens, "groups" = excluded."groups", tier = excluded.tier,
    last_used = excluded.last_used, size_bytes = excluded.size_bytes, text = excluded.text
"""

_UMASK_LOCK = threading.Lock()
"""The umask is process-wide: two opens interleaving their save/restore could leave it at 0o077."""


class SqliteCache:
    """``SummaryCache`` on a SQLite file shared by a session and its sub-agents, LRU-bounded."""

    touch_interval_s: float = 1.0
    """A hit this soon after the last one leaves last_used alone: LRU needn't be finer, reads stay reads."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        max_entries: int = 20_000,
        max_bytes: int = 256 * 2**20,
    ) -> None:
        if max_entries < 1 or max_bytes < 1:
            raise ValueError("max_entries and max_bytes must be positive")
        self.path = Path(path)
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._warned: set[str] = set()
        self._conn: sqlite3.Connection | None = None
        try:
            self._conn = self._open()
        except (sqlite3.Error, OSError) as exc:
            self._fault("open", exc)

    # -- SummaryCache -------------------------------------------------------------------------

    def get(self, start: str, end: str) -> CachedSummary | None:
        with self._lock:
            conn = self._conn
            if conn is None:
                return None
            try:
                row = conn.execute(
                    'SELECT tokens, "groups", tier, last_used, text FROM summaries WHERE start = ? AND "end" = ?',
                    (start, end),
                ).fetchone()
            except sqlite3.Error as exc:
                self._fault("get", exc)
                return None
            if row is None:
                return None
            tokens, groups, tier, last_used, text = row
            now = time.time()
            if now - last_used >= self.touch_interval_s:
                try:
                    conn.execute(
                        'UPDATE summaries SET last_used = MAX(last_used, ?) WHERE start = ? AND "end" = ?',
                        (now, start, end),
                    )
                except sqlite3.Error as exc:  # a stale LRU stamp is harmless; losing the hit isn't
                    self._fault("touch", exc)
            return CachedSummary(start, end, text, tokens, groups, tier)

    def starting_at(self, start: str) -> list[CachedSummary]:
        with self._lock:
            conn = self._conn
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
        return [CachedSummary(start, end, text, tokens, groups, tier) for end, tokens, groups, tier, text in rows]

    def put(self, entry: CachedSummary) -> None:
        size = len(entry.text.encode()) + len(entry.start.encode()) + len(entry.end.encode())
        with self._lock:
            conn = self._conn
            if conn is None:
                return
            try:
                with _write_transaction(conn):
                    now = time.time()
                    conn.execute(
                        _UPSERT,
                        (entry.start, entry.end, entry.tokens, entry.groups, entry.tier, now, now, size, entry.text),
                    )
                    self._evict(conn)
            except sqlite3.Error as exc:
                self._fault("put", exc)

    # -- housekeeping ---------------------------------------------------------------------------

    def __len__(self) -> int:
        return self._totals()[0]

    @property
    def total_bytes(self) -> int:
        """Sum of the entries' sizes (text and keys, UTF-8), as the ``max_bytes`` bound counts them."""
        return self._totals()[1]

    def close(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
            if conn is not None:
                try:
                    conn.close()
                except sqlite3.Error as exc:
                    self._fault("close", exc)

    def __enter__(self) -> SqliteCache:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SqliteCache({str(self.path)!r}, max_entries={self.max_entries}, max_bytes={self.max_bytes})"

    # -- internals ------------------------------------------------------------------------------

    def _totals(self) -> tuple[int, int]:
        with self._lock:
            conn = self._conn
            if conn is None:
                return 0, 0
            try:
                entries, size = conn.execute("SELECT entries, bytes FROM totals WHERE id = 0").fetchone()
            except (sqlite3.Error, TypeError) as exc:
                self._fault("len", exc)
                return 0, 0
            return entries, size

    def _evict(self, conn: sqlite3.Connection) -> None:
        """Drop least-recently-used rows to ~90% of the bounds, so eviction runs once per many puts."""
        entries, size = conn.execute("SELECT entries, bytes FROM totals WHERE id = 0").fetchone()
        if entries <= self.max_entries and size <= self.max_bytes:
            return
        keep_entries = max(1, self.max_entries * 9 // 10)
        keep_bytes = self.max_bytes * 9 // 10
        doomed: list[tuple[int]] = []
        cursor = conn.execute("SELECT rowid, size_bytes FROM summaries ORDER BY last_used, rowid")
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

    def _open(self) -> sqlite3.Connection:
        for _ in range(3):
            _create_private(self.path)
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
            try:
                problem = _classify(conn)
                if problem is None:
                    _prepare(conn)
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
        log.warning("summary cache %s is %s; moved it to %s and starting afresh", self.path, kind, aside)

    def _fault(self, op: str, exc: BaseException) -> None:
        kind = f"{op}:{type(exc).__name__}"
        if kind in self._warned:
            log.debug("summary cache %s: %s failed again: %s", self.path, op, exc)
            return
        self._warned.add(kind)
        log.warning("summary cache %s: %s failed (%s); carrying on without it", self.path, op, exc)


def _create_private(path: Path) -> None:
    """Create the directory and file owner-only before SQLite sees them; SQLite gives -wal and -shm
    the database file's mode, so they come out 0o600 too."""
    with _UMASK_LOCK:
        old = os.umask(0o077)
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            with contextlib.suppress(FileExistsError):
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        finally:
            os.umask(old)


def _classify(conn: sqlite3.Connection) -> str | None:
    """None for our schema or an empty file; otherwise "corrupt" or "foreign".

    One read transaction, so a process initialising the file meanwhile is seen entirely or not at all
    (statement by statement, its tables could appear without its application_id: "foreign")."""
    conn.execute("BEGIN")
    try:
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if app_id == 0 and version == 0 and not tables:
            return None
        if app_id != APPLICATION_ID or version != SCHEMA_VERSION or not tables >= _TABLES:
            return "foreign"
        if conn.execute("PRAGMA quick_check").fetchone()[0] != "ok":
            return "corrupt"
        return None
    except sqlite3.DatabaseError as exc:
        if _is_corruption(exc):
            return "corrupt"
        raise
    finally:
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")


def _prepare(conn: sqlite3.Connection) -> None:
    """Switch to WAL and create the schema; the recheck inside the write lock lets two processes race
    to initialise a new file safely."""
    for attempt in range(20):
        try:
            conn.execute("PRAGMA journal_mode = WAL")  # persistent in the file; a no-op once set
            break
        except sqlite3.OperationalError:  # the switch can report busy without waiting
            if attempt == 19:
                raise
            time.sleep(0.05)
    conn.execute("PRAGMA synchronous = NORMAL")  # with WAL: survives process crashes, needs no fsync per put
    with _write_transaction(conn):
        if conn.execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID:
            for statement in _SCHEMA:
                conn.execute(statement)


@contextlib.contextmanager
def _write_transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """Take the write lock up front (no busy upgrade mid-transaction); roll back on any failure."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
        raise


def _is_corruption(exc: sqlite3.DatabaseError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (_SQLITE_CORRUPT, _SQLITE_NOTADB)
    message = str(exc).lower()
    return "not a database" in message or "malformed" in message
