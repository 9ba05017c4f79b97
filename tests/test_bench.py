"""The benchmark's quick mode: its own invariants, never wall-clock thresholds (CI machines vary)."""

import asyncio
import json
from dataclasses import replace

import pytest
from amplifier_core.testing import EventRecorder

from amplifier_module_context_summarize import create_manager
from amplifier_module_context_summarize.__main__ import main
from amplifier_module_context_summarize.benchmark.coding import CodingSession
from amplifier_module_context_summarize.benchmark.fake_backend import InstantBackend
from amplifier_module_context_summarize.benchmark.live_host import ListContext
from amplifier_module_context_summarize.benchmark.long_session import KINDS, QUICK_LONG
from amplifier_module_context_summarize.benchmark.recount_baseline import NaiveContextManager
from amplifier_module_context_summarize.benchmark.report import render
from amplifier_module_context_summarize.benchmark.run import run_benchmark
from amplifier_module_context_summarize.benchmark.simulation import SimPlan, allowed_compactions, extends, simulate
from amplifier_module_context_summarize.benchmark.synth import REALISTIC, SMALL, SessionGenerator, TextSource
from amplifier_module_context_summarize.benchmark.targets import all_passed
from amplifier_module_context_summarize.core.invariants import check_view
from amplifier_module_context_summarize.core.messages import is_user_turn
from amplifier_module_context_summarize.core.tokens import TokenCounter
from amplifier_module_context_summarize.testing import extends as replay_extends
from amplifier_module_context_summarize.testing import replay as kit_replay
from amplifier_module_context_summarize.working_set.index import index_of

SIZES = [400, 800]
STATE_KEYS = {"turn_s", "request_s", "request_budget_s", "floor_s", "request_over_floor", "view_messages"}
SIM_KEYS = {"compactions", "compactions_allowed", "extension_share", "summarizer_input_tokens", "naive_input_tokens"}


@pytest.fixture(scope="module")
def result():
    return asyncio.run(run_benchmark(SIZES, quick=True, sim_turns=60))


@pytest.fixture(scope="module")
def text():
    source = TextSource()
    source.calibrate(TokenCounter().count_text)
    return source


@pytest.mark.slow
def test_json_has_every_figure(result):
    data = json.loads(json.dumps(result.to_json()))
    assert set(data) >= {"quick", "budget", "environment", "sizes", "simulation", "targets", "all_passed", "seconds"}
    assert set(data["sizes"]) == {str(s) for s in SIZES}
    for entry in data["sizes"].values():
        assert set(entry) >= {"states", "compaction", "memory", "naive_turn_s", "naive_chars_turn_s", "naive_over_turn"}
        for state in ("compacted", "open"):
            assert set(entry["states"][state]) >= STATE_KEYS
        assert set(entry["memory"]) >= {"own_bytes_per_message", "peak_bytes_per_10k", "stored_bytes", "manager_bytes"}
    assert set(data["simulation"]) >= SIM_KEYS
    names = [t["name"] for t in data["targets"]]
    # 3 for the resume, 1 for the LLM path's cold first request, 1 per kind for the host decoding each message
    assert len(names) == 19 and all(isinstance(t["passed"], bool) for t in data["targets"])
    for run in data["long_session"]:  # the loop as a user sees it: the collector's pauses count
        raw = [t for t in data["targets"] if "collector pauses included" in t["name"] and run["kind"] in t["name"]]
        replayed, live = [t for t in raw if "decoding" not in t["name"]], [t for t in raw if "decoding" in t["name"]]
        assert [t["value"] for t in replayed] == [pytest.approx(run["loop_lag_raw_last_s"] * 1000)]
        # measured against the host's own full collection in the same process, not a fixed figure
        assert run["host_collection_s"] > 0
        assert [t["limit"] for t in replayed] == [pytest.approx(1.25 * run["host_collection_s"] * 1000)]
        host = run["live_host"]
        assert [t["value"] for t in live] == [pytest.approx(host["module"]["lag_raw_s"] * 1000)]
        assert [t["limit"] for t in live] == [pytest.approx(1.25 * host["list_context"]["collection_s"] * 1000)]
    assert [run["kind"] for run in data["long_session"]] == list(KINDS)


