"""Installable as an Amplifier bundle: the behavior file, and foundation's context-simple keys mount."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from amplifier_module_context_summarize.config import parse_config
from amplifier_module_context_summarize.core import peer_keys

BEHAVIOR = Path(__file__).resolve().parent.parent / "behaviors" / "context-summarize.yaml"


@pytest.fixture(autouse=True)
def fresh_warnings():
    """The ignored-keys warning is once per process and key set: each test starts as a new process would."""
    peer_keys._warned.clear()
    yield
    peer_keys._warned.clear()


def test_behavior_file_sets_the_context_module():
    yaml = pytest.importorskip("yaml")
    data = yaml.safe_load(BEHAVIOR.read_text())
    assert data["bundle"]["name"]
    context = data["session"]["context"]
    assert context["module"] == "context-summarize"
    assert "source" not in context  # no repository to clone: the installed distribution's entry point resolves it
    parse_config(context["config"])


def test_foundation_context_simple_keys_arrive_and_mount_with_one_warning(caplog):
    caplog.set_level(logging.WARNING)
    config = parse_config({"max_tokens": 300000, "compact_threshold": 0.8, "auto_compact": True})
    assert (config.max_tokens, config.compact_threshold) == (300000, 0.8)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "auto_compact" in warnings[0]


def test_an_unknown_key_of_no_module_is_still_an_error():
    with pytest.raises(ValueError, match="not a known key"):
        parse_config({"max_tokenz": 1})


def deep_merge(base: dict, overlay: dict) -> dict:
    """amplifier-foundation's ``dicts.merge.deep_merge`` as ``Bundle.compose`` applies it to ``session``: nested
    dicts merge, the overlay wins elsewhere (a copy of its rule; foundation itself is not a dependency)."""
    merged = dict(base)
    for key, value in overlay.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


FOUNDATION_SESSION = {  # foundation's bundle.md (2.1.2): what it gives session.context
    "orchestrator": {"module": "loop-streaming", "config": {"extended_thinking": True}},
    "context": {
        "module": "context-simple",
        "source": "git+https://github.com/microsoft/amplifier-module-context-simple@main",
        "config": {"max_tokens": 300000, "compact_threshold": 0.8, "auto_compact": True},
    },
}


async def test_the_plan_composed_onto_foundation_mounts_in_a_session_with_one_warning(monkeypatch, caplog):
    """What foundation's loader produced from ``foundation.compose(behavior)`` (checked against the real loader,
    see docs/configuration.md), mounted by amplifier-core with a stand-in orchestrator and provider."""
    yaml = pytest.importorskip("yaml")
    from amplifier_core import AmplifierSession
    from test_amplifier_session import install_test_modules

    from amplifier_module_context_summarize import SummarizingContextManager

    behavior = yaml.safe_load(BEHAVIOR.read_text())
    session = deep_merge(FOUNDATION_SESSION, behavior["session"])
    assert session["context"]["config"] == {
        "max_tokens": 300000,
        "compact_threshold": 0.8,
        "auto_compact": True,
        **behavior["session"]["context"]["config"],
    }
    session["orchestrator"] = "test-loop"
    install_test_modules(monkeypatch)
    caplog.set_level(logging.WARNING, logger="amplifier_module_context_summarize")
    amplifier = AmplifierSession({"session": session, "providers": [{"module": "test-provider"}]})
    await amplifier.initialize()
    try:
        context = amplifier.coordinator.get("context")
        assert isinstance(context, SummarizingContextManager)
        assert (context.config.max_tokens, context.config.compact_threshold) == (300000, 0.8)
        ours = [r.getMessage() for r in caplog.records if r.name.startswith("amplifier_module_context_summarize")]
        assert len(ours) == 1 and "auto_compact" in ours[0]
        assert await amplifier.execute("hello")
    finally:
        await amplifier.cleanup()


async def test_a_validation_mount_then_the_real_mount_warn_once(caplog):
    """amplifier-core's loader mounts a resolver-loaded module on a MockCoordinator to validate it, then mounts it
    for real (the path amplifier-foundation's PreparedBundle.create_session takes): one warning, not two."""
    from amplifier_core.testing import MockCoordinator

    from amplifier_module_context_summarize import mount

    caplog.set_level(logging.WARNING, logger="amplifier_module_context_summarize")
    config = {"max_tokens": 300000, "compact_threshold": 0.8, "auto_compact": True}
    for _ in range(2):
        await mount(MockCoordinator(), dict(config))
    parse_config({**config, "truncate_chars": 100})  # another set of keys is news
    ours = [r.getMessage() for r in caplog.records if r.name.startswith("amplifier_module_context_summarize")]
    assert len(ours) == 2 and "(auto_compact)" in ours[0] and "(auto_compact, truncate_chars)" in ours[1]
