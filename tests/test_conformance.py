"""amplifier-core's own conformance suites, run against the mounted module."""

from pathlib import Path

import pytest
from amplifier_core.testing import MockCoordinator
from amplifier_core.validation.behavioral import ContextBehaviorTests
from amplifier_core.validation.structural import ContextStructuralTests

import amplifier_module_context_summarize as package
from amplifier_module_context_summarize import SummarizingContextManager, mount

PACKAGE_DIR = Path(package.__file__).parent


@pytest.fixture
def module_path() -> Path:
    return PACKAGE_DIR


class TestBehavior(ContextBehaviorTests):
    pass


class TestStructure(ContextStructuralTests):
    pass


async def test_mount_registers_context_and_events():
    coordinator = MockCoordinator()
    manager = (await mount(coordinator, {"compaction_strategy": "summarize"})).manager
    assert isinstance(manager, SummarizingContextManager)
    assert coordinator.mount_points["context"] is manager
    advertised = [name for names in await coordinator.collect_contributions("observability.events") for name in names]
    assert "context:pre_compact" in advertised and "context:post_compact" in advertised


async def test_mount_plan_shape_is_accepted():
    coordinator = MockCoordinator()
    plan = {"session": {"context": {"module": "context-summarize", "config": {"max_tokens": 5000}}}}
    manager = (await mount(coordinator, plan)).manager
    assert manager.config.max_tokens == 5000


async def test_truncate_strategy_mounts():
    manager = (await mount(MockCoordinator(), {"compaction_strategy": "truncate"})).manager
    assert manager.config.compaction_strategy == "truncate"


def test_entry_point_is_installed():
    from importlib.metadata import entry_points

    (entry,) = [e for e in entry_points(group="amplifier.modules") if e.name == "context-summarize"]
    assert entry.value == "amplifier_module_context_summarize:mount"
    assert package.__amplifier_module_type__ == "context"


@pytest.mark.slow
def test_cli_validator_passes():
    import subprocess
    import sys

    cli = Path(sys.executable).parent / "amplifier-core"
    command = [str(cli)] if cli.exists() else [sys.executable, "-m", "amplifier_core.cli"]
    result = subprocess.run([*command, "validate", "context", str(PACKAGE_DIR)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "PASSED" in result.stdout


@pytest.mark.slow
async def test_summaries_use_the_mounted_provider_named_in_config():
    from amplifier_module_context_summarize.testing import FakeProvider, mixed_history, replay

    coordinator = MockCoordinator()
    first, named = FakeProvider(name="first"), FakeProvider(name="named")
    await coordinator.mount("providers", first, name="first")
    await coordinator.mount("providers", named, name="named")
    by_name = (await mount(coordinator, {"max_tokens": 12_000, "summarizer": {"session_provider": "named"}})).manager
    await replay(by_name, mixed_history(60), provider=None, budget=12_000)
    assert named.requests and not first.requests

    default = (await mount(coordinator, {"max_tokens": 12_000})).manager
    await replay(default, mixed_history(60), provider=None, budget=12_000)
    assert first.requests


async def test_the_request_provider_wins_over_mounted_ones():
    from amplifier_module_context_summarize.testing import FakeProvider, mixed_history, replay

    coordinator = MockCoordinator()
    mounted, passed = FakeProvider(name="mounted"), FakeProvider(name="passed")
    await coordinator.mount("providers", mounted, name="mounted")
    manager = (await mount(coordinator, {"max_tokens": 12_000})).manager
    await replay(manager, mixed_history(60), provider=passed, budget=12_000)
    assert passed.requests and not mounted.requests
