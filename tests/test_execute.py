"""``run/execute.py``: the executor carries a strategy's plan out over a real history, taking each step from a
segment source (a scripted one to steer summaries and merges, a real ``SegmentSource`` over a ``MemoryStore``
where the store's part matters). The plans themselves are tested pure in ``test_plan.py``."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

import pytest
from test_plan import CONFIG, COUNTER, HYBRID, facts_of, history_of

from amplifier_module_context_summarize.backends.base import Completion, Fault
from amplifier_module_context_summarize.compaction import Phase, Plan, PlanFacts, Progress, Summarize
from amplifier_module_context_summarize.compaction.cache.breaker import CircuitBreaker
from amplifier_module_context_summarize.compaction.cache.segments import SegmentSource
from amplifier_module_context_summarize.compaction.plan.job import Job
from amplifier_module_context_summarize.compaction.plan.strategies import SummarizeStrategy
from amplifier_module_context_summarize.compaction.run.execute import MAX_STEPS, Executed, Executor
from amplifier_module_context_summarize.core.state import CompactionState, Segment
from amplifier_module_context_summarize.stores import MemoryStore
from amplifier_module_context_summarize.summarizer.prompts import load_prompts
from amplifier_module_context_summarize.summarizer.span import SpanSummarizer, SummarizerSettings

BUDGET = 20_000
MAX_MERGES = 12
"""A scripted source refuses more merges than this: a loop that never stops merging fails instead of hanging."""


def words(tokens: int) -> str:
    """A summary text of about ``tokens`` tokens (so the view counts what the segment claims)."""
    return " ".join(["word"] * tokens)


class Scripted:
    """Stands in for ``SegmentSource``: answers each step at once with a segment of a chosen size, and records it."""

    def __init__(self, summary_tokens: int = 300, merge_gains: bool = True, ready: int | None = None) -> None:
        self.summary_tokens, self.merge_gains, self.ready = summary_tokens, merge_gains, ready
        self.prefetched_any = False
        self.asked: list[tuple] = []

    async def ready_end(self, job: Job, acceptable: int) -> int | None:
        self.asked.append(("ready_end", acceptable))
        return self.ready

    async def summary(self, job, start, end, previous, max_tokens=None) -> Segment:
        self.asked.append(("summary", start, end))
        return Segment(start, end, words(self.summary_tokens), self.summary_tokens)

    async def summary_offline(self, job, start, end, previous, max_tokens=None) -> Segment:
        self.asked.append(("extractive", start, end))
        return Segment(start, end, words(self.summary_tokens), self.summary_tokens)

    async def fresh(self, job, start, end) -> Segment:
        self.asked.append(("fresh", start, end))
        return Segment(start, end, words(self.summary_tokens), self.summary_tokens)

    async def merge(self, job, parts: list[Segment], max_tokens=None) -> Segment:
        self.asked.append(("merge", len(parts), max_tokens))
        if self.merges > MAX_MERGES:
            raise RuntimeError("merged without end")
        size = max_tokens if self.merge_gains else sum(p.tokens for p in parts)
        return Segment(parts[0].start, parts[-1].end, words(size), size, max(p.tier for p in parts) + 1)

    @property
    def merges(self) -> int:
        return sum(1 for a in self.asked if a[0] == "merge")


class Counting:
    """A summarizer backend that answers every ask with one plain sentence, and counts the asks."""

    name, model = "counting", "m"

    def __init__(self) -> None:
        self.calls = 0

    async def complete(self, system: str, prompt: str, max_output_tokens: int, provider=None, **kw) -> Completion:
        self.calls += 1
        return Completion("The agent looked at each module in turn; every one reads its config and returns early.")


def real_source(backend: Counting, store: MemoryStore | None = None) -> SegmentSource:
    settings = SummarizerSettings(CONFIG.summary_output_tokens, 50_000, timeout_s=5, max_retries=0)
    summarizer = SpanSummarizer(backend, load_prompts(), COUNTER.count_text, settings)
    clock = lambda: 0.0  # noqa: E731 - cooldowns and the breaker never move here
    return SegmentSource(summarizer, store or MemoryStore(), CircuitBreaker(3, 60, clock), 60, clock)


def share(facts: PlanFacts, state: CompactionState) -> int:
    """The summary's share the merges fold it into (as ``SummarizeStrategy._merge`` works it out)."""
    working_set = min(facts.working_set_shown(state), facts.working_set_tokens)
    return int(BUDGET * HYBRID.summary_budget_ratio) - working_set


