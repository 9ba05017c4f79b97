"""Resume, fork, edits, long sessions, prefetch: the derived state rebuilds from history plus cache."""

import asyncio
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from amplifier_core.testing import EventRecorder

from amplifier_module_context_summarize import create_manager
from amplifier_module_context_summarize.stores import MemoryStore
from amplifier_module_context_summarize.testing import FakeProvider, mixed_history, replay

BUDGET = 12_000
REPO = Path(__file__).resolve().parent.parent

PROCESS_SCRIPT = textwrap.dedent(
    """
    import asyncio, json, sys
    from amplifier_module_context_summarize import create_manager
    from amplifier_module_context_summarize.testing import FakeProvider, mixed_history, replay

    class Refusing(FakeProvider):
        async def complete(self, request, **kwargs):
            raise AssertionError("the resumed process must not call the provider")

    async def main(mode):
        history = mixed_history(80)
        manager = create_manager({{"max_tokens": {budget}, "storage_path": {path!r}}})
        if mode == "write":
            provider = FakeProvider()
            await replay(manager, history, provider, budget={budget})
        else:
            provider = Refusing()
            await manager.set_messages(history)
        view = await manager.get_messages_for_request(token_budget={budget}, provider=provider)
        print(json.dumps({{"view": view, "calls": len(provider.requests), "stats": manager.stats}}))

    asyncio.run(main(sys.argv[1]))
    """
)


