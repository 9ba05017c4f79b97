"""Summaries in Redis, shared by a fleet of workers, with a local store standing in while Redis is away.

Layout (``acs`` is the module prefix, ``v1`` the layout version, ``<fp>`` the summarizer fingerprint the
manager scopes the store to):

* ``acs:v1:<fp>:s:<start>``: a hash from each segment end to ``{"text","tokens","groups","tier"}`` (JSON);
  one key per segment start, so ``starting_at`` is one ``HGETALL`` and eviction never leaves an index behind.
  Every write and every hit sets the key's TTL again (``ttl_s``): what is in use stays, the rest expires.
* ``acs:v1:<fp>:lock:<start>:<end>``: a claim (``SET NX PX``, a random token, deleted only by its holder),
  so workers that need one segment at the same time pay for it once (``flight.SingleFlight``).

Only summaries and claims are stored: no messages, no keys. Every value read is validated like a SQLite
row (a bad one is a miss). Summaries are also written to the local store (memory, or SQLite with
``storage_path``), which answers first and carries on alone while Redis is unreachable: the first
connection fault logs one warning and emits ``context:store_degraded``; at most every ``retry_s`` a
background ping checks whether Redis is back (``context:store_restored``). Nothing here raises into the
agent loop.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Mapping
from typing import Any

from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import DataError, ResponseError

from .. import events
from ..core.clock import now
from ..core.redact import unset_variable
from .base import CachedSummary, SummaryStore, is_valid_entry
from .redis_settings import RedisSettings, describe, url_problem
from .sqlite import SqliteStore

__all__ = ["KEY_PREFIX", "LAYOUT", "RedisSettings", "RedisStore"]

log = logging.getLogger(__name__)

KEY_PREFIX = "acs"
"""Every key this module writes starts with ``acs:`` (amplifier context summarize)."""
LAYOUT = "v1"
"""Bumped when the key layout or the value format changes; older keys are then simply never read."""
MAX_VALUE_BYTES = 4 * 2**24 + 1024
"""Largest value worth parsing: the longest valid text (``MAX_TEXT_CHARS``) in UTF-8, plus the fields."""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('DEL', KEYS[1])
end
return 0
"""
_POLL_FIRST_S, _POLL_MAX_S = 0.005, 0.1
"""A waiter polls the claim and the summary at growing intervals, from 5 ms to at most 100 ms."""


