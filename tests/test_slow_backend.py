"""A summarizer slower than the compaction deadline (a small model on a local server, 5-10 ms a prompt token):
the wait follows its measured pace, slow summaries start early, and a run of cut summaries is said once."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from amplifier_core.testing import EventRecorder
from virtual_clock import VirtualClock

from amplifier_module_context_summarize import create_manager
from amplifier_module_context_summarize.compaction.run import compactor as compactor_module
from amplifier_module_context_summarize.summarizer.pace import Pace, SlowWarning
from amplifier_module_context_summarize.testing import FakeProvider, mixed_history

BUDGET = 6_000
PACE_LOGGER = "amplifier_module_context_summarize.summarizer.pace"


class LocalServer(FakeProvider):
    """A local OpenAI-compatible server on two cores: prompt processing takes ``seconds_per_token`` a token (about
    4 characters), so its time grows with the span it is sent, as llama.cpp's does."""

    def __init__(self, seconds_per_token: float, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.seconds_per_token = seconds_per_token
        self.answered = 0

    async def complete(self, request: Any, **kwargs: Any) -> Any:
        prompt = "".join(str(m.content) for m in request.messages)
        await asyncio.sleep(len(prompt) / 4 * self.seconds_per_token)
        self.answered += 1
        return await super().complete(request, **kwargs)


def virtual(monkeypatch: pytest.MonkeyPatch) -> VirtualClock:
    clock = VirtualClock()
    clock.install(monkeypatch)
    return clock


async def replay(config: dict[str, Any], provider: Any, turns: int = 120) -> tuple[Any, EventRecorder]:
    recorder = EventRecorder()
    manager = create_manager({"max_tokens": BUDGET, "observation_masking": False, **config}, hooks=recorder)
    for message in mixed_history(turns, size=8):
        await manager.add_message(message)
        await manager.get_messages_for_request(BUDGET, provider)
    return manager, recorder


def fallbacks(recorder: EventRecorder) -> list[str | None]:
    return [data["fallback"] for _, data in recorder.get_events("context:post_compact") if data["summarized_messages"]]


def test_pace_is_measured_per_input_token_and_a_cut_call_raises_it():
    pace = Pace()
    assert not pace.known and pace.expected_s(10_000) == 0.0
    pace.cut(30.0, 3_000)  # cut at 30 s: at least 10 ms a token, how much more is unknown
    assert pace.seconds_per_token == pytest.approx(0.01)
    assert pace.allowance_s(3_000) == pytest.approx(120.0), "a floor makes the next wait four times as long"
    pace.answered(12.0, 2_000)
    pace.answered(18.0, 3_000)
    assert pace.seconds_per_token == pytest.approx(0.006), "answered calls replace the floor"
    assert pace.expected_s(10_000) == pytest.approx(60.0)
    assert pace.allowance_s(10_000) == pytest.approx(90.0)


async def test_a_blocking_replay_on_a_slow_server_waits_no_longer_than_the_deadline(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
):
    """Issue 43: blocking, a summary took 25 s against a 5 s deadline, and each cut call made the next wait follow the
    pace (four times as long, up to ``summarizer.timeout_s`` a call). The deadline holds on every request; the slow
    summarizer is said once, with the key to raise."""
    clock = virtual(monkeypatch)
    server = LocalServer(seconds_per_token=0.005)
    config = {"background_compaction": False, "compaction_deadline_s": 5, "summarizer": {"timeout_s": 60}}
    recorder = EventRecorder()
    manager = create_manager({"max_tokens": BUDGET, "observation_masking": False, **config}, hooks=recorder)
    waits = []
    with caplog.at_level(logging.WARNING, logger=PACE_LOGGER):
        for message in mixed_history(120, size=8):
            await manager.add_message(message)
            started = clock.now
            await manager.get_messages_for_request(BUDGET, server)
            waits.append(clock.now - started)
    seen = fallbacks(recorder)
    assert len(seen) >= 3 and "deadline" in seen, seen
    assert max(waits) <= 5.0 + 0.01, f"a request waited {max(waits):.2f} s against a 5 s deadline"
    [warning] = [r for r in caplog.records if r.name == PACE_LOGGER]
    assert "compaction_deadline_s" in warning.message and "5 s" in warning.message


async def live(
    monkeypatch: pytest.MonkeyPatch, step_s: float, early: bool = True, blocking: bool = False
) -> tuple[Any, EventRecorder]:
    """A live session (on the soft threshold unless ``blocking``), the agent taking ``step_s`` (a local model's own
    turn) per message; ``manager.longest_wait`` is the longest any request waited."""
    clock = virtual(monkeypatch)
    if not early:  # the code before: nothing starts a slow summary before the threshold
        monkeypatch.setattr(compactor_module.Compactor, "slow", lambda _self, _limits: False)
    server = LocalServer(seconds_per_token=0.005)
    recorder = EventRecorder()
    config = {"max_tokens": BUDGET, "observation_masking": False, "compaction_deadline_s": 5}
    manager = create_manager({**config, "background_compaction": not blocking}, hooks=recorder)
    manager.longest_wait = 0.0
    for message in mixed_history(160, size=8):
        await manager.add_message(message)
        started = clock.now
        await manager.get_messages_for_request(BUDGET, server)
        manager.longest_wait = max(manager.longest_wait, clock.now - started)
        await asyncio.sleep(step_s)  # the agent's own step: virtual time in which background work proceeds
    return manager, recorder


@pytest.mark.parametrize(
    ("early", "blocking"),
    [(True, False), (False, False), (True, True)],
    ids=["slow-summaries-start-early", "before", "blocking-starts-early-too"],
)
async def test_a_slow_summarizer_is_prefetched_at_the_prefetch_threshold_without_prefetch_set(
    monkeypatch: pytest.MonkeyPatch, early: bool, blocking: bool
):
    """Live (the soft threshold), 25 s summaries, a 5 s deadline, 3 s agent steps: once the pace says a summary
    takes longer than the deadline, the summary of the next cut starts at ``prefetch_threshold`` and the threshold
    compaction finds it written (a cache hit). Before, a request past the budget cut most of them at the deadline
    (7 of 27 written by the LLM, the circuit opened on the cuts). Blocking too: there no request waits past the
    deadline, so the time a slow summary needs is found the same way."""
    manager, recorder = await live(monkeypatch, 3.0, early, blocking)
    assert manager.longest_wait <= 5.0 + 0.01, f"a request waited {manager.longest_wait:.2f} s"
    assert manager.config.prefetch is False and manager.summarizer.pace.known
    seen = fallbacks(recorder)
    written = sum(f is None for f in seen)
    if not early:
        assert written < len(seen) / 2, seen
        return
    assert recorder.get_events("context:summary_prefetched"), "the slow summarizer's summaries were started early"
    assert written >= 0.9 * len(seen), seen
    posts = [d for _, d in recorder.get_events("context:post_compact") if d["summarized_messages"]]
    assert any(d["cache_hits"] and not d["provider_calls"] for d in posts), "a compaction took a prefetched summary"


async def test_a_fast_summarizer_is_not_prefetched_unless_asked(monkeypatch: pytest.MonkeyPatch):
    virtual(monkeypatch)
    server = LocalServer(seconds_per_token=0.0001)  # 0.3 s a summary
    recorder = EventRecorder()
    manager = create_manager({"max_tokens": BUDGET, "observation_masking": False}, hooks=recorder)
    for message in mixed_history(160, size=8):
        await manager.add_message(message)
        await manager.get_messages_for_request(BUDGET, server)
        await asyncio.sleep(1.0)
    assert manager.summarizer.pace.known and not manager.compactor.slow(manager.budget.limits(BUDGET))
    assert recorder.get_events("context:summary_prefetched") == []


async def test_background_summaries_get_the_time_the_measured_pace_asks_for(monkeypatch: pytest.MonkeyPatch):
    """A background summary needing more than the fixed 120 s background deadline is not cut when the pace says so."""
    clock = virtual(monkeypatch)
    config = {"max_tokens": BUDGET, "observation_masking": False, "summarizer": {"timeout_s": 900}}
    manager = create_manager(config)
    manager.summarizer.pace.answered(100.0, 2_000)  # 50 ms a token, measured: a summary takes over 3 minutes
    server = LocalServer(seconds_per_token=0.05)
    started = None
    for message in mixed_history(120, size=8):
        await manager.add_message(message)
        await manager.get_messages_for_request(BUDGET, server)
        if manager.background.running:
            started = clock.now
            deadline = manager.background.flight.job.deadline
            break
    assert started is not None
    assert deadline - started > compactor_module.BACKGROUND_DEADLINE_S, "the deadline follows the pace"
    await asyncio.wait({manager.background.flight.task})
    landed = manager.background.flight.task.result()
    assert clock.now - started > compactor_module.BACKGROUND_DEADLINE_S
    assert landed is not None and landed.state.segments and server.answered == 1
    assert landed.state.segments[0].text.startswith("SUMMARY#1"), "the LLM wrote it"


def test_one_warning_names_the_deadline_key_when_summaries_keep_being_cut(caplog: pytest.LogCaptureFixture):
    pace = Pace()
    pace.answered(60.0, 10_000)
    warning = SlowWarning(pace, deadline_s=30.0, timeout_s=120.0)
    with caplog.at_level(logging.WARNING, logger=PACE_LOGGER):
        for category in ["deadline", "deadline", None, "deadline", "deadline", "deadline", "deadline", "deadline"]:
            if category is None:
                warning.written()
            else:
                warning.fell_back(category)
    [record] = [r for r in caplog.records if r.name == PACE_LOGGER]
    assert record.levelno == logging.WARNING
    assert "compaction_deadline_s" in record.message and "6.0 ms per input token" in record.message
    assert "30 s" in record.message


def test_the_warning_names_the_call_timeout_when_calls_time_out(caplog: pytest.LogCaptureFixture):
    warning = SlowWarning(Pace(), deadline_s=30.0, timeout_s=120.0)
    with caplog.at_level(logging.WARNING, logger=PACE_LOGGER):
        for category in ["timeout", "ungrounded", "timeout", "timeout"]:
            warning.fell_back(category)
    [record] = [r for r in caplog.records if r.name == PACE_LOGGER]
    assert "summarizer.timeout_s" in record.message and "120 s" in record.message
    assert "compaction_deadline_s" not in record.message


async def test_a_live_session_whose_summaries_keep_missing_the_deadline_warns_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
):
    """Blocking, a server far slower than the call timeout: every summary is cut; one WARNING says so, with the key."""
    virtual(monkeypatch)
    server = LocalServer(seconds_per_token=0.5)
    config = {
        "background_compaction": False,
        "compaction_deadline_s": 5,
        "summarizer": {"timeout_s": 20, "circuit_failures": 0},
    }
    with caplog.at_level(logging.WARNING, logger=PACE_LOGGER):
        _, recorder = await replay(config, server, turns=80)
    cuts = [f for f in fallbacks(recorder) if f is not None]
    assert len(cuts) >= 4
    warnings = [r for r in caplog.records if r.name == PACE_LOGGER]
    assert len(warnings) == 1, [r.message for r in warnings]
    assert "compaction_deadline_s" in warnings[0].message or "summarizer.timeout_s" in warnings[0].message


