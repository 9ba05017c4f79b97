"""The token budget of one request: an explicit ``token_budget`` argument, else what the provider reports
capped by a configured ``max_tokens`` (a user who sets it means it), else ``max_tokens`` or the default.

What a provider reports is untrusted: a value that is not a plausible token count (a string, a bool, NaN,
infinity, zero, negative, absurdly large) is ignored as if it had not been reported.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import math
from collections.abc import Mapping
from typing import Any

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
    for window, output in await _provider_limits(provider):
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


async def _provider_limits(provider: Any | None) -> list[tuple[Any, Any]]:
    """(context_window, max_output_tokens) pairs a provider reports, most specific first."""
    if provider is None:
        return []
    found = []
    for getter in ("get_model_info", "get_info"):
        try:
            method = getattr(provider, getter, None)
            if not callable(method):
                continue
            info = method()
            if _awaitable(info):
                info = await info
            if info is None:
                continue
            defaults = _info_field(info, "defaults")
            if type(defaults) is not dict and not isinstance(defaults, Mapping):
                defaults = {}
            window = token_count(_info_field(info, "context_window")) or token_count(defaults.get("context_window"))
            output = token_count(_info_field(info, "max_output_tokens")) or token_count(
                defaults.get("max_output_tokens")
            )
        except asyncio.CancelledError:
            if cancelled_by_caller():
                raise
            continue  # the provider cancelled its own work: as if it reported nothing
        except Exception:
            continue
        found.append((window, output))
    return found


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


@functools.lru_cache(maxsize=256)
def _undeclared(kind: type, name: str) -> bool:
    """True when no instance of the pydantic model ``kind`` can have attribute ``name``."""
    fields = getattr(kind, "model_fields", None)
    if not isinstance(fields, dict) or name in fields:
        return False
    if (getattr(kind, "model_config", None) or {}).get("extra") == "allow":
        return False
    return inspect.getattr_static(kind, name, _MISSING) is _MISSING


def _info_field(info: Any, name: str) -> Any:
    """``getattr(info, name, None)``, without pydantic's miss path (two exceptions and a garbage cycle per miss)."""
    return None if _undeclared(type(info), name) else getattr(info, name, None)


def cancelled_by_caller() -> bool:
    """True when the running task is being cancelled (``Task.cancel`` was called and not undone).

    Tells a real cancellation, which must propagate, from a ``CancelledError`` that awaited provider code
    raised by itself, which is only a fault of that provider.
    """
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
