"""Segment summaries, keyed by the chain hashes at the segment's two ends.

A key ``(start, end)`` names exactly one run of groups after exactly one prefix, under one
summarizer fingerprint, so a hit can be served without asking whether it is still valid.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class CachedSummary:
    start: str
    """Chain hash before the segment's first group."""
    end: str
    """Chain hash after the segment's last group."""
    text: str
    tokens: int
    groups: int
    """How many groups the segment covers."""
    tier: int = 0
    """0 for a segment summary; 1+ for a merge of lower-tier summaries."""


class SummaryCache(Protocol):
    def get(self, start: str, end: str) -> CachedSummary | None: ...

    def starting_at(self, start: str) -> list[CachedSummary]:
        """All summaries whose segment begins at ``start`` (for rebuilding state by walking the chain)."""
        ...

    def put(self, entry: CachedSummary) -> None: ...


class MemoryCache:
    """Process-local cache with least-recently-used eviction."""

    def __init__(self, max_entries: int = 20_000) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple[str, str], CachedSummary] = OrderedDict()
        self._by_start: dict[str, set[str]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, start: str, end: str) -> CachedSummary | None:
        entry = self._entries.get((start, end))
        if entry is not None:
            self._entries.move_to_end((start, end))
        return entry

    def starting_at(self, start: str) -> list[CachedSummary]:
        return [self._entries[(start, end)] for end in self._by_start.get(start, ())]

    def put(self, entry: CachedSummary) -> None:
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
