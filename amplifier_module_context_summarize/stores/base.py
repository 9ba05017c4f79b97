"""What every summary store holds and promises.

A key ``(start, end)`` is the pair of chain hashes at a segment's two ends: it names exactly one run of
groups after exactly one prefix, under one summarizer fingerprint. So a hit never needs validating
against the history; the only thing to check is that the stored row is well formed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol, runtime_checkable

from ..core.messages import scrub_text

log = logging.getLogger(__name__)

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

    def within(self, max_tokens: int) -> SummaryStore:
        """The same rows, read and written as rows of up to ``max_tokens`` (a working set is sized by its room, not
        by a summary's allowance): a store that bounds what it serves (``CheckedStore``) bounds it there; a store
        that bounds nothing returns itself."""
        ...


@runtime_checkable
class Scoped(Protocol):
    """What a store shared by summarizers of different kinds may add: it files summaries under the manager's
    fingerprint, so one summarizer's can be found or dropped (Redis does; local stores key by chain hash alone)."""

    def scope(self, fingerprint: str) -> None:
        """File what follows under ``fingerprint`` (called at start and whenever the fingerprint changes)."""
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
        (a ``core.clock.now()`` value)."""
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


OVERSIZE_FACTOR = 4
"""A served summary is at most this many summary allowances: an LLM summary is held to one by its output
limit, the artifact ledger adds a quarter, and a span cut into fragments a few more. Past it, a row is not
a summary this module wrote with this allowance, and serving it could overrun any budget."""
CHARS_PER_TOKEN_CAP = 16
"""Characters a served summary may have per allowed token, checked before it is counted."""
OFF_LOOP_CHARS = 16_384
"""Rows under one start with more text than this are checked (scrubbed and counted) in a worker thread: late in a
long session the rows under the first group's chain (every merge of the oldest summaries) are hundreds of
kilobytes, and counting them held the event loop for tens of milliseconds at each install (issue 48)."""


class CheckedStore:
    """Any ``SummaryStore`` behind a check of what it returns, since rows are only as trustworthy as the file.

    Whatever comes out (of a third-party store, a hand-edited or shared file) is validated like any other
    input on every read path: a row that fails :func:`is_valid_entry`, answers another key, or is larger
    than ``max_tokens`` is a miss, and a served row carries our own token count of its text, never its claim
    (and its text with any lone surrogate as U+FFFD). A store that raises reads as a miss too, and writes as
    a no-op.
    """

    def __init__(
        self,
        inner: SummaryStore,
        count_text: Callable[[str], int],
        max_tokens: int,
        warned: set[str] | None = None,
    ) -> None:
        self.inner = inner
        self.count_text = count_text
        self.max_tokens = max_tokens
        self._warned: set[str] = set() if warned is None else warned
        """What was warned about already (shared by ``within``'s views of the same store): once per kind."""

    def __repr__(self) -> str:
        return f"CheckedStore({self.inner!r}, max_tokens={self.max_tokens})"

    def within(self, max_tokens: int) -> CheckedStore:
        """The same store and checks, serving rows of up to ``max_tokens`` (a working set sized by its room)."""
        return CheckedStore(self.inner, self.count_text, max_tokens, self._warned)

    async def get(self, start: str, end: str) -> CachedSummary | None:
        try:
            entry = await self.inner.get(start, end)
        except Exception as exc:
            self._fault("get", exc)
            return None
        if entry is None:
            return None
        return self.accept(entry, start, end)

    async def starting_at(self, start: str) -> list[CachedSummary]:
        try:
            found = list(await self.inner.starting_at(start))
        except Exception as exc:
            self._fault("starting_at", exc)
            return []
        texts = (entry.text for entry in found if isinstance(entry, CachedSummary))
        chars = sum(len(text) for text in texts if isinstance(text, str))
        if chars > OFF_LOOP_CHARS:  # pure: the rows are the store's answer, the counter keeps no state
            return await asyncio.to_thread(self._accepted, found, start)
        return self._accepted(found, start)

    def _accepted(self, found: list[CachedSummary], start: str) -> list[CachedSummary]:
        accepted = (self.accept(entry, start, None) for entry in found)
        return [entry for entry in accepted if entry is not None]

    async def put(self, entry: CachedSummary) -> None:
        if not is_valid_entry(entry) or entry.tokens > self.max_tokens:
            return  # it could never be served
        try:
            await self.inner.put(entry)
        except Exception as exc:
            self._fault("put", exc)

    async def close(self) -> None:
        try:
            await self.inner.close()
        except Exception as exc:
            self._fault("close", exc)

    def accept(self, entry: object, start: str, end: str | None) -> CachedSummary | None:
        """``entry`` with our count of its text when it may be served under ``(start, end)``; else None."""
        if not is_valid_entry(entry):
            self._warn("a malformed row")
            return None
        assert isinstance(entry, CachedSummary)
        if entry.start != start or (end is not None and entry.end != end):
            self._warn("a row under another key")
            return None
        if len(entry.text) > self.max_tokens * CHARS_PER_TOKEN_CAP:
            self._warn("an oversized row")
            return None
        text = scrub_text(entry.text)  # a row another writer left with lone surrogates: sendable as U+FFFD
        tokens = self.count_text(text)
        if tokens > self.max_tokens:
            self._warn("an oversized row")
            return None
        return entry if (text, tokens) == (entry.text, entry.tokens) else replace(entry, text=text, tokens=tokens)

    def _fault(self, op: str, exc: Exception) -> None:
        self._warn(f"{op} failing ({type(exc).__name__})")

    def _warn(self, what: str) -> None:
        if what not in self._warned:
            self._warned.add(what)
            log.warning("summary store: ignoring %s (read as a miss)", what)
