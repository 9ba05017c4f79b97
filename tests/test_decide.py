"""The compaction's decision on plain data (``compaction/run/decide.py``): which path a request past the threshold
takes, and the filters a planned state passes before it is installed. No manager, no view, no event loop: each
answer is a function of the values in the table, as a strategy's plan is in ``tests/test_plan.py``."""

from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass, replace

import pytest

from amplifier_module_context_summarize.compaction.run import decide as decide_module
from amplifier_module_context_summarize.compaction.run.decide import (
    LOW_LANDING,
    Action,
    Moment,
    Reach,
    SoftPlan,
    Stall,
    Verdict,
    cut_reach,
    decide,
    gains,
    judge_soft,
    lands_onto,
    masks_further,
    postpones,
    slow,
    still_stalled,
)
from amplifier_module_context_summarize.core.plan import Limits
from amplifier_module_context_summarize.core.state import CompactionState, Segment

BUDGET = 10_000

PATHS = [
    # (what, moment, action)
    ("stalled: nothing new within the plan's reach", Moment(8_500, BUDGET, True, False, stalled=True), Action.SKIP),
    ("stalled wins over blocking mode", Moment(8_500, BUDGET, False, False, stalled=True), Action.SKIP),
    ("blocking mode: the request waits", Moment(8_500, BUDGET, False, False), Action.IN_BAND),
    ("blocking mode past the budget", Moment(12_000, BUDGET, False, False), Action.IN_BAND),
    ("fits, nothing in flight: plan offline", Moment(8_500, BUDGET, True, False), Action.BACKGROUND),
    ("fits exactly at the budget", Moment(BUDGET, BUDGET, True, False), Action.BACKGROUND),
    ("fits, a flight under way: leave the view", Moment(8_500, BUDGET, True, True), Action.SKIP),
    ("past the budget, a flight under way: wait for it", Moment(12_000, BUDGET, True, True), Action.WAIT),
    ("past the budget, waited already, still running", Moment(12_000, BUDGET, True, True, waited=True), Action.IN_BAND),
    ("past the budget, nothing in flight: mask now", Moment(12_000, BUDGET, True, False), Action.MASK_NOW),
    ("last flight failed: in band even though it fits", Moment(8_500, BUDGET, True, False, True), Action.IN_BAND),
    ("last flight failed, past the budget", Moment(12_000, BUDGET, True, False, True), Action.IN_BAND),
    ("waited and the flight landed, still past the budget", Moment(11_000, BUDGET, True, False, waited=True),
     Action.MASK_NOW),
    ("waited, the landing made it fit but not below the threshold", Moment(9_000, BUDGET, True, False, waited=True),
     Action.BACKGROUND),
]  # fmt: skip


@pytest.mark.parametrize(("what", "moment", "action"), PATHS, ids=[p[0] for p in PATHS])
def test_each_moment_takes_its_path(what: str, moment: Moment, action: Action) -> None:
    assert decide(moment) is action, what


def soft(**changes: object) -> SoftPlan:
    base = SoftPlan(False, False, False, tokens=8_500, budget=BUDGET, target=6_000, planned=5_000)
    return replace(base, **changes)  # type: ignore[arg-type]


VERDICTS = [
    ("fits, smaller, not too low: installed", soft(), Verdict.INSTALL),
    ("fits, no smaller: a stall", soft(planned=8_500), Verdict.STALL),
    ("fits, larger: a stall", soft(planned=9_000), Verdict.STALL),
    ("fits, lands below half the target: an overshoot", soft(planned=2_999), Verdict.OVERSHOOT),
    ("exactly half the target is not an overshoot", soft(planned=3_000), Verdict.INSTALL),
    ("fits, needs a summary: written in the background", soft(needs_summarizer=True, planned=None),
     Verdict.BACKGROUND),
    ("past the budget, needs a summary, masking fits", soft(over_budget=True, needs_summarizer=True,
     masking_fits=True, tokens=12_000, planned=None), Verdict.MASK_THEN_BACKGROUND),
    ("past the budget, needs a summary, masking does not fit", soft(over_budget=True, needs_summarizer=True,
     tokens=12_000, planned=None), Verdict.IN_BAND),
    ("past the budget, complete: installed whatever it gains", soft(over_budget=True, tokens=12_000, planned=None),
     Verdict.INSTALL),
]  # fmt: skip


