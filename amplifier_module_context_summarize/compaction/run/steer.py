"""What hooks answer a compaction's events: the ``context:pre_compact`` steer (a focus, or a ``deny``) and the text a
``context:post_compact`` handler injects. Read from amplifier-core's folded ``HookResult`` by attribute, so any
registry's result object (or None) is read the same way."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

FOCUS_MAX_CHARS = 4000
"""A focus longer than this is cut: it rides in every prompt of the compaction."""


@dataclass
class Steer:
    """What hooks answered a ``context:pre_compact``: a focus for the compaction's summaries (``modify`` with
    ``data["focus"]`` or ``data["instructions"]``, beside a caller's own), or a ``deny`` (with its reason)."""

    focus: str | None = None
    denied: bool = False
    reason: str | None = None
    overruled: bool = False
    """Denied while the view did not fit the budget: the compaction went ahead."""

    @classmethod
    def of(cls, result: Any, focus: str | None) -> Steer:
        if result is None:
            return cls(focus)
        data = getattr(result, "data", None)
        asked = [focus] if focus else []
        if isinstance(data, dict):
            asked += [v.strip() for k in ("focus", "instructions") if isinstance(v := data.get(k), str) and v.strip()]
        asked = list(dict.fromkeys(asked))
        text = "\n".join(asked)[:FOCUS_MAX_CHARS] or None
        if getattr(result, "action", None) == "deny":
            reason = getattr(result, "reason", None)
            return cls(text, True, reason[:200] if isinstance(reason, str) else None)
        return cls(text)


def injected_text(result: Any) -> str | None:
    """The text ``inject_context`` results of a ``context:post_compact`` put back (several handlers': joined)."""
    if result is None or getattr(result, "action", None) != "inject_context":
        return None
    many = getattr(result, "context_injections", None) or []
    texts = [getattr(i, "content", None) for i in many] or [getattr(result, "context_injection", None)]
    joined = "\n\n".join(t for t in texts if isinstance(t, str) and t.strip())
    return joined or None
