"""Summary stores behind one async interface, so the manager needn't know where summaries live.

Owns the interface and the entry checks (``base``), the typed records stores hold and the rows they are written as
(``records``), the memory store (``memory``), the SQLite store (``sqlite``, over its file: ``sqlite_file``), the
Redis store (``redis_store``, with ``redis_settings``), and where a mounted session's default store lives
(``default_path``).

May import: ``core`` and ``events``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .base import CachedSummary, CheckedStore, Claims, Scoped, SummaryStore, is_valid_entry
from .default_path import MEMORY, default_store_path
from .memory import MemoryStore
from .redis_settings import RedisSettings
from .sqlite import SqliteStore

__all__ = [
    "CachedSummary",
    "CheckedStore",
    "MEMORY",
    "Claims",
    "MemoryStore",
    "RedisSettings",
    "Scoped",
    "SqliteStore",
    "SummaryStore",
    "default_store_path",
    "is_valid_entry",
    "open_store",
]


def open_store(
    storage_path: str | Path | None, max_entries: int, redis: RedisSettings | None = None, hooks: Any | None = None
) -> SummaryStore:
    """The store a config names: process memory without a ``storage_path`` (or with ``memory``), a SQLite file
    (``~`` expanded) with one;
    with ``redis`` settings, a Redis store shared by a fleet over that local store (``hooks`` hear it degrade).

    Touches no disk and no network: ``SqliteStore`` opens its file and ``RedisStore`` connects on first use.
    """
    if storage_path and storage_path != MEMORY:
        local: SummaryStore = SqliteStore(Path(storage_path).expanduser(), max_entries=max_entries)
    else:
        local = MemoryStore(max_entries)
    if redis is None:
        return local
    from ..core.extras import import_for  # imports redis only for a fleet; missing, one line names the extra

    redis_store = import_for(f"{__package__}.redis_store", "storage_url (a Redis store)")
    shared: SummaryStore = redis_store.RedisStore(redis, local=local, hooks=hooks)  # a module found at run time
    return shared
