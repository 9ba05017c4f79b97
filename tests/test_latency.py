"""Never stall: past the soft threshold the summarizer works in the background; a request waits only when its
view would not fit otherwise, and then only until the compaction deadline."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from typing import Any

import pytest
from virtual_clock import VirtualClock

from amplifier_module_context_summarize import SUMMARY_MARKER, create_manager
from amplifier_module_context_summarize.compaction.run import compactor as compactor_module
from amplifier_module_context_summarize.config import parse_config
from amplifier_module_context_summarize.core.invariants import check_view
from amplifier_module_context_summarize.core.state import CompactionState, Segment
from amplifier_module_context_summarize.stores import MemoryStore
from amplifier_module_context_summarize.testing import (
    EventRecorder,  # says no handler steers: prefetch may start
    FakeProvider,
    extends,
    mixed_history,
)

BUDGET = 6_000
BACKGROUND = "context:background_compaction"
NO_MASKING = {"observation_masking": False}
"""Masking alone often answers the first crossing in band (no LLM); without it every compaction needs a summary."""


class GatedProvider(FakeProvider):
    """A session provider whose summaries wait until the test opens the gate."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.gate = asyncio.Event()

    async def complete(self, request: Any, **kwargs: Any) -> Any:
        self.requests.append(request)
        await self.gate.wait()
        self.requests.pop()
        return await super().complete(request, **kwargs)


def tool_heavy(turns: int) -> list[dict[str, Any]]:
    """Turns whose tokens are mostly one long tool output each: masking alone can halve the view."""
    out: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    for i in range(turns):
        arguments = json.dumps({"command": f"cat src/f{i}.py"})
        call = {"id": f"c{i}", "type": "function", "function": {"name": "bash", "arguments": arguments}}
        out += [
            {"role": "user", "content": f"Look at file {i}."},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": f"line {i} of the file\n" * 60},
            {"role": "assistant", "content": f"File {i} is fine."},
        ]
    return out


def make(config: dict[str, Any] | None = None, store: Any = None):
    recorder = EventRecorder()
    manager = create_manager({"max_tokens": BUDGET, **NO_MASKING, **(config or {})}, hooks=recorder, store=store)
    return manager, recorder


def phases(recorder: EventRecorder) -> list[str]:
    return [data["phase"] for _, data in recorder.get_events(BACKGROUND)]


def fits(view: list[dict[str, Any]], manager: Any) -> bool:
    return check_view(view) == [] and manager.counter.count_messages(view) <= BUDGET


async def until_background_starts(manager: Any, provider: Any, history: list[dict[str, Any]]) -> tuple[int, list]:
    """Add messages one by one, requesting a view after each, until a request starts a background compaction."""
    views: list[list[dict[str, Any]]] = []
    for i, message in enumerate(history):
        await manager.add_message(message)
        views.append(await manager.get_messages_for_request(BUDGET, provider))
        if manager.background.running:
            return i + 1, views
    raise AssertionError("no background compaction started")


async def until_landed(manager: Any) -> None:
    """Wait for the background compaction's task (its last steps run in a worker thread: it lands within real
    milliseconds, not within a count of loop iterations), at most a few seconds."""
    flight = manager.background.flight
    if flight is not None:
        await asyncio.wait({flight.task}, timeout=5)
    if manager.background.running:
        raise AssertionError("the background compaction did not land")


async def test_soft_threshold_returns_at_once_and_the_next_request_gets_the_compacted_view():
    manager, recorder = make()
    provider = GatedProvider()
    history = mixed_history(80, size=8)
    added, views = await until_background_starts(manager, provider, history)
    crossing = views[-1]
    assert fits(crossing, manager) and extends(views[-2], crossing), "the crossing view is the old one, extended"
    assert manager.counter.count_messages(crossing) > manager.budget.limits(BUDGET).compact_at
    assert not any(str(m.get("content", "")).startswith(SUMMARY_MARKER) for m in crossing)
    assert provider.requests == [] and recorder.get_events("context:post_compact") == []
    assert phases(recorder) == ["started"]
    [(_, asked)] = recorder.get_events("context:pre_compact")  # the hooks are asked before the summarizer works
    assert asked["fits"] and not asked["forced"]

    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert len(provider.requests) == 1, "the summary call runs in the background, waiting on the gate"
    await manager.add_message(history[added])
    meanwhile = await manager.get_messages_for_request(BUDGET, provider)
    assert extends(crossing, meanwhile) and fits(meanwhile, manager), "views keep extending while it runs"

    provider.gate.set()
    await until_landed(manager)
    await manager.add_message(history[added + 1])
    landed = await manager.get_messages_for_request(BUDGET, provider)
    assert str(landed[1]["content"]).startswith(SUMMARY_MARKER)
    assert fits(landed, manager)
    assert manager.counter.count_messages(landed) < manager.budget.limits(BUDGET).compact_at
    assert phases(recorder) == ["started", "landed"]
    [(_, pre)] = recorder.get_events("context:pre_compact")
    [(_, post)] = recorder.get_events("context:post_compact")
    assert post["tokens_before"] > pre["token_count"]  # the view it replaced: two messages longer than at its start
    assert post["fallback"] is None and post["provider_calls"] == 1 and post["tokens_before"] > post["token_count"]
    assert len(recorder.get_events("context:compaction")) == 1
    assert await manager.get_messages() == history[: added + 2]


