"""Direct Anthropic / OpenAI backends, driven through the real SDKs against respx-mocked HTTP.

Each test injects a client of the library the installed SDK sends with (``httpx`` for anthropic < 1
and openai < 3, ``httpx2`` after) whose transport asks a ``respx.MockRouter`` to match, record and
answer the request: see ``sdk_http.py``. The same tests run against both SDK generations.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import traceback
from typing import Any

import anthropic
import httpx
import openai
import pytest
import respx
from sdk_http import http_library, mock_http_client

from amplifier_module_context_summarize.backends.anthropic_backend import AnthropicBackend
from amplifier_module_context_summarize.backends.base import BackendError, Fault
from amplifier_module_context_summarize.backends.openai_backend import NO_KEY_PLACEHOLDER, OpenAIBackend
from amplifier_module_context_summarize.backends.registry import build_backend
from amplifier_module_context_summarize.backends.retrying import RetryingBackend
from amplifier_module_context_summarize.backends.session import SessionBackend
from amplifier_module_context_summarize.config import SummarizerConfig

ANTHROPIC_URL = "https://api.anthropic.com/v1/messages"
OPENAI_URL = "https://api.openai.com/v1/chat/completions"
ANTHROPIC_KEY = "sk-ant-test-SECRET-0123456789"
OPENAI_KEY = "sk-openai-test-SECRET-9876543210"
SYSTEM = "You summarize conversations."
PROMPT = "Summarize: the user asked about tenacity."
FAST = {"wait_base": 0.01, "wait_max": 0.05}


@pytest.fixture(autouse=True)
def _clean_sdk_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDKs read base URLs, keys and extra headers from the environment; keep tests hermetic."""
    for name in (
        "ANTHROPIC_BASE_URL",
        "ANTHROPIC_CUSTOM_HEADERS",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
        "OPENAI_ADMIN_KEY",
        "OPENAI_ORG_ID",
        "OPENAI_PROJECT_ID",
    ):
        monkeypatch.delenv(name, raising=False)


def anthropic_ok(*texts: str, input_tokens: int = 42, output_tokens: int = 7, stop: str = "end_turn") -> httpx.Response:
    return httpx.Response(
        200,
        json={
            "id": "msg_01",
            "type": "message",
            "role": "assistant",
            "model": "claude-haiku-4-5",
            "content": [{"type": "text", "text": t} for t in texts],
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
        },
    )


def anthropic_error(status: int, message: str, kind: str = "invalid_request_error", **headers: str) -> httpx.Response:
    body = {"type": "error", "error": {"type": kind, "message": message}}
    return httpx.Response(status, json=body, headers={k.replace("_", "-"): v for k, v in headers.items()})


def openai_ok(text: str | None = "A summary.", *, refusal: str | None = None, finish: str = "stop") -> httpx.Response:
    return httpx.Response(
        200,
        json={
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": "gpt-4o-mini",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text, "refusal": refusal},
                    "finish_reason": finish,
                }
            ],
            "usage": {"prompt_tokens": 30, "completion_tokens": 4, "total_tokens": 34},
        },
    )


