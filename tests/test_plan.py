"""Where a compaction is decided: each strategy's ``plan`` is a pure function of plain data (a history, a budget,
the state so far, its progress), tested here without a summarizer, a store or an event loop."""

from __future__ import annotations

import inspect
import json
from dataclasses import dataclass

import pytest

from amplifier_module_context_summarize.compaction import (
    STRATEGIES,
    MaskStrategy,
    Merge,
    Phase,
    Plan,
    PlanFacts,
    Progress,
    Summarize,
    SummarizeStrategy,
    TruncateStrategy,
    Writer,
)
from amplifier_module_context_summarize.compaction.view.masking import Masks, MaskSettings
from amplifier_module_context_summarize.config import Config
from amplifier_module_context_summarize.core.history import History
from amplifier_module_context_summarize.core.invariants import last_allowed_cut
from amplifier_module_context_summarize.core.plan import Limits
from amplifier_module_context_summarize.core.state import CompactionState, Segment
from amplifier_module_context_summarize.core.tokens import TokenCounter
from amplifier_module_context_summarize.evaluation.naive import NaiveStrategy

COUNTER = TokenCounter("cl100k_base")
CONFIG = Config()


def history_of(turns: int, output_words: int) -> History:
    """A system prompt, then ``turns`` steps: a request, a tool call, its output of ``output_words`` words, a reply."""
    history = History(COUNTER, "fp")
    history.append({"role": "system", "content": "You are a careful coding agent."})
    for i in range(turns):
        args = json.dumps({"path": f"src/module_{i}.py"})
        call = {"id": f"call_{i}", "type": "function", "function": {"name": "read_file", "arguments": args}}
        output = " ".join(f"line{i}_{w}" for w in range(output_words))
        history.append({"role": "user", "content": f"Step {i}: look at module {i}."})
        history.append({"role": "assistant", "content": None, "tool_calls": [call]})
        history.append({"role": "tool", "tool_call_id": f"call_{i}", "content": output})
        history.append({"role": "assistant", "content": f"Module {i} reads its config and returns early."})
    return history


def facts_of(history: History, budget: int, masking: bool = True, summarizer: bool = True) -> PlanFacts:
    limits = Limits.for_budget(budget, CONFIG.compact_threshold, CONFIG.target_usage, CONFIG.preserve_recent_ratio)
    return PlanFacts(
        history=history,
        limits=limits,
        system_tokens=history.system_tokens,
        counter=COUNTER,
        summary_allowance=CONFIG.summary_output_tokens,
        working_set_tokens=CONFIG.working_set_tokens(budget),
        summary_room=CONFIG.summary_room(budget),
        masks=Masks(history, MaskSettings()) if masking else None,
        summarizer=summarizer,
    )


@dataclass(frozen=True)
class Case:
    name: str
    strategy: object
    turns: int
    output_words: int
    budget: int
    masking: bool
    expect: str
    """``unchanged``, ``masked`` (masking alone, near the target), ``summarize`` (a summary step from the boundary),
    ``truncated`` (whole groups dropped, no summary), ``fresh`` (the whole prefix summarized anew)."""


