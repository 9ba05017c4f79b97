"""A real Amplifier session, end to end: the kernel loads ``context-summarize`` through its entry point.

How the modules get into the session (amplifier-core 2.0.2, ``loader.py`` / ``_session_init.py``):
``amplifier_core.AmplifierSession`` (the Rust-backed ``RustSession``) runs ``initialize_session``, which asks
its ``ModuleLoader`` for each module id in the mount plan. With no ``module-source-resolver`` mounted, the
loader uses *direct discovery* (``ModuleLoader._load_direct``): first the ``amplifier.modules`` entry points
of installed distributions, then the filesystem convention — ``importlib.import_module(
"amplifier_module_" + id.replace("-", "_"))`` and that module's ``mount``. A test cannot add entry points,
but it can make a module importable under that conventional name; putting a module object into
``sys.modules`` is what a package on ``sys.path`` amounts to after its first import. So:

* ``context-summarize`` is resolved by the kernel from the installed entry point (checked below: the loader
  reports "via entry point" and caches our ``mount``);
* the test's orchestrator (``test-loop``) and provider (``test-provider``) are found by the filesystem rule.

A source resolver (mounted at ``module-source-resolver`` before ``initialize()``) would also work, but it
would resolve ``context-summarize`` to a path and import it from there instead of through the entry point,
which is exactly what this test must not do.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import logging
import types
from pathlib import Path
from typing import Any

import pytest
from amplifier_core import AmplifierSession, HookResult
from amplifier_core.message_models import ChatRequest, ChatResponse, Message, TextBlock, ToolCall, ToolSpec, Usage
from amplifier_core.models import ProviderInfo

from amplifier_module_context_summarize import SUMMARY_MARKER, SummarizingContextManager
from amplifier_module_context_summarize import mount as package_mount
from amplifier_module_context_summarize.core.invariants import check_view
from amplifier_module_context_summarize.core.messages import is_user_turn
from amplifier_module_context_summarize.core.tokens import TokenCounter

TURNS = 200
WINDOW, MAX_OUTPUT, SAFETY = 16_000, 2_000, 500
BUDGET = WINDOW - MAX_OUTPUT - SAFETY
FILLER = "The build log shows the compiler checking every branch of src/app/module.py again. "


class ScriptedProvider:
    """An Amplifier Provider: answers agent requests with tool calls or text, and summarizer requests with
    a short summary. Every request is checked in its dict form the moment it arrives."""

    name = "fake"

    def __init__(self) -> None:
        self.counter = TokenCounter()
        self.agent_requests = 0
        self.summary_requests: list[str] = []
        self.problems: list[str] = []
        self.over_budget: list[int] = []
        self.largest = 0
        self.summaries_seen = 0

    def get_info(self) -> ProviderInfo:
        return ProviderInfo(
            id="fake", display_name="Scripted", defaults={"context_window": WINDOW, "max_output_tokens": MAX_OUTPUT}
        )

    async def list_models(self) -> list[Any]:
        return []

    def parse_tool_calls(self, response: ChatResponse) -> list[ToolCall]:
        return response.tool_calls or []

    async def complete(self, request: ChatRequest, **kwargs: Any) -> ChatResponse:
        messages = [m.model_dump(exclude_none=True) for m in request.messages]
        self.problems += check_view(messages)
        if messages[0]["role"] == "system" and "<<<TRANSCRIPT" in str(messages[-1]["content"]):
            prompt = messages[-1]["content"]
            self.summary_requests.append(prompt)
            start = prompt.rindex("<<<TRANSCRIPT") + len("<<<TRANSCRIPT")
            text = "### Progress\n" + prompt[start : start + 600].replace("TRANSCRIPT>>>", "")
            return ChatResponse(
                content=[TextBlock(text=text)], usage=Usage(input_tokens=1, output_tokens=1, total_tokens=2)
            )
        if (messages[-1].get("metadata") or {}).get("source") == "context-summarize:instruction":
            # Self-compaction: the session's own view, then the instruction (the span is the conversation itself).
            self.summary_requests.append(str(messages[-1]["content"]) + str(len(messages)) + str(messages[-2]))
            return ChatResponse(
                content=[TextBlock(text="### Progress\nThe agent kept working through the turns.")],
                usage=Usage(input_tokens=1, output_tokens=1, total_tokens=2),
            )
        self.agent_requests += 1
        tokens = self.counter.count_messages(messages)
        self.largest = max(self.largest, tokens)
        if tokens > BUDGET:
            self.over_budget.append(tokens)
        self.summaries_seen += any(str(m.get("content", "")).startswith(SUMMARY_MARKER) for m in messages)
        last = messages[-1]
        turn = int(_turn_of(messages))
        if last["role"] == "user" or (last["role"] == "tool" and turn % 4 == 0 and _rounds(messages) < 2):
            calls = [
                ToolCall(
                    id=f"call_{self.agent_requests}_{k}",
                    name="bash",
                    arguments={"command": f"cat src/app/file_{turn}_{k}.py"},
                )
                for k in range(1 + turn % 3)
            ]
            return ChatResponse(content=[TextBlock(text=f"Checking turn {turn}.")], tool_calls=calls)
        return ChatResponse(content=[TextBlock(text=f"Turn {turn} done. " + FILLER * 3)])


def _turn_of(messages: list[dict[str, Any]]) -> str:
    for m in reversed(messages):
        if is_user_turn(m) and isinstance(m.get("content"), str) and m["content"].startswith("Turn "):
            return m["content"].split()[1].rstrip(":")
    return "0"


def _rounds(messages: list[dict[str, Any]]) -> int:
    """Tool rounds since the latest user request."""
    rounds = 0
    for m in reversed(messages):
        if is_user_turn(m):
            break
        rounds += m["role"] == "assistant"
    return rounds


class ToolLoop:
    """A small orchestrator in the shape of loop-basic: request → provider → tools → results → request ..."""

    def __init__(self) -> None:
        self.added: list[dict[str, Any]] = []

    async def _add(self, context: Any, message: dict[str, Any]) -> None:
        self.added.append(message)
        await context.add_message(message)

    async def execute(
        self,
        prompt: str,
        context: Any,
        providers: dict[str, Any],
        tools: dict[str, Any],
        hooks: Any,
        coordinator: Any = None,
        **kwargs: Any,
    ) -> str:
        provider = providers["fake"]
        await self._add(context, {"role": "user", "content": prompt})
        for _ in range(8):
            view = await context.get_messages_for_request(provider=provider)
            request = ChatRequest(
                messages=[Message.model_validate(m) for m in view],
                tools=[ToolSpec(name="bash", parameters={"type": "object"}, description="run a command")],
            )
            response = await provider.complete(request)
            text = "".join(b.text for b in response.content if getattr(b, "type", "") == "text")
            calls = provider.parse_tool_calls(response)
            if not calls:
                await self._add(context, {"role": "assistant", "content": text})
                return text
            blocks: list[dict[str, Any]] = [
                {"type": "thinking", "thinking": "Which files matter?", "signature": f"sig-{len(self.added)}=="},
                {"type": "text", "text": text},
            ]
            blocks += [{"type": "tool_call", "id": c.id, "name": c.name, "input": c.arguments} for c in calls]
            await self._add(context, {"role": "assistant", "content": blocks})
            for n, call in enumerate(calls):
                output = f"$ {call.arguments['command']}\n" + FILLER * (8 + 4 * n)
                if n % 2:  # both result forms an orchestrator may store
                    message = {"role": "tool", "tool_call_id": call.id, "content": output}
                else:
                    message = {
                        "role": "tool",
                        "tool_call_id": call.id,
                        "content": [
                            {
                                "type": "tool_result",
                                "tool_call_id": call.id,
                                "output": {"stdout": output, "exit_code": 0},
                            }
                        ],
                    }
                await self._add(context, message)
        return "gave up"


def install_test_modules(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``test-loop`` and ``test-provider`` importable by the loader's filesystem convention."""

    async def mount_loop(coordinator: Any, config: dict[str, Any] | None = None) -> None:
        await coordinator.mount("orchestrator", ToolLoop())

    async def mount_provider(coordinator: Any, config: dict[str, Any] | None = None) -> None:
        await coordinator.mount("providers", ScriptedProvider(), name="fake")

    for name, mount in (("amplifier_module_test_loop", mount_loop), ("amplifier_module_test_provider", mount_provider)):
        module = types.ModuleType(name)
        module.mount = mount
        monkeypatch.setitem(__import__("sys").modules, name, module)


