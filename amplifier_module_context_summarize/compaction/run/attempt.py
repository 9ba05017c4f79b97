"""One compaction about to be planned: its job, and the view's measure when it started (for its events)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...config import Config
from ...core.plan import Limits
from ...core.state import CompactionState
from ...summarizer.in_context import SentView
from ..plan.facts import PlanFacts
from ..plan.job import Job
from ..plan.strategies import summary_end
from ..view.request import RequestView
from .stand_in import stand_in_above


@dataclass
class Attempt:
    """One compaction under way: its job, and the view's measure when it started (for its events)."""

    job: Job
    before: CompactionState
    tokens: int
    messages: int
    started: float
    """``time.perf_counter()`` when it started."""
    force: bool
    estimated: bool = False
    """``tokens`` holds upper bounds for the oldest groups (a cold resume's first plan, ``History.count_from``)."""


@dataclass(frozen=True)
class Request:
    """What the request asks of its compaction."""

    limits: Limits
    provider: Any | None
    force: bool
    deadline: float | None
    """A ``core.clock.now()`` value past which no summarizer call runs."""
    offline: bool = False
    """Plan without writing any summary (``Job.offline``)."""
    stand_in: bool = False
    """A summary too long to wait for is written extractively now, the LLM's in the background (``stand_in.py``)."""


def attempt_of(
    config: Config,
    view: RequestView,
    summarizer: bool,
    last_sent: Callable[[], SentView | None],
    started: float,
    ask: Request,
) -> Attempt:
    """The job for the view as it is now (``summarizer``: a summarizer backend is configured), with its measure."""
    limits = ask.limits
    if ask.force:
        limits = Limits(limits.budget, 0, limits.target, limits.preserve_recent)
    facts = plan_facts(config, view, summarizer, limits)
    if ask.stand_in and summarizer:
        facts.stand_in_above = stand_in_above(config.summarizer.max_input_tokens)
    job = Job(facts, view.state, ask.provider, ask.deadline, ask.offline, last_sent=last_sent)
    history = view.history
    estimated = history.estimating and view.state.boundary < history.bounded
    return Attempt(job, view.state, view.tokens(), view.message_count(), started, ask.force, estimated)


def plan_facts(config: Config, view: RequestView, summarizer: bool, limits: Limits) -> PlanFacts:
    """What a plan of the view as it is now reads under ``limits`` (``summarizer``: a backend is configured)."""
    facts = PlanFacts(
        history=view.history,
        limits=limits,
        system_tokens=view.system_view_tokens() + view.injected_tokens,  # room for the hook's text again
        counter=view.counter,
        summary_allowance=config.summary_output_tokens,
        working_set_tokens=config.working_set_tokens(view.budget.wire),
        summary_room=config.summary_room(view.budget.wire),
        masks=view.masks,
        recall_tool=config.recall_tool_name,
        summarizer=summarizer,
    )
    facts.remember(view.state, view.shown_by_state())  # its injection is in ``system_tokens``
    return facts


def first_cut(config: Config, view: RequestView, summarizer: bool, limits: Limits) -> tuple[int, int | None]:
    """The cut a plan of the view starts with (a summary strategy's first step), and where that summary would end.

    The cut: to the target, the protected tail kept, unless the tail beside the summary and the room a new one is
    planned with no longer fits the budget, when it cuts past the protected tail (``choose_boundary``). Its end:
    widened to a span worth an LLM summary, None while none is (``strategies.summary_end``), which a group closing
    moves with the cut unmoved. A stall's reach must move with both: measured by the protected tail alone, a live
    session stayed stalled where a resumed one, holding no stall, compacted; measured by the cut alone, it stayed
    stalled past the group whose closing made the span worth summarizing."""
    facts = plan_facts(config, view, summarizer, limits)
    state = facts.masked(view.state)
    cut = facts.fitting_boundary(state, facts.shown(state).summary_tokens + facts.summary_allowance)
    return cut, summary_end(facts, state, cut)
