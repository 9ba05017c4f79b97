"""The token budget of one request: an explicit ``token_budget`` argument, else what the provider reports
capped by a configured ``max_tokens`` (a user who sets it means it), else ``max_tokens`` or the default.

What a provider reports is untrusted: a value that is not a plausible token count (a string, a bool, NaN,
infinity, zero, negative, absurdly large) is ignored as if it had not been reported.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import math
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from .messages import Message, scrub_text
from .plan import Limits
from .tokens import TokenCounter
from .wire import ToolSchemaMeter, UsageCalibration

logger = logging.getLogger(__name__)

MAX_REPORTED_TOKENS = 10**12
"""Far beyond any context window (the benchmark's never-compacting window is 10**10); a larger report is
garbage, and float arithmetic on the budget would start to overflow or lose whole tokens."""


def budget_problem(value: int) -> str | None:
    """Why a token budget given on a command line is unusable, or None: float arithmetic on it must stay exact."""
    if not 0 < value <= MAX_REPORTED_TOKENS:
        return f"must be a whole number of tokens from 1 to {MAX_REPORTED_TOKENS:,}"
    return None


async def request_budget(
    token_budget: int | None, provider: Any | None, safety_margin: int, cap: int | None, fallback: int
) -> int:
    if token_budget is not None:
        if isinstance(token_budget, bool) or not isinstance(token_budget, int) or token_budget <= 0:
            raise ValueError(f"token_budget must be a positive integer, got {token_budget!r}")
        if token_budget > MAX_REPORTED_TOKENS:  # float arithmetic on it would overflow on every request
            raise ValueError(f"token_budget must be at most {MAX_REPORTED_TOKENS:,}, got a larger integer")
        return token_budget
    budget = await _provider_budget(provider, safety_margin) or fallback
    return min(budget, cap) if cap else budget


OUTPUT_SHARE = 0.25
"""Share of a reported window reserved for the reply when the provider's figures leave no room for input: no
``max_output_tokens`` reported, or one as large as the window (local-model providers report 32,768 / 32,768)."""


async def _provider_budget(provider: Any | None, safety_margin: int) -> int | None:
    """The budget the first report naming a window leaves (``get_model_info``, the more specific, then
    ``get_info``); a later getter is not asked once one has answered. A getter that fails reports nothing."""
    if provider is None:
        return None
    for getter in ("get_model_info", "get_info"):
        try:
            method = getattr(provider, getter, None)
            if not callable(method):
                continue
            info = method()
            if _awaitable(info):
                info = await info
            window, output = _reported_limits(info)
        except asyncio.CancelledError:
            if cancelled_by_caller():
                raise
            continue  # the provider cancelled its own work: as if it reported nothing
        except Exception:
            continue
        if window:
            return window_budget(window, output, safety_margin)
    return None


def window_budget(window: int, output: int | None, safety_margin: int) -> int:
    """The input budget a reported ``window`` leaves: never more than the window itself.

    ``window − output − safety_margin`` when that is positive. Otherwise the reply is reserved
    ``min(output, OUTPUT_SHARE × window)`` (the share alone without an ``output``), and the margin is taken
    from what is left only while at least half of that stays, so a tiny window keeps some input budget.
    """
    if output and window - output - safety_margin > 0:
        return window - output - safety_margin
    reserve = max(int(window * OUTPUT_SHARE), 1)
    if output:
        reserve = min(output, reserve)
    left = window - reserve
    return max(left - min(safety_margin, left // 2), 1)


def token_count(value: Any) -> int | None:
    """``value`` as a positive whole number of tokens, or None when it is not one."""
    if type(value) is int:  # the usual report, checked first: this runs on every request
        return value if 0 < value <= MAX_REPORTED_TOKENS else None
    if value is None or isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return None
    return int(value) if 0 < value <= MAX_REPORTED_TOKENS else None


def _reported_limits(info: Any) -> tuple[int | None, int | None]:
    """(context_window, max_output_tokens) a provider's info reports, at its top level or under ``defaults``."""
    if info is None:
        return None, None
    window_field, output_field, defaults_field = _fields_of(type(info))
    window = token_count(getattr(info, "context_window", None)) if window_field else None
    output = token_count(getattr(info, "max_output_tokens", None)) if output_field else None
    if window and output:
        return window, output
    defaults = getattr(info, "defaults", None) if defaults_field else None
    if type(defaults) is not dict and not isinstance(defaults, Mapping):
        return window, output
    window = window or token_count(defaults.get("context_window"))
    return window, output or token_count(defaults.get("max_output_tokens"))


# Both helpers below run on every request: they skip work whose answer depends only on the type.
_NEVER_AWAITABLE: set[type] = set()
_MISSING = object()


def _awaitable(value: Any) -> bool:
    """``inspect.isawaitable`` with its ABC check remembered per type (generators vary per object)."""
    kind = type(value)
    if kind in _NEVER_AWAITABLE:
        return False
    if inspect.isawaitable(value):
        return True
    if not inspect.isgenerator(value):
        _NEVER_AWAITABLE.add(kind)
    return False


_FIELDS_OF: dict[type, tuple[bool, bool, bool]] = {}
_FIELDS_OF_MAX = 256


def _fields_of(kind: type) -> tuple[bool, bool, bool]:
    """Whether an info of type ``kind`` may have ``context_window``, ``max_output_tokens`` and ``defaults``:
    a pydantic model answers a field it does not declare through its miss path (two exceptions and a garbage
    cycle per miss), so undeclared fields are not asked for. Cached per type (a dict: ``functools.lru_cache``'s
    stub takes only ``Hashable`` arguments, which mypy does not grant a ``type``)."""
    known = _FIELDS_OF.get(kind)
    if known is None:
        if len(_FIELDS_OF) >= _FIELDS_OF_MAX:
            _FIELDS_OF.clear()
        names = ("context_window", "max_output_tokens", "defaults")
        window, output, defaults = (not _undeclared(kind, name) for name in names)
        known = _FIELDS_OF[kind] = (window, output, defaults)
    return known


def _undeclared(kind: type, name: str) -> bool:
    """True when no instance of the pydantic model ``kind`` can have attribute ``name``."""
    fields = getattr(kind, "model_fields", None)
    if not isinstance(fields, dict) or name in fields:
        return False
    if (getattr(kind, "model_config", None) or {}).get("extra") == "allow":
        return False
    return inspect.getattr_static(kind, name, _MISSING) is _MISSING


def cancelled_by_caller() -> bool:
    """True when the running task is being cancelled (``Task.cancel`` was called and not undone).

    Tells a real cancellation, which must propagate, from a ``CancelledError`` that awaited provider code
    raised by itself, which is only a fault of that provider.
    """
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


SystemPromptFactory = Callable[[], Awaitable[str]]
MIN_PLAN_SHARE = 4
"""Tool schemas and calibration never shrink the room for messages below 1/4 of the budget."""
RATIO_SPREAD = 0.02
"""How far one request's tokenizer ratio may stray above the calibrated one (seen: 2.5% between requests of one
real session, tool output against prose), so the cap holds on the wire for the request that strays."""


class RequestBudget:
    """The room one request's messages have, in our tokens, and what else the request sends in it.

    The provider's budget (``request_budget``) less the tool schemas (``tools``), over the factor calibrated
    from the provider's reported usage (``calibration``); the system prompt a factory renders for every
    request (kept with its count); and the plan's limits for that room (the last ones kept, as the budget
    rarely changes between requests).
    """

    def __init__(
        self,
        counter: TokenCounter,
        tools: ToolSchemaMeter | None,
        fallback: int,
        compact_threshold: float,
        target_usage: float,
        preserve_recent_ratio: float,
    ) -> None:
        self.counter, self.tools = counter, tools
        self.calibration = UsageCalibration(initial=1.0, enabled=False)
        """Off until ``SummarizingContextManager.listen_to_usage`` wires it to the provider's reports."""
        self.shape = (compact_threshold, target_usage, preserve_recent_ratio)
        self.last = self.wire = fallback
        """The last room planned (our tokens) and the last budget the provider gave (its tokens)."""
        self.tool_tokens = 0
        self.system_prompt: tuple[str, Message, int] | None = None
        """The rendered system prompt: text, message, tokens (None: the stored system messages lead the view)."""
        self._limits: Limits | None = None

    def plan(self, wire_budget: int) -> int:
        """Room for the messages, in our tokens: the provider's budget less tool schemas, over the calibration."""
        self.wire = wire_budget
        self.tool_tokens = self.tools.tokens() if self.tools is not None else 0
        spread = 1 + RATIO_SPREAD if self.calibration.enabled else 1  # measured against the provider's counts
        room = int(wire_budget / (self.calibration.factor * spread)) - self.tool_tokens
        self.last = max(room, wire_budget // MIN_PLAN_SHARE, 1)
        return self.last

    def limits(self, budget: int) -> Limits:
        """Limits for ``budget``; the last one is kept, as the budget rarely changes between requests."""
        memo = self._limits
        if memo is None or memo.budget != budget:
            memo = self._limits = Limits.for_budget(budget, *self.shape)
        return memo

    async def render_system_prompt(self, factory: SystemPromptFactory | None) -> str | None:
        if factory is None:
            return None
        try:
            text = await factory()
        except Exception as exc:  # a failing factory keeps the last prompt it rendered
            logger.warning("system prompt factory failed (%s); keeping the previous prompt", type(exc).__name__)
            return self.system_prompt[0] if self.system_prompt else None
        return text if isinstance(text, str) else None

    def use_system_prompt(self, text: str | None) -> None:
        """Lead the view with the rendered ``text`` (None: the stored system messages), any lone surrogate as
        U+FFFD: a factory's text is not the history, whose surrogates the request scrubs, yet it is sent too."""
        if text is None:
            self.system_prompt = None
        elif self.system_prompt is None or self.system_prompt[0] != text:
            message: Message = {"role": "system", "content": scrub_text(text)}
            self.system_prompt = (text, message, self.counter.count_message(message))