HYBRID = SummarizeStrategy(CONFIG.summary_budget_ratio)
CASES = [
    Case("small view: nothing to do", HYBRID, 4, 50, 20_000, True, "unchanged"),
    Case("large outputs: masking alone", HYBRID, 30, 400, 20_000, True, "masked"),
    Case("no masking: a summary", HYBRID, 30, 400, 20_000, False, "summarize"),
    Case("small outputs: masking saves little, a summary", HYBRID, 400, 30, 20_000, True, "summarize"),
    Case("mask strategy: masking alone", MaskStrategy(), 30, 400, 20_000, True, "masked"),
    Case("mask strategy: not enough, truncation", MaskStrategy(), 400, 30, 20_000, True, "truncated"),
    Case("truncate strategy", TruncateStrategy(), 30, 400, 20_000, False, "truncated"),
    Case("naive: the whole prefix, afresh", NaiveStrategy(), 30, 400, 20_000, False, "fresh"),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_first_plan_of_each_strategy(case: Case) -> None:
    history = history_of(case.turns, case.output_words)
    facts = facts_of(history, case.budget, case.masking)
    start = CompactionState()
    plan = case.strategy.plan(facts, start, Progress())
    if case.expect == "unchanged":
        assert plan.done and plan.state == start
    elif case.expect == "masked":
        assert plan.done and plan.state.boundary == 0 and not plan.state.segments
        assert plan.state.mask_end > 0 and facts.view_tokens(plan.state) <= facts.near_target
    elif case.expect == "truncated":
        assert plan.done and plan.state.boundary > 0 and not plan.state.segments
        assert facts.view_tokens(plan.state) <= case.budget
    elif case.expect == "summarize":
        step = plan.step
        assert isinstance(step, Summarize) and step.writer is Writer.SUMMARIZER and step.start == 0
        assert 0 < step.end <= last_allowed_cut(history)
        # Planned with the summary's allowance: a summary that size leaves the view within the budget.
        after = step.apply(plan.state, Segment(0, step.end, "summary", step.max_tokens or facts.summary_allowance))
        assert facts.view_tokens(after) <= case.budget
        assert history.total - history.prefix[step.end] >= facts.limits.preserve_recent, "the recent share stays"
        assert plan.progress.phase is Phase.MERGING and plan.progress.then is Phase.PASSES
    elif case.expect == "fresh":
        step = plan.step
        assert isinstance(step, Summarize) and step.writer is Writer.FRESH and step.start == 0
        assert plan.progress.phase is Phase.DONE
    # Pure: the same inputs give the same plan, and nothing was awaited.
    assert case.strategy.plan(facts, start, Progress()) == plan
    assert not inspect.iscoroutinefunction(case.strategy.plan)


def test_offline_the_first_summary_carries_the_masked_state_that_fits() -> None:
    """A compaction planned at the soft threshold may not call the LLM: the plan says what masking reached that
    fits the budget, so a view over it installs that while the summary is written in the background."""
    history = history_of(400, 30)
    facts = facts_of(history, 20_000)
    plan = HYBRID.plan(facts, CompactionState(), Progress())
    assert isinstance(plan.step, Summarize)
    fitting = plan.progress.fitting
    if facts.fits(facts.masked(CompactionState())):
        assert fitting is not None and facts.fits(fitting) and not fitting.segments
    else:
        assert fitting is None


def test_after_a_summary_that_fits_the_plan_is_complete() -> None:
    history = history_of(30, 400)
    facts = facts_of(history, 20_000, masking=False)
    plan = HYBRID.plan(facts, CompactionState(), Progress())
    step = plan.step
    assert isinstance(step, Summarize)
    state = step.apply(plan.state, Segment(0, step.end, "a short summary", 40))
    after = HYBRID.plan(facts, state, plan.progress)
    assert after.done and after.state == state and facts.fits(state)


def test_a_summary_larger_than_planned_gets_a_further_pass() -> None:
    """The summary came out far over its allowance: the view does not fit, so the next groups are summarized."""
    history = history_of(60, 400)
    facts = facts_of(history, 20_000, masking=False)
    plan = HYBRID.plan(facts, CompactionState(), Progress())
    step = plan.step
    assert isinstance(step, Summarize)
    long = " ".join(f"fact{i}" for i in range(6_000))
    state = step.apply(plan.state, Segment(0, step.end, long, COUNTER.count_text(long)))
    again = HYBRID.plan(facts, state, plan.progress)
    assert not facts.fits(state)
    # The oversized summary is first folded to its share (a merge needs two segments: none here), then a pass.
    assert isinstance(again.step, Summarize) and again.step.start == state.boundary > 0
    assert again.progress.summaries == 2


def test_segments_over_their_share_are_merged_until_a_merge_gains_nothing() -> None:
    history = history_of(60, 400)
    facts = facts_of(history, 20_000, masking=False)
    boundary = 40
    segments = tuple(Segment(i * 10, (i + 1) * 10, f"summary {i}", 1_500) for i in range(4))
    state = CompactionState(boundary, segments)
    progress = Progress(Phase.MERGING, summaries=1, then=Phase.DONE)
    plan = HYBRID.plan(facts, state, progress)
    assert isinstance(plan.step, Merge) and plan.step.count >= 2
    merged = plan.step.apply(state, Segment(0, 20, "merged", 400))
    assert len(merged.segments) == len(segments) - plan.step.count + 1
    # A merge no smaller than its parts leaves the state as it was: the plan stops merging.
    unchanged = plan.step.apply(state, Segment(0, 20, "merged", 10_000))
    assert unchanged == state
    assert HYBRID.plan(facts, unchanged, plan.progress).done


def test_the_configurable_strategies_own_their_facts() -> None:
    by_name = {name: make(0.2, False) for name, make in STRATEGIES.items()}
    assert {name: s.name for name, s in by_name.items()} == {n: n for n in STRATEGIES}
    assert [n for n, s in by_name.items() if s.asks_llm] == ["summarize"]
    assert [n for n, s in by_name.items() if not s.stores_cuts] == []
    assert by_name["extractive"].plans_as == by_name["summarize"].plans_as == "summarize"
    assert by_name["mask"].masks(False) and not by_name["truncate"].masks(True)
    assert by_name["summarize"].masks(True) and not by_name["summarize"].masks(False)


def test_a_plan_is_a_value() -> None:
    plan = Plan(CompactionState(3))
    assert plan.done and plan == Plan(CompactionState(3))
    waiting = Plan(CompactionState(3), None, Progress(Phase.PASSES, summaries=1))
    assert not waiting.done, "no step, not done: the executor settles what the plan reads next, then asks again"


def test_states_differing_only_in_their_mask_end_share_one_count_of_the_summary_message() -> None:
    """A plan weighs masking further under the summary in force (issue 48: late in a long session each count of the
    summary message held the loop for tens of ms): the summary and pins depend on the boundary and the segments
    only, so one count serves every mask end, and the count is the one a fresh plan would make."""
    history = history_of(60, 120)
    segment = Segment(0, 20, "### Goal\nRead every module's config.", 12, 0)
    summarized = CompactionState(20, (segment,))
    facts = facts_of(history, 30_000)
    counted: list[object] = []
    real = COUNTER.count_message

    def counting(message: dict) -> int:
        counted.append(message)
        return real(message)

    facts.counter = TokenCounter("cl100k_base")
    facts.counter.count_message = counting  # type: ignore[method-assign]
    shows = [facts.shown(summarized.masked_to(end)) for end in (0, 24, 30, 36)]
    summaries = [m for m in counted if str(m.get("content", "")).startswith("[CONTEXT SUMMARY]")]
    assert len(summaries) == 1, "the summary message was counted once per mask end"
    assert all(s == shows[0] for s in shows)
    assert shows[0].tokens == facts_of(history, 30_000).shown(summarized.masked_to(30)).tokens
    assert facts.shown(CompactionState(24, (segment,))) is not shows[0], "another boundary is another view"


def test_a_summary_from_the_first_cut_is_widened_to_a_span_worth_one_once_a_closing_group_allows_it() -> None:
    """``summary_end``: the first cut here takes one group, far below a span worth an LLM summary, and so does every
    cut up to the last allowed one: None (the plan masks instead). One more exchange closes a group and moves the
    last allowed cut: the same first cut now widens to a span worth a summary. A stall's reach holds this end
    (``Compactor.reach``): with the first cut unmoved, a stalled live session otherwise kept skipping a compaction
    its resume made (the feature matrix's ``KNOWN_RESUME_SEAM``). The extractive summarizer writes any span."""
    from amplifier_module_context_summarize.compaction.plan.strategies import summary_end
    from amplifier_module_context_summarize.summarizer.span import MIN_SPAN_TOKENS

    history, state = history_of(3, 20), CompactionState()
    facts = facts_of(history, 4000)
    assert facts.span_tokens(0, last_allowed_cut(history)) < MIN_SPAN_TOKENS
    assert summary_end(facts, state, 1) is None
    history.append({"role": "user", "content": "Step 3: " + "word " * 60})
    history.append({"role": "assistant", "content": "Noted."})
    widened = summary_end(facts_of(history, 4000), state, 1)
    assert widened is not None and 1 < widened <= last_allowed_cut(history)
    assert facts_of(history, 4000).span_tokens(0, widened) >= MIN_SPAN_TOKENS
    assert summary_end(facts_of(history, 4000, summarizer=False), state, 1) == 1
