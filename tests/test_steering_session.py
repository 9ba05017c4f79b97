"""Steering through a real ``AmplifierSession`` (issue 34): the kernel loads ``context-summarize`` through its
entry point (as in ``test_amplifier_session.py``), hook handlers are registered the Amplifier way
(``coordinator.hooks.register``), and what the provider receives is checked: a focus from ``modify`` in every
summarizer prompt, ``deny`` postponing while the view fits, ``inject_context`` after a compaction right after the
summary, and a pinned message in every view. Default mode: compactions run in the background."""

from __future__ import annotations

import types
from typing import Any

import pytest
from amplifier_core import AmplifierSession, HookResult
from amplifier_core.message_models import ChatRequest, ChatResponse
from test_amplifier_session import BUDGET, FILLER, SAFETY, ScriptedProvider, ToolLoop

from amplifier_module_context_summarize import SUMMARY_MARKER

TURNS = 40
PIN = "Standing rule: every migration ships with a rollback script (pinned)."
PLAN = "PLAN: 1) port the parser 2) rerun the suite"
FOCUS = "keep the parser port decisions"


class SeeingProvider(ScriptedProvider):
    """Also keeps the text of every agent request it receives."""

    def __init__(self) -> None:
        super().__init__()
        self.agent_views: list[list[str]] = []

    async def complete(self, request: ChatRequest, **kwargs: Any) -> ChatResponse:
        messages = [m.model_dump(exclude_none=True) for m in request.messages]
        if "<<<TRANSCRIPT" not in str(messages[-1].get("content")):
            self.agent_views.append([str(m.get("content")) for m in messages])
        return await super().complete(request, **kwargs)


class PinningLoop(ToolLoop):
    """The first turn's request carries a pinned message before it (as an app would mark its rules file)."""

    async def execute(self, prompt: str, context: Any, *args: Any, **kwargs: Any) -> str:
        if not self.added:
            await self._add(context, {"role": "user", "content": PIN, "metadata": {"pin": True}})
            await self._add(context, {"role": "assistant", "content": "Noted."})
        return await super().execute(prompt, context, *args, **kwargs)


def install(monkeypatch: pytest.MonkeyPatch, provider: SeeingProvider) -> None:
    async def mount_loop(coordinator: Any, config: dict[str, Any] | None = None) -> None:
        await coordinator.mount("orchestrator", PinningLoop())

    async def mount_provider(coordinator: Any, config: dict[str, Any] | None = None) -> None:
        await coordinator.mount("providers", provider, name="fake")

    for name, mount in (
        ("amplifier_module_steer_loop", mount_loop),
        ("amplifier_module_steer_provider", mount_provider),
    ):
        module = types.ModuleType(name)
        module.mount = mount
        monkeypatch.setitem(__import__("sys").modules, name, module)


def plan() -> dict[str, Any]:
    return {
        "session": {
            "orchestrator": "steer-loop",
            "context": {
                "module": "context-summarize",
                "config": {
                    "safety_margin": SAFETY,
                    "summary_max_tokens": 600,
                    "summarizer": {"provider": "session", "max_retries": 0},
                },
            },
        },
        "providers": [{"module": "steer-provider"}],
    }


async def run_session(monkeypatch: pytest.MonkeyPatch, handlers: dict[str, Any]) -> tuple[SeeingProvider, list]:
    provider = SeeingProvider()
    install(monkeypatch, provider)
    session = AmplifierSession(plan())
    events: list[tuple[str, dict[str, Any]]] = []

    async def observe(event: str, data: dict[str, Any]) -> HookResult:
        events.append((event, dict(data)))
        return HookResult(action="continue")

    for name in ("context:pre_compact", "context:post_compact", "context:compaction_postponed"):
        session.coordinator.hooks.register(name, observe, priority=0, name=f"observe-{name}")
    for name, handler in handlers.items():
        session.coordinator.hooks.register(name, handler, priority=10, name=f"test-{name}")
    await session.initialize()
    try:
        for turn in range(TURNS):
            answer = await session.execute(f"Turn {turn}: look at src/app/file_{turn}_0.py. " + FILLER * 6)
            assert answer.startswith(f"Turn {turn} done.")
    finally:
        await session.cleanup()
    assert provider.problems == [] and provider.over_budget == [] and provider.largest <= BUDGET
    return provider, events


def of(events: list, name: str) -> list[dict[str, Any]]:
    return [d for e, d in events if e == name]


async def test_a_modify_focus_reaches_every_summary_prompt_and_the_pin_every_view(monkeypatch):
    async def focus(event: str, data: dict[str, Any]) -> HookResult:
        return HookResult(action="modify", data={**data, "focus": FOCUS})

    provider, events = await run_session(monkeypatch, {"context:pre_compact": focus})
    posts = [p for p in of(events, "context:post_compact") if p["outcome"] == "compacted"]
    assert len(posts) >= 3 and all(p["focus"] == FOCUS for p in posts)
    assert provider.summary_requests and all(FOCUS in prompt for prompt in provider.summary_requests)
    compacted = [v for v in provider.agent_views if any(t.startswith(SUMMARY_MARKER) for t in v)]
    assert compacted, "the provider received compacted views"
    assert all(PIN in v for v in provider.agent_views), "the pinned message is in every request, verbatim"


async def test_deny_postpones_while_the_view_fits(monkeypatch):
    async def deny(event: str, data: dict[str, Any]) -> HookResult:
        return HookResult(action="deny", reason="checkpoint first")

    provider, events = await run_session(monkeypatch, {"context:pre_compact": deny})
    postponed = of(events, "context:compaction_postponed")
    assert postponed and all(p["reason"] == "checkpoint first" for p in postponed)
    posts = of(events, "context:post_compact")
    assert all(p["deny_overruled"] for p in posts), "only a view past the budget compacts despite the deny"
    assert len(of(events, "context:pre_compact")) == len(posts) + len(postponed)


async def test_inject_context_after_a_compaction_reaches_the_provider_right_after_the_summary(monkeypatch):
    async def put_plan_back(event: str, data: dict[str, Any]) -> HookResult:
        return HookResult(action="inject_context", context_injection=PLAN)

    provider, events = await run_session(monkeypatch, {"context:post_compact": put_plan_back})
    assert of(events, "context:post_compact")
    compacted = [v for v in provider.agent_views if any(t.startswith(SUMMARY_MARKER) for t in v)]
    assert compacted
    for view in compacted:
        at = next(i for i, t in enumerate(view) if t.startswith(SUMMARY_MARKER))
        assert PLAN in view[at + 1] and sum(PLAN in t for t in view) == 1