class RedisStore:
    """``SummaryStore`` (and ``Claims``) on a Redis server shared by a fleet, over a local store.

    Build it outside or inside an event loop; it connects on first use. Use it from one event loop.
    """

    def __init__(
        self,
        settings: RedisSettings,
        *,
        local: SummaryStore,
        hooks: Any | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        problem = url_problem(settings.url)
        if problem is not None:
            raise ValueError(f"config key 'storage_url': {problem}")
        password = None
        if settings.password_env:
            password = (os.environ if environ is None else environ).get(settings.password_env)
            if not password:
                raise unset_variable("storage_password_env", settings.password_env)
        self.settings = settings
        self.where = describe(settings.url)
        self.local = local
        self.hooks = hooks
        self.namespace = "shared"
        """The fingerprint the manager scoped the store to (``scope``); every key carries it."""
        self._secret = password
        """Only to scrub it from any error text before logging."""
        self._client = Redis.from_url(
            settings.url,
            password=password,
            socket_timeout=settings.timeout_s,
            socket_connect_timeout=settings.timeout_s,
            retry=Retry(NoBackoff(), 0),  # a fault degrades to the local store at once; the probe retries
            decode_responses=False,
        )
        self._release_script = self._client.register_script(_RELEASE)
        self._ttl_ms = int(settings.ttl_s * 1000)
        self._up = True
        self._down_since = 0.0
        self._retry_at = 0.0
        self._probe: asyncio.Task[None] | None = None
        self._held: dict[str, str] = {}
        """Our claims: lock key -> token, so a release never deletes another worker's claim."""
        self._warned: set[str] = set()
        self._closed = False

    # -- where keys go ----------------------------------------------------------------------------

    def scope(self, fingerprint: str) -> None:
        """File summaries under ``fingerprint`` (the manager calls this whenever its fingerprint changes)."""
        self.namespace = fingerprint

    def summaries_key(self, start: str) -> str:
        return f"{KEY_PREFIX}:{LAYOUT}:{self.namespace}:s:{start}"

    def claim_key(self, start: str, end: str) -> str:
        return f"{KEY_PREFIX}:{LAYOUT}:{self.namespace}:lock:{start}:{end}"

    @property
    def connected(self) -> bool:
        """False while Redis is unreachable and the local store answers alone."""
        return self._up and not self._closed

    # -- SummaryStore -----------------------------------------------------------------------------

    async def get(self, start: str, end: str) -> CachedSummary | None:
        entry = await self.local.get(start, end)
        if entry is not None or not self._available():
            return entry
        raw = await self._call("get", None, self._get, start, end)
        return self._entry(start, end, raw) if raw is not None else None

    async def starting_at(self, start: str) -> list[CachedSummary]:
        found = {entry.end: entry for entry in await self.local.starting_at(start)}
        if self._available():
            remote: dict[bytes, bytes] = await self._call("starting_at", {}, self._starting_at, start)
            for raw_end, raw in remote.items():
                end = raw_end.decode(errors="replace")
                if end not in found and (entry := self._entry(start, end, raw)) is not None:
                    found[end] = entry
        return [found[end] for end in sorted(found)]

    async def put(self, entry: CachedSummary) -> None:
        if not is_valid_entry(entry):
            log.warning("summary store %s: refusing a malformed entry %r", self.where, entry)
            return
        await self.local.put(entry)
        if self._available():
            await self._call("put", None, self._put, entry)

    def within(self, max_tokens: int) -> RedisStore:
        """Itself: this store serves any well-formed row, whatever its size (``CheckedStore`` bounds reads)."""
        return self

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._probe is not None:
            self._probe.cancel()
        try:
            await self._client.aclose()
        except Exception as exc:  # closing on a dead server or another loop: nothing left to release
            log.debug("summary store %s: close: %s", self.where, type(exc).__name__)
        await self.local.close()

    # -- Claims -----------------------------------------------------------------------------------

    async def claim(self, start: str, end: str, ttl_s: float) -> bool:
        if not self._available():
            return True  # no fleet to coordinate with: summarize locally
        key, token = self.claim_key(start, end), os.urandom(16).hex()
        won = await self._call("claim", None, self._claim, key, token, max(int(ttl_s * 1000), 1))
        if won:
            self._held[key] = token
        return won is not False  # None: Redis failed to answer, so there is no one to wait for

    async def release(self, start: str, end: str) -> None:
        key = self.claim_key(start, end)
        token = self._held.pop(key, None)
        if token is not None and self._available():
            await self._call("release", None, self._release, key, token)

    async def wait_for(self, start: str, end: str, until: float) -> CachedSummary | None:
        delay = _POLL_FIRST_S
        while self._available():
            polled = await self._call("wait", None, self._poll, start, end)
            if polled is None:
                return None
            claimed, raw = polled
            if raw is not None and (entry := self._entry(start, end, raw)) is not None:
                return entry
            left = until - now()
            if not claimed or left <= 0:
                return None
            await asyncio.sleep(min(delay, left))
            delay = min(delay * 2, _POLL_MAX_S)
        return None

    # -- housekeeping -----------------------------------------------------------------------------

    async def __aenter__(self) -> RedisStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"RedisStore({self.where!r}, ttl_s={self.settings.ttl_s:g}, local={self.local!r})"

    # -- the Redis side ---------------------------------------------------------------------------

    async def _get(self, start: str, end: str) -> bytes | None:
        pipe = self._client.pipeline(transaction=False)
        pipe.hget(self.summaries_key(start), end)
        self._touch(pipe, start)
        found: bytes | None = (await pipe.execute())[0]  # a pipeline's replies are untyped: HGET's is bytes or nil
        return found

    async def _starting_at(self, start: str) -> dict[bytes, bytes]:
        pipe = self._client.pipeline(transaction=False)
        pipe.hgetall(self.summaries_key(start))
        self._touch(pipe, start)
        rows: dict[bytes, bytes] = (await pipe.execute())[0]  # HGETALL's reply
        return rows

    async def _put(self, entry: CachedSummary) -> None:
        value = {"text": entry.text, "tokens": entry.tokens, "groups": entry.groups, "tier": entry.tier}
        pipe = self._client.pipeline(transaction=False)
        pipe.hset(self.summaries_key(entry.start), entry.end, json.dumps(value, ensure_ascii=False))
        self._touch(pipe, entry.start)
        await pipe.execute()

    def _touch(self, pipe: Any, start: str) -> None:
        if self._ttl_ms > 0:
            pipe.pexpire(self.summaries_key(start), self._ttl_ms)

    async def _claim(self, key: str, token: str, ttl_ms: int) -> bool:
        return bool(await self._client.set(key, token, nx=True, px=ttl_ms))

    async def _release(self, key: str, token: str) -> None:
        await self._release_script(keys=[key], args=[token])

    async def _poll(self, start: str, end: str) -> tuple[bool, bytes | None]:
        # The claim first: a holder stores its summary before releasing, so a claim seen gone here means the
        # summary (if any) is already there for the HGET after it.
        pipe = self._client.pipeline(transaction=True)
        pipe.exists(self.claim_key(start, end))
        pipe.hget(self.summaries_key(start), end)
        claimed, raw = await pipe.execute()
        return bool(claimed), raw

    def _entry(self, start: str, end: str, raw: object) -> CachedSummary | None:
        """A stored value as a summary, or None (logged once) when it is not one: anyone with access to the
        server can write there."""
        entry = None
        if isinstance(raw, bytes) and len(raw) <= MAX_VALUE_BYTES:
            try:
                value = json.loads(raw)
            except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested past the stack
                value = None
            if isinstance(value, dict) and set(value) == {"text", "tokens", "groups", "tier"}:
                entry = CachedSummary(start, end, value["text"], value["tokens"], value["groups"], value["tier"])
        if entry is None or not is_valid_entry(entry):
            if self._first("malformed"):
                log.warning("summary store %s: skipping malformed values (read as misses)", self.where)
            return None
        return entry

    # -- faults, degrading and coming back --------------------------------------------------------------

    async def _call(self, op: str, default: Any, fn: Any, *args: Any) -> Any:
        try:
            return await fn(*args)
        except (ResponseError, DataError) as exc:  # Redis answered, but no (out of memory, read-only replica...)
            if self._first(f"{op}:{type(exc).__name__}"):
                log.warning("summary store %s: %s failed (%s); carrying on", self.where, op, self._scrub(exc))
            return default
        except Exception as exc:  # no answer: connection refused or lost, timeout, auth, a closed loop
            await self._degrade(exc)
            return default

    def _available(self) -> bool:
        """Whether to ask Redis now; while it is away, starts a background check once ``retry_s`` has passed."""
        if self._closed:
            return False
        if self._up:
            return True
        if (self._probe is None or self._probe.done()) and now() >= self._retry_at:
            self._retry_at = now() + self.settings.retry_s
            self._probe = asyncio.get_running_loop().create_task(self._check())
        return False

    async def _degrade(self, exc: Exception) -> None:
        if not self._up:
            return
        self._up = False
        self._down_since = now()
        self._retry_at = self._down_since + self.settings.retry_s
        fallback = "sqlite" if isinstance(self.local, SqliteStore) else "memory"
        log.warning(
            "summary store %s unreachable (%s); using the local %s store, checking again every %gs",
            self.where,
            self._scrub(exc),
            fallback,
            self.settings.retry_s,
        )
        await self._emit(events.StoreDegraded(store="redis", reason=type(exc).__name__, fallback=fallback))

    async def _check(self) -> None:
        try:
            await self._client.ping()
        except Exception as exc:
            log.debug("summary store %s still unreachable: %s", self.where, type(exc).__name__)
            return
        if self._closed or self._up:
            return
        self._up = True
        down_s = round(now() - self._down_since, 3)
        log.info("summary store %s is reachable again after %.1fs; sharing summaries again", self.where, down_s)
        await self._emit(events.StoreRestored(store="redis", down_s=down_s))

    async def _emit(self, payload: events.Payload) -> None:
        emit = getattr(self.hooks, "emit", None)
        if emit is None:
            return
        try:
            await emit(payload.event, payload.to_dict())
        except Exception as exc:  # an observer's fault is not the agent's
            log.warning("hook for %s failed: %s", payload.event, type(exc).__name__)

    def _scrub(self, exc: BaseException) -> str:
        text = f"{type(exc).__name__}: {exc}"[:300]
        return text.replace(self._secret, "***") if self._secret else text

    def _first(self, kind: str) -> bool:
        if kind in self._warned:
            return False
        self._warned.add(kind)
        return True
