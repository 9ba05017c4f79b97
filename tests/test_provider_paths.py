"""Summaries through provider-anthropic beside either generation of the anthropic SDK: its non-streaming path
breaks on one of them (``testing.sdk_paths``); the session backend says so once and asks on the streaming path."""

from __future__ import annotations

import importlib.metadata
import logging

import pytest
from amplifier_core import llm_errors

from amplifier_module_context_summarize import create_manager
from amplifier_module_context_summarize.backends.base import BackendError
from amplifier_module_context_summarize.backends.provider_paths import (
    FILE_NAME,
    ProviderPaths,
    installed_versions,
)
from amplifier_module_context_summarize.backends.session import SessionBackend
from amplifier_module_context_summarize.summarizer.in_context import INSTRUCTION_KIND
from amplifier_module_context_summarize.testing import EventRecorder, FakeProvider, mixed_history, replay
from amplifier_module_context_summarize.testing.sdk_paths import AwaitedParseProvider, UnawaitedParseProvider

BUDGET = 12_000
LOGGER = "amplifier_module_context_summarize"


def _warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING and r.name.startswith(LOGGER)]


@pytest.mark.parametrize("provider_class", [UnawaitedParseProvider, AwaitedParseProvider])
async def test_a_broken_non_streaming_path_is_said_once_and_the_streaming_path_writes_the_summaries(
    provider_class, caplog
):
    caplog.set_level(logging.INFO)
    recorder = EventRecorder()
    provider = provider_class(recorder)
    manager = create_manager({"max_tokens": BUDGET}, hooks=recorder)
    await replay(manager, mixed_history(90), provider, budget=BUDGET)

    assert manager.stats["summaries"] >= 2
    assert manager.stats["summary_failures"] == 0  # every summary written by the LLM, none fell back
    assert recorder.payloads("context:summary_failed") == []
    assert provider.quiet_calls == 1  # the first summary found the fault; every later one streamed
    assert provider.stream_calls == manager.stats["provider_calls"]  # the first one asked twice, counted once
    said = [w for w in _warnings(caplog) if "non-streaming path" in w]
    assert len(said) == 1
    assert "anthropic<1" in said[0] and "summarizer.provider: anthropic" in said[0]
    assert ("AttributeError" if provider_class is UnawaitedParseProvider else "TypeError") in said[0]


async def test_a_working_non_streaming_path_stays_quiet(caplog):
    caplog.set_level(logging.INFO)
    provider = FakeProvider()
    manager = create_manager({"max_tokens": BUDGET})
    await replay(manager, mixed_history(90), provider, budget=BUDGET)
    assert provider.requests and all(r.metadata.get("stream") is False for r in provider.requests)
    assert _warnings(caplog) == []


class BrokenEverywhere(UnawaitedParseProvider):
    async def complete(self, request, **kwargs):
        raise TypeError("unsupported operand type(s)")


async def test_a_provider_broken_on_both_paths_is_said_once_and_summaries_fall_back(caplog):
    caplog.set_level(logging.INFO)
    backend = SessionBackend(None)
    provider = BrokenEverywhere()
    for _ in range(3):
        with pytest.raises(BackendError) as raised:
            await backend.complete("system", "prompt", 100, provider=provider)
        assert raised.value.fault == "error"
    warnings = _warnings(caplog)
    assert len([w for w in warnings if "non-streaming path" in w]) == 1
    assert len([w for w in warnings if "both its paths" in w]) == 1
    assert all("unsupported operand" not in w for w in warnings)  # the provider's text is never quoted


async def test_a_network_fault_is_not_taken_for_a_broken_path(caplog):
    backend = SessionBackend(None)
    provider = FakeProvider(fail_with=llm_errors.ProviderUnavailableError("503", provider="fake"))
    with pytest.raises(BackendError) as raised:
        await backend.complete("system", "prompt", 100, provider=provider)
    assert raised.value.fault == "server_error"
    assert backend.streamed == set()
    assert all(r.metadata.get("stream") is False for r in provider.requests)


