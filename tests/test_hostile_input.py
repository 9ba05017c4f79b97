"""Reliability under hostile input (issue 13): every case is a clear error naming the culprit, or handled safely.

* A result that answers a call while also carrying a stray part keeps its answer; only the stray part goes.
* Text that is not valid UTF-8 (lone surrogates) is hashed, counted, stored and sent safely (as U+FFFD on
  the wire); ``set_messages`` builds the new history aside and installs it only once whole.
* A key pasted anywhere in the config is never echoed by an error or a repr.
* Cyclic, too deep or exponentially shared content is refused before anything is stored.
* The SQLite file is never created through a link, and one others could write is refused.
* Rows from any store are validated like any other input; an oversized summary is a miss.
* Provider-reported limits of the wrong type are ignored; a provider's own ``CancelledError`` is a fault.
* The CLI reads only regular files, at most ``MAX_FILE_BYTES``, and fails in one line naming the file.
* ``compaction_deadline_s`` bounds all a request waits for (virtual clock); the cooldown map is bounded.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import math
import os
import stat
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from virtual_clock import VirtualClock

from amplifier_module_context_summarize import create_manager
from amplifier_module_context_summarize.__main__ import main
from amplifier_module_context_summarize.backends.openai_backend import OpenAIBackend
from amplifier_module_context_summarize.compaction.cache.segments import MAX_REMEMBERED_FAILURES
from amplifier_module_context_summarize.config import Config, SummarizerConfig, parse_config
from amplifier_module_context_summarize.core.history import History
from amplifier_module_context_summarize.core.invariants import check_view
from amplifier_module_context_summarize.core.messages import (
    MAX_NESTING,
    content_hash,
    encodable,
    group_messages,
    sanitize,
    validate_message,
)
from amplifier_module_context_summarize.evaluation.cassette import Cassette
from amplifier_module_context_summarize.evaluation.loader import CorpusError, load_corpus
from amplifier_module_context_summarize.stores import CachedSummary, MemoryStore, SqliteStore
from amplifier_module_context_summarize.summarizer.extractive import extractive_summary
from amplifier_module_context_summarize.testing import (
    EventRecorder,
    FakeProvider,
    mixed_history,
    replay,
    tool_call,
    tool_result,
)
from amplifier_module_context_summarize.working_set.definitions import names_in
from amplifier_module_context_summarize.working_set.facts import extract
from amplifier_module_context_summarize.working_set.outcomes import error_line, looks_failed

BUDGET = 6_000
SECRET = "sk-ant-api03-SECRET7731xyz"
LONE = "\ud800"


def make(config: dict[str, Any] | None = None, **kwargs: Any):
    return create_manager({"max_tokens": 200_000, **(config or {})}, **kwargs)


def all_strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in all_strings(k) + all_strings(v)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in all_strings(v)]
    return []


def sendable(view: list[dict[str, Any]]) -> bool:
    return all(encodable(s) for s in all_strings(view))


def post_compacts(recorder: EventRecorder) -> list[dict[str, Any]]:
    return recorder.payloads("context:post_compact")


# ------------------------------------------------------------------------------- 1. stray result parts

CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [{"id": "a", "function": {"name": "ls", "arguments": "{}"}}],
}
AMP_RESULT = {"type": "tool_result", "tool_call_id": "a", "output": "the answer"}
STRAY = {"type": "tool_result", "tool_call_id": "ghost", "output": "stray"}

STRAY_CASES = {
    "result blocks without tool_call_id, one stray": [CALL, {"role": "tool", "content": [AMP_RESULT, STRAY]}],
    "stray tool_call_id, answering block": [CALL, {"role": "tool", "tool_call_id": "ghost", "content": [AMP_RESULT]}],
    "answering tool_call_id, only stray blocks": [CALL, {"role": "tool", "tool_call_id": "a", "content": [STRAY]}],
    "answering tool_call_id and a stray block": [
        CALL,
        {"role": "tool", "tool_call_id": "a", "content": [AMP_RESULT, STRAY]},
    ],
    "second result for an answered call": [
        {"role": "assistant", "content": None, "tool_calls": [{"id": "a"}, {"id": "b"}]},
        {"role": "tool", "tool_call_id": "a", "content": "first"},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "a", "content": "again"},
                {"type": "tool_result", "tool_use_id": "b", "content": "b"},
            ],
        },
    ],
}


@pytest.mark.parametrize("name", list(STRAY_CASES))
def test_a_stray_result_part_goes_and_the_answer_stays(name):
    group = STRAY_CASES[name]
    assert len(group_messages(group)) == 1, "the answer joins its call's group"
    view = sanitize(group)
    assert check_view([{"role": "user", "content": "go"}, *view]) == []
    assert view[0]["tool_calls"], "the call is still answered, so it stays"
    assert all("ghost" not in json.dumps(m) for m in view)


def test_a_call_and_its_result_in_one_assistant_message_are_both_left_out():
    message = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "doing it myself"},
            {"type": "tool_use", "id": "a", "name": "ls", "input": {}},
            {"type": "tool_result", "tool_use_id": "a", "content": "r"},
        ],
    }
    view = sanitize([message])
    assert view == [{"role": "assistant", "content": [{"type": "text", "text": "doing it myself"}]}]
    followed = sanitize([message, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a"}]}])
    assert check_view([{"role": "user", "content": "go"}, *followed]) == []
    assert [b["type"] for b in followed[0]["content"]] == ["text", "tool_use"]


@pytest.mark.parametrize("name", list(STRAY_CASES))
async def test_views_with_stray_results_are_valid_and_keep_the_answer(name):
    history = [{"role": "user", "content": "go"}, *STRAY_CASES[name], {"role": "assistant", "content": "done"}]
    for end in range(len(history) - 1, len(history) + 1):  # the group newest (open), then closed
        manager = make()
        await manager.set_messages(history[:end])
        view = await manager.get_messages_for_request(BUDGET)
        assert check_view(view) == []
        assert any(m.get("tool_calls") for m in view)


# ------------------------------------------------------------------------------- 3. lone surrogates


def surrogate_history(n: int = 40) -> list[dict[str, Any]]:
    history = mixed_history(n)
    history[3] = {"role": "user", "content": f"bad {LONE} text and \udcff more"}
    history.insert(5, {"role": "system", "content": f"reminder {LONE}"})
    return history


async def test_lone_surrogates_are_summarized_cached_and_sent_as_replacement_characters():
    recorder, store, provider = EventRecorder(), MemoryStore(), FakeProvider()
    manager = make(hooks=recorder, store=store)
    history = surrogate_history()
    views = await replay(manager, history, provider, budget=BUDGET)
    posts = post_compacts(recorder)
    assert posts and all(p["fallback"] is None for p in posts), [p["fallback"] for p in posts]
    assert all(sendable(v) for v in views)
    assert "bad \ufffd text" in json.dumps(views[1], ensure_ascii=False)
    prompts = [m.content for r in provider.requests for m in r.messages]
    assert all(encodable(p) for p in prompts)
    assert await manager.get_messages() == history, "history keeps exactly what was added"
    resumed = make({"max_tokens": BUDGET}, store=store)  # resumed under the budget the session ran at
    await resumed.set_messages(history)
    assert resumed.state == manager.state and resumed.state.segments


def test_surrogates_hash_distinctly_and_count_like_replacement_characters():
    assert content_hash(LONE) != content_hash("\ufffd") != content_hash("\udc80")
    assert content_hash("\ud83d\ude00") != content_hash("😀")  # a split pair is not the character
    counter = make().counter
    assert counter.count_text(f"a{LONE}b") == counter.count_text("a\ufffdb")


async def test_sqlite_caches_a_summary_holding_a_surrogate(tmp_path):
    recorder = EventRecorder()
    provider = FakeProvider(reply=f"Summary with a lone {LONE} surrogate, kept short.")
    config = {"storage_path": str(tmp_path / "cache.sqlite")}
    manager = make(config, hooks=recorder)
    history = mixed_history(40)
    await replay(manager, history, provider, budget=BUDGET)
    assert all(p["fallback"] is None for p in post_compacts(recorder))
    assert await manager.store.count() >= 1
    again = FakeProvider()
    resumed = make(config)
    await resumed.set_messages(history)
    view = await resumed.get_messages_for_request(BUDGET, again)
    assert not again.requests and resumed.state.segments and sendable(view)
    await manager.store.close()
    await resumed.store.close()


async def test_sqlite_store_stores_surrogates_as_replacement_and_never_raises(tmp_path):
    async with SqliteStore(tmp_path / "s.sqlite") as store:
        await store.put(CachedSummary("k", "e", f"text {LONE}", 3, 1))
        assert (await store.get("k", "e")).text == "text \ufffd"
        assert await store.get(f"k{LONE}", "e") is None
        assert await store.starting_at(f"k{LONE}") == []
        await store.put(CachedSummary(f"k{LONE}", "e", "x", 1, 1))  # a key SQLite cannot hold: refused


@pytest.mark.slow
async def test_prefetch_with_a_surrogate_pays_once_per_span():
    recorder, provider = EventRecorder(), FakeProvider()
    config = {"prefetch": True, "summary_budget_ratio": 0.9}
    manager = make(config, hooks=recorder)
    await replay(manager, surrogate_history(80), provider, budget=BUDGET)
    background = recorder.payloads("context:summary_prefetched")
    failed = recorder.payloads("context:summary_failed")
    assert background and not failed
    calls = manager.stats["provider_calls"]
    assert calls == len(provider.requests) == len({r.messages[-1].content for r in provider.requests})
    assert manager.stats["cache_hits"] > 0, "compactions took prefetched summaries from the cache"


# ------------------------------------------------------------------------------- set_messages installs whole


async def test_set_messages_keeps_the_old_history_when_the_new_one_fails(monkeypatch):
    manager = make()
    old = mixed_history(10)
    await manager.set_messages(old)
    cyclic: dict[str, Any] = {"type": "tool_result", "tool_use_id": "x", "content": []}
    cyclic["content"].append(cyclic)
    new = [*mixed_history(3), {"role": "user", "content": [cyclic]}]
    with pytest.raises(ValueError, match=rf"messages\[{len(new) - 1}\]: message field 'content' contains itself"):
        await manager.set_messages(new)
    assert await manager.get_messages() == old

    real_append = History.append

    def failing_append(self, message):
        if message.get("content") == "boom":
            raise RuntimeError("counting failed")
        real_append(self, message)

    monkeypatch.setattr(History, "append", failing_append)
    with pytest.raises(RuntimeError):
        await manager.set_messages([*mixed_history(4), {"role": "user", "content": "boom"}])
    assert await manager.get_messages() == old
    assert check_view(await manager.get_messages_for_request(BUDGET)) == []


async def test_set_messages_with_a_surrogate_against_a_warm_store():
    store, history = MemoryStore(), mixed_history(40)
    await replay(make(store=store), history, FakeProvider(), budget=BUDGET)
    changed = [dict(m) for m in history]
    changed[1] = {**changed[1], "content": f"changed {LONE}"}
    resumed = make(store=store)
    await resumed.set_messages(changed)
    assert await resumed.get_messages() == changed
    assert sendable(await resumed.get_messages_for_request(BUDGET, FakeProvider()))


# ------------------------------------------------------------------------------- 4. keys in the config


def no_secret(text: str) -> bool:
    return SECRET not in text and "SECRET7731" not in text


@pytest.mark.parametrize(
    "raw",
    [
        {"summarizer": {"api_key": SECRET}},
        {"summarizer": {"provider": "openai", "api_key_env": SECRET}},
        {"summarizer": {"token": SECRET}},
        {"api_key": SECRET},
        # prompt_dir, storage_path, spill_path and token_encoding name a folder, a file, a folder, an encoding: shown
        # as they are
        *(
            {key: SECRET}
            for key in (f.name for f in dataclasses.fields(Config))
            if key not in ("summarizer", "prompt_dir", "storage_path", "spill_path", "token_encoding")
        ),
        *(
            {"summarizer": {key: SECRET}}
            for key in (f.name for f in dataclasses.fields(SummarizerConfig))
            if key not in ("model", "base_url", "session_provider")
        ),
    ],
)
def test_config_errors_name_the_key_but_never_echo_a_value(raw):
    try:
        create_manager(raw)
    except ValueError as exc:
        assert no_secret(str(exc)) and "config key '" in str(exc)
    else:
        assert no_secret(repr(parse_config(raw)))


def test_reprs_hide_keys_in_api_key_env_and_base_url():
    cfg = SummarizerConfig(
        provider="openai", api_key_env=SECRET, base_url=f"https://user:{SECRET}@llm.example/v1?key={SECRET}"
    )
    assert no_secret(repr(cfg)) and no_secret(repr(Config(summarizer=cfg)))
    assert "llm.example/v1" in repr(cfg)
    backend = OpenAIBackend("m", None, base_url=cfg.base_url)
    assert no_secret(repr(backend))
    manager = create_manager({"summarizer": {"provider": "openai", "base_url": cfg.base_url}})
    assert no_secret(repr(manager.summarizer.backend)) and no_secret(repr(manager.config))
    from amplifier_module_context_summarize.backends.keys import missing_key

    assert no_secret(str(missing_key(cfg)))
    assert "MY_KEY" in str(missing_key(dataclasses.replace(cfg, api_key_env="MY_KEY")))


# ------------------------------------------------------------------------------- 5. cyclic or deep content


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth - 1):
        value = [value]
    return value


async def test_cyclic_tool_result_is_refused_before_anything_is_stored():
    manager = make()
    await manager.add_message({"role": "user", "content": "go"})
    await manager.add_message({"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "x"}]})
    cyclic: dict[str, Any] = {"type": "tool_result", "tool_use_id": "a", "content": []}
    cyclic["content"].append(cyclic)
    with pytest.raises(ValueError, match="message field 'content' contains itself"):
        await manager.add_message({"role": "user", "content": [cyclic]})
    history = manager.history
    assert len(history.messages) == 2 == history.groups[-1].end
    await manager.add_message({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a"}]})
    assert check_view(await manager.get_messages_for_request(BUDGET)) == []


@pytest.mark.parametrize("field", ["content", "metadata", "tool_calls"])
async def test_nesting_past_the_limit_is_a_value_error_naming_the_field(field):
    manager = make()
    shallow = {"role": "user", "content": "x", field: [{"id": "c", "deep": nested(MAX_NESTING - 2)}]}
    deep = {"role": "user", "content": "x", field: [{"id": "c", "deep": nested(600)}]}
    if field == "content":
        shallow[field] = [{"type": "text", "text": "x", "deep": nested(MAX_NESTING - 2)}]
        deep[field] = [{"type": "text", "text": "x", "deep": nested(600)}]
    await manager.add_message(shallow)
    with pytest.raises(ValueError, match=f"message field '{field}' is nested more than {MAX_NESTING} levels"):
        await manager.add_message(deep)
    assert len(manager.history.messages) == 1


def test_exponentially_shared_content_is_refused_quickly():
    shared: Any = ["x"]
    for _ in range(60):
        shared = [shared, shared]  # 2**60 values once expanded, 61 objects
    with pytest.raises(ValueError, match="message field 'content' holds more than"):
        validate_message({"role": "user", "content": [{"type": "text", "text": "x", "data": shared}]})
    twice = {"command": "ls"}  # sharing itself is fine (loop-streaming stores a call twice)
    validate_message(
        {
            "role": "assistant",
            "content": [{"type": "tool_call", "id": "c", "input": twice}],
            "tool_calls": [{"id": "c", "tool": "bash", "arguments": twice}],
        }
    )


@pytest.mark.parametrize(
    ("message", "field"),
    [
        ({"role": "tool", "tool_call_id": 7, "content": "x"}, "tool_call_id"),
        ({"role": "tool", "tool_call_id": ["x"], "content": "x"}, "tool_call_id"),
        ({"role": "assistant", "tool_calls": [{"id": {"x": 1}}]}, r"tool_calls\[0\]\.id"),
        ({"role": "user", "content": [{"type": "tool_result", "tool_use_id": 3}]}, r"content\[0\]\.tool_use_id"),
    ],
)
def test_ids_that_are_not_strings_are_refused(message, field):
    with pytest.raises(ValueError, match=f"message field '{field}' must be a string id"):
        validate_message(message)


def test_a_huge_integer_does_not_break_counting_or_hashing():
    manager = make()
    message = {"role": "tool", "tool_call_id": "c", "content": [{"type": "tool_result", "output": 10**5000}]}
    validate_message(message)
    assert manager.counter.count_message(message) > 0
    history = History(manager.counter, "fp")
    history.append({"role": "user", "content": "x"})
    history.append(message)
    history.append({"role": "user", "content": "y"})
    assert history.chain_at(2)


# ------------------------------------------------------------------------------- 6. the SQLite file


@pytest.fixture
def cache_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    return folder


async def refused(path: Path, caplog: pytest.LogCaptureFixture, reason: str) -> None:
    with caplog.at_level(logging.WARNING):
        async with SqliteStore(path) as store:
            await store.put(CachedSummary("s", "e", "summary", 2, 1))
            assert await store.get("s", "e") is None
    assert any(reason in r.getMessage() for r in caplog.records), [r.getMessage() for r in caplog.records]


async def test_a_dangling_link_is_refused_and_its_target_never_created(cache_dir, caplog):
    target = cache_dir / "elsewhere.sqlite"
    link = cache_dir / "cache.sqlite"
    link.symlink_to(target)
    await refused(link, caplog, "symbolic link")
    assert not target.exists() and not Path(f"{target}-wal").exists() and not Path(f"{target}-shm").exists()


async def test_a_link_to_a_real_file_and_a_linked_wal_are_refused(cache_dir, caplog):
    real = cache_dir / "real.sqlite"
    async with SqliteStore(real) as store:
        await store.put(CachedSummary("s", "e", "summary", 2, 1))
    link = cache_dir / "link.sqlite"
    link.symlink_to(real)
    await refused(link, caplog, "symbolic link")
    other = cache_dir / "other.sqlite"
    Path(f"{other}-wal").symlink_to(cache_dir / "stolen-wal")
    await refused(other, caplog, "symbolic link")
    assert not (cache_dir / "stolen-wal").exists()


async def test_a_file_of_another_user_or_writable_by_others_is_refused(cache_dir, caplog, monkeypatch):
    path = cache_dir / "cache.sqlite"
    async with SqliteStore(path) as store:
        await store.put(CachedSummary("s", "e", "summary", 2, 1))
    path.chmod(0o666)
    await refused(path, caplog, "writable by other users")
    path.chmod(0o600)
    monkeypatch.setattr(os, "geteuid", lambda: os.stat(path).st_uid + 1)
    await refused(path, caplog, "belongs to another user")


async def test_a_world_readable_file_is_used_with_a_warning(cache_dir, caplog):
    path = cache_dir / "cache.sqlite"
    async with SqliteStore(path) as store:
        await store.put(CachedSummary("s", "e", "summary", 2, 1))
    path.chmod(0o644)
    with caplog.at_level(logging.WARNING):
        async with SqliteStore(path) as store:
            assert (await store.get("s", "e")).text == "summary"
    assert any("readable by other users" in r.getMessage() for r in caplog.records)


async def test_new_files_are_created_owner_only_whatever_the_umask(cache_dir):
    old = os.umask(0)
    try:
        path = cache_dir / "fresh.sqlite"
        async with SqliteStore(path) as store:
            await store.put(CachedSummary("s", "e", "summary", 2, 1))
            for suffix in ("", "-wal", "-shm"):
                assert stat.S_IMODE(os.stat(f"{path}{suffix}").st_mode) == 0o600
    finally:
        os.umask(old)


async def test_an_unsafe_storage_path_keeps_the_agent_loop_alive(cache_dir, caplog):
    link = cache_dir / "cache.sqlite"
    link.symlink_to(cache_dir / "target.sqlite")
    manager = make({"storage_path": str(link)})
    with caplog.at_level(logging.WARNING):
        await replay(manager, mixed_history(30), FakeProvider(), budget=BUDGET)
    assert manager.state.segments
    await manager.store.close()


# ------------------------------------------------------------------------------- 7. untrusted cache rows


class CorruptingStore(MemoryStore):
    """Holds real summaries but hands out what ``corrupt`` makes of them (a buggy or hostile store)."""

    def __init__(self, corrupt: Any) -> None:
        super().__init__()
        self.corrupt = corrupt

    async def get(self, start: str, end: str) -> Any:
        entry = await super().get(start, end)
        return None if entry is None else self.corrupt(entry)

    async def starting_at(self, start: str) -> Any:
        return [self.corrupt(entry) for entry in await super().starting_at(start)]


def changed(**fields: Any) -> Any:
    return lambda entry: dataclasses.replace(entry, **fields)


CORRUPTIONS = {
    "blob text": changed(text=b"blob text"),
    "text None": changed(text=None),
    "fractional groups": changed(groups=2.5),
    "groups as text": changed(groups="2"),
    "groups True": changed(groups=True),
    "no groups": changed(groups=0),
    "tokens None": changed(tokens=None),
    "start of another key": changed(start="elsewhere"),
    "a tuple": lambda entry: tuple(dataclasses.astuple(entry)),
    "None": lambda entry: None,
    "a number": lambda entry: 42,
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CORRUPTIONS))
async def test_wrong_typed_rows_from_any_store_are_misses(name):
    store, history = CorruptingStore(lambda entry: entry), mixed_history(40)
    await replay(make(store=store), history, FakeProvider(), budget=BUDGET)
    assert await store.count() >= 1
    store.corrupt = CORRUPTIONS[name]
    manager = make(store=store)
    await manager.set_messages(history)
    assert not manager.state.segments, "a bad row is a miss"
    view = await manager.get_messages_for_request(BUDGET, FakeProvider())
    assert check_view(view) == [] and manager.counter.count_messages(view) <= BUDGET


async def test_a_store_that_raises_or_answers_junk_is_a_miss():
    class Broken(MemoryStore):
        async def get(self, start, end):
            raise RuntimeError("disk on fire")

        async def starting_at(self, start):
            return None  # not even a list

        async def put(self, entry):
            raise OSError("read-only")

    manager = make(store=Broken())
    await manager.set_messages(mixed_history(40))
    await replay(manager, mixed_history(10), FakeProvider(), budget=BUDGET)


async def test_an_oversized_or_lying_row_is_never_served():
    store, history, budget = MemoryStore(), mixed_history(40), 3_000
    config = {"summary_max_tokens": 200}
    first = make(config, store=store)
    await replay(first, history, FakeProvider(), budget=budget)
    entries = await store.starting_at(first.fingerprint)
    assert entries
    for entry in entries:  # the same keys, now 400k characters that claim to be 2,000 tokens
        await store.put(dataclasses.replace(entry, text="word " * 80_000, tokens=2_000))
    resumed = make({**config, "max_tokens": budget}, store=store)  # resumed under the budget the session ran at
    await resumed.set_messages(history)
    assert all(len(s.text) < 10_000 for s in resumed.state.segments), "the oversized row was served"
    view = await resumed.get_messages_for_request(budget, FakeProvider())
    assert resumed.counter.count_messages(view) <= budget

    liar = MemoryStore()
    for entry in list(store._entries.values()):  # the session's cuts and mask end, as it stored them
        await liar.put(entry)
    for entry in entries:  # consistent enough to pass the row check, but the count is a lie
        await liar.put(dataclasses.replace(entry, text="claims few tokens " * 30, tokens=3))
    trusting = make({**config, "max_tokens": budget}, store=liar)
    await trusting.set_messages(history)
    assert trusting.state.segments
    assert all(s.tokens == trusting.counter.count_text(s.text) for s in trusting.state.segments)


async def test_a_stored_summary_with_a_lone_surrogate_is_sent_as_replacement():
    store, history = MemoryStore(), mixed_history(40)
    first = make(store=store)
    await replay(first, history, FakeProvider(), budget=BUDGET)
    for entry in await store.starting_at(first.fingerprint):  # as another writer (or an older version) left it
        await store.put(dataclasses.replace(entry, text=f"{entry.text} {LONE}"))
    resumed = make({"max_tokens": BUDGET}, store=store)  # resumed under the budget the session ran at
    await resumed.set_messages(history)
    assert resumed.state.segments and all(encodable(s.text) for s in resumed.state.segments)
    assert sendable(await resumed.get_messages_for_request(BUDGET, FakeProvider()))


# ------------------------------------------------------------------------------- 8. provider info


BAD_LIMITS = ["200000", math.inf, -math.inf, math.nan, -5, 0, True, None, 1e300, 2**70, 1.5, [], {}, object()]


class InfoProvider(FakeProvider):
    def __init__(self, info: Any) -> None:
        super().__init__()
        self.info = info

    def get_info(self) -> Any:
        return self.info


@pytest.mark.slow
@pytest.mark.parametrize("bad", BAD_LIMITS, ids=lambda v: type(v).__name__ if type(v) is object else repr(v))
@pytest.mark.parametrize("where", ["window", "output", "defaults"])
async def test_provider_limits_of_the_wrong_type_are_ignored(bad, where):
    values = {"context_window": 200_000, "max_output_tokens": 8_000}
    values["context_window" if where == "window" else "max_output_tokens"] = bad
    info = dataclasses.make_dataclass("Info", ["defaults"])(values if where != "defaults" else bad)
    manager = make({"max_tokens": 5_000})
    for message in mixed_history(30):
        await manager.add_message(message)
    view = await manager.get_messages_for_request(provider=InfoProvider(info))
    assert check_view(view) == [] and manager.counter.count_messages(view) <= 5_000


async def test_a_provider_whose_info_raises_is_as_if_it_reported_nothing():
    class Raising(FakeProvider):
        def get_info(self):
            raise asyncio.CancelledError()  # not a cancellation of the request

        @property
        def get_model_info(self):
            raise RuntimeError("broken property")

    manager = make({"max_tokens": 5_000})
    await manager.add_message({"role": "user", "content": "hello"})
    assert await manager.get_messages_for_request(provider=Raising())


# ------------------------------------------------------------------------------- 10. CancelledError


class SpuriousCancel(FakeProvider):
    async def complete(self, request, **kwargs):
        self.requests.append(request)
        raise asyncio.CancelledError()  # the provider cancelled its own work; nobody cancelled the request


@pytest.mark.slow
async def test_a_provider_raising_cancelled_error_on_its_own_is_a_fault():
    recorder = EventRecorder()
    manager = make(hooks=recorder)
    views = await replay(manager, mixed_history(40), SpuriousCancel(), budget=BUDGET)
    # Masking installed in band while the summary is tried in the background reports no fallback of its own.
    fallbacks = {p["fallback"] for p in post_compacts(recorder) if p["summaries"] or p["fallback"]}
    assert views and "error" in fallbacks and fallbacks <= {"error", "circuit_open"}


async def test_a_real_cancellation_still_reaches_the_caller():
    started = asyncio.Event()

    class Hanging(FakeProvider):
        async def complete(self, request, **kwargs):
            started.set()
            await asyncio.Event().wait()

    manager = make({"summarizer": {"max_retries": 0}})
    for message in mixed_history(40):
        await manager.add_message(message)
    task = asyncio.create_task(manager.get_messages_for_request(BUDGET, Hanging()))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert check_view(await manager.get_messages_for_request(BUDGET, FakeProvider())) == []


# ------------------------------------------------------------------------------- the deadline and the cooldowns


async def test_compaction_deadline_bounds_everything_a_request_waits_for(monkeypatch):
    """Every attempt hangs until cut off: prefetch, retries, merges and extra passes all share the deadline."""
    clock = VirtualClock()
    clock.install(monkeypatch)
    config = {
        "compaction_deadline_s": 25,
        "prefetch": True,
        "summary_budget_ratio": 0.05,
        "summary_max_tokens": 100,
        "summarizer": {"timeout_s": 10, "max_retries": 3, "circuit_failures": 0},
    }
    recorder = EventRecorder()
    manager = make(config, hooks=recorder, clock=clock.monotonic)
    provider = FakeProvider(delay=3_600)
    longest = 0.0
    for i, message in enumerate(mixed_history(80)):
        await manager.add_message(message)
        before = clock.now
        view = await manager.get_messages_for_request(BUDGET, provider)
        longest = max(longest, clock.now - before)
        assert check_view(view) == [], i
    posts = post_compacts(recorder)
    assert posts and provider.requests
    assert longest <= 25 + 1e-6, f"a request waited {longest:.1f} virtual seconds"
    assert longest >= 10, "the summarizer was really waited for"


def test_the_failure_cooldown_map_is_bounded():
    segments = make().segments
    keys = [(f"s{i}", f"e{i}") for i in range(MAX_REMEMBERED_FAILURES + 500)]
    for key in keys:
        segments.cool_down(key)
    assert segments.cooling_spans == MAX_REMEMBERED_FAILURES
    assert not segments.cooling_down(keys[0]) and segments.cooling_down(keys[-1])


# ------------------------------------------------------------------------------- 9. the CLI on hostile files


def in_time(fn: Any, seconds: float = 60) -> Any:
    """``fn()``'s result or exception, run on a thread so that a read that never ends fails the test instead."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(fn())
        except BaseException as exc:  # handed to the test
            outcome.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert outcome, "it never finished (a read that does not end)"
    return outcome[0]