async def test_blocking_mode_waits_for_the_summary_at_the_threshold():
    manager, recorder = make({"background_compaction": False})
    provider = FakeProvider()
    for message in mixed_history(80, size=8):
        await manager.add_message(message)
        view = await manager.get_messages_for_request(BUDGET, provider)
        if provider.requests:
            break
    assert str(view[1]["content"]).startswith(SUMMARY_MARKER), "the crossing request itself got the summary"
    assert phases(recorder) == [] and not manager.background.running


async def test_a_view_that_would_not_fit_waits_for_the_summary_until_the_deadline_then_the_cheaper_rungs_answer(
    monkeypatch: pytest.MonkeyPatch,
):
    clock = VirtualClock()
    clock.install(monkeypatch)
    manager, recorder = make({"compaction_deadline_s": 5})
    provider = GatedProvider()  # never answers
    history = mixed_history(80, size=8)
    added, _ = await until_background_starts(manager, provider, history)
    assert phases(recorder) == ["started"]
    waited = None
    for message in history[added:]:
        await manager.add_message(message)
        over = manager.planned_tokens > BUDGET
        started = clock.now
        view = await manager.get_messages_for_request(BUDGET, provider)
        if over:
            waited = clock.now - started
            break
        assert clock.now == started, "no request waits while its view fits"
    assert waited == pytest.approx(5.0, abs=0.01), "the request waited exactly the compaction deadline"
    assert fits(view, manager) and str(view[1]["content"]).startswith(SUMMARY_MARKER)
    assert phases(recorder) == ["started", "cancelled"]
    [(_, cancelled)] = [e for e in recorder.get_events(BACKGROUND) if e[1]["phase"] == "cancelled"]
    assert cancelled["reason"] == "deadline" and cancelled["waited_ms"] == pytest.approx(5_000, abs=10)
    dropped, post = [data for _, data in recorder.get_events("context:post_compact")]
    assert dropped["outcome"] == "cancelled", "the background compaction's pre (when it started) gets its post"
    assert post["outcome"] == "compacted" and post["fallback"] == "deadline", "the extractive rung answered"
    assert len(recorder.get_events("context:pre_compact")) == 2


async def test_a_view_that_would_not_fit_takes_a_background_summary_that_lands_before_the_deadline(
    monkeypatch: pytest.MonkeyPatch,
):
    clock = VirtualClock()
    clock.install(monkeypatch)
    manager, recorder = make({"compaction_deadline_s": 30})
    provider = FakeProvider(delay=12.0)
    history = mixed_history(80, size=8)
    added, _ = await until_background_starts(manager, provider, history)
    for message in history[added:]:
        await manager.add_message(message)
        if manager.view.tokens() > BUDGET:  # the view as planned, before the in-band fitting
            break
        await manager.get_messages_for_request(BUDGET, provider)
    started = clock.now
    view = await manager.get_messages_for_request(BUDGET, provider)
    assert 0 < clock.now - started <= 12.0
    assert fits(view, manager) and str(view[1]["content"]).startswith(SUMMARY_MARKER)
    assert phases(recorder)[:2] == ["started", "landed"]
    landed = recorder.get_events(BACKGROUND)[1][1]
    assert landed["waited_ms"] > 0
    posts = [data for _, data in recorder.get_events("context:post_compact")]
    assert posts[0]["fallback"] is None and posts[0]["provider_calls"] == 1


