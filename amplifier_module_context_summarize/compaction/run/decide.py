"""What a request's compaction does, decided on plain data: no view, no store, no awaits.

``decide`` picks the path (skip, in band, wait for the flight, plan offline with the summary in the background,
mask now); ``judge_soft``, ``gains``, ``postpones``, ``still_stalled`` and ``masks_further`` are the filters a
planned state passes before it is installed. The compactor measures, asks these, and carries the answer out;
``tests/test_decide.py`` holds them to tables of plain values, as ``tests/test_plan.py`` holds the plans.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from ...core.history import History
from ...core.plan import Limits
from ...core.state import CompactionState
from ...summarizer.pace import Pace

LOW_LANDING = 0.5
"""A view that still fits is not compacted to below this share of the target: only hiding one group larger than
the room between the target and the threshold (a huge tool output) lands that low, and that same group would go
anyway once the view no longer fits, with the newest groups then in its place."""


class Action(Enum):
    """What a request past the threshold does (``decide``)."""

    SKIP = "skip"
    """Nothing now: the last compaction could not gain and nothing in its reach changed, or a background one is
    under way while the view fits."""
    IN_BAND = "in_band"
    """The request waits for its compaction (blocking mode; or after the background one settled)."""
    WAIT = "wait"
    """Past the budget with a summary in flight: let it land (a short grace, masking beside it when that alone
    fits, then up to the deadline)."""
    BACKGROUND = "background"
    """The view fits: plan offline, install what needs no summary written, write the summary in the background."""
    MASK_NOW = "mask_now"
    """Past the budget, nothing in flight: install the masking the offline plan reached when that fits and write
    the summary in the background; else in band."""


@dataclass(frozen=True)
class Moment:
    """What ``decide`` reads: the view's measure and what is under way."""

    tokens: int
    budget: int
    background: bool
    """``background_compaction``: the soft threshold may write its summary off the request path."""
    running: bool
    """A background compaction is in flight."""
    in_band_next: bool = False
    """The last background compaction failed: the next one runs in band."""
    stalled: bool = False
    waited: bool = False
    """This request already waited for the flight (``Action.WAIT`` was taken)."""


def decide(m: Moment) -> Action:
    """The path of a request whose view passed the threshold (``Compactor.for_request`` carries it out)."""
    if m.stalled:
        return Action.SKIP
    if not m.background:
        return Action.IN_BAND
    if m.tokens > m.budget and m.running and not m.waited:
        return Action.WAIT
    if m.tokens <= m.budget and not m.in_band_next:
        return Action.SKIP if m.running else Action.BACKGROUND
    if not (m.running or m.in_band_next):
        return Action.MASK_NOW
    return Action.IN_BAND


class Verdict(Enum):
    """What becomes of a soft-threshold plan made offline (``judge_soft``)."""

    INSTALL = "install"
    BACKGROUND = "background"
    """The plan needs a summary written: it is written in the background, the view left as it is."""
    MASK_THEN_BACKGROUND = "mask_then_background"
    """Past the budget: the masking the plan reached (it fits) is installed now, the summary lands later."""
    IN_BAND = "in_band"
    """Past the budget and masking does not fit: the request compacts in band."""
    STALL = "stall"
    """It would not make the fitting view smaller (``gains``): nothing is tried again until the reach changes."""
    OVERSHOOT = "overshoot"
    """It would land the fitting view below ``LOW_LANDING`` of the target: wait until the view does not fit."""


@dataclass(frozen=True)
class SoftPlan:
    """A soft-threshold plan made offline, measured (``judge_soft``'s input)."""

    over_budget: bool
    needs_summarizer: bool
    masking_fits: bool
    """When a summary is needed: the plan found a masked state that fits the budget."""
    tokens: int
    """The view now."""
    budget: int
    target: int
    planned: int | None
    """Tokens of the view the plan's state would show (measured only for a view that fits and a complete plan)."""


def judge_soft(p: SoftPlan) -> Verdict:
    if p.needs_summarizer:
        if not p.over_budget:
            return Verdict.BACKGROUND
        return Verdict.MASK_THEN_BACKGROUND if p.masking_fits else Verdict.IN_BAND
    if p.over_budget:
        return Verdict.INSTALL
    if not gains(p.tokens, p.budget, p.planned):
        return Verdict.STALL
    if p.planned is not None and p.planned < p.target * LOW_LANDING:
        return Verdict.OVERSHOOT
    return Verdict.INSTALL