def test_targets_set_at_a_size_not_measured_are_indicative_and_do_not_decide_the_run(result):
    """At 400 / 800 messages the per-size targets (set at 10,000 and 100,000) only indicate; the rest decide."""
    data = result.to_json()
    set_at = {t["name"].split(" at ")[0]: t["set_at"] for t in data["targets"]}
    assert set_at["request / list-copy floor"] == set_at["steady turn"] == set_at["naive recount turn / steady turn"]
    assert set_at["request / list-copy floor"] == 10_000 and set_at["own memory per message"] == 100_000
    deciding = [t for t in result.targets if t.counts]
    assert len(deciding) == 5 and all(t.set_at is None for t in deciding)
    assert data["all_passed"] == all(t.passed for t in deciding)
    missed = replace(deciding[0], value=deciding[0].limit * 10 if deciding[0].at_most else 0)
    assert not all_passed([*result.targets, missed])
    indicative_miss = replace(missed, set_at=10_000)
    assert all_passed([*deciding, indicative_miss]) == all(t.passed for t in deciding)
    text = render(result)
    assert "set at 10,000 msgs: indicative here" in text and "set at 100,000 msgs: indicative here" in text


def test_states_measure_what_they_claim(result):
    for size in SIZES:
        compacted, opened = result.costs[size].states["compacted"], result.costs[size].states["open"]
        assert compacted.summary_in_view and not opened.summary_in_view
        assert compacted.compactions_while_timing == 0 and opened.compactions_while_timing == 0
        assert opened.view_messages > size  # the whole history, plus the turns timed
        for state in (compacted, opened):
            assert min(state.floor_s, state.request_s, state.request_budget_s, state.turn_s) > 0
            assert state.request_over_floor > 0


def test_ratios_and_memory_are_computed_from_the_figures(result):
    data = result.to_json()
    for size in SIZES:
        costs, memory, entry = result.costs[size], result.memory[size], data["sizes"][str(size)]
        assert entry["naive_over_turn"] == pytest.approx(costs.naive_turn_s / costs.states["compacted"].turn_s)
        assert memory.own_bytes_per_message == pytest.approx((memory.manager_bytes - memory.stored_bytes) / size)
        assert memory.peak_bytes_per_10k == pytest.approx(memory.peak_bytes / size * 10_000)
        assert 0 < memory.stored_bytes < memory.messages_bytes
        assert memory.peak_bytes >= memory.messages_bytes
        assert costs.history_tokens > 0 and costs.compaction.samples > 0 and costs.compaction.span_messages > 0
    by_name = {t.name: t for t in result.targets}
    floor = next(t for name, t in by_name.items() if name.startswith("request / list-copy floor"))
    assert floor.value == result.costs[SIZES[-1]].states["open"].request_over_floor


