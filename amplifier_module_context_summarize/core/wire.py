"""What the provider counts beyond the messages we return: tool schemas, and how its tokenizer differs from ours.

The orchestrator sends the view together with the mounted tools' schemas and whatever hooks inject for one
request, and the provider counts all of it with its own tokenizer. The budget only holds on the wire if the
view is planned against ``budget / factor - tool_tokens``, where ``factor`` is learned from the usage the
provider reports for the requests built from our views.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from typing import Any

DEFAULT_FACTOR = 1.1
"""Reserve before any usage report is seen: covers a tokenizer ~10% hungrier than ours and small injections."""
FACTOR_FLOOR, FACTOR_CEILING = 0.8, 1.5
PLAUSIBLE_RATIO = (0.5, 2.0)
"""A reported/estimated ratio outside this range belongs to another request (a background call), not ours."""
SAMPLES = 8


class UsageCalibration:
    """Learns ``provider tokens / our tokens`` from the usage of the requests our views became.

    Each served view leaves one expectation; the first ``llm:response`` after it is taken as that
    request's report. The factor is the largest recent ratio, so one cheap request cannot loosen it.
    """

    def __init__(self, initial: float = DEFAULT_FACTOR, enabled: bool = True) -> None:
        self.initial = initial
        self.enabled = enabled
        self._expected: int | None = None
        self._ratios: deque[float] = deque(maxlen=SAMPLES)
        self._quiet = 0

    @property
    def factor(self) -> float:
        if not self.enabled or not self._ratios:
            return self.initial
        return min(max(max(self._ratios), FACTOR_FLOOR), FACTOR_CEILING)

    @property
    def samples(self) -> int:
        return len(self._ratios)

    def expect(self, estimated_tokens: int) -> None:
        """A view of ``estimated_tokens`` (tool schemas included) is about to be sent."""
        self._expected = estimated_tokens if estimated_tokens > 0 else None

    @contextlib.contextmanager
    def quiet(self) -> Iterator[None]:
        """Usage reported while our own summarizer call is in flight is not the agent's request."""
        self._quiet += 1
        try:
            yield
        finally:
            self._quiet -= 1

    def observe(self, payload: Any) -> float | None:
        """Read an ``llm:response`` payload; return the ratio it taught, if any."""
        if self._quiet or self._expected is None:
            return None
        reported = reported_input_tokens(payload)
        if reported is None:
            return None
        ratio = reported / self._expected
        self._expected = None
        if not PLAUSIBLE_RATIO[0] <= ratio <= PLAUSIBLE_RATIO[1]:
            return None
        self._ratios.append(ratio)
        return ratio


def reported_input_tokens(payload: Any) -> int | None:
    """Prompt tokens from an ``llm:response`` payload (or a ``Usage``), cache writes included.

    provider-anthropic reports ``input_tokens`` with cache reads folded in but cache writes apart;
    provider-openai's ``input_tokens`` already holds everything.
    """
    usage = payload.get("usage") if isinstance(payload, Mapping) else getattr(payload, "usage", None)
    if usage is None:
        return None

    def field(name: str) -> Any:
        return usage.get(name) if isinstance(usage, Mapping) else getattr(usage, name, None)

    total = 0
    for name in ("input_tokens", "cache_write_tokens"):
        value = field(name)
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
            if name == "input_tokens":
                return None
            continue
        total += int(value)
    return total or None


class ToolSchemaMeter:
    """Tokens of the tool schemas the orchestrator sends with every request, re-counted only when tools change."""

    def __init__(self, tools: Callable[[], Any], count_text: Callable[[str], int]) -> None:
        self._tools = tools
        self._count_text = count_text
        self._memo: tuple[tuple[tuple[str, int], ...], int] = ((), 0)

    def tokens(self) -> int:
        try:
            mounted = self._tools() or {}
            items = list(mounted.items()) if isinstance(mounted, Mapping) else []
            key = tuple((str(name), id(tool)) for name, tool in items)
            if key != self._memo[0]:
                self._memo = (key, sum(self._count_text(tool_schema_text(name, tool)) for name, tool in items))
        except Exception:  # a coordinator or tool fault costs the estimate, never the request
            pass
        return self._memo[1]


def tool_schema_text(name: str, tool: Any) -> str:
    """A tool as the loops turn it into a ``ToolSpec``: name, description and input schema."""
    spec = {
        "name": getattr(tool, "name", None) or name,
        "description": getattr(tool, "description", "") or "",
        "input_schema": getattr(tool, "input_schema", None) or {},
    }
    try:
        return json.dumps(spec, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return f"{spec['name']} {spec['description']}"


RESPONSE_CHAIN_KEY = "openai:response_id"


def without_response_chain(message: dict[str, Any]) -> dict[str, Any]:
    """``message`` without provider-openai's response id (the message itself when it has none).

    provider-openai sends ``previous_response_id`` for the newest assistant message carrying one; the
    server then prepends its stored history, so a compacted view would not be what the model sees.
    """
    metadata = message.get("metadata")
    if not isinstance(metadata, dict) or RESPONSE_CHAIN_KEY not in metadata:
        return message
    copy = dict(message)
    rest = {k: v for k, v in metadata.items() if k != RESPONSE_CHAIN_KEY}
    if rest:
        copy["metadata"] = rest
    else:
        copy.pop("metadata")
    return copy
