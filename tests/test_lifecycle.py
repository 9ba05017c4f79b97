"""A session's end: the cleanup ``mount`` returns (``manager.close`` for ``create_manager`` users) stops the background
work, then closes the store and the summarizer's backend once, through every wrapper; one fault never stops the rest.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from amplifier_core.testing import MockCoordinator

import amplifier_module_context_summarize as package
from amplifier_module_context_summarize import create_manager, mount
from amplifier_module_context_summarize.backends.base import Completion
from amplifier_module_context_summarize.backends.retrying import RetryingBackend
from amplifier_module_context_summarize.benchmark.coding import CodingSession
from amplifier_module_context_summarize.benchmark.synth import SMALL
from amplifier_module_context_summarize.stores import MemoryStore
from amplifier_module_context_summarize.testing import mixed_history, replay
from amplifier_module_context_summarize.working_set.index import index_of

BUDGET = 12_000


class Unanswered:
    """A backend whose summaries never come back (until cancelled), counting how often it is closed."""

    name = "unanswered"
    model: str | None = "fake"

    def __init__(self) -> None:
        self.calls = 0
        self.closed = 0

    async def complete(
        self, system: str, prompt: str, max_output_tokens: int, provider: Any | None = None
    ) -> Completion:
        self.calls += 1
        await asyncio.Event().wait()
        raise AssertionError("never answered")

    async def aclose(self) -> None:
        self.closed += 1


class CountingStore(MemoryStore):
    def __init__(self, fails: bool = False) -> None:
        super().__init__()
        self.closed = 0
        self.fails = fails

    async def close(self) -> None:
        self.closed += 1
        await super().close()
        if self.fails:
            raise RuntimeError("the store's file went away")


def others() -> set[asyncio.Task[Any]]:
    return asyncio.all_tasks() - {asyncio.current_task()}  # type: ignore[operator]


async def mounted_with(monkeypatch: pytest.MonkeyPatch, backend: Any, store: Any, config: dict[str, Any]) -> Any:
    """``mount`` as the kernel calls it, building ``backend`` and ``store``; cleanup waits for nothing (no real time
    passes in the test: the backend never answers, and cleanup must cancel what is left)."""
    monkeypatch.setattr(package, "build_backend", lambda *args: backend)
    monkeypatch.setattr(package, "open_store", lambda *args: store)
    monkeypatch.setattr(package, "CLOSE_WAIT_S", 0.0)
    return await mount(MockCoordinator(), {"max_tokens": BUDGET, "notify": False, **config})


async def until(manager: Any, busy: Any) -> None:
    """Requests as a session sends them, until ``busy(manager)`` (background work in flight)."""
    for message in mixed_history(120):
        await manager.add_message(message)
        if message["role"] == "assistant":
            await manager.get_messages_for_request(token_budget=BUDGET)
        if busy(manager):
            return
    raise AssertionError("no background work started")


async def test_cleanup_cancels_a_background_compaction_and_closes_store_and_backend_through_its_wrapper(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = others()
    inner, store = Unanswered(), CountingStore()
    cleanup = await mounted_with(monkeypatch, RetryingBackend(inner, 0, 60.0), store, {})
    manager = cleanup.manager
    await until(manager, lambda m: m.background.running)
    assert others() - before  # the compaction's task (and its summarizer call) are in flight

    await cleanup()

    assert (inner.closed, store.closed) == (1, 1)
    assert others() - before == set()
    assert manager.stats["compactions_cancelled"] == 1  # its pre_compact got its post
    await cleanup()  # a second cleanup closes nothing twice
    assert (inner.closed, store.closed) == (1, 1)


async def test_cleanup_waits_for_cancelled_prefetches_to_end(monkeypatch: pytest.MonkeyPatch) -> None:
    before = others()
    backend, store = Unanswered(), CountingStore()
    cleanup = await mounted_with(monkeypatch, backend, store, {"prefetch": True, "background_compaction": False})
    manager = cleanup.manager
    await until(manager, lambda m: m.prefetcher.busy)

    await cleanup()

    assert not manager.prefetcher.busy
    assert others() - before == set()
    assert (backend.closed, store.closed) == (1, 1)


async def test_a_store_whose_close_raises_still_lets_the_backend_close(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    backend, store = Unanswered(), CountingStore(fails=True)
    cleanup = await mounted_with(monkeypatch, backend, store, {})
    await until(cleanup.manager, lambda m: m.background.running)

    with caplog.at_level(logging.WARNING):
        await cleanup()  # never raises

    assert (store.closed, backend.closed) == (1, 1)
    assert [r.levelname for r in caplog.records if "RuntimeError" in r.getMessage()] == ["WARNING"]
    assert "went away" not in caplog.text  # the fault is named by its class, never by its message


async def test_a_backend_whose_close_raises_is_logged_and_close_returns() -> None:
    class Failing(Unanswered):
        async def aclose(self) -> None:
            self.closed += 1
            raise OSError("connection reset")

    backend, store = Failing(), CountingStore()
    manager = create_manager({"max_tokens": BUDGET}, backend=backend, store=store)
    await manager.close()
    assert (store.closed, backend.closed) == (1, 1)


async def test_closing_an_extractive_manager_closes_its_store() -> None:
    store = CountingStore()
    manager = create_manager({"max_tokens": BUDGET, "summarizer": "extractive"}, store=store)
    assert manager.summarizer.backend is None
    await manager.close()
    assert store.closed == 1


async def test_close_stops_the_working_set_folding_a_resume_started() -> None:
    config = {"max_tokens": 8_000, "compaction_strategy": "extractive"}
    store, messages = CountingStore(), CodingSession(SMALL, seed=11).history(300)
    await replay(create_manager(config, store=store), messages, budget=8_000)
    before = others()
    resumed = create_manager(config, store=store)
    await resumed.set_messages(messages)  # the stored working set is served: its groups are folded in the background
    index = index_of(resumed.history)
    assert others() - before and index.folded < resumed.state.summarized_end

    await resumed.close()

    assert others() - before == set() and store.closed == 1
    folded = index.folded
    for _ in range(100):
        await asyncio.sleep(0)
    assert index.folded == folded < resumed.state.summarized_end