async def test_a_summarize_step_is_taken_and_applied() -> None:
    history = history_of(30, 400)
    facts = facts_of(history, BUDGET, masking=False)
    first = HYBRID.plan(facts, CompactionState(), Progress()).step
    assert isinstance(first, Summarize)
    source = Scripted(summary_tokens=300)

    done = await Executor(source).run(HYBRID, Job(facts, CompactionState()))

    assert source.asked[0] == ("summary", first.start, first.end)
    assert done.state is not None and not done.needs_summarizer
    assert done.state.boundary == first.end and done.state.segments == (
        Segment(first.start, first.end, words(300), 300),
    )
    assert facts.fits(done.state)


def over_its_share(history_turns: int = 60) -> tuple[PlanFacts, CompactionState]:
    """Four stored segments far over the summary's share, and groups after them to summarize: after the summary
    the plan merges."""
    facts = facts_of(history_of(history_turns, 400), BUDGET, masking=False)
    segments = tuple(Segment(i * 10, (i + 1) * 10, words(1_500), 1_500) for i in range(4))
    return facts, CompactionState(40, segments)


async def test_merges_continue_until_the_summary_fits_its_share() -> None:
    facts, start = over_its_share()
    source = Scripted(summary_tokens=300, merge_gains=True)

    done = await Executor(source).run(HYBRID, Job(facts, start))

    assert done.state is not None
    assert source.asked[0][0] == "summary" and source.merges >= 1
    assert all(a[0] == "merge" for a in source.asked[1 : 1 + source.merges]), "merges follow the summary"
    summary = sum(s.tokens for s in done.state.segments)
    assert summary <= share(facts, done.state) < sum(s.tokens for s in start.segments)
    assert done.state.segments[0].tier >= 1 and facts.fits(done.state)


async def test_merging_stops_when_a_merge_gains_nothing() -> None:
    facts, start = over_its_share()
    source = Scripted(summary_tokens=300, merge_gains=False)

    done = await Executor(source).run(HYBRID, Job(facts, start))

    assert source.merges == 1, source.asked  # a merge no smaller than its parts is not asked again
    assert done.state is not None and all(s.tier == 0 for s in done.state.segments), "the merge was not applied"
    assert len(done.state.segments) == len(start.segments) + 1


async def test_offline_stops_at_the_first_llm_summary_with_the_masked_state_that_fits() -> None:
    history = history_of(60, 400)
    facts = facts_of(history, BUDGET, masking=True)
    expected = HYBRID.plan(facts_of(history, BUDGET, masking=True), CompactionState(), Progress())
    assert isinstance(expected.step, Summarize) and expected.progress.fitting is not None
    backend = Counting()
    job = Job(facts, CompactionState(), offline=True)

    done = await Executor(real_source(backend)).run(HYBRID, job)

    assert done == Executed(None, expected.progress.fitting) and done.needs_summarizer
    assert facts.fits(done.fitting) and not done.fitting.segments and done.fitting.mask_end > 0
    assert backend.calls == 0 and job.report.provider_calls == 0 and job.report.summaries == 0


async def test_offline_takes_a_summary_the_store_already_has() -> None:
    """A cache hit costs no LLM call: the offline job goes on past it to the state the online one reached."""
    history, store, backend = history_of(60, 400), MemoryStore(), Counting()
    online = await Executor(real_source(backend, store)).run(HYBRID, Job(facts_of(history, BUDGET), CompactionState()))
    assert online.state is not None and online.state.segments and backend.calls > 0
    paid = backend.calls

    job = Job(facts_of(history, BUDGET), CompactionState(), offline=True)
    offline = await Executor(real_source(backend, store)).run(HYBRID, job)

    assert offline == Executed(online.state)
    assert backend.calls == paid and job.report.cache_hits >= 1 and job.report.provider_calls == 0