async def test_a_fallback_that_is_not_a_provider_fault_is_a_warning(caplog):
    caplog.set_level(logging.INFO)
    manager = create_manager({"max_tokens": BUDGET})
    await replay(manager, mixed_history(90), FakeProvider(reply=""), budget=BUDGET)  # empty answers
    assert manager.stats["summary_failures"] >= 1
    assert any("failed (empty)" in w for w in _warnings(caplog))


async def test_a_transient_provider_fault_stays_at_info(caplog):
    caplog.set_level(logging.INFO)
    manager = create_manager({"max_tokens": BUDGET})
    failing = FakeProvider(fail_with=llm_errors.ProviderUnavailableError("503", provider="fake"))
    await replay(manager, mixed_history(90), failing, budget=BUDGET)
    assert manager.stats["summary_failures"] >= 1
    assert not any("failed (server_error)" in w for w in _warnings(caplog))


class RecordingUnawaited(UnawaitedParseProvider):
    """Records whether each request was a summary asked in the session's own context (the instruction last)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.in_context: list[bool] = []

    async def complete(self, request, **kwargs):
        self.in_context.append((request.messages[-1].metadata or {}).get("source") == INSTRUCTION_KIND)
        return await super().complete(request, **kwargs)


async def test_a_summary_asked_in_the_session_context_takes_the_streaming_path_too(caplog):
    """The session's own view, then the instruction (self-compaction), fails on the broken non-streaming path as the
    compact prompt does (seen in the real CLI on anthropic 2.14: every in-context summary fell back as `error`)."""
    caplog.set_level(logging.INFO)
    recorder = EventRecorder()
    provider = RecordingUnawaited(recorder, reply="The user asked about the build; the agent checked the module.")
    manager = create_manager({"max_tokens": 6_000}, hooks=recorder)
    turns = [
        message
        for i in range(160)
        for message in (
            {"role": "user", "content": f"Turn {i}: check the build of the module again. " + "Context. " * 60},
            {"role": "assistant", "content": f"Checked the build on turn {i}; it passes."},
        )
    ]
    await replay(manager, turns, provider, budget=6_000)
    assert any(provider.in_context), "the summaries were asked in the session's context"
    assert manager.stats["summary_failures"] == 0 and manager.stats["summaries"] >= 2
    assert provider.quiet_calls == 1  # the first in-context summary found the fault; every later one streamed
    assert len([w for w in _warnings(caplog) if "non-streaming path" in w]) == 1


# ------------------------------------------------------------------ remembered between processes


def _paths(tmp_path, sdk: str = "2.14.0") -> ProviderPaths:
    """The memory a process opens beside its store, with the anthropic SDK at ``sdk`` (a fake install)."""
    return ProviderPaths(tmp_path / FILE_NAME, versions=lambda provider: {"anthropic": sdk, "provider": "1.0"})


async def _process(tmp_path, caplog, sdk: str = "2.14.0") -> UnawaitedParseProvider:
    """One ``amplifier continue``: a new backend and provider, two summaries."""
    backend = SessionBackend(None)
    backend.paths = _paths(tmp_path, sdk)
    provider = UnawaitedParseProvider()
    for _ in range(2):
        answer = await backend.complete("system", "prompt", 100, provider=provider)
        assert answer.text
    return provider


async def test_a_second_process_goes_straight_to_the_streaming_path_and_warns_no_more(tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    first = await _process(tmp_path, caplog)
    assert (first.quiet_calls, first.stream_calls) == (1, 2)
    assert len([w for w in _warnings(caplog) if "non-streaming path" in w]) == 1
    caplog.clear()
    second = await _process(tmp_path, caplog)
    assert (second.quiet_calls, second.stream_calls) == (0, 2)  # no failed request paid again
    assert _warnings(caplog) == []
    assert any("remembered" in r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG)


async def test_an_sdk_upgrade_tries_the_non_streaming_path_again(tmp_path, caplog):
    await _process(tmp_path, caplog, sdk="2.14.0")
    caplog.clear()
    caplog.set_level(logging.INFO)
    upgraded = await _process(tmp_path, caplog, sdk="2.15.0")
    assert upgraded.quiet_calls == 1  # a new install is asked as a first process would
    assert len([w for w in _warnings(caplog) if "non-streaming path" in w]) == 1
    again = await _process(tmp_path, caplog, sdk="2.14.0")  # pinned back: its own key is still remembered
    assert again.quiet_calls == 0


@pytest.mark.parametrize(
    "content", [b"{not json", b"\xff\xfe\x00", b'{"format": 1, "streamed": "x"}', b"[1, 2]", b" " * 70_000]
)
async def test_an_unreadable_paths_file_is_ignored(tmp_path, caplog, content):
    (tmp_path / FILE_NAME).write_bytes(content)
    caplog.set_level(logging.INFO)
    provider = await _process(tmp_path, caplog)
    assert provider.quiet_calls == 1 and provider.stream_calls == 2  # as a first process, no crash
    assert _paths(tmp_path).streams(_paths(tmp_path).key(provider))  # and the file is rewritten whole


async def test_a_remembered_path_that_fails_is_forgotten_and_the_provider_asked_afresh(tmp_path, caplog):
    class FixedButStreamBroken(UnawaitedParseProvider):
        """The remembered streaming path breaks; the non-streaming one works now (an install the key missed)."""

        async def complete(self, request, **kwargs):
            if (request.metadata or {}).get("stream") is False:
                self.quiet_calls += 1
                return self._chat_response(type("M", (), {"text": "Summary."})())
            self.stream_calls += 1
            raise AttributeError("'NoneType' object has no attribute 'content'")

    provider = FixedButStreamBroken()
    _paths(tmp_path).remember(_paths(tmp_path).key(provider))  # as a previous process found it
    backend = SessionBackend(None)
    backend.paths = _paths(tmp_path)
    answer = await backend.complete("system", "prompt", 100, provider=provider)
    assert answer.text == "Summary." and (provider.stream_calls, provider.quiet_calls) == (1, 1)
    assert not _paths(tmp_path).streams(_paths(tmp_path).key(provider))  # forgotten on disk too
    await backend.complete("system", "prompt", 100, provider=provider)
    assert (provider.stream_calls, provider.quiet_calls) == (1, 2)  # today's order from then on


def test_a_providers_key_names_its_package_and_what_it_requires():
    versions = installed_versions(UnawaitedParseProvider())
    assert versions["amplifier-core"] == importlib.metadata.version("amplifier-core")
    assert "amplifier-module-context-summarize" in versions
    assert installed_versions(BrokenEverywhere()) == {}  # defined in a test, not an installed package's


async def test_the_paths_file_lives_beside_a_store_file_and_never_with_memory(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("AMPLIFIER_CONTEXT_SUMMARIZE_CACHE")
    for config in ({"storage_path": "memory"}, {}):
        manager = create_manager({"max_tokens": BUDGET, **config})  # no default store outside a session
        await replay(manager, mixed_history(60), UnawaitedParseProvider(), budget=BUDGET)
        await manager.close(1.0)
    monkeypatch.setenv("AMPLIFIER_CONTEXT_SUMMARIZE_CACHE", "memory")
    manager = create_manager({"max_tokens": BUDGET}, default_store=True)
    await replay(manager, mixed_history(60), UnawaitedParseProvider(), budget=BUDGET)
    await manager.close(1.0)
    assert not (tmp_path / "cache").exists()  # the cache is off: nothing on disk

    monkeypatch.delenv("AMPLIFIER_CONTEXT_SUMMARIZE_CACHE")
    providers = [UnawaitedParseProvider(), UnawaitedParseProvider()]
    for provider in providers:  # two sessions, as two `amplifier continue` processes
        manager = create_manager({"max_tokens": BUDGET}, default_store=True)
        await replay(manager, mixed_history(60), provider, budget=BUDGET)
        await manager.close(1.0)
    assert (tmp_path / "cache" / "amplifier-context-summarize" / FILE_NAME).is_file()
    assert [p.quiet_calls for p in providers] == [1, 0]