async def test_offline_replays_give_summaries_the_time_their_calls_take(monkeypatch: pytest.MonkeyPatch):
    """``compact`` and ``eval`` replay with nobody waiting: the live 30 s deadline cut every summary of a small local
    model there (prompt processing alone is 30 s for a 6,000-token span); their deadline is the replay's."""
    from amplifier_module_context_summarize.cli import compact
    from amplifier_module_context_summarize.evaluation.models import ModelSpec
    from amplifier_module_context_summarize.evaluation.strategies import manager_config
    from amplifier_module_context_summarize.testing import REPLAY_DEADLINE_S

    seen: list[dict[str, Any]] = []

    def capturing(config: dict[str, Any], **kwargs: Any) -> Any:
        seen.append(config)
        return create_manager(config, **kwargs)

    monkeypatch.setattr(compact, "create_manager", capturing)
    await compact.replay_session(mixed_history(6, size=2), 6_000, {"provider": "extractive"})
    [config] = seen
    assert config["compaction_deadline_s"] == REPLAY_DEADLINE_S >= 5 * 120, "several calls of the default timeout"
    assert config["summarizer"]["timeout_s"] == REPLAY_DEADLINE_S
    spec = ModelSpec(provider="openai", model="smollm2")
    evaluated = manager_config("summarize", 20_000, spec)
    assert evaluated["compaction_deadline_s"] == evaluated["summarizer"]["timeout_s"] == REPLAY_DEADLINE_S


