"""Summary stores behind one async interface, so the manager needn't know where summaries live."""

from __future__ import annotations

from pathlib import Path

from .base import CachedSummary, CheckedStore, SummaryStore, is_valid_entry
from .memory import MemoryStore
from .sqlite import SqliteStore

__all__ = [
    "CachedSummary",
    "CheckedStore",
    "MemoryStore",
    "SqliteStore",
    "SummaryStore",
    "is_valid_entry",
    "open_store",
]


def open_store(storage_path: str | None, max_entries: int) -> SummaryStore:
    """The store a config names: process memory without a ``storage_path``, a SQLite file (``~`` expanded) with one.

    Touches no disk: ``SqliteStore`` opens its file on first use, off the event loop.
    """
    if storage_path:
        return SqliteStore(Path(storage_path).expanduser(), max_entries=max_entries)
    return MemoryStore(max_entries)