@pytest.mark.slow
def test_simulation_counts_match_an_independent_replay(text):
    """Replay the same seeded session with a plain loop and an event recorder; the figures must agree."""
    plan = SimPlan(turns=50, budget=30_000, sizes=replace(REALISTIC, large_tool=(3_000, 6_000)), seed=5)
    sim = asyncio.run(simulate(plan, text))

    async def replay():
        recorder = EventRecorder()
        backend = InstantBackend(text, count_text=TokenCounter().count_text)
        config = {"max_tokens": plan.budget, "background_compaction": False}  # as the simulation compacts: in band
        manager = create_manager(config, hooks=recorder, backend=backend)
        generator = SessionGenerator(plan.sizes, seed=plan.seed, text=text)
        history = [generator.system()]
        for _ in range(plan.turns):
            history += generator.turn()
        views = await kit_replay(manager, history, budget=plan.budget)  # checks every view: valid, within budget
        return history, views, recorder.get_events("context:post_compact")

    history, views, posts = asyncio.run(replay())
    extending = sum(replay_extends(a, b) for a, b in zip(views, views[1:], strict=False))
    counter = TokenCounter()
    assert sim.messages == len(history)
    assert sim.session_tokens == counter.count_messages(history)
    assert sim.requests == len(views)
    assert sim.compactions == len(posts) > 0
    assert sim.extending_views == extending
    assert sim.extension_share == pytest.approx(extending / (len(views) - 1))
    assert sum(sim.break_causes.values()) == len(views) - 1 - extending
    assert sim.compactions_allowed == pytest.approx(
        1.2 * sim.session_tokens / ((sim.compact_threshold - sim.target_usage) * plan.budget) + 1
    )
    assert 0 < sim.summarizer_output_tokens < sim.summarizer_input_tokens
    assert sim.naive_input_tokens >= sim.summarizer_input_tokens * 0.5  # it resends whole prefixes
    assert sim.views_over_budget == 0 and sim.max_view_tokens <= plan.budget


def test_helpers():
    assert extends([1, 2], [1, 2, 3]) and not extends([1, 2], [1, 3, 4]) and not extends([1, 2, 3], [1, 2])
    assert allowed_compactions(420_000, 100_000, 0.92, 0.5) == pytest.approx(13.0)
    naive = NaiveContextManager(lambda m: len(m["content"]), messages=[{"role": "system", "content": "x" * 10}])
    for i in range(10):
        asyncio.run(naive.add_message({"role": "user", "content": f"{i}" * 10}))
    view = asyncio.run(naive.get_messages_for_request(token_budget=100))
    assert naive.last_total == 110 and view[0]["role"] == "system" and sum(len(m["content"]) for m in view) <= 60


def test_synthetic_history_is_valid_and_mixed(text):
    history = SessionGenerator(SMALL, seed=3, text=text).history(600)
    assert len(history) == 600 and history[0]["role"] == "system"
    assert any(m.get("tool_calls") for m in history)
    assert any(isinstance(m.get("content"), list) and m["content"][0].get("type") == "thinking" for m in history)
    assert any(m.get("role") == "tool" and isinstance(m.get("content"), list) for m in history)
    assert not check_view(history[: max(i for i, m in enumerate(history) if is_user_turn(m))])