@pytest.mark.parametrize("how", ["clear", "set_messages"])
async def test_clear_and_set_messages_cancel_a_background_compaction(how: str):
    manager, recorder = make()
    provider = GatedProvider()
    history = mixed_history(80, size=8)
    await until_background_starts(manager, provider, history)
    await asyncio.sleep(0)
    task = manager.background.flight.task
    if how == "clear":
        await manager.clear()
    else:
        await manager.set_messages(history[:10])
    for _ in range(20):
        await asyncio.sleep(0)
    assert task.cancelled() and not manager.background.running
    assert phases(recorder) == ["started", "cancelled"]
    assert recorder.get_events(BACKGROUND)[-1][1]["reason"] == ("cleared" if how == "clear" else "replaced")
    provider.gate.set()
    view = await manager.get_messages_for_request(BUDGET, provider)
    assert view == (await manager.get_messages() if how == "set_messages" else [])
    [(_, post)] = recorder.get_events("context:post_compact")
    assert post["outcome"] == "cancelled", "its pre went out when it started: the cancel closes it"
    assert len(recorder.get_events("context:pre_compact")) == 1 and manager.stats["compactions"] == 0


async def test_resume_rebuilds_the_same_view_with_zero_provider_calls():
    store = MemoryStore()
    manager, recorder = make({"observation_masking": True}, store=store)
    provider = FakeProvider()
    history = mixed_history(120, size=8)
    for message in history:
        await manager.add_message(message)
        await manager.get_messages_for_request(BUDGET, provider)
        await asyncio.sleep(0)  # the agent's own LLM call: background work runs meanwhile
    await until_landed(manager)
    view = await manager.get_messages_for_request(BUDGET, provider)
    assert "landed" in phases(recorder), "compactions ran in the background"
    assert str(view[1]["content"]).startswith(SUMMARY_MARKER)

    resumed, _ = make({"observation_masking": True}, store=store)
    fresh = FakeProvider()
    await resumed.set_messages(history)
    assert await resumed.get_messages_for_request(BUDGET, fresh) == view
    assert fresh.requests == []


async def test_a_background_failure_is_reported_and_the_next_compaction_runs_in_band(
    monkeypatch: pytest.MonkeyPatch,
):
    manager, recorder = make()
    provider = FakeProvider()

    async def broken(deadline: float | None = None) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(manager.prefetcher, "drain", broken)
    history = mixed_history(80, size=8)
    added, _ = await until_background_starts(manager, provider, history)
    await asyncio.sleep(0)
    monkeypatch.undo()
    await manager.add_message(history[added])
    view = await manager.get_messages_for_request(BUDGET, provider)
    assert phases(recorder) == ["started", "failed"]
    assert recorder.get_events(BACKGROUND)[-1][1]["reason"] == "RuntimeError"
    failed, post = [data for _, data in recorder.get_events("context:post_compact")]
    assert failed["outcome"] == "cancelled" and post["outcome"] == "compacted"
    assert post["provider_calls"] == 1 and str(view[1]["content"]).startswith(SUMMARY_MARKER)
    assert fits(view, manager)


async def test_a_summarizer_fault_in_the_background_lands_as_the_extractive_rung():
    manager, recorder = make({"summarizer": {"max_retries": 0}})
    provider = FakeProvider(fail_with=RuntimeError("provider down"))
    history = mixed_history(80, size=8)
    added, _ = await until_background_starts(manager, provider, history)
    await until_landed(manager)
    await manager.add_message(history[added])
    view = await manager.get_messages_for_request(BUDGET, provider)
    assert phases(recorder) == ["started", "landed"]
    [(_, pre)] = recorder.get_events("context:pre_compact")
    [(_, post)] = recorder.get_events("context:post_compact")
    assert post["tokens_before"] > pre["token_count"]  # the view it replaced: a message longer than at its start
    assert post["fallback"] is not None and fits(view, manager)


async def test_masking_alone_is_installed_in_band_without_a_background_compaction():
    manager, recorder = make({"observation_masking": True})
    provider = GatedProvider()
    for message in tool_heavy(60):
        await manager.add_message(message)
        await manager.get_messages_for_request(BUDGET, provider)
        if recorder.get_events("context:post_compact"):
            break
    [(_, post)] = recorder.get_events("context:post_compact")
    assert post["provider_calls"] == 0 and post["segments"] == 0, "the first crossing was answered by masking"
    assert post["token_count"] < post["tokens_before"] and phases(recorder) == []
    assert provider.requests == []


