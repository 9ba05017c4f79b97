"""Fleet-wide single flight: workers that need the same segment at the same time pay for it once.

Over a store with ``Claims`` (Redis), a worker about to call the summarizer first claims the segment. The
claim expires on its own (the compaction deadline plus a margin), so a worker that dies mid-summary holds
up the others only until then. A worker that finds the segment claimed waits for the claimant's summary
up to its own compaction deadline; when the claim ends without a summary (the claimant's call failed) it
claims the segment itself. Over any other store every call here is a no-op.
"""

from __future__ import annotations

from ...core.clock import now
from ...stores.base import CachedSummary, Claims, SummaryStore

CLAIM_MARGIN_S = 5.0
"""A claim outlives its holder's deadline by this much: the put after the summary still falls inside it."""
BACKGROUND_CLAIM_S = 120.0
"""Claim length for background (prefetch) summaries, which run without a compaction deadline."""
MAX_TURNS = 3
"""Claimants a worker waits out before it summarizes unclaimed (each one's call failed, or the store cannot
say): bounds the loop even when waiting cannot work."""


class SingleFlight:
    def __init__(self, store: SummaryStore) -> None:
        self.store = store
        inner = getattr(store, "inner", store)  # claims live on the store itself, behind the read checks
        self.claims: Claims | None = inner if isinstance(inner, Claims) else None
        self.waits = 0
        """Times this worker waited for another's summary (diagnostics)."""
        self.served = 0
        """Summaries another worker paid for while this one waited or had just missed them."""

    async def acquire(self, key: tuple[str, str], until: float | None) -> CachedSummary | None:
        """The summary of ``key`` when another worker makes it meanwhile; else None, with this worker holding
        the claim when it could get one before ``until`` (call ``release`` after storing the summary).

        ``until`` None: a compaction without a deadline (a manual or background one) waits as long as a
        background claim lasts (``BACKGROUND_CLAIM_S``), rather than without end."""
        claims = self.claims
        if claims is None:
            return None
        if until is None:
            until = now() + BACKGROUND_CLAIM_S
        for _ in range(MAX_TURNS):
            left = until - now()
            if left <= 0:
                break  # out of time: the caller's summarizer answers within the deadline (extractively)
            if await claims.claim(*key, left + CLAIM_MARGIN_S):
                return await self._stored_meanwhile(key)
            self.waits += 1
            found = await claims.wait_for(*key, until)
            if found is not None:
                found = await self.store.get(*key)  # read again through the checks every stored row passes
            if found is not None:
                self.served += 1
                return found
        return None

    async def try_acquire(self, key: tuple[str, str]) -> bool:
        """Claim ``key`` for background work without waiting: False when another worker holds it or the store
        already has its summary."""
        claims = self.claims
        if claims is None:
            return True
        if not await claims.claim(*key, BACKGROUND_CLAIM_S):
            return False
        return await self._stored_meanwhile(key) is None

    async def release(self, key: tuple[str, str]) -> None:
        if self.claims is not None:
            await self.claims.release(*key)

    async def _stored_meanwhile(self, key: tuple[str, str]) -> CachedSummary | None:
        """Check again once claimed: another worker may have stored it between our miss and our claim."""
        found = await self.store.get(*key)
        if found is not None:
            await self.release(key)
            self.served += 1
        return found