@pytest.mark.slow
def test_cli_prints_json_and_rejects_bad_sizes(capsys):
    assert main(["bench", "--quick", "--json", "--no-sim", "--sizes", "300"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert list(data["sizes"]) == ["300"] and data["simulation"] is None
    with pytest.raises(SystemExit):
        main(["bench", "--sizes", "ten"])


def test_the_long_session_times_compactions_at_every_checkpoint(result):
    for run in result.long_session:
        assert [c.messages for c in run.checkpoints] == list(QUICK_LONG.checkpoints)
        assert all(0 < c.samples <= QUICK_LONG.samples and 0 < c.median_s <= c.max_s for c in run.checkpoints)
        assert run.compactions >= QUICK_LONG.samples and run.checkpoints[-1].span_messages > 0
        assert run.flatness == run.checkpoints[-1].median_s / run.checkpoints[0].median_s
        live = run.live_host  # the same session again, decoded message by message, from the second checkpoint
        assert live is not None and (live.messages, live.window_from) == (max(QUICK_LONG.checkpoints), 1_000)
        for seen in (live.list_context, live.module):
            assert 0 < seen.lag_s <= seen.lag_raw_s and seen.collection_s > 0
    extractive, failing = result.long_session
    assert extractive.provider_calls == 0 and extractive.fallbacks == 0
    assert failing.provider_calls > 0 and failing.fallbacks == failing.compactions  # every summary fell back
    targets = [t for t in result.targets if t.name.startswith("compaction CPU time")]
    assert [t.value for t in targets] == [run.flatness for run in result.long_session]


@pytest.mark.slow
def test_the_coding_session_is_valid_and_its_working_set_keeps_growing(text):
    session = CodingSession(SMALL, seed=3, text=text)
    messages = session.history(1_500)
    manager = create_manager({"max_tokens": 20_000, "compaction_strategy": "extractive"})
    views = asyncio.run(kit_replay(manager, messages, budget=20_000))  # every view checked
    assert views and manager.stats["compactions"] > 0
    early, late = (
        index_of(manager.history).state(n) for n in (len(manager.history.groups) // 4, len(manager.history.groups))
    )
    assert len(late.files) > 2 * len(early.files) and len(late.definitions) > 2 * len(early.definitions)
    assert any(not ok for _, _, ok, _, _ in late.commands.values()) and late.ids and late.urls


@pytest.mark.slow
def test_cli_compaction_only_prints_just_the_long_session(capsys):
    assert main(["bench", "--quick", "--compaction-only", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["sizes"] == {} and data["simulation"] is None
    assert [run["kind"] for run in data["long_session"]] == list(KINDS)
    names = [t["name"].split(" ")[0] + " " + t["name"].split(" ")[1] for t in data["targets"]]
    # the module's own work, then as seen (collector pauses included), in the replay and in a host decoding each message
    lags = ["event loop"] * 3
    resumes = ["resume 2,000"] * 3  # stored; nothing stored, net of the collector's pauses and as seen
    assert names == ["compaction CPU", *lags, *resumes, "compaction CPU", *lags]
    assert all(run["loop_lag_s"] > 0 for run in data["long_session"])
    resume = data["long_session"][0]["resume"]  # extractive: resumed with its store, and with none
    assert resume["same_view"] and resume["stored"]["compactions"] == 0 and resume["nothing_stored"]["compactions"]
    cold = resume["nothing_stored"]  # timed with the collector running, its own pauses within the wall time
    assert 0 <= cold["collector_s"] < cold["set_s"] + cold["request_s"]
    assert data["long_session"][1]["resume"] is None
    assert main(["bench", "--quick", "--compaction-only"]) == 0
    assert "Long session: CPU time per compaction" in capsys.readouterr().out


async def test_the_list_holding_context_keeps_the_callers_messages_and_drops_the_oldest_past_its_threshold():
    """The live host's yardstick is the context contract's reference manager: it must hold what it was given (the
    host's own objects, no copies) and compact as the contract's default threshold says."""
    context = ListContext()
    messages = [{"role": "user" if i % 2 else "assistant", "content": "x" * 340} for i in range(10)]  # 92 or 93 tokens
    for message in messages[:9]:
        await context.add_message(message)
    view = await context.get_messages_for_request(token_budget=1_000)  # 9 x ~100 <= 92% of 1,000: all of them
    assert view == messages[:9] and all(a is b for a, b in zip(view, messages, strict=False))
    await context.add_message(messages[9])  # ~1,000 > 920: the oldest go until at most half the budget is left
    view = await context.get_messages_for_request(token_budget=1_000)
    assert view == messages[5:10] and view[0] is messages[5]


def test_the_llm_path_cold_first_request_is_timed_with_its_target(result):
    """``cold_llm``: a cold resume on the LLM path (instant summarizer) summarizes the history in its first
    request; measured at a small size in ``--quick``, its 50,000-message target is then indicative."""
    [cold] = result.cold_llm
    assert cold.messages == 2_000 and cold.provider_calls > 0 and cold.compactions >= 1
    assert 0 < cold.view_messages < cold.messages and 0 < cold.landed_view_messages < cold.messages
    assert cold.request_s > 0 and 0 <= cold.collector_s <= cold.set_s + cold.request_s
    [target] = [t for t in result.targets if t.name.startswith("LLM path")]
    assert target.value == cold.request_s and target.limit == 5.0 and target.set_at == 50_000
    assert result.to_json()["cold_llm"][0]["provider_calls"] == cold.provider_calls
    assert "Cold resume on the LLM path" in render(result)
