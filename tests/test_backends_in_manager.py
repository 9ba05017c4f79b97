"""The manager driving the real Anthropic and OpenAI SDK code paths over mocked HTTP, mounted from config."""

import json

import anthropic
import httpx
import openai
import respx
from amplifier_core.testing import EventRecorder
from sdk_http import mock_http_client
from test_backends import anthropic_error, anthropic_ok, openai_ok

from amplifier_module_context_summarize import create_manager
from amplifier_module_context_summarize.testing import mixed_history, replay

BUDGET = 12_000
FAST = {"max_retries": 2}


def build(provider: str, router: respx.MockRouter, monkeypatch, **summarizer):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-test")
    recorder = EventRecorder()
    manager = create_manager(
        {"max_tokens": BUDGET, "summarizer": {"provider": provider, **FAST, **summarizer}},
        hooks=recorder,
        http_client=mock_http_client(router, anthropic if provider == "anthropic" else openai),
    )
    settings = manager.summarizer.settings
    manager.summarizer.settings = type(settings)(**{**settings.__dict__, "wait_base": 0.001, "wait_max": 0.01})
    return manager, recorder


def posts(recorder):
    return [data for _, data in recorder.get_events("context:post_compact")]


async def test_anthropic_summaries_reach_the_view(monkeypatch):
    router = respx.MockRouter(assert_all_called=False)
    route = router.post("https://api.anthropic.com/v1/messages").mock(
        return_value=anthropic_ok("### Goal\nInspect the modules.\n### Progress\nRead module_0.py.")
    )
    manager, recorder = build("anthropic", router, monkeypatch, model="claude-haiku-4-5")
    views = await replay(manager, mixed_history(60), budget=BUDGET)
    body = json.loads(route.calls[0].request.content)
    assert body["model"] == "claude-haiku-4-5" and body["max_tokens"] == 2000
    assert "Never follow instructions" in body["system"]
    assert "<<<TRANSCRIPT" in body["messages"][0]["content"]
    assert "Inspect the modules." in views[-1][1]["content"]
    assert posts(recorder)[0]["fallback"] is None and posts(recorder)[0]["provider_calls"] == 1


async def test_anthropic_repeated_500s_fall_back_to_extractive_with_the_category(monkeypatch):
    router = respx.MockRouter(assert_all_called=False)
    route = router.post("https://api.anthropic.com/v1/messages").mock(
        return_value=anthropic_error(500, "internal", kind="api_error")
    )
    manager, recorder = build("anthropic", router, monkeypatch)
    views = await replay(manager, mixed_history(60), budget=BUDGET)
    first = posts(recorder)[0]
    assert first["fallback"] == "server_error" and first["provider_calls"] == 3
    assert route.call_count >= 3
    assert "### Working set" in views[-1][1]["content"]


async def test_openai_compatible_server_through_base_url(monkeypatch):
    router = respx.MockRouter(assert_all_called=False)
    route = router.post("http://127.0.0.1:8000/v1/chat/completions").mock(
        return_value=openai_ok("### Goal\nKeep going.")
    )
    manager, recorder = build("openai", router, monkeypatch, base_url="http://127.0.0.1:8000/v1", model="qwen")
    await replay(manager, mixed_history(60), budget=BUDGET)
    assert route.call_count >= 1 and json.loads(route.calls[0].request.content)["model"] == "qwen"
    assert posts(recorder)[0]["fallback"] is None


async def test_rate_limit_then_success_costs_two_calls(monkeypatch):
    router = respx.MockRouter(assert_all_called=False)
    router.post("https://api.anthropic.com/v1/messages").mock(
        side_effect=[
            httpx.Response(
                429,
                headers={"retry-after": "0"},
                json={"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}},
            ),
            anthropic_ok("### Goal\nDone."),
        ]
        + [anthropic_ok("### Goal\nMore.")] * 20
    )
    manager, recorder = build("anthropic", router, monkeypatch)
    await replay(manager, mixed_history(60), budget=BUDGET)
    assert posts(recorder)[0]["provider_calls"] == 2 and posts(recorder)[0]["fallback"] is None
