"""Summaries in process memory: the default when no ``storage_path`` is configured."""

from __future__ import annotations

import logging
from collections import OrderedDict

from .base import CachedSummary, is_valid_entry

log = logging.getLogger(__name__)


class MemoryStore:
    """``SummaryStore`` in a dict with least-recently-used eviction.

    The methods never await, so each runs whole on the event loop: no lock is needed within one loop.
    It is not meant to be shared across threads or event loops.
    """

    def __init__(self, max_entries: int = 20_000) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be positive")
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple[str, str], CachedSummary] = OrderedDict()
        self._by_start: dict[str, set[str]] = {}
        self._closed = False

    async def get(self, start: str, end: str) -> CachedSummary | None:
        entry = self._entries.get((start, end))
        if entry is None or not is_valid_entry(entry):
            return None
        self._entries.move_to_end((start, end))
        return entry

    async def starting_at(self, start: str) -> list[CachedSummary]:
        found = (self._entries[(start, end)] for end in sorted(self._by_start.get(start, ())))
        return [e for e in found if is_valid_entry(e)]

    async def put(self, entry: CachedSummary) -> None:
        if self._closed:
            return
        if not is_valid_entry(entry):
            log.warning("summary store: refusing a malformed entry %r", entry)
            return
        key = (entry.start, entry.end)
        self._entries[key] = entry
        self._entries.move_to_end(key)
        self._by_start.setdefault(entry.start, set()).add(entry.end)
        while len(self._entries) > self.max_entries:
            (old_start, old_end), _ = self._entries.popitem(last=False)
            ends = self._by_start.get(old_start)
            if ends is not None:
                ends.discard(old_end)
                if not ends:
                    del self._by_start[old_start]

    def within(self, max_tokens: int) -> MemoryStore:
        """Itself: this store serves any well-formed row, whatever its size (``CheckedStore`` bounds reads)."""
        return self

    async def close(self) -> None:
        self._closed = True
        self._entries.clear()
        self._by_start.clear()

    async def count(self) -> int:
        """Entries held (for tests and diagnostics; not part of ``SummaryStore``)."""
        return len(self._entries)

    async def __aenter__(self) -> MemoryStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"MemoryStore(max_entries={self.max_entries})"