def openai_error(status: int, message: str, code: str | None = None, **headers: str) -> httpx.Response:
    body = {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": code}}
    return httpx.Response(status, json=body, headers={k.replace("_", "-"): v for k, v in headers.items()})


def make_anthropic(router: respx.MockRouter, **kwargs: Any) -> AnthropicBackend:
    client = mock_http_client(router, anthropic)
    return AnthropicBackend("claude-haiku-4-5", ANTHROPIC_KEY, http_client=client, **kwargs)


def make_openai(router: respx.MockRouter, api_key: str | None = OPENAI_KEY, **kwargs: Any) -> OpenAIBackend:
    return OpenAIBackend("gpt-4o-mini", api_key, http_client=mock_http_client(router, openai), **kwargs)


def retrying(backend: Any, max_retries: int, timeout_s: float = 5, **kwargs: Any) -> RetryingBackend:
    """``backend`` behind the module's retry policy, with waits short enough for tests."""
    return RetryingBackend(backend, max_retries, timeout_s, **{**FAST, **kwargs})


def anthropic_key_sent(request: Any) -> str | None:
    """anthropic 2.x sends the key as ``Authorization: Bearer``; older releases used ``x-api-key``."""
    if "x-api-key" in request.headers:
        return request.headers["x-api-key"]
    auth = request.headers.get("authorization", "")
    return auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else None


def body_of(route: respx.Route) -> dict[str, Any]:
    return json.loads(route.calls.last.request.content)


async def fails_with(coro: Any) -> BackendError:
    with pytest.raises(BackendError) as info:
        await coro
    return info.value


# --- Anthropic ---------------------------------------------------------------------------------


async def test_anthropic_request_and_completion() -> None:
    router = respx.MockRouter()
    route = router.post(ANTHROPIC_URL).mock(return_value=anthropic_ok("Part one. ", "Part two."))
    backend = make_anthropic(router)

    completion = await backend.complete(SYSTEM, PROMPT, 321)

    assert completion.text == "Part one. Part two."
    assert (completion.input_tokens, completion.output_tokens) == (42, 7)
    body = body_of(route)
    assert body["model"] == "claude-haiku-4-5"
    assert body["max_tokens"] == 321
    assert body["system"] == SYSTEM
    assert body["messages"] == [{"role": "user", "content": PROMPT}]
    request = route.calls.last.request
    assert anthropic_key_sent(request) == ANTHROPIC_KEY
    assert request.headers.get("x-stainless-retry-count", "0") == "0"


async def test_anthropic_custom_base_url() -> None:
    router = respx.MockRouter()
    route = router.post("https://proxy.example/anthropic/v1/messages").mock(return_value=anthropic_ok("ok"))
    backend = make_anthropic(router, base_url="https://proxy.example/anthropic")
    assert (await backend.complete(SYSTEM, PROMPT, 100)).text == "ok"
    assert route.call_count == 1


async def test_anthropic_429_retry_after_zero_then_success() -> None:
    router = respx.MockRouter()
    route = router.post(ANTHROPIC_URL).mock(
        side_effect=[anthropic_error(429, "rate limited", "rate_limit_error", retry_after="0"), anthropic_ok("fine")]
    )
    attempts: list[int] = []
    completion = await retrying(make_anthropic(router), 3, on_attempt=attempts.append).complete(SYSTEM, PROMPT, 100)
    assert completion.text == "fine"
    assert route.call_count == 2
    assert attempts == [1, 2]


async def test_anthropic_repeated_500_gives_server_error_after_all_attempts() -> None:
    router = respx.MockRouter()
    route = router.post(ANTHROPIC_URL).mock(return_value=anthropic_error(500, "boom", "api_error"))
    error = await fails_with(retrying(make_anthropic(router), 2).complete(SYSTEM, PROMPT, 100))
    assert error.fault == Fault.SERVER_ERROR
    assert route.call_count == 3


async def test_anthropic_529_overloaded_is_server_error() -> None:
    router = respx.MockRouter()
    router.post(ANTHROPIC_URL).mock(return_value=anthropic_error(529, "Overloaded", "overloaded_error"))
    assert (await fails_with(make_anthropic(router).complete(SYSTEM, PROMPT, 100))).fault == Fault.SERVER_ERROR


async def test_anthropic_401_not_retried_and_key_never_leaks() -> None:
    router = respx.MockRouter()
    route = router.post(ANTHROPIC_URL).mock(
        return_value=anthropic_error(401, f"invalid x-api-key {ANTHROPIC_KEY}", "authentication_error")
    )
    backend = make_anthropic(router)
    error = await fails_with(retrying(backend, 3).complete(SYSTEM, PROMPT, 100))
    assert error.fault == Fault.AUTH
    assert route.call_count == 1
    assert str(error) == Fault.AUTH
    rendered = "".join(traceback.format_exception(error))
    for text in (repr(backend), str(backend), repr(retrying(backend, 3)), str(error), repr(error), rendered):
        assert ANTHROPIC_KEY not in text
    assert error.__cause__ is None and error.__suppress_context__


@pytest.mark.parametrize(
    "message",
    [
        "prompt is too long: 250000 tokens > 200000 maximum",
        "input length and `max_tokens` exceed context limit: 199000 + 2000 > 200000",
    ],
)
async def test_anthropic_input_too_long_not_retried(message: str) -> None:
    router = respx.MockRouter()
    route = router.post(ANTHROPIC_URL).mock(return_value=anthropic_error(400, message))
    error = await fails_with(retrying(make_anthropic(router), 3).complete(SYSTEM, PROMPT, 100))
    assert error.fault == Fault.INPUT_TOO_LONG
    assert route.call_count == 1


async def test_anthropic_hung_request_cut_off_by_timeout() -> None:
    router = respx.MockRouter()
    started_requests: list[Any] = []

    async def hang(request: Any) -> httpx.Response:
        started_requests.append(request)  # respx records a call only once it has a response
        await asyncio.sleep(30)
        return anthropic_ok("too late")

    router.post(ANTHROPIC_URL).mock(side_effect=hang)
    started = time.monotonic()
    error = await fails_with(retrying(make_anthropic(router), 1, timeout_s=0.2).complete(SYSTEM, PROMPT, 100))
    assert error.fault == Fault.TIMEOUT
    assert len(started_requests) == 2  # Fault.TIMEOUT is retryable: both attempts were cut off
    assert time.monotonic() - started < 3


async def test_anthropic_refusal_stop_reason() -> None:
    router = respx.MockRouter()
    router.post(ANTHROPIC_URL).mock(return_value=anthropic_ok("", stop="refusal"))
    assert (await fails_with(make_anthropic(router).complete(SYSTEM, PROMPT, 100))).fault == Fault.REFUSAL


# --- OpenAI ------------------------------------------------------------------------------------


async def test_openai_request_and_completion() -> None:
    router = respx.MockRouter()
    route = router.post(OPENAI_URL).mock(return_value=openai_ok("The gist."))
    completion = await make_openai(router).complete(SYSTEM, PROMPT, 256)

    assert completion.text == "The gist."
    assert (completion.input_tokens, completion.output_tokens) == (30, 4)
    body = body_of(route)
    assert body["model"] == "gpt-4o-mini"
    assert body["max_tokens"] == 256
    assert body["messages"] == [{"role": "system", "content": SYSTEM}, {"role": "user", "content": PROMPT}]
    assert route.calls.last.request.headers["authorization"] == f"Bearer {OPENAI_KEY}"


async def test_openai_compatible_base_url_without_key_uses_placeholder() -> None:
    router = respx.MockRouter()
    local = router.post("http://localhost:11434/v1/chat/completions").mock(return_value=openai_ok("local"))
    backend = make_openai(router, api_key=None, base_url="http://localhost:11434/v1")
    assert (await backend.complete(SYSTEM, PROMPT, 64)).text == "local"
    assert local.call_count == 1
    assert local.calls.last.request.headers["authorization"] == f"Bearer {NO_KEY_PLACEHOLDER}"


def test_openai_without_key_or_base_url_refuses() -> None:
    with pytest.raises(ValueError, match="api_key"):
        OpenAIBackend("gpt-4o-mini", None)


async def test_openai_429_retry_after_zero_then_success() -> None:
    router = respx.MockRouter()
    route = router.post(OPENAI_URL).mock(
        side_effect=[openai_error(429, "Rate limit reached", "rate_limit_exceeded", retry_after="0"), openai_ok("ok")]
    )
    completion = await retrying(make_openai(router), 3).complete(SYSTEM, PROMPT, 64)
    assert completion.text == "ok"
    assert route.call_count == 2


async def test_openai_repeated_500_gives_server_error() -> None:
    router = respx.MockRouter()
    route = router.post(OPENAI_URL).mock(return_value=openai_error(500, "server had an error"))
    error = await fails_with(retrying(make_openai(router), 1).complete(SYSTEM, PROMPT, 64))
    assert error.fault == Fault.SERVER_ERROR
    assert route.call_count == 2


async def test_openai_401_not_retried_and_key_never_leaks() -> None:
    router = respx.MockRouter()
    route = router.post(OPENAI_URL).mock(
        return_value=openai_error(401, f"Incorrect API key provided: {OPENAI_KEY}", "invalid_api_key")
    )
    backend = make_openai(router)
    error = await fails_with(retrying(backend, 3).complete(SYSTEM, PROMPT, 64))
    assert error.fault == Fault.AUTH
    assert route.call_count == 1
    rendered = "".join(traceback.format_exception(error))
    for text in (repr(backend), str(error), repr(error), rendered):
        assert OPENAI_KEY not in text


@pytest.mark.parametrize(
    ("message", "code"),
    [
        (
            "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
            "context_length_exceeded",
        ),
        ("This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.", None),
    ],
)
async def test_openai_input_too_long_not_retried(message: str, code: str | None) -> None:
    router = respx.MockRouter()
    route = router.post(OPENAI_URL).mock(return_value=openai_error(400, message, code))
    error = await fails_with(retrying(make_openai(router), 3).complete(SYSTEM, PROMPT, 64))
    assert error.fault == Fault.INPUT_TOO_LONG
    assert route.call_count == 1


async def test_openai_vllm_style_error_body_too_long() -> None:
    """vLLM puts the message at the top level of the body, not under "error"."""
    router = respx.MockRouter()
    body = {
        "object": "error",
        "message": "This model's maximum context length is 4096 tokens. However, you requested 9000 tokens",
        "type": "BadRequestError",
        "code": 400,
    }
    router.post("http://vllm:8000/v1/chat/completions").mock(return_value=httpx.Response(400, json=body))
    backend = make_openai(router, api_key=None, base_url="http://vllm:8000/v1")
    assert (await fails_with(backend.complete(SYSTEM, PROMPT, 64))).fault == Fault.INPUT_TOO_LONG


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
async def test_plain_text_too_long_body(kind: str) -> None:
    """A proxy or compatible server may answer in plain text; openai 3.x keeps such a body out of the message."""
    router = respx.MockRouter()
    url = "http://llm.local:8080/v1/messages" if kind == "anthropic" else "http://llm.local:8080/v1/chat/completions"
    router.post(url).mock(return_value=httpx.Response(400, text="maximum context length is 4096 tokens"))
    if kind == "anthropic":
        backend = make_anthropic(router, base_url="http://llm.local:8080")
    else:
        backend = make_openai(router, api_key=None, base_url="http://llm.local:8080/v1")
    assert (await fails_with(backend.complete(SYSTEM, PROMPT, 64))).fault == Fault.INPUT_TOO_LONG


async def test_openai_insufficient_quota_is_not_rate_limited() -> None:
    router = respx.MockRouter()
    route = router.post(OPENAI_URL).mock(
        return_value=openai_error(429, "You exceeded your quota", "insufficient_quota")
    )
    error = await fails_with(retrying(make_openai(router), 3).complete(SYSTEM, PROMPT, 64))
    assert error.fault == Fault.ERROR
    assert route.call_count == 1


async def test_openai_hung_request_cut_off_by_timeout() -> None:
    router = respx.MockRouter()

    async def hang(request: Any) -> httpx.Response:
        await asyncio.sleep(30)
        return openai_ok()

    router.post(OPENAI_URL).mock(side_effect=hang)
    error = await fails_with(retrying(make_openai(router), 0, timeout_s=0.1).complete(SYSTEM, PROMPT, 64))
    assert error.fault == Fault.TIMEOUT


async def test_openai_refusal() -> None:
    router = respx.MockRouter()
    router.post(OPENAI_URL).mock(return_value=openai_ok(None, refusal="I can't help with that."))
    assert (await fails_with(make_openai(router).complete(SYSTEM, PROMPT, 64))).fault == Fault.REFUSAL


# --- Shared error mapping ----------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
@pytest.mark.parametrize(
    ("status", "headers", "category", "retry_after"),
    [
        (429, {"retry-after": "7"}, Fault.RATE_LIMITED, 7.0),
        (429, {"retry-after-ms": "1500"}, Fault.RATE_LIMITED, 1.5),
        (429, {}, Fault.RATE_LIMITED, None),
        (503, {"retry-after": "2"}, Fault.SERVER_ERROR, 2.0),
        (502, {}, Fault.SERVER_ERROR, None),
        (403, {}, Fault.AUTH, None),
        (400, {}, Fault.BAD_REQUEST, None),
        (404, {}, Fault.BAD_REQUEST, None),
        (422, {}, Fault.BAD_REQUEST, None),
        (413, {}, Fault.INPUT_TOO_LONG, None),
        (408, {}, Fault.TIMEOUT, None),
        (409, {}, Fault.ERROR, None),
    ],
)
async def test_status_mapping(
    kind: str, status: int, headers: dict[str, str], category: str, retry_after: float | None
) -> None:
    router = respx.MockRouter()
    body = {"type": "error", "error": {"type": "some_error", "message": "nope"}}
    url = ANTHROPIC_URL if kind == "anthropic" else OPENAI_URL
    router.post(url).mock(return_value=httpx.Response(status, json=body, headers=headers))
    backend = make_anthropic(router) if kind == "anthropic" else make_openai(router)
    error = await fails_with(backend.complete(SYSTEM, PROMPT, 64))
    assert error.fault == category
    assert error.retry_after == retry_after
    assert str(error) == category


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
@pytest.mark.parametrize(("exc", "category"), [("ConnectError", Fault.CONNECTION), ("ReadTimeout", Fault.TIMEOUT)])
async def test_transport_failures(kind: str, exc: str, category: str) -> None:
    """The transport raises its own library's error, as a real connection failure would."""
    error_class = getattr(http_library(anthropic if kind == "anthropic" else openai), exc)
    router = respx.MockRouter()
    route = router.post(ANTHROPIC_URL if kind == "anthropic" else OPENAI_URL).mock(side_effect=error_class("failed"))
    backend = make_anthropic(router) if kind == "anthropic" else make_openai(router)
    assert (await fails_with(backend.complete(SYSTEM, PROMPT, 64))).fault == category
    assert route.call_count == 1  # the SDK itself never retries


async def test_anthropic_http_date_retry_after() -> None:
    router = respx.MockRouter()
    router.post(ANTHROPIC_URL).mock(
        return_value=anthropic_error(429, "slow down", "rate_limit_error", retry_after="Wed, 21 Oct 2015 07:28:00 GMT")
    )
    error = await fails_with(make_anthropic(router).complete(SYSTEM, PROMPT, 64))
    assert error.fault == Fault.RATE_LIMITED
    assert error.retry_after == 0.0  # a date in the past means "now"


# --- Client ownership --------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
async def test_aclose_closes_the_backends_own_client_but_not_an_injected_one(kind: str) -> None:
    """Without an injected client each backend builds (and owns) the SDK's default one: on openai
    1.40-1.55.2 with httpx 0.28 the SDK could not build it itself."""
    backend_class, sdk, key = (
        (AnthropicBackend, anthropic, ANTHROPIC_KEY) if kind == "anthropic" else (OpenAIBackend, openai, OPENAI_KEY)
    )
    own = backend_class("some-model", key, timeout_s=7)
    assert not own._client.is_closed()
    await own.aclose()
    assert own._client.is_closed()

    injected = mock_http_client(respx.MockRouter(), sdk)
    borrowing = backend_class("some-model", key, http_client=injected)
    await borrowing.aclose()
    assert not injected.is_closed, "an injected client belongs to the caller"
    await injected.aclose()


# --- Registry ----------------------------------------------------------------------------------


def test_registry_names_missing_anthropic_variable() -> None:
    with pytest.raises(ValueError) as info:
        build_backend(SummarizerConfig(provider="anthropic"), environ={})
    assert str(info.value) == (
        "config key 'summarizer.api_key_env': environment variable ANTHROPIC_API_KEY "
        "(the API key of summarizer provider 'anthropic') is not set"
    )


def test_registry_names_custom_variable_and_treats_blank_as_missing() -> None:
    cfg = SummarizerConfig(provider="openai", api_key_env="MY_LLM_KEY")
    with pytest.raises(ValueError, match="environment variable MY_LLM_KEY"):
        build_backend(cfg, environ={"MY_LLM_KEY": "   "})


def test_registry_openai_without_key_needs_base_url() -> None:
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        build_backend(SummarizerConfig(provider="openai"), environ={})


def test_registry_rejects_unknown_providers() -> None:
    with pytest.raises(ValueError, match="'gemini' is not one of session, anthropic, openai, native, extractive"):
        build_backend(SummarizerConfig(provider="gemini"), environ={"ANTHROPIC_API_KEY": "x"})


def test_registry_extractive_is_no_backend_and_session_needs_no_key() -> None:
    assert build_backend(SummarizerConfig(provider="extractive"), environ={}) is None
    coordinator = object()
    session = build_backend(
        SummarizerConfig(provider="session", session_provider="anthropic", model="m"), coordinator, environ={}
    )
    assert isinstance(session, SessionBackend)
    assert (session.provider_name, session.model, session.retries_itself) == ("anthropic", "m", True)


@pytest.mark.slow
def test_config_validates_against_the_registry_without_importing_an_sdk() -> None:
    code = (
        "import sys\n"
        "from amplifier_module_context_summarize.backends import registry\n"
        "from amplifier_module_context_summarize.config import SUMMARIZER_PROVIDERS, parse_config\n"
        "assert SUMMARIZER_PROVIDERS == registry.NAMES\n"
        "parse_config({'summarizer': 'openai'})\n"
        "assert not {'anthropic', 'openai'} & set(sys.modules), 'an SDK was imported'\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


async def test_registry_builds_anthropic_with_env_key_and_defaults() -> None:
    router = respx.MockRouter()
    route = router.post(ANTHROPIC_URL).mock(return_value=anthropic_ok("ok"))
    backend = build_backend(
        SummarizerConfig(provider="anthropic", timeout_s=9),
        http_client=mock_http_client(router, anthropic),
        environ={"ANTHROPIC_API_KEY": ANTHROPIC_KEY},
    )
    assert isinstance(backend, AnthropicBackend)
    assert backend.name == "anthropic" and backend.model == "claude-haiku-4-5"
    assert ANTHROPIC_KEY not in repr(backend)
    await backend.complete(SYSTEM, PROMPT, 50)
    assert anthropic_key_sent(route.calls.last.request) == ANTHROPIC_KEY


async def test_registry_builds_keyless_openai_compatible_backend() -> None:
    router = respx.MockRouter()
    route = router.post("http://127.0.0.1:1234/v1/chat/completions").mock(return_value=openai_ok("lm studio"))
    backend = build_backend(
        SummarizerConfig(provider="openai", model="qwen2.5-7b", base_url="http://127.0.0.1:1234/v1"),
        http_client=mock_http_client(router, openai),
        environ={},
    )
    assert isinstance(backend, OpenAIBackend)
    assert backend.name == "openai"
    assert (await backend.complete(SYSTEM, PROMPT, 50)).text == "lm studio"
    assert body_of(route)["model"] == "qwen2.5-7b"