def fails_in_one_line(capsys: pytest.CaptureFixture[str], argv: list[str], path: Path, problem: str) -> None:
    assert in_time(lambda: main(argv)) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(path) in err and problem in err, err


@pytest.mark.parametrize(
    ("name", "content", "problem"),
    [
        ("bomb.json", "[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ("bomb.jsonl", '{"role": "user", "content": ' + "[" * 100_000 + "]" * 100_000 + "}\n", "nested too deeply"),
        ("deep.jsonl", '{"role": "user", "content": "x", "meta": ' + "[" * 300 + "]" * 300 + "}\n", "nested more than"),
        ("digits.jsonl", '{"role": "user", "content": "x", "n": ' + "7" * 5_000 + "}\n", "invalid JSON"),
        ("latin1.jsonl", b'{"role": "user", "content": "caf\xe9"}\n', "not UTF-8"),
    ],
)
def test_hostile_session_files_fail_in_one_line_naming_the_file(tmp_path, capsys, name, content, problem):
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    fails_in_one_line(capsys, ["compact", str(path)], path, problem)


def test_fifos_devices_folders_and_huge_files_are_refused(tmp_path, capsys, monkeypatch):
    fifo = tmp_path / "session.jsonl"
    os.mkfifo(fifo)
    for path in (fifo, Path("/dev/zero"), tmp_path):
        fails_in_one_line(capsys, ["compact", str(path)], path, "not a regular file")
    from amplifier_module_context_summarize.readers import session_io

    big = tmp_path / "big.jsonl"
    big.write_text(json.dumps({"role": "user", "content": "x" * 5_000}) + "\n")
    monkeypatch.setattr(session_io, "MAX_FILE_BYTES", 4_096)
    fails_in_one_line(capsys, ["compact", str(big)], big, "larger than 4,096 bytes")


