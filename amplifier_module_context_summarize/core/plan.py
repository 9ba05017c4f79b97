"""Where to cut: pure functions over token counts, shared by the manager, the benchmark and the tests.

Groups are described by prefix sums: ``prefix[i]`` is the token count of groups ``[0, i)``, so the
verbatim tail from boundary ``b`` costs ``prefix[-1] - prefix[b]``.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """Token limits for one budget, derived from the config's ratios."""

    budget: int
    compact_at: int
    target: int
    preserve_recent: int

    @classmethod
    def for_budget(
        cls, budget: int, compact_threshold: float, target_usage: float, preserve_recent_ratio: float
    ) -> Limits:
        return cls(
            budget=budget,
            compact_at=int(budget * compact_threshold),
            target=int(budget * target_usage),
            preserve_recent=int(budget * preserve_recent_ratio),
        )


def needs_compaction(view_tokens: int, limits: Limits) -> bool:
    return view_tokens > limits.compact_at


def near_target(limits: Limits) -> int:
    """A view this small leaves nearly all the room the target would: no further rung is worth paying for."""
    return limits.target + max(limits.compact_at - limits.target, 0) // 4


def choose_boundary(
    prefix: Sequence[int],
    current: int,
    last_cuttable: int,
    fixed_tokens: int,
    limits: Limits,
    growth: int = 0,
) -> int:
    """The new boundary: far enough that the view falls to the target, never backwards.

    ``fixed_tokens`` is what the view spends outside the verbatim tail (system messages, the summary
    as it will be after this compaction). The boundary stops where the tail would drop below
    ``preserve_recent`` tokens, unless the view could not otherwise fit the budget at all, and never
    passes ``last_cuttable``. ``growth`` plans for a tail that many tokens longer than today's
    (prefetch predicts the cut the threshold compaction will make).
    """
    # The searches start at ``current``: the same cut (it never goes backwards), and the entries before it are
    # not read (a resumed history counts the groups it summarized only when asked, ``History.count_from``).
    total = prefix[-1] + growth
    room_target = limits.target - fixed_tokens
    room_budget = limits.budget - fixed_tokens
    to_target = bisect_left(prefix, total - room_target, current)
    keep_recent = bisect_right(prefix, total - limits.preserve_recent, current) - 1
    boundary = max(current, min(to_target, keep_recent))
    if total - prefix[boundary] > room_budget:
        boundary = max(boundary, bisect_left(prefix, total - room_budget, boundary))
    return max(current, min(boundary, last_cuttable))


def split_for_tiers(segment_tokens: Sequence[int], allowance: int) -> int:
    """How many of the oldest segment summaries to merge so the rest plus one merged summary can fit.

    Returns 0 when the summaries already fit or there is nothing to merge.
    """
    if sum(segment_tokens) <= allowance or len(segment_tokens) < 2:
        return 0
    return max(2, (len(segment_tokens) + 1) // 2)
