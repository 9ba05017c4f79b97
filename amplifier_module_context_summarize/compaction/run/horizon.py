"""A cold resume's first plan: whether the bounds lent for the older groups' counts may stand
(``History.count_from``)."""

from __future__ import annotations

from ...core.history import History
from ...core.invariants import last_allowed_cut
from ...core.plan import Limits
from ...summarizer.span import MIN_SPAN_TOKENS
from ..view.masking import Masks

HORIZON_BUDGETS = 4
"""A history resumed with nothing stored is counted exactly back from its newest group as far as this many times
the budget; the older groups' counts are upper bounds until the first request is answered (``History.count_from``).
"""


def first_plan_horizon(history: History, masks: Masks | None, limits: Limits) -> None:
    """Keep the bounds a cold resume lent only when the groups counted exactly decide the first plan alone.

    Every cut, masking reach and fit the plan works out is a comparison of the view's newest groups against
    the budget; bounds on the older groups leave each such answer as exact counts would give it when the
    newest groups counted, at their smallest (masked as far as any plan may mask: to the last allowed cut, since a
    summary or a truncation that would take groups whole masks past the newest outputs kept verbatim), already hold
    more than twice the budget and a span worth a summary: the cut then falls among them and the span summarized
    reaches them. Otherwise every group is counted exactly before the plan reads any. (Measured only as far as
    ``Masks.limit``, a huge output among the newest groups that the plan masks anyway made the bounded first view
    summarize where the exact one only masked: the feature matrix's cold resume found it.)"""
    start, newest = history.bounded, history.last_cuttable
    shown = history.prefix[-1] - history.prefix[start]
    if masks is not None:
        reach = max(last_allowed_cut(history), start)
        shown -= history.prefix[reach] - history.prefix[start] - masks.tokens(start, reach)
    if start > newest or shown <= 2 * limits.budget + MIN_SPAN_TOKENS:
        history.stop_estimating()
