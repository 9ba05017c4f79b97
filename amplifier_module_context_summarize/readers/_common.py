"""Helpers the session readers share: building OpenAI-shape messages, describing what a file holds, and finding
``<tag>…</tag>`` pairs in recorded text in linear time."""

from __future__ import annotations

import json
import re
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..core.messages import MAX_NESTING, nesting_problem

Message = dict[str, Any]


def dumps_args(args: Any) -> str:
    """Tool-call arguments as the JSON string OpenAI-shape calls carry."""
    if isinstance(args, str):
        return args
    return json.dumps(args if args is not None else {}, ensure_ascii=False)


def as_text(value: Any) -> str:
    """Readable text for a tool output or message body of any JSON shape."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for item in value:
            if isinstance(item, dict) and isinstance(item.get("text"), str):
                parts.append(item["text"])
            else:
                parts.append(as_text(item))
        return "\n".join(p for p in parts if p)
    if isinstance(value, dict):
        for key in ("text", "output", "content"):
            if isinstance(text := value.get(key), str) and len(value) <= 3:
                return text
    return json.dumps(value, ensure_ascii=False)


def call(call_id: str, name: object, args: Any) -> dict[str, Any]:
    """``name``: as the recording holds it (missing or not text in some: then ``tool``)."""
    return {
        "id": str(call_id),
        "type": "function",
        "function": {"name": str(name or "tool"), "arguments": dumps_args(args)},
    }


class Builder:
    """Accumulates OpenAI-shape messages, folding consecutive tool calls into one assistant message."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self._count = 0

    def new_id(self, prefix: str = "call") -> str:
        self._count += 1
        return f"{prefix}_{self._count}"

    def text(self, role: str, text: Any, sep: str = "\n\n") -> None:
        text = as_text(text)
        if not text.strip():
            return
        last = self.messages[-1] if self.messages else None
        if last is not None and last["role"] == role and role in ("user", "assistant") and not last.get("tool_calls"):
            last["content"] = f"{last['content']}{sep}{text}" if last.get("content") else text
            return
        self.messages.append({"role": role, "content": text})

    def tool_call(self, call_id: str, name: object, args: Any) -> None:
        last = self.messages[-1] if self.messages else None
        if last is not None and last["role"] == "assistant":
            last.setdefault("tool_calls", []).append(call(call_id, name, args))
            return
        self.messages.append({"role": "assistant", "content": None, "tool_calls": [call(call_id, name, args)]})

    def tool_result(self, call_id: str, output: Any, exit_code: int | None = None, error: bool | None = None) -> None:
        """A result; a recorded exit code or error flag is kept so the working set shows the recorded outcome."""
        text = as_text(output)
        if exit_code is None and error is None:
            self.messages.append({"role": "tool", "tool_call_id": str(call_id), "content": text})
            return
        body: Any = text if exit_code is None else {"output": text, "exit_code": exit_code}
        failed = bool(error) if error is not None else exit_code != 0
        block = {"type": "tool_result", "tool_call_id": str(call_id), "output": body, "is_error": failed}
        self.messages.append({"role": "tool", "tool_call_id": str(call_id), "content": [block]})

    def result(self) -> list[Message]:
        """The messages, with results whose call is missing dropped (a provider would refuse them)."""
        called: set[str] = set()
        out = []
        for m in self.messages:
            for c in m.get("tool_calls") or []:
                called.add(c["id"])
            if m["role"] == "tool" and m["tool_call_id"] not in called:
                continue
            out.append(m)
        return out


def describe(data: Any, kind: str) -> str:
    """A short phrase naming what a file holds, for the error a file of no known format gets."""
    if kind == "text":
        first = str(data).strip().splitlines()[0] if str(data).strip() else ""
        return f"text that is not JSON (first line {first[:60]!r})"
    if kind == "jsonl":
        record = data[0] if data else None
        return f"JSONL whose first record is {_shape(record)}"
    return f"a JSON document that is {_shape(data)}"


def _shape(value: Any) -> str:
    if isinstance(value, dict):
        keys = ", ".join(repr(k) for k in list(value)[:6])
        return f"an object with keys {keys}" + (", ..." if len(value) > 6 else "")
    if isinstance(value, list):
        return f"a list of {len(value)} items" + (f", the first {_shape(value[0])}" if value else "")
    return f"a {type(value).__name__}"


def parse_json(text: str) -> Any:
    """``json.loads``, with the failures it has beyond ``JSONDecodeError`` turned into ``ValueError``s.

    Nesting deeper than Python's stack raises ``RecursionError``, an integer of more than 4,300 digits a
    bare ``ValueError``: both are invalid input here, reported like a syntax error.
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise ValueError("invalid JSON (nested too deeply)") from None
    except ValueError as exc:
        raise ValueError(f"invalid JSON ({str(exc).split(':')[0]})") from None


def loads_or(text: str, default: Any) -> Any:
    """The value JSON ``text`` holds, or ``default`` when it is not JSON a reader can use: the one way a reader
    decodes JSON found inside a recorded string (a tool output, call arguments, a saved state).

    Text nested past Python's stack (``RecursionError``), an integer of more than 4,300 digits, or a value nested
    deeper than ``MAX_NESTING`` (which walking it to build messages would run into) is text, not a value: the
    reader keeps it as written instead of crashing.
    """
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return default
    return default if nesting_problem(value, MAX_NESTING) else value


_TAG = re.compile(r"<(/?)([A-Za-z_][\w-]*)>")


@dataclass(frozen=True)
class Tagged:
    """One ``<name>…</name>`` pair: where it starts and ends, and where its inner text does."""

    name: str
    start: int
    inner_start: int
    inner_end: int
    end: int

    def inner(self, text: str) -> str:
        return text[self.inner_start : self.inner_end]


def tagged(text: str, accept: Callable[[str], bool]) -> list[Tagged]:
    """The ``<name>…</name>`` pairs of ``text`` whose name ``accept`` takes, leftmost first, never overlapping, each
    closed by the nearest close of its name: what the lazy regex ``<(name)>(.*?)</\\1>`` finds, in one pass. That
    regex tries every later open again when no close follows, so a recording with thousands of unclosed tags took
    seconds per message (quadratic)."""
    opens: list[tuple[int, int, str]] = []
    closes: dict[str, list[int]] = {}
    for m in _TAG.finditer(text):
        name = m.group(2)
        if accept(name):
            if m.group(1):
                closes.setdefault(name, []).append(m.start())
            else:
                opens.append((m.start(), m.end(), name))
    found: list[Tagged] = []
    at = 0
    for start, inner, name in opens:
        ends = closes.get(name)
        if start < at or not ends:
            continue
        i = bisect_left(ends, inner)
        if i < len(ends):
            found.append(Tagged(name, start, inner, ends[i], ends[i] + len(name) + 3))
            at = found[-1].end
    return found


def without(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with the (ordered, disjoint) ``spans`` cut out."""
    kept, at = [], 0
    for start, end in spans:
        kept.append(text[at:start])
        at = end
    kept.append(text[at:])
    return "".join(kept)