@pytest.mark.parametrize(("what", "plan", "verdict"), VERDICTS, ids=[v[0] for v in VERDICTS])
def test_each_soft_plan_gets_its_verdict(what: str, plan: SoftPlan, verdict: Verdict) -> None:
    assert judge_soft(plan) is verdict, what


def test_low_landing_is_a_share_of_the_target() -> None:
    target = 8_000
    edge = int(target * LOW_LANDING)
    assert judge_soft(soft(target=target, planned=edge - 1)) is Verdict.OVERSHOOT
    assert judge_soft(soft(target=target, planned=edge)) is Verdict.INSTALL


def test_gains_past_the_budget_whatever_the_plan_and_only_smaller_otherwise() -> None:
    assert gains(12_000, BUDGET, None) and gains(12_000, BUDGET, 13_000)
    assert gains(9_000, BUDGET, 8_999)
    assert not gains(9_000, BUDGET, 9_000) and not gains(9_000, BUDGET, None)


def test_a_deny_postpones_only_while_the_view_fits() -> None:
    assert postpones(True, BUDGET, BUDGET)
    assert not postpones(True, BUDGET + 1, BUDGET), "past the budget the deny is overruled"
    assert not postpones(False, 100, BUDGET)


START = CompactionState(boundary=4, segments=(Segment(0, 4, "summary", 3),), mask_end=6)


def test_masks_further_and_where_a_flight_still_lands() -> None:
    assert masks_further(START, START.masked_to(9))
    assert not masks_further(START, START)
    assert not masks_further(START, START.cut(5))
    assert lands_onto(START, START, same_history=True)
    assert lands_onto(START, START.masked_to(9), same_history=True)
    assert not lands_onto(START, START, same_history=False), "set_messages put another history in place"
    assert not lands_onto(START, replace(START), same_history=True), "an equal state installed since is another"
    assert not lands_onto(START, START.cut(5), same_history=True)


def test_cut_reach_keeps_the_protected_tail_and_never_goes_back() -> None:
    prefix = [0, 100, 200, 300, 400, 500, 600]  # six groups of 100 tokens
    assert cut_reach(prefix, 0, 6, preserve_recent=250) == 3
    assert cut_reach(prefix, 0, 2, preserve_recent=0) == 2, "the newest cuttable group bounds it"
    assert cut_reach(prefix, 5, 6, preserve_recent=400) == 5, "never before the boundary"


def test_a_stall_holds_while_the_view_fits_and_the_reach_is_the_same() -> None:
    history = object()
    reach = Reach(history, START, BUDGET, 3, 5)  # type: ignore[arg-type]
    stall = Stall(reach)
    assert still_stalled(stall, 9_000, BUDGET, Reach(history, START, BUDGET, 3, 5))  # type: ignore[arg-type]
    assert not still_stalled(stall, 9_000, BUDGET, replace(reach, cut_end=4)), "a group closed"
    assert not still_stalled(stall, 9_000, BUDGET, replace(reach, mask_end=6)), "a newer output"
    assert not still_stalled(stall, 9_000, BUDGET, replace(reach, budget=12_000)), "another budget"
    assert not still_stalled(stall, 9_000, BUDGET, replace(reach, history=object())), "another history"
    assert not still_stalled(stall, 11_000, BUDGET, None), "past the budget: compacted whatever it costs"


@dataclass
class Pace:
    known: bool
    seconds_per_token: float

    def allowance_s(self, tokens: int) -> float:
        return tokens * self.seconds_per_token


def test_slow_compares_the_usual_summary_with_the_deadline() -> None:
    limits = Limits(BUDGET, 8_000, 6_000, 2_000)  # the usual span: 2,000 tokens and 1,000 of prompt
    assert slow(Pace(True, 0.01), True, limits, 1_000, 20.0), "30 s for 3,000 tokens"
    assert not slow(Pace(True, 0.005), True, limits, 1_000, 20.0), "15 s"
    assert not slow(Pace(False, 1.0), True, limits, 1_000, 20.0), "not measured yet"
    assert not slow(Pace(True, 1.0), False, limits, 1_000, 20.0), "no summarizer backend"


def test_the_decision_module_does_no_io_and_awaits_nothing() -> None:
    tree = ast.parse(inspect.getsource(decide_module))
    assert not [n for n in ast.walk(tree) if isinstance(n, (ast.AsyncFunctionDef, ast.Await))]
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not {m for m in imported if m and ("asyncio" in m or "store" in m or "view" in m)}