def gains(tokens: int, budget: int, planned: int | None) -> bool:
    """Whether installing a state is worth it: the view did not fit the budget (the ladder must make it fit, whatever
    it costs), or the state makes it smaller (``planned`` tokens; None: not measured, the view is past the budget).
    One no smaller would break the provider's cached prefix for nothing; an explicit ``compact()`` is held to the
    same rule (it returns the tokens it saved: none)."""
    return tokens > budget or (planned is not None and planned < tokens)


def postpones(denied: bool, tokens: int, budget: int) -> bool:
    """A hook's ``deny`` postpones a compaction while the view fits the budget, never otherwise."""
    return denied and tokens <= budget


def masks_further(before: CompactionState, after: CompactionState) -> bool:
    """Whether ``after`` differs from ``before`` only in masking more groups (same summary, same boundary)."""
    return after.boundary == before.boundary and after.segments == before.segments and after.mask_end > before.mask_end


def lands_onto(before: CompactionState, current: CompactionState, same_history: bool) -> bool:
    """A background compaction started from ``before`` still applies to the view now at ``current``: the same
    history, and the state it started from or only masked further since."""
    return same_history and (current is before or masks_further(before, current))


@dataclass(frozen=True)
class Reach:
    """How far a plan may cut and mask the view, and what it starts from (``reach_of``)."""

    history: History
    """Compared by identity: ``set_messages`` puts another in place."""
    state: CompactionState
    budget: int
    cut_end: int
    """The furthest boundary: the newest group and the protected tail (``preserve_recent`` tokens) stay."""
    mask_end: int | None
    """The furthest mask end (``Masks.limit``: the newest ``keep_recent`` outputs stay); None without masking."""
    first_cut: int | None = None
    """Where a plan's first summary would cut (``attempt.first_cut``): past ``cut_end`` once the tail beside the
    summary and a new one's room no longer fits the budget, which the protected tail alone does not show."""
    summary_end: int | None = None
    """Where that summary would end (``strategies.summary_end``): widened to a span worth an LLM summary, None while
    none is; a group closing can make one worth it with the first cut unmoved."""


def cut_reach(prefix: Sequence[int], boundary: int, last_cuttable: int, preserve_recent: int) -> int:
    """The furthest boundary a plan may cut to: before the protected tail and the newest group, never before
    ``boundary``. ``prefix`` is searched from the boundary: a resumed history's older counts are not read."""
    protected = bisect_right(prefix, prefix[-1] - preserve_recent, boundary) - 1
    return max(min(protected, last_cuttable), boundary)


@dataclass(frozen=True)
class Stall:
    """A compaction of a view that fit could not make it smaller (its post said ``unchanged``, or a plan made at
    the soft threshold was dropped before the hooks were asked): what its plan could reach.

    The rule: while the view fits the budget, no compaction is tried again as long as the plan's reach is the
    same (``Reach``: history, state, budget, the furthest cut, the furthest mask end, and where the first summary
    would cut and end). A plan aims at the target but cuts no further than the protected tail (or its first cut,
    when the tail no longer fits beside a summary), summarizes a span only once it is worth an LLM summary, and
    masks no further than the newest outputs it keeps; with those the same it can only make the same state again,
    and the tail that grew since makes that no smaller. A message that moves any of them (a group closing, the
    tail growing past a group, a span grown worth a summary, a newer output), an install, or another budget ends
    the stall; so does a view past the budget, which is compacted whatever
    the cost (the ladder makes it fit). ``compact()`` is always tried.
    """

    reach: Reach


def still_stalled(stall: Stall, tokens: int, budget: int, reach: Reach | None) -> bool:
    """``stall`` holds for a view of ``tokens`` whose plan reaches ``reach`` (None: not measured, the view is past
    the budget)."""
    return tokens <= budget and reach is not None and stall.reach == reach


def slow(pace: Pace, has_backend: bool, limits: Limits, summary_tokens: int, deadline_s: float) -> bool:
    """The summarizer is measured slower than the compaction deadline for a summary of the usual size (from the
    threshold down to the target, and the prompt around it: an estimate, the span is read masked, so usually less):
    its summaries are started early, at ``prefetch_threshold``, as ``prefetch`` does, so the compaction finds them
    written rather than cutting them at the deadline. In both modes: no request waits past ``compaction_deadline_s``
    (blocking included), so the time a slow summary needs is found between requests, while the agent's own model
    works."""
    if not has_backend or not pace.known:
        return False
    span = max(limits.compact_at - limits.target, 0) + summary_tokens
    return pace.allowance_s(span) > deadline_s
