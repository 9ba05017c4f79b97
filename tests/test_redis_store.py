"""The Redis store against a real redis-server: layout, validation, claims, faults and reconnecting.

Every test starts its own server (``redis_server`` in conftest.py) and skips when the binary is missing.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
import signal
import time
from pathlib import Path

import pytest
import redis

from amplifier_module_context_summarize import create_manager, events, parse_config
from amplifier_module_context_summarize.benchmark.fleet import BESIDE_SUMMARIES
from amplifier_module_context_summarize.compaction.cache.flight import BACKGROUND_CLAIM_S, CLAIM_MARGIN_S, SingleFlight
from amplifier_module_context_summarize.stores import CachedSummary, MemoryStore, RedisSettings, SqliteStore
from amplifier_module_context_summarize.stores.redis_store import RedisStore
from amplifier_module_context_summarize.testing import EventRecorder, FakeProvider, RedisServer, mixed_history, replay
from amplifier_module_context_summarize.testing.redis_server import MISSING, free_port

BUDGET = 12_000
REPLY = "Goal: inspect and fix the project. Progress: files read, tests run, one fix made. Next: carry on."
STORE_LOG = "amplifier_module_context_summarize.stores.redis_store"


def entry(i: int, start: str = "s0", tier: int = 0) -> CachedSummary:
    return CachedSummary(start, f"e{i}", f"summary number {i}", 4, 2, tier)


def store_for(server: RedisServer, scope: str = "fp", **settings: object) -> RedisStore:
    store = RedisStore(RedisSettings(server.url, **settings), local=MemoryStore())  # type: ignore[arg-type]
    store.scope(scope)
    return store


def raw(server: RedisServer) -> redis.Redis:
    return redis.Redis.from_url(server.url)


def fleet_config(url: str, **extra: object) -> dict[str, object]:
    return {"max_tokens": BUDGET, "storage_url": url, **extra}


async def reference_views(history: list[dict]) -> list[list[dict]]:
    """The views a single worker with a memory store returns: what a fleet worker must return too."""
    return await replay(create_manager({"max_tokens": BUDGET}), history, FakeProvider(reply=REPLY), budget=BUDGET)


def degraded(recorder: EventRecorder) -> list[dict]:
    return [data for _, data in recorder.get_events(events.STORE_DEGRADED)]


def restored(recorder: EventRecorder) -> list[dict]:
    return [data for _, data in recorder.get_events(events.STORE_RESTORED)]


async def until_connected(store: RedisStore, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not store.connected:
        assert time.monotonic() < deadline, "the store did not reconnect"
        await store.get("probe", "probe")  # any use starts the background check once retry_s has passed
        await asyncio.sleep(0.02)


# ------------------------------------------------------------------ layout and sharing


async def test_another_host_reads_what_one_wrote_under_the_fingerprint(redis_server: RedisServer) -> None:
    async with store_for(redis_server, "fp1") as one, store_for(redis_server, "fp1") as other:
        await one.put(entry(1))
        await one.put(entry(2))
        assert await other.get("s0", "e1") == entry(1)  # its own local store is empty: this came from Redis
        assert await other.starting_at("s0") == [entry(1), entry(2)]
        assert await other.get("s0", "e3") is None
        async with store_for(redis_server, "fp2") as elsewhere:
            assert await elsewhere.get("s0", "e1") is None  # another summarizer's namespace
    client = raw(redis_server)
    assert client.keys("*") == [b"acs:v1:fp1:s:s0"]
    stored = {k.decode(): json.loads(v) for k, v in client.hgetall("acs:v1:fp1:s:s0").items()}
    assert stored["e1"] == {"text": "summary number 1", "tokens": 4, "groups": 2, "tier": 0}  # summaries only
    assert 0 < client.pttl("acs:v1:fp1:s:s0") <= 7 * 86_400_000


async def test_the_manager_scopes_keys_to_its_fingerprint(redis_server: RedisServer) -> None:
    manager = create_manager(fleet_config(redis_server.url))
    await replay(manager, mixed_history(60), FakeProvider(reply=REPLY), budget=BUDGET)
    keys = {k.decode() for k in raw(redis_server).keys("*")}
    assert keys and all(k.startswith(f"acs:v1:{manager.fingerprint}:s:") for k in keys)
    await manager.store.close()


async def test_ttl_is_set_on_write_refreshed_on_a_hit_and_zero_means_none(redis_server: RedisServer) -> None:
    client = raw(redis_server)
    async with store_for(redis_server, ttl_s=1000) as one, store_for(redis_server, ttl_s=1000) as other:
        await one.put(entry(1))
        client.pexpire("acs:v1:fp:s:s0", 200)
        assert await other.get("s0", "e1") == entry(1)
        assert client.pttl("acs:v1:fp:s:s0") > 900_000
    async with store_for(redis_server, "forever", ttl_s=0) as forever:
        await forever.put(entry(1))
        assert client.pttl("acs:v1:forever:s:s0") == -1
    async with store_for(redis_server, "brief", ttl_s=0.05) as brief, store_for(redis_server, "brief") as other:
        await brief.put(entry(1))
        await asyncio.sleep(0.15)
        assert await other.get("s0", "e1") is None


async def test_close_hangs_up_and_later_calls_are_misses(redis_server: RedisServer) -> None:
    client = raw(redis_server)
    alone = len(client.client_list())
    store = store_for(redis_server)
    await store.put(entry(1))
    assert len(client.client_list()) == alone + 1
    await store.close()
    await store.close()
    deadline = time.monotonic() + 5
    while len(client.client_list()) > alone:
        assert time.monotonic() < deadline, "the store's connection stayed open"
        await asyncio.sleep(0.01)
    assert await store.get("s0", "e1") is None and await store.starting_at("s0") == []
    await store.put(entry(2))
    assert await store.claim("s0", "e2", 10) and await store.wait_for("s0", "e2", time.monotonic() + 1) is None
    assert not client.hexists("acs:v1:fp:s:s0", "e2")


# ------------------------------------------------------------------ untrusted values


BAD_VALUES = [
    b"not json",
    b"\xff\xfe\x00",
    b"[1, 2, 3]",
    json.dumps({"text": "t", "tokens": 1, "groups": 1}).encode(),  # a field missing
    json.dumps({"text": "t", "tokens": 1, "groups": 1, "tier": 0, "extra": 1}).encode(),
    json.dumps({"text": "t", "tokens": 1.0, "groups": 1, "tier": 0}).encode(),
    json.dumps({"text": "t", "tokens": True, "groups": 1, "tier": 0}).encode(),
    json.dumps({"text": 5, "tokens": 1, "groups": 1, "tier": 0}).encode(),
    json.dumps({"text": "t", "tokens": 1, "groups": 0, "tier": 0}).encode(),
    json.dumps({"text": "x" * 10_000, "tokens": 1, "groups": 1, "tier": 0}).encode(),  # undercounted
    json.dumps({"text": "t", "tokens": 10**6, "groups": 1, "tier": 0}).encode(),
]


async def test_malformed_values_are_misses_logged_once(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    client = raw(redis_server)
    for i, value in enumerate(BAD_VALUES):
        client.hset("acs:v1:fp:s:s0", f"bad{i}", value)
    client.hset("acs:v1:fp:s:s0", "e1", json.dumps({"text": "summary number 1", "tokens": 4, "groups": 2, "tier": 0}))
    with caplog.at_level(logging.WARNING, logger=STORE_LOG):
        async with store_for(redis_server) as store:
            for i in range(len(BAD_VALUES)):
                assert await store.get("s0", f"bad{i}") is None, BAD_VALUES[i]
            assert await store.starting_at("s0") == [entry(1)]
            assert store.connected
    assert sum("malformed" in r.getMessage() for r in caplog.records) == 1


async def test_a_key_of_another_type_is_a_miss_not_an_outage(redis_server: RedisServer) -> None:
    raw(redis_server).set("acs:v1:fp:s:s0", "someone else's string")
    async with store_for(redis_server) as store:
        assert await store.get("s0", "e1") is None
        assert await store.starting_at("s0") == []
        await store.put(entry(1))  # WRONGTYPE: not stored in Redis, but kept locally
        assert await store.get("s0", "e1") == entry(1)
        assert store.connected


async def test_a_full_server_refuses_writes_without_an_outage(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    if RedisServer.binary() is None:
        pytest.skip(MISSING)
    options = ["--maxmemory", "1mb", "--maxmemory-policy", "noeviction"]
    with RedisServer.started(tmp_path / "full", args=options) as server:
        big = CachedSummary("s0", "big", "word " * 100_000, 100_000, 3)
        with caplog.at_level(logging.WARNING, logger=STORE_LOG):
            async with store_for(server) as writer, store_for(server) as reader:
                await writer.put(big)
                await writer.put(big)
                assert await reader.get("s0", "big") is None
                assert writer.connected and reader.connected
        assert sum("put failed" in r.getMessage() for r in caplog.records) == 1


# ------------------------------------------------------------------ claims


async def test_a_claim_is_exclusive_expires_and_only_its_holder_releases_it(redis_server: RedisServer) -> None:
    client = raw(redis_server)
    async with store_for(redis_server) as one, store_for(redis_server) as other:
        assert await one.claim("s0", "e1", 10)
        assert not await other.claim("s0", "e1", 10)
        await other.release("s0", "e1")  # not its claim: left alone
        assert client.exists("acs:v1:fp:lock:s0:e1")
        await one.release("s0", "e1")
        assert not client.exists("acs:v1:fp:lock:s0:e1")
        assert await other.claim("s0", "e1", 10)
        assert await one.claim("s0", "e2", 0.05)
        await asyncio.sleep(0.1)
        assert await other.claim("s0", "e2", 10)  # the first holder died: its claim ran out


async def test_a_waiter_gets_the_summary_or_learns_the_claim_ended_without_one(redis_server: RedisServer) -> None:
    async with store_for(redis_server) as one, store_for(redis_server) as other:
        assert await one.claim("s0", "e1", 10)
        waiting = asyncio.create_task(other.wait_for("s0", "e1", time.monotonic() + 5))
        await asyncio.sleep(0.05)
        await one.put(entry(1))
        await one.release("s0", "e1")
        assert await waiting == entry(1)

        assert await one.claim("s0", "e2", 10)
        waiting = asyncio.create_task(other.wait_for("s0", "e2", time.monotonic() + 5))
        await asyncio.sleep(0.05)
        started = time.monotonic()
        await one.release("s0", "e2")  # its summary failed
        assert await waiting is None and time.monotonic() - started < 1

        assert await one.claim("s0", "e3", 10)
        started = time.monotonic()
        assert await other.wait_for("s0", "e3", started + 0.2) is None
        assert 0.15 < time.monotonic() - started < 1.5


class ClaimsLog(MemoryStore):
    """A store with claims that are always held by someone else who never finishes (or cannot be waited on)."""

    def __init__(self, grant: bool = False) -> None:
        super().__init__()
        self.grant = grant
        self.calls: list[str] = []
        self.ttls: list[float] = []

    async def claim(self, start: str, end: str, ttl_s: float) -> bool:
        self.calls.append("claim")
        self.ttls.append(ttl_s)
        return self.grant

    async def release(self, start: str, end: str) -> None:
        self.calls.append("release")

    async def wait_for(self, start: str, end: str, until: float) -> CachedSummary | None:
        self.calls.append("wait")
        return None


async def test_single_flight_is_bounded_and_a_no_op_without_claims() -> None:
    assert await SingleFlight(MemoryStore()).acquire(("s0", "e1"), time.monotonic() + 30) is None
    stuck = ClaimsLog()
    flight = SingleFlight(stuck)
    assert await flight.acquire(("s0", "e1"), time.monotonic() + 30) is None
    assert stuck.calls == ["claim", "wait"] * 3 and flight.waits == 3  # then it summarizes, unclaimed
    assert all(25 < ttl <= 35 for ttl in stuck.ttls)  # the time left to the deadline, plus the margin
    late = ClaimsLog()
    assert await SingleFlight(late).acquire(("s0", "e1"), time.monotonic() - 1) is None and late.calls == []
    undated = ClaimsLog()  # a compaction without a deadline waits as long as a background claim lasts
    assert await SingleFlight(undated).acquire(("s0", "e1"), None) is None and undated.calls == ["claim", "wait"] * 3
    assert all(BACKGROUND_CLAIM_S < ttl <= BACKGROUND_CLAIM_S + CLAIM_MARGIN_S + 1 for ttl in undated.ttls)
    granted = ClaimsLog(grant=True)
    await granted.put(entry(1))  # stored by another worker between our miss and our claim
    flight = SingleFlight(granted)
    assert await flight.acquire(("s0", "e1"), time.monotonic() + 30) == entry(1)
    assert granted.calls == ["claim", "release"] and flight.served == 1
    assert not await flight.try_acquire(("s0", "e1")) and await flight.try_acquire(("s0", "e2"))


class GatedProvider(FakeProvider):
    """Answers only once the gate opens, so another worker arrives while the summary is being written."""

    def __init__(self, gate: asyncio.Event) -> None:
        super().__init__(reply=REPLY)
        self.gate = gate
        self.arrived = 0

    async def complete(self, request, **kwargs):
        self.arrived += 1
        await self.gate.wait()
        return await super().complete(request, **kwargs)


async def test_two_workers_needing_one_segment_at_once_pay_for_it_once(redis_server: RedisServer) -> None:
    history = mixed_history(40)
    gate = asyncio.Event()
    first, second = (create_manager(fleet_config(redis_server.url)) for _ in range(2))
    for manager in (first, second):
        await manager.set_messages(history)
    first_provider, second_provider = GatedProvider(gate), GatedProvider(gate)
    first_view = asyncio.create_task(first.get_messages_for_request(BUDGET, first_provider))
    while not first_provider.arrived:
        await asyncio.sleep(0.005)
    second_view = asyncio.create_task(second.get_messages_for_request(BUDGET, second_provider))
    while not second.segments.flight.waits:
        await asyncio.sleep(0.005)
    gate.set()
    assert await second_view == await first_view
    keys = [k for k in raw(redis_server).keys("acs:v1:*:s:*") if not any(b in k for b in BESIDE_SUMMARIES)]
    stored = sum(len(raw(redis_server).hkeys(k)) for k in keys)
    assert len(first_provider.requests) + len(second_provider.requests) == stored >= 1
    assert second.stats["cache_hits"] >= 1 and second.segments.flight.served >= 1
    assert not raw(redis_server).keys("acs:v1:*:lock:*")  # every claim released
    for manager in (first, second):
        await manager.store.close()


# ------------------------------------------------------------------ faults


@pytest.mark.slow
@pytest.mark.parametrize("local", ["memory", "sqlite"])
async def test_redis_down_at_mount_degrades_once_to_the_local_store(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, local: str
) -> None:
    history = mixed_history(60)
    recorder = EventRecorder()
    config = fleet_config(f"redis://127.0.0.1:{free_port()}/0", storage_retry_s=60)
    if local == "sqlite":
        config["storage_path"] = str(tmp_path / "local.sqlite")
    with caplog.at_level(logging.WARNING, logger=STORE_LOG):
        manager = create_manager(config, hooks=recorder)
        views = await replay(manager, history, FakeProvider(reply=REPLY), budget=BUDGET)
    assert views == await reference_views(history)
    assert degraded(recorder) == [{"store": "redis", "reason": "ConnectionError", "fallback": local}]
    assert len([r for r in caplog.records if r.name == STORE_LOG]) == 1
    assert not manager.store.connected
    if local == "sqlite":
        assert isinstance(manager.store.local, SqliteStore) and await manager.store.local.count() >= 1
    await manager.store.close()


async def test_it_reconnects_when_redis_is_back_but_checks_at_most_every_retry_s(redis_server: RedisServer) -> None:
    redis_server.stop()
    recorder = EventRecorder()
    patient = RedisStore(RedisSettings(redis_server.url, retry_s=60), local=MemoryStore(), hooks=recorder)
    eager = RedisStore(RedisSettings(redis_server.url, retry_s=0.05), local=MemoryStore(), hooks=recorder)
    for store in (patient, eager):
        await store.put(entry(1))
        assert not store.connected
    redis_server.start()
    await until_connected(eager)
    for _ in range(10):
        await patient.get("s0", "e1")
        await asyncio.sleep(0.02)
    assert not patient.connected  # its next check is a minute away
    assert [d["reason"] for d in degraded(recorder)] == ["ConnectionError", "ConnectionError"]
    assert len(restored(recorder)) == 1 and restored(recorder)[0]["down_s"] > 0
    await eager.put(entry(2))
    assert raw(redis_server).hexists("acs:v1:shared:s:s0", "e2")
    for store in (patient, eager):
        await store.close()


async def test_a_stalled_server_times_out_into_the_local_store(redis_server: RedisServer) -> None:
    recorder = EventRecorder()
    store = RedisStore(
        RedisSettings(redis_server.url, timeout_s=0.2, retry_s=0.05), local=MemoryStore(), hooks=recorder
    )
    await store.put(entry(1))
    assert redis_server.process is not None
    os.kill(redis_server.process.pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        assert await store.get("s0", "e1") == entry(1)  # the local copy answers first
        assert await store.get("s0", "e2") is None
        assert time.monotonic() - started < 1.0
        assert [d["reason"] for d in degraded(recorder)] == ["TimeoutError"]
    finally:
        os.kill(redis_server.process.pid, signal.SIGCONT)
    await until_connected(store)
    await store.close()


async def test_redis_killed_and_restarted_mid_run_loses_no_view_and_raises_nothing(
    redis_server: RedisServer,
) -> None:
    history = mixed_history(120)
    recorder = EventRecorder()
    manager = create_manager(fleet_config(redis_server.url, storage_retry_s=0.05), hooks=recorder)
    provider = FakeProvider(reply=REPLY)
    views, requests = [], sum(1 for i in range(len(history) - 1) if history[i + 1]["role"] == "assistant")
    for i, message in enumerate(history):
        await manager.add_message(message)
        if i + 1 < len(history) and history[i + 1]["role"] == "assistant":
            if len(views) == requests // 3:
                redis_server.kill()
            if len(views) == 2 * requests // 3:
                redis_server.start()
                await until_connected(manager.store)  # so the last third's summaries go to Redis again
            views.append(await manager.get_messages_for_request(BUDGET, provider))
    assert views == await reference_views(history)
    assert len(degraded(recorder)) == 1 and len(restored(recorder)) == 1
    assert raw(redis_server).keys("acs:v1:*:s:*"), "summaries made after the restart are shared again"
    await manager.store.close()


# ------------------------------------------------------------------ the password


async def test_the_password_comes_from_the_environment_and_never_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    if RedisServer.binary() is None:
        pytest.skip(MISSING)
    secret, wrong = secrets.token_hex(16), secrets.token_hex(16)
    monkeypatch.setenv("ACS_TEST_REDIS_PASSWORD", secret)
    monkeypatch.setenv("ACS_TEST_REDIS_WRONG", wrong)
    with RedisServer.started(tmp_path / "auth", args=["--requirepass", secret]) as server:
        recorder = EventRecorder()
        caplog.set_level(logging.DEBUG)
        good = create_manager(fleet_config(server.url, storage_password_env="ACS_TEST_REDIS_PASSWORD"), hooks=recorder)
        await replay(good, mixed_history(60), FakeProvider(reply=REPLY), budget=BUDGET)
        assert good.store.connected and redis.Redis.from_url(server.url, password=secret).keys("acs:*")
        bad = create_manager(fleet_config(server.url, storage_password_env="ACS_TEST_REDIS_WRONG"), hooks=recorder)
        none = create_manager(fleet_config(server.url), hooks=recorder)
        for manager in (bad, none):
            await replay(manager, mixed_history(60), FakeProvider(reply=REPLY), budget=BUDGET)
            assert not manager.store.connected
        assert [d["reason"] for d in degraded(recorder)] == ["AuthenticationError", "AuthenticationError"]
        shown = " ".join([caplog.text, repr(recorder.events), *(repr(m) for m in (good, bad, none))])
        shown += " ".join(repr(m.store) + repr(m.config) for m in (good, bad, none))
        assert secret not in shown and wrong not in shown
        for manager in (good, bad, none):
            await manager.store.close()


ACL_COMMANDS = "+ping +hget +hgetall +hset +pexpire +set +get +del +exists +multi +exec +evalsha +script|load"
"""What the README's ACL line grants: the module needs nothing more."""


