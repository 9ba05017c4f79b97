"""The SQLite file under ``SqliteStore``: schema, owner-only creation, recognising a bad file, transactions.

Several processes (a session and its sub-agents) may open one file: WAL lets readers run during a write,
and each write is a single ``BEGIN IMMEDIATE`` transaction, so a crash leaves the whole put or none of it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

log = logging.getLogger(__name__)

APPLICATION_ID = 0x41435331
"""``PRAGMA application_id`` ("ACS1"): tells our file from any other SQLite database."""
SCHEMA_VERSION = 1
"""``PRAGMA user_version``; a file with any other version is moved aside, never guessed at."""
BUSY_TIMEOUT_S = 10.0
OPEN_BUSY_TIMEOUT_S = 0.5
"""How long opening waits for another process's write lock, only needed to create the schema of a new file (a file
with its schema is opened without one): the store retries a failed open later rather than stall a resume."""

_SQLITE_CORRUPT = 11
_SQLITE_NOTADB = 26
_TABLES = frozenset({"summaries", "totals"})

# text goes last so LRU scans read size_bytes without following the text's overflow pages.
# The primary key's index already serves starting_at (a prefix lookup on start).
# totals is kept by triggers so the size checks after every put cost O(1), in every process.
SCHEMA = (
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

_UMASK_LOCK = threading.Lock()
"""The umask is process-wide: two opens interleaving their save/restore could leave it at 0o077."""


class UnsafeFile(OSError):
    """A file at the store's path that must not be used: a link, not a regular file, or open to others.

    Raised where the file is opened, so the store logs it once and carries on without the file.
    """


def connect(path: Path) -> sqlite3.Connection:
    """A connection any thread may use (callers serialise it with their own lock); autocommit mode. It waits
    ``OPEN_BUSY_TIMEOUT_S`` for a lock until ``prepare`` sets the usual ``BUSY_TIMEOUT_S``.

    ``nofollow=1``: SQLite itself refuses the database if its path is a symbolic link.
    """
    uri = f"file://{quote(str(path.absolute()))}?nofollow=1"
    return sqlite3.connect(uri, uri=True, timeout=OPEN_BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)


def create_private(path: Path) -> None:
    """Create the directory and file owner-only before SQLite sees them, or check the file that is there.

    The file is created 0o600 without following a link (``O_NOFOLLOW | O_EXCL``); SQLite gives -wal and
    -shm the database file's mode, so they come out 0o600 too. An existing file (and -wal, -shm) must be a
    regular file of ours that no one else may write (``UnsafeFile`` otherwise); one others may read is used
    with a warning, since the summaries in it quote the sessions.
    """
    with _UMASK_LOCK:
        old = os.umask(0o077)
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            with contextlib.suppress(FileExistsError):  # a dangling link counts as existing: checked below
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
        finally:
            os.umask(old)
    for suffix in ("", "-wal", "-shm"):
        check_private(Path(f"{path}{suffix}"))


def check_private(path: Path) -> None:
    """Raise ``UnsafeFile`` unless ``path`` is absent or a regular file of ours that only we may write."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    mode = stat.S_IMODE(info.st_mode)
    if stat.S_ISLNK(info.st_mode):
        raise UnsafeFile(f"{path} is a symbolic link; refusing to follow it (point storage_path at the real file)")
    if not stat.S_ISREG(info.st_mode):
        raise UnsafeFile(f"{path} is not a regular file")
    if info.st_uid != os.geteuid():
        raise UnsafeFile(f"{path} belongs to another user (uid {info.st_uid}); refusing to use it")
    if mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise UnsafeFile(f"{path} is writable by other users (mode {mode:o}); refusing to use it (chmod 600)")
    if mode & (stat.S_IRGRP | stat.S_IROTH):
        log.warning("summary store %s is readable by other users (mode %o); chmod 600 to keep it private", path, mode)


def classify(conn: sqlite3.Connection) -> str | None:
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
        if is_corruption(exc):
            return "corrupt"
        raise
    finally:
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")


def prepare(conn: sqlite3.Connection) -> None:
    """Switch to WAL and create the schema, each only when missing: a file that has them is opened with reads
    alone, so another process holding the write lock (a suspended sibling, a ``sqlite3`` shell, a backup) does not
    keep readers out. The recheck inside the write lock lets two processes race to initialise a new file safely.
    Waits for a lock at most ``OPEN_BUSY_TIMEOUT_S``, then leaves the connection's usual busy timeout."""
    if str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
        _switch_to_wal(conn)
    conn.execute("PRAGMA synchronous = NORMAL")  # with WAL: survives process crashes, needs no fsync per put
    if conn.execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID:
        with write_transaction(conn):
            if conn.execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID:
                for statement in SCHEMA:
                    conn.execute(statement)
    conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
    conn.text_factory = decode_text


def _switch_to_wal(conn: sqlite3.Connection) -> None:
    for attempt in range(20):
        try:
            conn.execute("PRAGMA journal_mode = WAL")  # persistent in the file; a no-op once set
            break
        except sqlite3.OperationalError:  # the switch can report busy without waiting
            if attempt == 19:
                raise
            time.sleep(0.05)


@contextlib.contextmanager
def write_transaction(conn: sqlite3.Connection) -> Iterator[None]:
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


def decode_text(raw: bytes) -> str | bytes:
    """Text that isn't UTF-8 comes back as bytes, so that one row (and not the whole query) is bad."""
    try:
        return raw.decode()
    except UnicodeDecodeError:
        return raw


def is_corruption(exc: sqlite3.DatabaseError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (_SQLITE_CORRUPT, _SQLITE_NOTADB)
    message = str(exc).lower()
    return "not a database" in message or "malformed" in message
