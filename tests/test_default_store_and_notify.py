"""Durable by default (a per-user cache file, flushed at cleanup) and visible (one line per compaction through the
kernel's display path)."""

from __future__ import annotations

import asyncio

from amplifier_core import llm_errors
from amplifier_core.testing import MockCoordinator
from test_latency import BUDGET as BUDGET_SMALL
from test_latency import GatedProvider, make, tool_heavy, until_background_starts, until_landed

from amplifier_module_context_summarize import create_manager, mount
from amplifier_module_context_summarize.notify import compaction_line
from amplifier_module_context_summarize.stores import SqliteStore, default_store_path
from amplifier_module_context_summarize.testing import FakeProvider, mixed_history, replay

BUDGET = 12_000
ENV = "AMPLIFIER_CONTEXT_SUMMARIZE_CACHE"


def test_the_default_store_follows_xdg_and_the_environment_turns_it_off(tmp_path):
    assert default_store_path({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "amplifier-context-summarize" / (
        "summaries.db"
    )
    assert default_store_path({"XDG_CACHE_HOME": "relative"}).parts[-3:-2] == (".cache",)
    assert default_store_path({ENV: str(tmp_path / "s.db")}) == tmp_path / "s.db"
    assert default_store_path({ENV: "memory"}) is None


class Refusing(FakeProvider):
    async def complete(self, request, **kwargs):
        raise AssertionError("a resumed session must not ask for a summary it had before")


async def test_without_storage_path_a_resumed_session_asks_for_no_summary_it_had(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV, str(tmp_path / "cache" / "summaries.db"))
    history = mixed_history(80)
    first = create_manager({"max_tokens": BUDGET}, default_store=True)
    written = FakeProvider()
    await replay(first, history, written, budget=BUDGET)
    assert len(written.requests) >= 2
    view = await first.get_messages_for_request(token_budget=BUDGET, provider=written)
    await first.close()

    resumed = create_manager({"max_tokens": BUDGET}, default_store=True)  # a new process: a new store object
    await resumed.set_messages(history)
    assert await resumed.get_messages_for_request(token_budget=BUDGET, provider=Refusing()) == view
    assert resumed.stats["provider_calls"] == 0
    await resumed.close()


async def test_storage_path_memory_or_null_keeps_no_file(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV, str(tmp_path / "summaries.db"))
    for value in ("memory", None):
        manager = create_manager({"max_tokens": BUDGET, "storage_path": value}, default_store=True)
        await replay(manager, mixed_history(60), FakeProvider(), budget=BUDGET)
        await manager.close()
    assert not (tmp_path / "summaries.db").exists()


class Gated(FakeProvider):
    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()

    async def complete(self, request, **kwargs):
        await self.gate.wait()
        return await super().complete(request, **kwargs)


async def test_cleanup_stores_a_summary_landing_after_the_last_request(tmp_path, monkeypatch):
    path = tmp_path / "summaries.db"
    monkeypatch.setenv(ENV, str(path))
    coordinator = MockCoordinator()
    cleanup = await mount(coordinator, {"max_tokens": BUDGET, "notify": False})
    manager = cleanup.manager
    provider = Gated()
    for message in mixed_history(80):
        await manager.add_message(message)
        if message["role"] == "assistant":
            await manager.get_messages_for_request(token_budget=BUDGET, provider=provider)
        if manager.background.running:
            break
    assert manager.background.running  # the session's last request returned with a summary in flight
    closing = asyncio.ensure_future(cleanup())
    for _ in range(5):
        await asyncio.sleep(0)
    assert not closing.done()  # cleanup waits for it
    provider.gate.set()
    await closing
    async with SqliteStore(path) as store:
        assert await store.count() >= 1


class Shown:
    def __init__(self) -> None:
        self.lines: list[tuple[str, str, str]] = []

    def show_message(self, message, level, source="hook"):
        self.lines.append((message, level, source))


async def _mounted(config, provider, turns=90):
    coordinator = MockCoordinator()
    display = Shown()
    coordinator.display_system = display
    cleanup = await mount(coordinator, {"max_tokens": BUDGET, **config})
    await replay(cleanup.manager, mixed_history(turns), provider, budget=BUDGET)
    await cleanup()
    return cleanup.manager, display.lines


async def test_each_compaction_shows_one_line_through_the_display_system():
    manager, lines = await _mounted({}, FakeProvider())
    compacted = [line for line in lines if line[0].startswith("context compacted:")]
    assert len(compacted) == manager.stats["compactions"] >= 2
    assert all(level == "info" and source == "hook:context-summarize" for _, level, source in compacted)
    assert any("messages summarized" in message and "by the LLM" in message for message, _, _ in compacted)


async def test_notify_false_shows_nothing():
    manager, lines = await _mounted({"notify": False}, FakeProvider())
    assert manager.stats["compactions"] >= 2 and lines == []


async def test_failing_summaries_show_one_fallback_line_and_one_for_the_open_circuit():
    failing = FakeProvider(fail_with=llm_errors.AuthenticationError("401", provider="fake"))
    manager, lines = await _mounted({}, failing)
    warnings = [message for message, level, _ in lines if level == "warning"]
    assert manager.stats["summary_failures"] >= 3
    assert len([w for w in warnings if w.startswith("summary fell back")]) == 1
    assert len([w for w in warnings if w.startswith("summaries paused")]) <= 1
    assert all("offline summary" in message for message, _, _ in lines if message.startswith("context compacted"))


def test_the_compaction_line_says_by_the_llm_only_when_no_summary_fell_back():
    base = {"tokens_before": 16_000, "token_count": 7_600, "budget": 12_000, "summarized_messages": 21}
    base |= {"newly_summarized": 21, "segments": 1}
    by_llm = compaction_line({**base, "summaries": 1, "provider_calls": 1})
    assert by_llm.endswith("21 messages summarized: 1 by the LLM")
    fell_back = compaction_line({**base, "summaries": 1, "provider_calls": 1, "fallback": "error"})
    assert "by the LLM" not in fell_back and fell_back.endswith("1 written, offline summary (error)")
    offline = compaction_line({**base, "summaries": 2, "provider_calls": 0})  # the extractive summarizer
    assert offline.endswith("2 written")


async def test_a_landed_background_compaction_reports_before_as_the_view_it_replaced():
    """Seen in the real CLI: `context compacted: 8.3k → 9.5k tokens`. A background compaction's post compared the
    view when it started with the view after it landed, turns later, on a history that had grown meanwhile (and
    been masked further in band): the before must be the view it replaced, the same history by the same count."""
    manager, recorder = make({"observation_masking": True})
    provider = GatedProvider()
    history = tool_heavy(60)
    added, _ = await until_background_starts(manager, provider, history)
    for message in history[added : added + 6]:  # turns go on while the summary is written
        await manager.add_message(message)
        await manager.get_messages_for_request(BUDGET_SMALL, provider)
    provider.gate.set()
    await until_landed(manager)
    await manager.add_message(history[added + 6])
    replaced = manager.planned_tokens
    posts = len(recorder.get_events("context:post_compact"))
    await manager.get_messages_for_request(BUDGET_SMALL, provider)
    [(_, post)] = recorder.get_events("context:post_compact")[posts:]
    assert post["summaries"] == 1 and post["outcome"] == "compacted"
    assert post["tokens_before"] == replaced > post["token_count"]
    [(_, kernel)] = recorder.get_events("context:compaction")[-1:]
    assert kernel["before_tokens"] == replaced


async def test_a_cancelled_background_compaction_shows_no_compaction_line():
    """Its post (outcome ``cancelled``) compared the view when it started with the grown view: on the screen,
    ``context compacted: 5.6k → 6.0k tokens ... by summarize`` for a compaction that never happened."""
    coordinator = MockCoordinator()
    coordinator.display_system = display = Shown()
    cleanup = await mount(coordinator, {"max_tokens": BUDGET_SMALL, "observation_masking": False})
    manager, provider = cleanup.manager, GatedProvider()
    added, _ = await until_background_starts(manager, provider, mixed_history(80, size=8))
    await manager.clear()  # the flight is cancelled
    await cleanup()
    compacted = [message for message, _, _ in display.lines if message.startswith("context compacted")]
    assert manager.stats["compactions_cancelled"] == 1
    assert len(compacted) == manager.stats["compactions"] == 0


def test_a_compaction_that_only_masked_says_masked():
    base = {"tokens_before": 9_000, "token_count": 6_100, "budget": 12_000, "strategy": "summarize"}
    masked = compaction_line({**base, "summarized_messages": 0, "newly_masked": 14})
    assert masked.endswith("14 messages masked") and "summarize" not in masked
    after_summaries = compaction_line({**base, "summarized_messages": 84, "segments": 2, "newly_masked": 6})
    assert after_summaries.endswith("6 messages masked") and "summarized" not in after_summaries
    both = compaction_line(
        {**base, "summarized_messages": 30, "newly_summarized": 21, "newly_masked": 4, "segments": 2}
        | {"summaries": 1, "provider_calls": 1}
    )
    assert both.endswith("21 messages summarized: 1 by the LLM; 4 messages masked")
    truncated = compaction_line({**base, "strategy": "truncate", "summarized_messages": 30, "newly_summarized": 30})
    assert "summarized" not in truncated
    assert truncated.endswith("30 messages truncated")
    assert compaction_line({**base, "outcome": "cancelled"}) is None
