"""What makes a request view valid: one small rule per invariant, each able to check a view and to say
where a compaction may cut. Compaction, the tests and callers (``check_view``) share this registry.

* ``ToolPairing`` — every tool result answers a call of the assistant message that opened its run, and
  every call is answered before the next message that is not a result. Cuts fall between closed groups
  only; the newest group may still wait for results, so it is never cut.
* ``SystemFirst`` — system messages lead the view.
* ``OpensWithUser`` — the first message after the system ones is a user's (Anthropic rejects an
  assistant opening). A cut always leaves a summary or marker, which is a user message.
* ``LatestRequestKept`` — the newest user request is in the view verbatim (in the tail, or pinned).
* ``WithinBudget`` — the view's tokens are within the budget.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from .clip import CLIP_MARKER
from .history import History
from .messages import Message, call_ids, message_text, result_ids


@dataclass(frozen=True)
class ViewContext:
    """What some rules need beyond the view; a rule whose input is missing does not judge."""

    budget: int | None = None
    count: Callable[[list[Message]], int] | None = None
    latest_request: Message | None = None


class ViewRule(Protocol):
    name: str

    def problems(self, view: list[Message], context: ViewContext) -> list[str]: ...

    def allows_cut(self, history: History, boundary: int) -> bool:
        """May groups ``[0, boundary)`` leave the verbatim tail?"""
        ...


class ToolPairing:
    name = "tool_pairing"

    def problems(self, view: list[Message], context: ViewContext) -> list[str]:
        problems: list[str] = []
        open_calls: set[str] = set()
        for i, message in enumerate(view):
            calls = call_ids(message)
            answers = result_ids(message)
            if answers and not calls:
                problems += [
                    f"message {i}: result for {a!r} has no open call before it" for a in answers if a not in open_calls
                ]
                open_calls.difference_update(answers)
                continue
            if open_calls:
                problems.append(f"message {i}: calls {sorted(open_calls)} have no result")
            open_calls = set(calls)
        if open_calls:
            problems.append(f"end of view: calls {sorted(open_calls)} have no result")
        return problems

    def allows_cut(self, history: History, boundary: int) -> bool:
        return 0 <= boundary <= history.last_cuttable


class SystemFirst:
    name = "system_first"

    def problems(self, view: list[Message], context: ViewContext) -> list[str]:
        leading = next((i for i, m in enumerate(view) if m.get("role") != "system"), len(view))
        return [
            f"message {i}: system message after the conversation began"
            for i, m in enumerate(view)
            if i > leading and m.get("role") == "system"
        ]

    def allows_cut(self, history: History, boundary: int) -> bool:
        return True  # system messages are kept apart from the groups a cut removes


class OpensWithUser:
    name = "opens_with_user"

    def problems(self, view: list[Message], context: ViewContext) -> list[str]:
        first = next((m for m in view if m.get("role") != "system"), None)
        if first is None or first.get("role") == "user":
            return []
        return [f"the conversation opens with a {first.get('role')!r} message, not a user's"]

    def allows_cut(self, history: History, boundary: int) -> bool:
        return True  # a cut leaves a [CONTEXT SUMMARY] or [CONTEXT TRUNCATED] user message in front


class LatestRequestKept:
    name = "latest_request_kept"

    def problems(self, view: list[Message], context: ViewContext) -> list[str]:
        request = context.latest_request
        if request is None:
            return []
        wanted = message_text(request)
        if any(m is request or m == request for m in view):
            return []
        # A pinned request may be clipped head and tail, and carries no tool results; one larger than the budget is
        # clipped head and tail with a handle, however short its head.
        head = wanted[:200]
        for m in view:
            if m.get("role") != "user":
                continue
            text = message_text(m)
            if head and text.startswith(head):
                return []
            shown, marker, _ = text.partition(CLIP_MARKER)
            if marker and shown and wanted.startswith(shown):
                return []
        return ["the latest user request is not in the view"]

    def allows_cut(self, history: History, boundary: int) -> bool:
        return True  # a request cut out of the tail is pinned after the summary


class WithinBudget:
    name = "within_budget"

    def problems(self, view: list[Message], context: ViewContext) -> list[str]:
        if context.budget is None or context.count is None:
            return []
        tokens = context.count(view)
        return [f"the view is {tokens} tokens, over the budget of {context.budget}"] if tokens > context.budget else []

    def allows_cut(self, history: History, boundary: int) -> bool:
        return True  # how far a cut must go is the plan's job (``plan.choose_boundary``)


RULES: tuple[ViewRule, ...] = (ToolPairing(), SystemFirst(), OpensWithUser(), LatestRequestKept(), WithinBudget())


def check_view(
    view: list[Message],
    *,
    budget: int | None = None,
    count: Callable[[list[Message]], int] | None = None,
    latest_request: Message | None = None,
    rules: tuple[ViewRule, ...] = RULES,
) -> list[str]:
    """Every way ``view`` breaks a rule, as short sentences naming the rule; empty when it is valid."""
    context = ViewContext(budget, count, latest_request)
    return [f"{rule.name}: {problem}" for rule in rules for problem in rule.problems(view, context)]


def last_allowed_cut(history: History, rules: tuple[ViewRule, ...] = RULES) -> int:
    """The furthest boundary every rule allows."""
    boundary = history.last_cuttable
    while boundary > 0 and not all(rule.allows_cut(history, boundary) for rule in rules):
        boundary -= 1
    return boundary