async def test_an_acl_user_limited_to_the_module_keys_and_commands_is_enough(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if RedisServer.binary() is None:
        pytest.skip(MISSING)
    secret = secrets.token_hex(16)
    monkeypatch.setenv("ACS_TEST_REDIS_PASSWORD", secret)
    user = ["--user", "fleet", "on", f">{secret}", "~acs:*", "resetchannels", *ACL_COMMANDS.split()]
    with RedisServer.started(tmp_path / "acl", args=[*user, "--user", "default", "off"]) as server:
        url = server.url.replace("redis://", "redis://fleet@")
        recorder = EventRecorder()
        config = fleet_config(url, storage_password_env="ACS_TEST_REDIS_PASSWORD")
        managers = [create_manager(config, hooks=recorder) for _ in range(2)]
        await replay(managers[0], mixed_history(40), FakeProvider(reply=REPLY), budget=BUDGET)
        other = FakeProvider(reply=REPLY)
        await managers[1].set_messages(mixed_history(40))
        await managers[1].get_messages_for_request(BUDGET, other)
        store = managers[1].store
        assert await store.claim("s0", "e1", 10) and not await managers[0].store.claim("s0", "e1", 10)
        await store.release("s0", "e1")
        assert await managers[0].store.claim("s0", "e1", 10)
        assert other.requests == [] and not degraded(recorder)
        for manager in managers:
            assert manager.store.connected
            await manager.store.close()


def test_a_missing_password_variable_fails_at_mount_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ACS_TEST_UNSET_VARIABLE", raising=False)
    with pytest.raises(ValueError, match="storage_password_env.*ACS_TEST_UNSET_VARIABLE is not set"):
        create_manager({"storage_url": "redis://127.0.0.1:6379/0", "storage_password_env": "ACS_TEST_UNSET_VARIABLE"})


@pytest.mark.parametrize(
    "url",
    [
        "redis://:hunter2-secret@cache:6379/0",
        "redis://worker:hunter2-secret@cache/0",
        "rediss://cache:6380/0?password=hunter2-secret",
        "http://:hunter2-secret@cache",
        "redis://:hunter2-secret@cache:notaport/0",
    ],
)
def test_a_url_with_a_password_is_refused_without_repeating_it(url: str) -> None:
    with pytest.raises(ValueError, match="config key 'storage_url'") as error:
        parse_config({"storage_url": url})
    assert "hunter2" not in str(error.value)


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://cache:6379", "redis:// or rediss://"),
        ("redis://", "must name a host"),
        ("redis://cache:6379/zero", "database by number"),
        ("redis://cache:0/0", "port 0"),
    ],
)
def test_other_bad_urls_say_what_is_wrong(url: str, problem: str) -> None:
    with pytest.raises(ValueError, match=f"config key 'storage_url': .*{problem}"):
        parse_config({"storage_url": url})


def test_good_urls_and_the_settings_they_make() -> None:
    config = parse_config({"storage_url": "rediss://worker@cache.internal:6380/2", "storage_password_env": "PW"})
    assert config.storage_url == "rediss://worker@cache.internal:6380/2" and config.storage_ttl_s == 604_800
    with pytest.raises(ValueError, match="config key 'storage_password_env': needs storage_url"):
        parse_config({"storage_password_env": "PW"})