async def test_a_prefetch_under_way_lands_first_and_the_background_compaction_takes_it(
    monkeypatch: pytest.MonkeyPatch,
):
    clock = VirtualClock()
    clock.install(monkeypatch)
    manager, recorder = make({"prefetch": True, "prefetch_threshold": 0.6})
    provider = FakeProvider(delay=10.0)
    history = mixed_history(80, size=8)
    added, _ = await until_background_starts(manager, provider, history)
    assert manager.prefetcher.busy, "the prefetch started below the threshold is still under way"
    for _ in range(60):
        if not manager.background.running:
            break
        await asyncio.sleep(1)
    await manager.add_message(history[added])
    view = await manager.get_messages_for_request(BUDGET, provider)
    assert phases(recorder) == ["started", "landed"]
    assert len(recorder.get_events("context:summary_prefetched")) == 1
    [(_, post)] = recorder.get_events("context:post_compact")
    assert post["cache_hits"] >= 1 and post["provider_calls"] == 0, "the compaction took the prefetched summary"
    assert len(provider.requests) == 1, "one summary paid for, by the prefetch"
    assert fits(view, manager) and str(view[1]["content"]).startswith(SUMMARY_MARKER)


async def test_compact_lets_a_background_compaction_land_first_then_compacts_in_band(monkeypatch: pytest.MonkeyPatch):
    clock = VirtualClock()
    clock.install(monkeypatch)
    manager, recorder = make()
    provider = FakeProvider(delay=3.0)
    await until_background_starts(manager, provider, mixed_history(80, size=8))
    started = clock.now
    saved = await manager.compact()
    assert 0 < clock.now - started <= 3.0, "compact() waited for the summary under way, not longer"
    assert phases(recorder) == ["started", "landed"] and saved >= 0
    assert [d["forced"] for _, d in recorder.get_events("context:pre_compact")] == [False, True]
    assert len(recorder.get_events("context:post_compact")) == 2


def test_background_compaction_must_be_a_boolean():
    assert parse_config({"background_compaction": False}).background_compaction is False
    assert parse_config({}).background_compaction is True
    with pytest.raises(ValueError, match="background_compaction"):
        parse_config({"background_compaction": "no"})


# ------------------------------------------------------------------------------- the latency benchmark


def test_the_virtual_time_loop_jumps_over_waits_and_feeds_the_package_deadlines():
    from amplifier_module_context_summarize.benchmark import virtual_time
    from amplifier_module_context_summarize.core import clock as package_clock

    clock = virtual_time.VirtualClock()

    async def session() -> tuple[float, float]:
        before = package_clock.now()
        await asyncio.sleep(30)
        return before, package_clock.now()

    before, after = virtual_time.run(session(), clock)
    assert before == virtual_time.START, "the package reads the loop's virtual clock"
    assert after - before == pytest.approx(30) and clock.now == pytest.approx(virtual_time.START + 30)
    assert package_clock.now() != after, "outside a loop the package reads the real clock"


def test_on_the_benchmark_loop_a_request_waits_the_compaction_deadline_in_virtual_time_with_nothing_patched():
    """The public seam end to end: on the benchmark's virtual-time loop, with no module of the package patched, a
    summary that never comes holds the request that no longer fits exactly the compaction deadline."""
    from amplifier_module_context_summarize.benchmark import virtual_time

    clock = virtual_time.VirtualClock()

    async def session() -> tuple[float | None, EventRecorder]:
        manager, recorder = make({"compaction_deadline_s": 5})
        provider = GatedProvider()  # never answers
        history = mixed_history(80, size=8)
        added, _ = await until_background_starts(manager, provider, history)
        for message in history[added:]:
            await manager.add_message(message)
            over = manager.planned_tokens > BUDGET
            started = clock.now
            view = await manager.get_messages_for_request(BUDGET, provider)
            assert fits(view, manager)
            if over:
                return clock.now - started, recorder
        return None, recorder

    waited, recorder = virtual_time.run(session(), clock)
    assert waited == pytest.approx(5.0, abs=0.01), "the request waited exactly the deadline, in virtual seconds"
    [(_, cancelled)] = [e for e in recorder.get_events(BACKGROUND) if e[1]["phase"] == "cancelled"]
    assert cancelled["reason"] == "deadline" and cancelled["waited_ms"] == pytest.approx(5_000, abs=10)


def test_latency_benchmark_compares_blocking_with_the_soft_threshold():
    from amplifier_module_context_summarize.benchmark.latency import MODES, LatencyPlan, render, run_latency

    plan = LatencyPlan(turns=25, budget=30_000, delays_s=(10.0,))
    result = run_latency(plan, MODES[:2])
    blocking, soft = result.runs
    assert blocking.compactions > 0 and soft.compactions > 0
    assert blocking.views_over_budget == soft.views_over_budget == 0
    assert soft.waits == soft.waits_not_fitting, "the soft threshold waits only for views that would not fit"
    assert soft.summarizer_calls >= soft.wasted_calls >= 0 and soft.background_started > 0
    assert blocking.max_ms >= 10_000, "blocking waited for a whole summary at least once"
    assert "Targets (summarizer 10 s)" in render(result)
    figures = set(result.to_json()["runs"][0])
    assert {"p50_ms", "p95_ms", "max_ms", "wait_share", "wasted_share", "peak_share"} <= figures


