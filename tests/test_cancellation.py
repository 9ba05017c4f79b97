"""Cancellation and deadlines: a summarizer that ignores cancellation cannot hold a request past the compaction
deadline, and a request cancelled mid-compaction leaves every ``context:pre_compact`` paired with its post."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest
from amplifier_core.testing import EventRecorder
from virtual_clock import VirtualClock

from amplifier_module_context_summarize import create_manager
from amplifier_module_context_summarize import manager as manager_module
from amplifier_module_context_summarize.backends import retrying
from amplifier_module_context_summarize.backends.base import DEADLINE, BackendError, Completion
from amplifier_module_context_summarize.backends.retrying import RetryingBackend
from amplifier_module_context_summarize.compaction import background as background_module
from amplifier_module_context_summarize.compaction import compactor as compactor_module
from amplifier_module_context_summarize.compaction import prefetch
from amplifier_module_context_summarize.summarizer import span as summarize
from amplifier_module_context_summarize.testing import FakeProvider, mixed_history

BUDGET = 6_000
HOLD_S = 40.0


class Stubborn:
    """A backend that swallows every cancellation (an SDK retry loop catching BaseException) and answers, or
    fails, only after ``HOLD_S`` seconds."""

    name = "stubborn"
    model: str | None = "fake"

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.swallowed = 0
        self.finished = 0

    async def complete(self, system: str, prompt: str, max_output_tokens: int, provider: Any = None) -> Completion:
        loop = asyncio.get_running_loop()
        until = loop.time() + HOLD_S
        while loop.time() < until:
            try:
                await asyncio.sleep(until - loop.time())
            except asyncio.CancelledError:
                self.swallowed += 1
        self.finished += 1
        if self.fail:
            raise RuntimeError("late failure")
        return Completion("late answer", 1, 1)


class StubbornProvider(FakeProvider):
    """The same as a session provider."""

    def __init__(self) -> None:
        super().__init__()
        self.swallowed = 0
        self.asked = 0

    async def complete(self, request: Any, **kwargs: Any) -> Any:
        self.asked += 1
        loop = asyncio.get_running_loop()
        until = loop.time() + HOLD_S
        while loop.time() < until:
            try:
                await asyncio.sleep(until - loop.time())
            except asyncio.CancelledError:
                self.swallowed += 1
        return await super().complete(request, **kwargs)


def virtual(monkeypatch: pytest.MonkeyPatch) -> VirtualClock:
    clock = VirtualClock()
    clock.install(monkeypatch, manager_module, compactor_module, background_module, summarize, retrying, prefetch)
    return clock


def unretrieved(loop: asyncio.AbstractEventLoop) -> list[dict[str, Any]]:
    """Collects what the loop would log as an exception never retrieved."""
    seen: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: seen.append(context))
    return seen


@pytest.mark.parametrize("fail", [False, True])
async def test_the_deadline_holds_against_a_backend_that_swallows_cancellation(
    monkeypatch: pytest.MonkeyPatch, fail: bool
) -> None:
    clock = virtual(monkeypatch)
    seen = unretrieved(asyncio.get_running_loop())
    backend = Stubborn(fail=fail)
    wrapped = RetryingBackend(backend, max_retries=3, timeout_s=30, wait_base=0.01, wait_max=0.05)
    started = clock.now
    with pytest.raises(BackendError) as info:
        await wrapped.complete("sys", "prompt", 100, deadline=clock.now + 2.0)
    assert info.value.category == DEADLINE
    assert clock.now - started == pytest.approx(2.0, abs=0.01), "the deadline held although the call went on"
    assert backend.swallowed == 1
    await asyncio.sleep(HOLD_S)  # the abandoned call ends on its own, later
    gc.collect()
    assert backend.finished == 1
    assert seen == [], "what the abandoned call returned or raised was read and dropped"


async def test_a_cancelled_caller_is_not_held_by_a_backend_that_swallows_cancellation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = virtual(monkeypatch)
    backend = Stubborn()
    wrapped = RetryingBackend(backend, max_retries=0, timeout_s=30)
    task = asyncio.create_task(wrapped.complete("sys", "prompt", 100))
    await asyncio.sleep(1.0)
    started = clock.now
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert clock.now - started < 0.01


def compacting_manager(recorder: EventRecorder, config: dict[str, Any] | None = None, **kwargs: Any) -> Any:
    base = {"max_tokens": BUDGET, "observation_masking": False, "background_compaction": False}
    return create_manager({**base, "compaction_deadline_s": 2, **(config or {})}, hooks=recorder, **kwargs)


async def test_a_blocking_request_waits_no_longer_than_the_deadline_for_a_stubborn_provider(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = virtual(monkeypatch)
    recorder = EventRecorder()
    manager = compacting_manager(recorder)
    provider = StubbornProvider()
    longest = 0.0
    for message in mixed_history(80, size=8):
        await manager.add_message(message)
        started = clock.now
        await manager.get_messages_for_request(BUDGET, provider)
        longest = max(longest, clock.now - started)
        if recorder.get_events("context:post_compact"):
            break
    assert provider.asked, "the summarizer was asked"
    assert longest <= 2.0 + 0.01, f"a request waited {longest:.2f} s against a 2 s deadline"
    [(_, post)] = recorder.get_events("context:post_compact")
    assert post["fallback"] == "deadline"


async def test_compact_waits_no_longer_than_the_deadline_for_a_stubborn_summarizer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = virtual(monkeypatch)
    recorder = EventRecorder()
    backend = Stubborn()
    manager = compacting_manager(recorder, backend=backend)
    for message in mixed_history(30, size=8):
        await manager.add_message(message)
    started = clock.now
    await manager.compact()
    assert backend.swallowed >= 1, "the summarizer was asked and cut off"
    assert clock.now - started <= 2.0 + 0.01, f"compact() took {clock.now - started:.2f} s against a 2 s deadline"
    [(_, post)] = recorder.get_events("context:post_compact")
    assert post["fallback"] == "deadline"