@pytest.mark.parametrize("blocking", [False, True], ids=["background", "blocking"])
async def test_a_slow_summarizers_early_summaries_carry_the_focus_a_pre_compact_hook_gives(
    monkeypatch: pytest.MonkeyPatch, blocking: bool
):
    """Summaries started early for a slow summarizer are written after the hooks were asked, with their focus, and
    keyed by it, so the compaction the hooks steer takes them from the store (the feature matrix's guidance seam:
    before, every early summary's prompt lacked the hook's focus and no focused compaction could use it)."""
    from amplifier_core.models import HookResult
    from amplifier_core.testing import MockCoordinator

    virtual(monkeypatch)
    hooks = MockCoordinator().hooks
    recorder = EventRecorder()
    for event in ("context:post_compact", "context:summary_prefetched"):
        hooks.register(event, recorder.emit, name=f"record-{event}")

    async def focus(event: str, data: dict[str, Any]) -> HookResult:
        return HookResult(action="modify", data={**data, "focus": "keep the migration plan"})

    hooks.register("context:pre_compact", focus, priority=10, name="focus")
    server = LocalServer(seconds_per_token=0.005)
    config = {"max_tokens": BUDGET, "observation_masking": False, "compaction_deadline_s": 5}
    manager = create_manager({**config, "background_compaction": not blocking}, hooks=hooks)
    for message in mixed_history(160, size=8):
        await manager.add_message(message)
        await manager.get_messages_for_request(BUDGET, server)
        await asyncio.sleep(3.0)  # the agent's own step: virtual time in which background work proceeds
    assert manager.summarizer.pace.known and recorder.get_events("context:summary_prefetched")
    assert server.requests and all("keep the migration plan" in str(r) for r in server.requests)
    posts = [d for _, d in recorder.get_events("context:post_compact") if d["summarized_messages"]]
    assert any(d["cache_hits"] and not d["provider_calls"] for d in posts), "a compaction took an early summary"
