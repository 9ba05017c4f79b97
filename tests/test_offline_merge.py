"""The offline tier merge folds summaries section by section and never re-reads the span behind them."""

import json
import re
from types import SimpleNamespace

import pytest

from amplifier_module_context_summarize import create_manager
from amplifier_module_context_summarize.compaction.plan.strategies import MERGE_SHARE
from amplifier_module_context_summarize.core.tokens import TokenCounter
from amplifier_module_context_summarize.summarizer.offline_merge import merge_summaries
from amplifier_module_context_summarize.testing import FakeProvider, mixed_history, replay

COUNT = TokenCounter().count_text


def test_sections_are_joined_oldest_first_and_the_oldest_items_go_first():
    older = "### User requests\n- fix the login bug\n- add a test\n\n### Assistant progress\n- found the cause"
    newer = "Plain words the model wrote.\nA second line.\n\n### User requests\n- add a test\n- ship it"
    merged = merge_summaries([older, newer], 1000, COUNT)
    requests = merged.split("### User requests\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert requests == ["- fix the login bug", "- add a test", "- ship it"]  # a repeat keeps its newest place
    assert "### Assistant progress\n- found the cause" in merged
    assert "### Earlier summary\nPlain words the model wrote.\nA second line." in merged

    small = merge_summaries([older, newer], 38, COUNT)
    assert COUNT(small) <= 38 and "- ship it" in small and "- fix the login bug" not in small
    assert merge_summaries([older], 1, COUNT) == ""


@pytest.mark.slow
async def test_offline_merges_read_summaries_not_the_history():
    """Compaction cost must not grow with the session: no merge re-reads the span it stands for."""
    manager = create_manager({"max_tokens": 6_000, "summarizer": "extractive", "summary_budget_ratio": 0.05})
    spans: list[int] = []
    manager.summarizer.on_extractive.append(lambda span, outcome: spans.append(len(span)))
    history = mixed_history(200)
    await replay(manager, history, None, budget=6_000)
    assert manager.state.segments and max(s.tier for s in manager.state.segments) >= 1  # merges happened
    assert max(spans) < len(history) // 4  # each summary read one segment's span, never the merged range


@pytest.mark.slow
async def test_a_merge_folds_the_summary_well_below_its_room_so_the_next_compactions_need_none():
    """Hysteresis for the summary's own room: merged to ``MERGE_SHARE`` of it, not to just under it."""
    budget = 12_000
    manager = create_manager({"max_tokens": budget, "summarizer": "extractive"})
    asked: list[tuple[int, int]] = []
    merge = manager.segments.merge

    async def recording(job, parts, max_tokens=None):
        merged = await merge(job, parts, max_tokens)
        asked.append((max_tokens, merged.tokens))
        return merged

    manager.segments.merge = recording
    await replay(manager, mixed_history(300), None, budget=budget)
    room = budget * manager.config.summary_budget_ratio
    compactions = manager.stats["compactions"]
    assert asked and len(asked) < compactions / 2
    assert all(size <= room * MERGE_SHARE for size, _ in asked)
    assert all(tokens <= size for size, tokens in asked)


async def test_on_a_small_budget_a_new_segment_is_asked_for_a_share_of_the_summary_room():
    """12,000 × 0.2 = 2,400 tokens of summary, 960 of them the working set's: a segment is asked for a quarter
    of the rest (the output cap, 2,000 tokens, would overflow the room at once); large budgets keep the cap."""
    manager = create_manager({"max_tokens": 12_000, "summary_budget_ratio": 0.2, "ledger_share": 0.4})
    provider = FakeProvider()
    await replay(manager, mixed_history(120), provider, budget=12_000)
    prompts = [json.dumps(r.messages, default=str) for r in provider.requests]
    asked = [p for p in prompts if "Stay under" in p and "Merge these" not in p]
    sizes = [int(m) for p in asked for m in re.findall(r"about (\d+) tokens", p)]
    assert asked and len(sizes) == len(asked) and max(sizes) == 360, "the share of the room caps the size asked"

    strategy = manager.strategy
    for budget, size in ((12_000, 360), (20_000, 600), (200_000, 2000)):
        job = SimpleNamespace(
            limits=SimpleNamespace(budget=budget),
            working_set_tokens=manager.config.working_set_tokens(budget),
            summary_allowance=manager.config.summary_output_tokens,
        )
        assert strategy.segment_tokens(job) == size


def test_what_the_guidance_keeps_gives_way_last_in_an_offline_merge():
    """Issue 43's matrix: with an LLM that hangs, extractive fallbacks were merged offline and the older kept fact
    (what ``summary_instructions`` says every summary keeps) went with the oldest items of every section."""
    count = COUNT
    older = "\n".join(
        ["### Kept as the user asked", "- The refund id is ORD-7731 and it is pending."]
        + ["### Assistant progress"]
        + [f"- Step {i}: read src/part_{i}.py and checked every branch of it." for i in range(12)]
    )
    newer = "\n".join(
        ["### Kept as the user asked", "- The migration window is MIG-4410 on Friday."]
        + ["### Assistant progress"]
        + [f"- Step {i}: read src/part_{i}.py and checked every branch of it." for i in range(12, 24)]
    )
    kept = "\n".join([older.splitlines()[0], older.splitlines()[1], newer.splitlines()[1]])
    room = count(f"{kept}\n\n### Assistant progress\n{newer.splitlines()[-1]}") + 2  # both kept and one more item
    merged = merge_summaries([older, newer], room, count)
    assert count(merged) <= room
    assert "ORD-7731 and it is pending" in merged and "MIG-4410 on Friday" in merged
    assert "Step 23:" in merged and "Step 22:" not in merged  # the other sections give way, oldest first


def test_a_kept_fact_in_an_llm_summarys_prose_gives_way_last_in_an_offline_merge():
    """The feature matrix's explore mode: an LLM summary keeps the guided fact in its prose (a paragraph under
    ``### Progress``, not the extractive summary's ``KEPT`` section); its merge with a later extractive fallback,
    offline because the LLM hung, dropped the paragraph whole with the oldest items and the fact with it."""
    llm = (
        "### Progress\nRequest 0: please look at src/part_0.py and check every branch of the parser.\n"
        "The refund id is ORD-7731 and it is pending.\nThe migration window is MIG-4410 on Friday."
    )
    fallback = "\n".join(
        ["### Kept as the user asked", "- The migration window is MIG-4410 on Friday.", "### User requests"]
        + [f"- Request {i}: please look at src/part_{i}.py and check every branch of it." for i in range(3, 8)]
    )
    room = COUNT(fallback.replace("- Request 3", "- The refund id is ORD-7731 and it is pending.\n- Request 3")) // 2
    merged = merge_summaries([llm, fallback], room, COUNT, keep=("ORD-7731", "MIG-4410"))
    assert COUNT(merged) <= room
    kept = merged.split("### Kept as the user asked\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert kept == ["- The refund id is ORD-7731 and it is pending.", "- The migration window is MIG-4410 on Friday."]
    assert "Request 3:" not in merged  # the other sections give way first

    whole = merge_summaries([llm, fallback], 10_000, COUNT, keep=("ord-7731",))  # found case-insensitively
    assert whole.count("ORD-7731") == 1 and whole.startswith("### Kept as the user asked\n- The refund id")
    assert "### Progress\nRequest 0: please look at src/part_0.py" in whole  # the rest of the paragraph stays
