"""Working beside the real Amplifier modules: budgets, the wire, background summaries, kernel events, hooks.

The look-alikes in ``amplifier_module_context_summarize.testing`` (``AnthropicLikeProvider``, ``LoopLike``)
behave like provider-anthropic and loop-basic where a context manager can
tell the difference (see their modules' docstrings for what was read from their source).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from amplifier_core.testing import EventRecorder, MockCoordinator

from amplifier_module_context_summarize import create_manager, mount
from amplifier_module_context_summarize.core.budget import request_budget
from amplifier_module_context_summarize.core.invariants import check_view
from amplifier_module_context_summarize.core.wire import (
    UsageCalibration,
    reported_input_tokens,
    without_response_chain,
)
from amplifier_module_context_summarize.testing import (
    AnthropicLikeProvider,
    FakeProvider,
    LoopLike,
    ReadFileTool,
    mixed_history,
)


async def mounted(config: dict[str, Any], **provider_options: Any):
    """A MockCoordinator (real hook registry) with the module mounted, one tool and an Anthropic-like provider."""
    coordinator = MockCoordinator()
    tools = {"read_file": ReadFileTool()}
    await coordinator.mount("tools", tools["read_file"], name="read_file")
    provider = AnthropicLikeProvider(coordinator.hooks, **provider_options)
    await coordinator.mount("providers", provider, name="anthropic")
    events: list[tuple[str, dict[str, Any]]] = []

    async def record(event: str, data: dict[str, Any]) -> Any:
        events.append((event, data))
        from amplifier_core.models import HookResult

        return HookResult(action="continue")

    for name in ("context:pre_compact", "context:post_compact", "context:compaction", "llm:stream_block_delta"):
        coordinator.hooks.register(name, record, name=f"test-{name}")
    manager = (await mount(coordinator, config)).manager
    return manager, provider, LoopLike(manager, provider, tools), events


def of(events: list[tuple[str, dict[str, Any]]], name: str) -> list[dict[str, Any]]:
    return [d for e, d in events if e == name]


# ------------------------------------------------------------------ budget


async def test_configured_max_tokens_caps_the_budget_a_provider_reports():
    provider = FakeProvider(context_window=200_000, max_output_tokens=8_000)
    assert await request_budget(None, provider, 1000, None, 200_000) == 191_000
    assert await request_budget(None, provider, 1000, 16_000, 200_000) == 16_000
    assert await request_budget(50_000, provider, 1000, 16_000, 200_000) == 50_000  # the caller's own figure
    assert await request_budget(None, None, 1000, None, 200_000) == 200_000


async def test_manager_compacts_at_the_configured_max_tokens_even_when_the_provider_reports_a_big_window():
    recorder = EventRecorder()
    manager = create_manager({"max_tokens": 16_000, "summarizer": "extractive"}, hooks=recorder)
    await manager.set_messages(mixed_history(40))
    view = await manager.get_messages_for_request(provider=FakeProvider(context_window=200_000, max_output_tokens=8000))
    post = [d for _, d in recorder.get_events("context:post_compact")]
    assert post and post[0]["wire_budget"] == 16_000
    assert manager.counter.count_messages(view) <= 16_000


# ------------------------------------------------------------------ the wire


async def test_every_request_fits_the_budget_as_the_provider_counts_it_with_tools_and_injections():
    manager, provider, loop, events = await mounted({"max_tokens": 16_000, "summarizer": {"model": "claude-haiku-4-5"}})
    for turn in range(40):
        await loop.turn(f"Turn {turn}: review a.py and report. " + "Context for the review. " * 40)
    post = of(events, "context:post_compact")
    assert len(post) >= 3, "the history outgrew the budget several times"
    assert max(provider.agent_wire_tokens) <= 16_000, "the provider counted a request over the budget"
    assert post[-1]["tool_tokens"] > 50
    assert 1.1 < post[-1]["calibration"] <= 1.3, "the factor was learned from the reported usage"
    assert manager.calibration.samples >= 5


async def test_calibration_takes_the_first_report_after_a_view_and_ignores_implausible_ones():
    calibration = UsageCalibration(initial=1.1)
    assert calibration.factor == 1.1
    calibration.observe({"usage": {"input_tokens": 5000}})  # no view served yet: another request's report
    assert calibration.samples == 0
    calibration.expect(10_000)
    assert calibration.observe({"usage": {"input_tokens": 11_000, "cache_write_tokens": 1000}}) == pytest.approx(1.2)
    calibration.observe({"usage": {"input_tokens": 9000}})  # a second report for the same view is not ours
    calibration.expect(10_000)
    calibration.observe({"usage": {"input_tokens": 300}})  # a background call answered first: implausible
    calibration.expect(10_000)
    with calibration.quiet():  # our own summarizer call
        calibration.observe({"usage": {"input_tokens": 30_000}})
    calibration.observe({"usage": {"input_tokens": 10_500}})
    assert calibration.factor == pytest.approx(1.2), "the largest recent ratio rules"
    assert reported_input_tokens({"usage": {"input_tokens": "12"}}) is None
    assert reported_input_tokens({"usage": {"input_tokens": float("inf")}}) is None


# ------------------------------------------------------------------ summaries as background work


async def test_summary_requests_are_background_calls_with_the_configured_model_and_never_stream():
    manager, provider, loop, events = await mounted({"max_tokens": 16_000, "summarizer": {"model": "claude-haiku-4-5"}})
    for turn in range(30):
        await loop.turn(f"Turn {turn}: review a.py. " + "Context for the review. " * 40)
    assert provider.summary_calls, "compaction asked the session provider for summaries"
    assert {c["model"] for c in provider.summary_calls} == {"claude-haiku-4-5"}
    assert all(c["metadata"]["stream"] is False for c in provider.summary_calls)
    deltas = [d["delta"] for d in of(events, "llm:stream_block_delta")]
    assert deltas and not any(d.startswith("### Progress") for d in deltas), "summary text reached the UI stream"


async def test_without_a_configured_model_summaries_are_keyed_by_the_providers_default_model():
    manager, provider, loop, _ = await mounted({"max_tokens": 16_000})
    before = manager.fingerprint
    await loop.turn("Turn 0: look at a.py.")
    assert manager.summarizer.model == "claude-sonnet-4-5"
    assert manager.fingerprint != before


async def test_a_summary_from_another_model_than_requested_is_used_but_not_cached():
    class Fallback(FakeProvider):
        async def complete(self, request: Any, **kwargs: Any) -> Any:
            response = await super().complete(request, **kwargs)
            response.metadata = {"model": "claude-opus-4-8"}  # the provider fell back to another model
            return response

    recorder = EventRecorder()
    manager = create_manager({"max_tokens": 12_000, "summarizer": {"model": "claude-haiku-4-5"}}, hooks=recorder)
    await manager.set_messages(mixed_history(50))
    view = await manager.get_messages_for_request(provider=Fallback())
    assert any("SUMMARY#" in str(m.get("content")) for m in view)
    assert await manager.store.starting_at(manager.fingerprint) == []


# ------------------------------------------------------------------ outages


@pytest.mark.slow
async def test_a_summarizer_outage_costs_one_deadline_then_the_circuit_opens():
    config = {"max_tokens": 16_000, "compaction_deadline_s": 0.3, "summarizer": {"circuit_failures": 2}}
    config["observation_masking"] = False  # every compaction asks the summarizer (masking alone needs none)
    manager, provider, loop, events = await mounted(config, fail_summaries=True, retry_delay=0.2)
    longest = 0.0
    for turn in range(40):
        started = time.monotonic()
        await loop.turn(f"Turn {turn}: review a.py. " + "Context for the review. " * 40)
        longest = max(longest, time.monotonic() - started)
    post = [d for d in of(events, "context:post_compact") if d["outcome"] == "compacted"]  # not dropped flights
    assert len(post) >= 3
    assert longest < 2.0, "a compaction waited past its deadline"
    assert all(d["fallback"] is not None for d in post)
    assert post[-1]["circuit"] == "open" and post[-1]["fallback"] == "circuit_open"
    calls_at_open = next(i for i, d in enumerate(post) if d["fallback"] == "circuit_open")
    assert len(provider.summary_calls) <= 2 * 6, "no LLM calls once the circuit opened"
    assert calls_at_open <= 2
    assert max(provider.agent_wire_tokens) <= 16_000


async def test_the_session_provider_gets_no_module_retries_on_top_of_its_own():
    recorder = EventRecorder()
    manager = create_manager({"max_tokens": 12_000}, hooks=recorder)
    assert manager.summarizer.max_retries == 0
    direct = create_manager({"max_tokens": 12_000, "summarizer": {"provider": "openai", "base_url": "http://x"}})
    assert direct.summarizer.max_retries == 3
    pinned = create_manager({"max_tokens": 12_000, "summarizer": {"max_retries": 2}})
    assert pinned.summarizer.max_retries == 2


# ------------------------------------------------------------------ kernel events and hooks


async def test_context_compaction_is_emitted_beside_pre_and_post_compact():
    # Summaries only, so the first compaction removes messages (masking alone keeps every message).
    manager, provider, loop, events = await mounted({"max_tokens": 16_000, "observation_masking": False})
    for turn in range(25):
        await loop.turn(f"Turn {turn}: review a.py. " + "Context for the review. " * 40)
    kernel = of(events, "context:compaction")
    assert kernel and len(kernel) == len(of(events, "context:post_compact"))
    first = kernel[0]
    assert first["after_tokens"] < first["before_tokens"] and first["messages_removed"] > 0
    assert first["before_messages"] - first["after_messages"] == first["messages_removed"]


async def test_system_prompt_factory_is_rendered_for_every_request_and_counted():
    manager = create_manager({"max_tokens": 6_000, "summarizer": "extractive"})
    renders: list[int] = []

    async def factory() -> str:
        renders.append(len(renders))
        return f"You are the bundle's agent (render {len(renders)}). " + "Follow @AGENTS.md closely. " * 60

    await manager.set_system_prompt_factory(factory)
    assert manager._system_prompt_factory is factory  # peers read and re-wrap it under this name
    await manager.add_message({"role": "system", "content": "A frozen copy of an old system prompt."})
    hook_note = {"role": "system", "content": "Hook note.", "metadata": {"source": "hook"}}
    await manager.add_message(hook_note)
    for message in mixed_history(30, system=False):
        await manager.add_message(message)
        if message["role"] == "user":
            view = await manager.get_messages_for_request()
            assert view[0]["role"] == "system" and f"render {len(renders)}" in view[0]["content"]
            assert "A frozen copy" not in str(view) and hook_note in view
            assert manager.counter.count_messages(view) <= 6_000
            assert check_view(view) == []
    assert len(renders) >= 30


async def test_a_failing_system_prompt_factory_keeps_the_last_prompt():
    manager = create_manager({"max_tokens": 6_000, "summarizer": "extractive"})
    answers = iter(["Prompt one.", RuntimeError("bundle file vanished")])

    async def factory() -> str:
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    await manager.set_system_prompt_factory(factory)
    await manager.add_message({"role": "user", "content": "hi"})
    assert (await manager.get_messages_for_request())[0]["content"] == "Prompt one."
    assert (await manager.get_messages_for_request())[0]["content"] == "Prompt one."


# ------------------------------------------------------------------ message shapes of the real loops


async def test_openai_response_chain_ids_never_reach_the_view_and_history_keeps_them():
    chained = {"role": "assistant", "content": "ok", "metadata": {"openai:response_id": "resp_1", "other": 1}}
    assert without_response_chain(chained) == {"role": "assistant", "content": "ok", "metadata": {"other": 1}}
    plain = {"role": "assistant", "content": "ok"}
    assert without_response_chain(plain) is plain

    manager = create_manager({"max_tokens": 100_000, "summarizer": "extractive"})
    history = [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "one", "metadata": {"openai:response_id": "resp_1"}},
        {"role": "user", "content": "second"},
        {"role": "assistant", "content": "two", "metadata": {"openai:response_id": "resp_2"}},
    ]
    await manager.set_messages(history)
    view = await manager.get_messages_for_request()
    assert "openai:response_id" not in str(view)
    assert await manager.get_messages() == history


async def test_thinking_block_on_a_loop_streaming_message_is_kept_intact_in_the_view():
    manager = create_manager({"max_tokens": 100_000, "summarizer": "extractive"})
    thinking = {"type": "thinking", "thinking": "Check the tests first. " * 50, "signature": "c2lnbmF0dXJl" * 20}
    assistant = {
        "role": "assistant",
        "content": [{"type": "text", "text": "Running."}],
        "tool_calls": [{"id": "t1", "tool": "bash", "arguments": {"command": "pytest -q"}}],
        "thinking_block": thinking,
    }
    await manager.set_messages([{"role": "user", "content": "run the tests"}, assistant])
    await manager.add_message({"role": "tool", "tool_call_id": "t1", "content": "3 passed"})
    view = await manager.get_messages_for_request()
    assert view[1]["thinking_block"] == thinking
    without = {k: v for k, v in assistant.items() if k != "thinking_block"}
    assert manager.counter.count_message(assistant) - manager.counter.count_message(without) > 200


def test_events_module_declares_the_kernel_compaction_event():
    from amplifier_core.events import CONTEXT_COMPACTION

    from amplifier_module_context_summarize import events

    assert CONTEXT_COMPACTION in events.EMITTED


async def test_a_deadline_cuts_a_hanging_summarizer_and_the_extractive_rung_answers():
    class Hanging(FakeProvider):
        async def complete(self, request: Any, **kwargs: Any) -> Any:
            self.requests.append(request)
            await asyncio.Event().wait()

    recorder = EventRecorder()
    manager = create_manager({"max_tokens": 12_000, "compaction_deadline_s": 0.2}, hooks=recorder)
    await manager.set_messages(mixed_history(50))
    started = time.monotonic()
    view = await manager.get_messages_for_request(provider=Hanging())
    assert time.monotonic() - started < 1.5
    post = [d for _, d in recorder.get_events("context:post_compact")]
    assert post[0]["fallback"] == "deadline"
    assert manager.counter.count_messages(view) <= 12_000