@dataclass(frozen=True)
class Raising:
    """A strategy whose plan has a bug."""

    error: BaseException
    name: str = "raising"
    summarizes: bool = False
    asks_llm: bool = False
    stores_cuts: bool = False
    plans_as: str = "raising"
    reads_prefetched: bool = False

    def masks(self, observation_masking: bool) -> bool:
        return False

    def plan(self, facts: PlanFacts, state: CompactionState, progress: Progress) -> Plan:
        raise self.error


async def test_a_plan_that_raises_is_logged_reported_and_answered_by_truncation(caplog) -> None:
    facts = facts_of(history_of(30, 400), BUDGET, masking=False)
    job = Job(facts, CompactionState())
    source = Scripted()

    with caplog.at_level(logging.ERROR, logger="amplifier_module_context_summarize.compaction.run.execute"):
        done = await Executor(source).run(Raising(ZeroDivisionError("secret detail")), job)

    assert done == Executed(facts.truncated(CompactionState()))
    assert done.state.boundary > 0 and facts.fits(done.state)
    assert job.report.fallback == Fault.ERROR
    assert "compaction failed (ZeroDivisionError)" in caplog.text
    assert source.asked == []


async def test_a_cancelled_compaction_is_not_swallowed() -> None:
    job = Job(facts_of(history_of(30, 400), BUDGET, masking=False), CompactionState())
    with pytest.raises(asyncio.CancelledError):
        await Executor(Scripted()).run(Raising(asyncio.CancelledError()), job)
    assert job.report.fallback is None


async def test_a_strategy_that_reads_prefetched_segments_looks_for_one_and_plans_with_it() -> None:
    history = history_of(30, 400)
    facts = facts_of(history, BUDGET, masking=False)
    planned = HYBRID.plan(facts_of(history, BUDGET, masking=False), CompactionState(), Progress()).step
    assert isinstance(planned, Summarize)
    stored_end = planned.end + 3  # a prefetch stored a segment reaching past where the plan would cut
    source = Scripted(ready=stored_end)

    done = await Executor(source).run(
        SummarizeStrategy(HYBRID.summary_budget_ratio, reads_prefetched=True), Job(facts, CompactionState())
    )

    assert source.asked[0] == ("ready_end", facts.near_target)
    assert facts.prefetched_end == stored_end
    assert source.asked[1] == ("summary", 0, stored_end), "the plan takes the stored segment's cut"
    assert done.state is not None and done.state.boundary == stored_end


async def test_a_strategy_that_does_not_read_prefetched_segments_looks_only_once_a_prefetch_stored_one() -> None:
    history = history_of(30, 400)
    source = Scripted(ready=None)
    facts = facts_of(history, BUDGET, masking=False)
    await Executor(source).run(HYBRID, Job(facts, CompactionState()))
    assert not any(a[0] == "ready_end" for a in source.asked) and facts.prefetched_end is None

    source.prefetched_any, source.asked = True, []
    await Executor(source).run(HYBRID, Job(facts_of(history, BUDGET, masking=False), CompactionState()))
    assert source.asked[0][0] == "ready_end"


async def test_a_plan_that_never_completes_is_taken_for_a_bug_and_answered_by_truncation(caplog) -> None:
    """A strategy whose plan keeps asking to go on (no step, never done) does not hold the compaction forever:
    after ``MAX_STEPS`` plans it is a fault like any other, answered by dropping whole groups."""
    asked = []

    class Endless(SummarizeStrategy):
        def plan(self, facts, state, progress):
            asked.append(state)
            return Plan(state, None, Progress(Phase.PASSES))

    facts = facts_of(history_of(30, 400), BUDGET, masking=False)
    job = Job(facts, CompactionState())
    with caplog.at_level(logging.ERROR, logger="amplifier_module_context_summarize.compaction.run.execute"):
        done = await Executor(Scripted()).run(Endless(0.2, name="endless"), job)
    assert len(asked) == MAX_STEPS
    assert done == Executed(facts.truncated(CompactionState()))
    assert job.report.fallback == Fault.ERROR and "compaction failed (RuntimeError)" in caplog.text
