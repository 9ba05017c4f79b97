"""Slim default install: the SDKs and redis are extras; configuring one that is missing fails in one line."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest

from amplifier_module_context_summarize import create_manager, mount
from amplifier_module_context_summarize.core.extras import MissingExtra

PYPROJECT = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())


def test_sdks_and_redis_are_extras_and_the_test_extra_pulls_them():
    project = PYPROJECT["project"]
    names = {d.split(">")[0].split("=")[0].split("[")[0] for d in project["dependencies"]}
    assert not names & {"anthropic", "openai", "redis"}
    extras = project["optional-dependencies"]
    for extra in ("anthropic", "openai", "redis"):
        assert any(d.startswith(extra) for d in extras[extra])
        assert any(d.startswith(extra) for d in extras["all"])
        assert any(d.startswith(extra) for d in extras["test"])
    assert project["scripts"]["context-summarize"] == "amplifier_module_context_summarize.__main__:main"


def _hide(monkeypatch, package: str, *modules: str) -> None:
    for name in [n for n in sys.modules if n == package or n.startswith(f"{package}.")]:
        monkeypatch.setitem(sys.modules, name, None)  # loaded submodules too: they would be found directly
    monkeypatch.setitem(sys.modules, package, None)  # import raises ModuleNotFoundError, as when not installed
    for name in modules:
        monkeypatch.delitem(sys.modules, f"amplifier_module_context_summarize.{name}", raising=False)


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_backend_whose_sdk_is_missing_names_the_extra(monkeypatch, provider):
    _hide(monkeypatch, provider, f"backends.{provider}_backend")
    monkeypatch.setenv(f"{provider.upper()}_API_KEY", "sk-test")
    with pytest.raises(MissingExtra) as caught:
        create_manager({"summarizer": {"provider": provider}})
    message = str(caught.value)
    assert "\n" not in message and f"[{provider}]" in message and "pip install" in message


def test_redis_store_without_redis_names_the_extra(monkeypatch):
    _hide(monkeypatch, "redis", "stores.redis_store")
    with pytest.raises(MissingExtra, match=r"\[redis\]"):
        create_manager({"summarizer": {"provider": "extractive"}, "storage_url": "redis://localhost:6379/0"})


async def test_mount_fails_with_the_one_line(monkeypatch):
    _hide(monkeypatch, "anthropic", "backends.anthropic_backend")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")

    class Coordinator:
        hooks = None

        async def mount(self, *args, **kwargs):  # pragma: no cover - never reached
            raise AssertionError("mounted despite the missing SDK")

    with pytest.raises(ValueError, match=r"pip install 'anthropic>=[0-9.]+' \(the \[anthropic\] extra\)"):
        await mount(Coordinator(), {"summarizer": {"provider": "anthropic"}})


def test_default_and_extractive_import_no_sdk():
    import subprocess

    code = (
        "import sys; import amplifier_module_context_summarize as m;"
        "m.create_manager({'summarizer': {'provider': 'extractive'}});"
        "m.create_manager({});"
        "print(sorted(n for n in ('anthropic', 'openai', 'redis') if n in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_quick_start_with_a_key_but_no_sdk_runs_offline_and_says_how_to_get_the_llm(monkeypatch, capsys):
    """The README's ``compact --example`` on the default install, with a key set as most Amplifier users have it."""
    from amplifier_module_context_summarize.__main__ import main

    _hide(monkeypatch, "anthropic", "backends.anthropic_backend")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-printed")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert main(["compact", "--example", "--no-summary", "--no-progress"]) == 0
    captured = capsys.readouterr()
    notes = [line for line in captured.err.splitlines() if "ANTHROPIC_API_KEY" in line]
    assert len(notes) == 1 and "offline extractive" in notes[0]
    assert "for LLM summaries: pip install 'anthropic>=" in notes[0] and "[anthropic] extra" in notes[0]
    assert "sk-ant-test-not-printed" not in captured.err + captured.out
    assert "% saved" in captured.out


@pytest.mark.parametrize("installed", [["openai"], []])
def test_a_key_without_its_sdk_is_passed_over_for_one_that_works_or_offline(monkeypatch, installed):
    from amplifier_module_context_summarize.cli.compact import choose_summarizer as compact_choice
    from amplifier_module_context_summarize.evaluation.models import choose_summarizer as eval_choice

    for package in {"anthropic", "openai"} - set(installed):
        _hide(monkeypatch, package, f"backends.{package}_backend")
    env = {"ANTHROPIC_API_KEY": "sk-a", "OPENAI_API_KEY": "sk-o"}
    expected = installed[0] if installed else "extractive"
    assert compact_choice(None, env)[0] == expected
    spec, note = eval_choice(None, None, env)
    assert spec.provider == expected
    if not installed:
        assert note is not None and "'anthropic' package is not installed" in note and "[anthropic]" in note