def mount_plan(storage: Path) -> dict[str, Any]:
    return {
        "session": {
            "orchestrator": "test-loop",
            "context": {
                "module": "context-summarize",
                "config": {
                    "compaction_strategy": "summarize",
                    "safety_margin": SAFETY,
                    "summary_max_tokens": 600,
                    "summarizer": {"provider": "session", "max_retries": 0},
                    "storage_path": str(storage),
                },
            },
        },
        "providers": [{"module": "test-provider"}],
    }


async def test_two_hundred_turn_session_compacts_and_keeps_everything(monkeypatch, tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="amplifier_core.loader")
    entry_points = importlib.metadata.entry_points(group="amplifier.modules")
    assert any(ep.name == "context-summarize" for ep in entry_points), "the package is not installed"
    install_test_modules(monkeypatch)

    session = AmplifierSession(mount_plan(tmp_path / "summaries.sqlite"))
    events: list[tuple[str, dict[str, Any]]] = []

    async def observe(event: str, data: dict[str, Any]) -> HookResult:
        events.append((event, dict(data)))
        return HookResult(action="continue")

    session.coordinator.hooks.register("context:pre_compact", observe)
    session.coordinator.hooks.register("context:post_compact", observe)
    session.coordinator.hooks.register("context:background_compaction", observe)
    await session.initialize()
    try:
        context = session.coordinator.get("context")
        assert isinstance(context, SummarizingContextManager)
        assert session.coordinator.loader._loaded_modules["context-summarize"] is package_mount
        assert "Loaded module 'context-summarize' via entry point" in caplog.text
        advertised = await session.coordinator.collect_contributions("observability.events")
        assert any({"context:pre_compact", "context:post_compact"} <= set(a) for a in advertised)

        provider = session.coordinator.get("providers")["fake"]
        orchestrator = session.coordinator.get("orchestrator")
        for turn in range(TURNS):
            answer = await session.execute(f"Turn {turn}: look at src/app/file_{turn}_0.py. " + FILLER * 6)
            assert answer.startswith(f"Turn {turn} done.")

        # Every request the provider received was valid and within the budget.
        assert provider.problems == []
        assert provider.over_budget == [] and provider.largest <= BUDGET
        assert provider.agent_requests > 2 * TURNS
        assert provider.summaries_seen > TURNS

        # The session's own hook registry saw each compaction begin and end.
        pre = [d for e, d in events if e == "context:pre_compact"]
        post = [d for e, d in events if e == "context:post_compact"]
        # Every post_compact follows its own pre_compact: a background compaction's pre goes out when it starts
        # (before ``context:background_compaction`` started), its post when a request installs it; one still under
        # way at the end has only its pre.
        background = [d["phase"] for e, d in events if e == "context:background_compaction"]
        pending = background.count("started") - (len(background) - background.count("started"))
        assert pending in (0, 1) and "failed" not in background
        # An in-band compaction (masking a view over the budget while a flight is under way) may come between a
        # background pre and its post, its own pre right before its post: posts answer pres last in, first out.
        paired, waiting, installed = [], [], 0
        for e, d in events:
            if e == "context:pre_compact":
                waiting.append((d, installed))
            elif e == "context:post_compact":
                p, installed_then = waiting.pop()
                paired.append((p, d, installed - installed_then))
                installed += 1
                assert len(waiting) <= 1, "only a background flight's pre waits for its post"
        assert len(post) >= 5 and len(waiting) == pending
        # A post's before is the view it replaced: with nothing installed between, the history only grew since its pre.
        assert all(p["token_count"] <= q["tokens_before"] for p, q, between in paired if between == 0)
        assert any(between == 0 for *_, between in paired)
        assert all(d["session_id"] == session.session_id for d in pre + post)
        assert {d["wire_budget"] for d in post} == {BUDGET}
        assert all(d["budget"] < BUDGET for d in post)  # less the default calibration reserve
        assert all(d["fallback"] is None and d["token_count"] < d["tokens_before"] for d in post)
        reported = sum(d["provider_calls"] for d in post)  # a compaction under way reports its calls on landing
        assert len(provider.summary_requests) == reported or (pending and reported < len(provider.summary_requests))

        # The transcript is intact: exactly what the orchestrator added, in order.
        transcript = await context.get_messages()
        assert transcript == orchestrator.added
        assert sum(is_user_turn(m) for m in transcript) == TURNS
        # Settled: a background compaction under way may already have stored its summary, which a resumed session
        # would show; the view to compare with is the one after it lands.
        for _ in range(1000):
            if not context.background.running:
                break
            await asyncio.sleep(0.001)
        final_view = await context.get_messages_for_request(provider=provider)
        paid_before = set(provider.summary_requests)
    finally:
        await session.cleanup()

    # Resume: a new session on the same summary store rebuilds the same view without asking for summaries.
    resumed = AmplifierSession(mount_plan(tmp_path / "summaries.sqlite"), is_resumed=True)
    await resumed.initialize()
    try:
        context = resumed.coordinator.get("context")
        provider = resumed.coordinator.get("providers")["fake"]
        await context.set_messages(transcript)
        assert await context.get_messages_for_request(provider=provider) == final_view
        answer = await resumed.execute(f"Turn {TURNS}: one more look. " + FILLER)
        assert answer.startswith(f"Turn {TURNS} done.")
        assert provider.problems == [] and provider.over_budget == []
        # The new turn may summarize its new span and merge tiers, but never pays again for an old span.
        assert len(provider.summary_requests) <= 2
        assert not set(provider.summary_requests) & paid_before
        assert (await context.get_messages())[: len(transcript)] == transcript
    finally:
        await resumed.cleanup()