def test_a_session_with_a_lone_surrogate_replays_and_prints(tmp_path, capsys):
    path = tmp_path / "session.jsonl"
    path.write_text('{"role": "user", "content": "bad \\ud800 text"}\n{"role": "assistant", "content": "ok"}\n')
    assert main(["compact", str(path), "--view"]) == 0
    assert "bad \ufffd text" in capsys.readouterr().out
    assert main(["compact", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["view"][0]["content"] == "bad \ufffd text"


def test_eval_corpus_and_cassette_files_are_read_as_untrusted(tmp_path, capsys):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "good.jsonl").write_text(json.dumps({"role": "user", "content": "hi"}) + "\n")
    os.mkfifo(corpus / "evil.jsonl")
    error = in_time(lambda: load_corpus(corpus))
    assert isinstance(error, CorpusError) and "evil.jsonl:1: not a regular file" in str(error)
    os.unlink(corpus / "evil.jsonl")
    (corpus / "good.probes.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(CorpusError, match="good.probes.json:1: invalid JSON \\(nested too deeply\\)"):
        load_corpus(corpus)
    (corpus / "good.probes.json").write_text("[]")
    (corpus / "index.json").write_text('[{"n": ' + "9" * 5_000 + "}]")
    with pytest.raises(CorpusError, match="index.json:1: invalid JSON"):
        load_corpus(corpus)
    (corpus / "index.json").unlink()
    with pytest.raises(ValueError, match="not a regular file"):
        Cassette.open(tmp_path, "replay")
    assert main(["eval", "--corpus", str(tmp_path / "missing"), "--out", str(tmp_path / "out"), "--quiet"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


DEEP = "[" * 3_000 + "]" * 3_000


def deep_call_session(turns: int = 14) -> list[dict[str, Any]]:
    """A session whose first call carries arguments nested 3,000 deep as a JSON string, then ordinary turns."""
    call = {"id": "deep", "type": "function", "function": {"name": "bash", "arguments": DEEP}}
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "start"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "deep", "content": "exit code 0\n" + "x" * 3_000},
    ]
    for i in range(turns):
        messages += [
            {"role": "user", "content": f"step {i} " + "word " * 400},
            tool_call("openai", f"c{i}", "bash", {"command": f"cat f{i}.py"}),
            tool_result("openai", f"c{i}", "line\n" * 600),
        ]
    return messages


# ------------------------------------------------------------------------------- 1. deep JSON in arguments


def test_deep_json_arguments_are_read_as_text_by_the_ledger() -> None:
    call = {"id": "d", "type": "function", "function": {"name": "write_file", "arguments": DEEP}}
    facts = extract([{"role": "assistant", "content": "", "tool_calls": [call]}])
    assert facts.outcomes == ()  # no exception, nothing to read


def test_deep_json_tool_output_is_read_as_text() -> None:
    messages = [
        tool_call("openai", "c", "bash", {"command": "run"}),
        tool_result("openai", "c", "{" + '"a":' * 3_000 + "1" + "}" * 3_000),
    ]
    assert len(extract(messages).outcomes) == 1


@pytest.mark.parametrize("strategy", ["summarize", "mask", "truncate", "extractive"])
async def test_deep_json_arguments_never_brick_a_session(strategy: str) -> None:
    manager = create_manager({"max_tokens": 4_000, "compaction_strategy": strategy, "background_compaction": False})
    views = await replay(manager, deep_call_session(), FakeProvider(), budget=4_000)
    assert len(views[-1]) < len(manager.history.messages)
    resumed = create_manager({"max_tokens": 4_000, "compaction_strategy": strategy, "background_compaction": False})
    await resumed.set_messages(await manager.get_messages())
    assert await resumed.get_messages_for_request(provider=FakeProvider())


# ------------------------------------------------------------------------------- 3. linear regexes


def seconds(fn: Any, *args: Any) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def outcome_of(output: str) -> Any:
    return extract([tool_call("openai", "c", "bash", {"command": "make"}), tool_result("openai", "c", output)])


def command_facts(command: str) -> Any:
    return extract([tool_call("openai", "c", "bash", {"command": command})])


def definitions_of(code: str) -> Any:
    return names_in(code, "a.py")


PATHOLOGICAL: list[tuple[str, Any, Any]] = [
    ("exit code + spaces", outcome_of, lambda n: "exit code" + " " * n),
    ("exit code + blank lines", outcome_of, lambda n: "exit code" + "\n" * n),
    ("returncode : spaces", looks_failed, lambda n: "returncode" + " " * n + ":" + " " * n + "x"),
    ("error line of exit codes", error_line, lambda n: ("exit code " + " " * 50 + "\n") * (n // 60)),
    ("commit lines without ')'", outcome_of, lambda n: "[main (x\n" * (n // 9)),
    ("blank .py lines", definitions_of, lambda n: "\n" * n),
    ("indented .py lines", definitions_of, lambda n: ("    " + "\n") * (n // 5) + "x"),
    ("java modifiers", lambda t: names_in(t, "A.java"), lambda n: ("public " * 50 + "a " * 100 + "\n") * (n // 550)),
    ("java spaces", lambda t: names_in(t, "A.java"), lambda n: ("public a" + " " * 390 + "b\n") * (n // 400)),
    ("shell trailing blanks", lambda t: names_in(t, "a.sh"), lambda n: ("f()" + " " * 390 + "x\n") * (n // 395)),
    ("js function blanks", lambda t: names_in(t, "a.js"), lambda n: ("function" + " " * 390 + "!\n") * (n // 400)),
    ("js unclosed params", lambda t: names_in(t, "a.js"), lambda n: "const a = (\n" * (n // 12)),
    ("pipes into head", command_facts, lambda n: "x" + " | head" * (n // 7)),
    ("PR and spaces", outcome_of, lambda n: ("PR" + " " * 98 + "\n") * (n // 100)),
    ("short ids", outcome_of, lambda n: "ab-" + "1a" * (n // 2) + "-"),
    ("exit code of n digits", outcome_of, lambda n: "exit code: " + "7" * n),
    ("recorded returncode of n digits", outcome_of, lambda n: "<returncode>" + "1" * n + "</returncode>"),
    ("Gemini exit code of n digits", outcome_of, lambda n: "Error: (none)\nExit Code: " + "0" * n),
    ("one long shell word", command_facts, lambda n: "echo " + "a" * n),
    ("an unclosed heredoc quote", command_facts, lambda n: "cat <<'" + "a" * n),
    ("a Windows path of n segments", command_facts, lambda n: "type " + "a\\" * (n // 2)),
    ("quoted shifts", command_facts, lambda n: 'python3 -c "' + "1 << " * (n // 5) + '"\ngit rm x.py'),
    ("arithmetic shifts", command_facts, lambda n: "echo $((" * (n // 16) + "1<<" * (n // 6)),
    ("comments of shifts", command_facts, lambda n: ("# a << b\n" * (n // 9)) + "git rm x.py"),
    ("a keep name's words and spaces", lambda t: _kept_lines(t), lambda n: ("deploy" + " " * 94 + "\n") * (n // 100)),
    ("a long line naming what to keep", lambda t: _kept_lines(t), lambda n: "ORD-7731 " * (n // 9)),
]


def _kept_lines(text: str) -> Any:
    messages = [{"role": "user", "content": "go"}, {"role": "assistant", "content": text}]
    return extractive_summary(
        messages, previous_summary=None, max_tokens=2_000, count_tokens=len, keep=("deploy window", "ORD-7731")
    )


@pytest.mark.parametrize(("name", "fn", "make_text"), PATHOLOGICAL, ids=[p[0] for p in PATHOLOGICAL])
def test_regexes_over_message_content_are_linear(name: str, fn: Any, make_text: Any) -> None:
    small, large = make_text(50_000), make_text(100_000)
    fn(small)  # warm up
    t_small = min(seconds(fn, small) for _ in range(3))
    t_large = min(seconds(fn, large) for _ in range(3))
    assert t_large < 1.0, f"{name}: {t_large:.2f}s for 100k characters"
    assert t_large < 3 * t_small + 0.05, f"{name}: {t_small:.3f}s at 50k, {t_large:.3f}s at 100k"


def test_extractive_summary_of_pathological_text_is_fast() -> None:
    messages = [
        {"role": "user", "content": "now " * 25_000},
        {"role": "assistant", "content": "exit code" + " " * 50_000},
        tool_call("openai", "c", "bash", {"command": "x" + " | head" * 10_000}),
        tool_result("openai", "c", "[main (x\n" * 10_000),
    ]
    elapsed = seconds(lambda: extractive_summary(messages, previous_summary=None, max_tokens=2_000, count_tokens=len))
    assert elapsed < 2.0


def test_definitions_still_read_one_line_heads() -> None:
    code = "class A:\n\n\n    def b(self):\n        pass\nasync def c():\n"
    assert names_in(code, "a.py") == ["A", "b", "c"]
    java = "public class A {\n  public static <T> List<T> items(int n) {\n  protected Map<String, Integer> m (\n"
    assert names_in(java, "A.java") == ["A", "items", "m"]
    assert names_in("f() {\n}\ng()  \n", "a.sh") == ["f", "g"]


def test_exit_codes_still_read() -> None:
    cases = [("exit code: 3", True), ("exit code 0", False), ('"returncode": 2', True), ("exit status=1", True)]
    for text, code in [*cases, ("exit code: 0", False), ("exit code  =  7", True)]:
        assert looks_failed(text) is code, text


def test_deep_json_payload_is_json() -> None:
    with pytest.raises(RecursionError):
        json.loads(DEEP)
