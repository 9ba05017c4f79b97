"""What every summary store holds and promises.

A key ``(start, end)`` is the pair of chain hashes at a segment's two ends: it names exactly one run of
groups after exactly one prefix, under one summarizer fingerprint. So a hit never needs validating
against the history; the only thing to check is that the stored row is well formed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

MAX_CHARS_PER_TOKEN = 256
"""No tokenizer's token is longer (cl100k's longest is 128 bytes); more text per token is a bad row."""
MAX_TEXT_CHARS = 2**24
"""Far beyond any context window: a longer summary could never be spliced into a view."""


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


class SummaryStore(Protocol):
    """Where summaries live between compactions (process memory, a file, later a network service).

    A store only saves money, so it never raises into the agent loop: any fault is logged by the store
    and reads as a miss, writes as a no-op. A row that fails :func:`is_valid_entry` is a miss too.
    """

    async def get(self, start: str, end: str) -> CachedSummary | None:
        """The summary under exactly this key; serving it needs no further checks."""
        ...

    async def put(self, entry: CachedSummary) -> None:
        """Store or replace ``entry``; may evict least-recently-used entries to stay in bounds."""
        ...

    async def starting_at(self, start: str) -> list[CachedSummary]:
        """All summaries whose segment begins at ``start`` (to rebuild state by walking the chain)."""
        ...

    async def close(self) -> None:
        """Release the store's resources; afterwards every call is a miss or a no-op. Idempotent."""
        ...


@runtime_checkable
class Claims(Protocol):
    """What a store shared by a fleet may add: claims with expiry, so workers that need one segment at the same
    time pay for it once (``flight.SingleFlight`` uses it; memory and SQLite stores go without).

    Like the rest of a store it never raises: a store that cannot reach its claims answers ``claim`` with True
    (summarize locally) and ``wait_for`` with None.
    """

    async def claim(self, start: str, end: str, ttl_s: float) -> bool:
        """Claim the segment for ``ttl_s`` seconds; False when another worker holds it."""
        ...

    async def release(self, start: str, end: str) -> None:
        """Give up this worker's claim (another worker's is left alone); a no-op when none is held."""
        ...

    async def wait_for(self, start: str, end: str, until: float) -> CachedSummary | None:
        """The summary once its claimant stores it; None when the claim ends without one, or at ``until``
        (a ``time.monotonic()`` value)."""
        ...


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_valid_entry(entry: object) -> bool:
    """True when ``entry`` is a summary the manager can splice as is.

    Stores call this on every read (and on put), so a row damaged on disk, written by another version
    or by hand, or tampered with in a shared store is a miss rather than a crash or a wrong budget.
    Tokens must be consistent with the text both ways: every token is at least one UTF-8 byte (at most
    four per character) and at most ``MAX_CHARS_PER_TOKEN`` characters.
    """
    if not isinstance(entry, CachedSummary):
        return False
    if not (isinstance(entry.start, str) and isinstance(entry.end, str) and isinstance(entry.text, str)):
        return False
    if not (_is_int(entry.tokens) and _is_int(entry.groups) and _is_int(entry.tier)):
        return False
    if entry.tokens < 0 or entry.groups < 1 or entry.tier < 0:
        return False
    chars = len(entry.text)
    if chars > MAX_TEXT_CHARS or chars > MAX_CHARS_PER_TOKEN * max(entry.tokens, 1):
        return False  # too much text for its tokens: the budget would be undercounted
    return entry.tokens <= 4 * chars + 1  # more tokens than UTF-8 bytes (+1 for estimators) is no count of this text