async def test_a_view_one_output_takes_past_the_budget_is_masked_to_fit_and_summarized_in_the_background():
    """A tool output a quarter of the budget takes the view from under the threshold to over the budget in one
    step (as with loop-basic and large outputs): masking alone fits it, so the request does not wait for the
    summary; the summary is written in the background and lands on a later request."""
    manager, recorder = make({"observation_masking": True, "mask_keep_recent": 1})
    provider = GatedProvider()
    over_budget_starts = 0
    for message in tool_heavy_large(80):
        await manager.add_message(message)
        would_not_fit = manager.view.tokens() > BUDGET
        running = manager.background.running
        view = await asyncio.wait_for(manager.get_messages_for_request(BUDGET, provider), timeout=5)
        assert fits(view, manager)
        if would_not_fit and not running and manager.background.running:
            over_budget_starts += 1
            posts = recorder.get_events("context:post_compact")
            assert posts and posts[-1][1]["summaries"] == 0, "the masking it installed is reported"
            break
    assert over_budget_starts == 1, "a view over the budget was masked to fit while the summary was still gated"
    provider.gate.set()
    await until_landed(manager)
    landed = await manager.get_messages_for_request(BUDGET, provider)
    assert phases(recorder) == ["started", "landed"]
    assert fits(landed, manager) and str(landed[1]["content"]).startswith(SUMMARY_MARKER)


async def test_while_a_summary_is_written_a_view_past_the_budget_is_masked_further_and_the_summary_lands_onto_it(
    monkeypatch,
):
    """A fast agent: large outputs keep arriving while the background summary is still gated. Each request whose
    view would not fit is masked further in band instead of waiting; the summary then lands onto that masking,
    and a resumed session rebuilds the same view."""
    monkeypatch.setattr(compactor_module, "LANDING_GRACE_S", 0.0)  # the gate holds the summary past any grace
    store, config = MemoryStore(), {"observation_masking": True, "mask_keep_recent": 1}
    manager, recorder = make(config, store=store)
    provider = GatedProvider()
    history = tool_heavy_large(80)
    messages = iter(history)
    beside = 0
    for message in messages:
        await manager.add_message(message)
        would_not_fit, running, before = manager.view.tokens() > BUDGET, manager.background.running, manager.state
        view = await asyncio.wait_for(manager.get_messages_for_request(BUDGET, provider), timeout=5)
        assert fits(view, manager), "no request waited for the gated summary, and every view fits"
        if would_not_fit and running:
            assert manager.background.running and manager.state.mask_end > before.mask_end
            assert manager.state.segments == before.segments, "masked further in band, no summary yet"
            beside += 1
            if beside == 2:
                break
    assert beside == 2
    masked_in_band = manager.state.mask_end
    assert phases(recorder) == ["started"] and provider.requests, "the summary is still being written"
    provider.gate.set()
    await until_landed(manager)
    await manager.add_message(next(messages))
    landed = await manager.get_messages_for_request(BUDGET, provider)
    assert phases(recorder) == ["started", "landed"], "it landed onto the masking instead of being superseded"
    assert manager.state.segments and str(landed[1]["content"]).startswith(SUMMARY_MARKER)
    assert manager.state.mask_end >= masked_in_band or manager.state.boundary >= masked_in_band
    assert fits(landed, manager)

    resumed, _ = make(config, store=store)
    fresh = FakeProvider()
    await resumed.set_messages(await manager.get_messages())
    assert await resumed.get_messages_for_request(BUDGET, fresh) == landed
    assert fresh.requests == []


def test_a_summary_lands_only_onto_more_masking_of_the_state_it_started_from():
    """``Flights.land`` installs a summary onto a state that differs from its start only by masking further."""
    start = CompactionState(boundary=4, segments=(Segment(0, 4, "summary", 3),), mask_end=6)
    masks_further = compactor_module.masks_further
    assert masks_further(start, start.masked_to(9))
    assert not masks_further(start, start), "nothing masked further: the same state"
    assert not masks_further(start, start.cut(5)), "another boundary"
    assert not masks_further(start, replace(start.masked_to(9), segments=(Segment(0, 4, "other", 3),)))


def tool_heavy_large(turns: int) -> list[dict[str, Any]]:
    """Like ``tool_heavy``, with outputs of about a quarter of the budget each."""
    out = tool_heavy(turns)
    for message in out:
        if message["role"] == "tool":
            message["content"] = message["content"] * 4
    return out
