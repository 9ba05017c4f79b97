"""The token budget of one request: an explicit ``token_budget`` argument, else what the provider reports
capped by a configured ``max_tokens`` (a user who sets it means it), else ``max_tokens`` or the default.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any


async def request_budget(
    token_budget: int | None, provider: Any | None, safety_margin: int, cap: int | None, fallback: int
) -> int:
    if token_budget is not None:
        if isinstance(token_budget, bool) or not isinstance(token_budget, int) or token_budget <= 0:
            raise ValueError(f"token_budget must be a positive integer, got {token_budget!r}")
        return token_budget
    budget = await _provider_budget(provider, safety_margin) or fallback
    return min(budget, cap) if cap else budget


async def _provider_budget(provider: Any | None, safety_margin: int) -> int | None:
    for window, output in await _provider_limits(provider):
        if window and output and window - output - safety_margin > 0:
            return int(window - output - safety_margin)
    return None


async def _provider_limits(provider: Any | None) -> list[tuple[Any, Any]]:
    """(context_window, max_output_tokens) pairs a provider reports, most specific first."""
    if provider is None:
        return []
    found = []
    for getter in ("get_model_info", "get_info"):
        method = getattr(provider, getter, None)
        if not callable(method):
            continue
        try:
            info = method()
            if _awaitable(info):
                info = await info
        except Exception:
            continue
        if info is None:
            continue
        defaults = _info_field(info, "defaults") or {}
        window = _info_field(info, "context_window") or defaults.get("context_window")
        output = _info_field(info, "max_output_tokens") or defaults.get("max_output_tokens")
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