def run_process(script: Path, mode: str) -> dict:
    result = subprocess.run([sys.executable, str(script), mode], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.slow
def test_resume_in_a_new_process_rebuilds_the_same_view_with_no_provider_call(tmp_path):
    script = tmp_path / "session.py"
    script.write_text(PROCESS_SCRIPT.format(budget=BUDGET, path=str(tmp_path / "c.db")))
    written = run_process(script, "write")
    resumed = run_process(script, "resume")
    assert written["calls"] >= 2
    assert resumed["calls"] == 0 and resumed["stats"]["provider_calls"] == 0
    assert resumed["view"] == written["view"]
    assert (tmp_path / "c.db").stat().st_mode & 0o777 == 0o600


async def test_fork_reuses_the_parents_summaries():
    cache = MemoryStore()
    parent_history = mixed_history(90)
    parent = create_manager({"max_tokens": BUDGET}, store=cache)
    parent_provider = FakeProvider()
    await replay(parent, parent_history, parent_provider, budget=BUDGET)
    assert len(parent.state.segments) >= 2

    shared = parent.history.groups[parent.state.segments[1].end].start
    child_history = parent_history[:shared] + [
        {"role": "user", "content": "Sub-agent: now audit the logging configuration."},
        {"role": "assistant", "content": "Auditing logging."},
    ]
    child = create_manager({"max_tokens": BUDGET}, store=cache)
    await child.set_messages(child_history)
    assert child.state.boundary >= parent.state.segments[1].end
    assert [s.text for s in child.state.segments][:2] == [s.text for s in parent.state.segments][:2]
    child_provider = FakeProvider()
    view = await child.get_messages_for_request(BUDGET, child_provider)
    assert view[-1]["content"] == "Auditing logging."
    assert len(child_provider.requests) <= 1


async def test_edit_in_the_middle_reuses_only_what_precedes_it():
    cache = MemoryStore()
    history = mixed_history(90)
    first = create_manager({"max_tokens": BUDGET}, store=cache)
    await replay(first, history, FakeProvider(), budget=BUDGET)
    segments = first.state.segments
    assert len(segments) >= 3
    edit_group = segments[1].start + 1
    edit_index = first.history.groups[edit_group].start
    edited = list(history)
    edited[edit_index] = {"role": edited[edit_index]["role"], "content": "EDITED: rewritten message"}
    if "tool_call_id" in history[edit_index]:
        edited[edit_index]["tool_call_id"] = history[edit_index]["tool_call_id"]
    second = create_manager({"max_tokens": BUDGET}, store=cache)
    await second.set_messages(edited)
    assert second.state.boundary <= edit_group
    assert second.state.boundary >= segments[0].end
    assert all(s.end <= edit_group for s in second.state.segments)


async def test_storage_path_uses_the_sqlite_cache(tmp_path):
    manager = create_manager({"max_tokens": BUDGET, "storage_path": str(tmp_path / "s.db")})
    await replay(manager, mixed_history(60), FakeProvider(), budget=BUDGET)
    assert type(manager.store).__name__ == "SqliteStore" and await manager.store.count() >= 1


async def _long_session(turns: int) -> tuple[int, int, int]:
    recorder = EventRecorder()
    budget = 6_000
    manager = create_manager(
        {"max_tokens": budget, "summary_max_tokens": 300, "summary_budget_ratio": 0.15}, hooks=recorder
    )
    provider = FakeProvider(reply="Goal: keep going. Progress: several files inspected. Open: continue. " * 3)
    builders = mixed_history(turns, size=1, system=True)
    worst = 0
    requests = 0
    for i, message in enumerate(builders):
        await manager.add_message(message)
        if i + 1 < len(builders) and builders[i + 1]["role"] == "assistant":
            view = await manager.get_messages_for_request(budget, provider)
            requests += 1
            if requests % 97 == 0:
                worst = max(worst, manager.counter.count_messages(view))
            worst = max(worst, await manager.get_token_count())
    return worst, len(provider.requests), len(recorder.get_events("context:post_compact"))


@pytest.mark.slow
async def test_five_thousand_turns_stay_in_budget_with_linear_provider_calls():
    worst_short, calls_short, _ = await _long_session(1_000)
    worst_long, calls_long, compactions = await _long_session(5_000)
    assert worst_short <= 6_000 and worst_long <= 6_000
    assert compactions > 50
    assert calls_long <= 6 * calls_short, (calls_short, calls_long)


@pytest.mark.slow
async def test_prefetch_turns_the_threshold_compaction_into_a_cache_hit():
    recorder = EventRecorder()
    manager = create_manager({"max_tokens": BUDGET, "prefetch": True}, hooks=recorder)
    provider = FakeProvider(delay=0.05)
    history = mixed_history(120)
    for i, message in enumerate(history):
        await manager.add_message(message)
        if i + 1 < len(history) and history[i + 1]["role"] == "assistant":
            await manager.get_messages_for_request(BUDGET, provider)
            await asyncio.sleep(0.06)  # the model "thinks"; background work gets its turn
    posts = [d for _, d in recorder.get_events("context:post_compact")]
    assert len(posts) >= 3
    later = posts[1:]
    assert sum(p["cache_hits"] >= 1 and p["provider_calls"] == 0 for p in later) >= len(later) - 1


async def test_clear_during_prefetch_leaves_nothing_behind():
    manager = create_manager({"max_tokens": BUDGET, "prefetch": True})
    provider = FakeProvider(delay=0.5)
    history = mixed_history(120)
    for i, message in enumerate(history):
        await manager.add_message(message)
        if i + 1 < len(history) and history[i + 1]["role"] == "assistant":
            await manager.get_messages_for_request(BUDGET, provider)
            if manager.prefetcher.busy:
                break
    assert manager.prefetcher.busy, "a prefetch should be running"
    entries = await manager.store.count()
    await manager.clear()
    await asyncio.sleep(0.7)
    assert not manager.prefetcher.busy
    assert await manager.store.count() == entries
    assert await manager.get_messages() == []


async def test_prefetch_failure_is_reported_and_never_raises():
    recorder = EventRecorder()
    manager = create_manager({"max_tokens": BUDGET, "prefetch": True, "summarizer": {"max_retries": 0}}, hooks=recorder)
    provider = FakeProvider(fail_with=RuntimeError("boom"))
    history = mixed_history(80)
    for i, message in enumerate(history):
        await manager.add_message(message)
        if i + 1 < len(history) and history[i + 1]["role"] == "assistant":
            await manager.get_messages_for_request(BUDGET, provider)
            await asyncio.sleep(0)
    await asyncio.sleep(0.05)
    failures = recorder.get_events("context:summary_failed")
    assert failures and failures[0][1]["fallback"] == "error"
    assert "boom" not in repr(recorder.events)


async def test_storage_path_expands_the_home_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    manager = create_manager({"max_tokens": BUDGET, "storage_path": "~/amplifier/summaries.sqlite"})
    await replay(manager, mixed_history(60), FakeProvider(), budget=BUDGET)
    assert (tmp_path / "amplifier" / "summaries.sqlite").is_file()
