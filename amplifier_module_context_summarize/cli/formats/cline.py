"""Cline task histories (``tasks/<id>/api_conversation_history.json`` and ``ui_messages.json``).

* ``api_conversation_history.json``: the Anthropic messages Cline sent, ``[{"role", "content": [blocks]}]``;
  blocks may carry bookkeeping keys. Tool calls are native ``tool_use`` / ``tool_result`` blocks or, in older
  versions, XML tags in the assistant text (``<read_file><path>…</path></read_file>``, ``<execute_command>``);
  those are kept as text.
* ``ui_messages.json``: what the task view shows, ``[{"ts", "type": "say"|"ask", "say"|"ask": kind, "text"}]``.
  ``task`` / ``user_feedback`` become user turns, ``text`` / ``completion_result`` assistant turns,
  ``command`` (ask) a shell call and the ``command_output`` that follows its result; ``tool`` asks (a JSON
  text naming ``tool`` and ``path``) become calls of that tool. ``api_req_*`` bookkeeping is dropped.
"""

from __future__ import annotations

import json
from typing import Any

from ._common import Builder, Message, as_text

NAME = "cline"
LABEL = "Cline task history (api_conversation_history.json, ui_messages.json)"
_BLOCK_KEYS = {
    "type",
    "text",
    "id",
    "name",
    "input",
    "tool_use_id",
    "content",
    "is_error",
    "source",
    "thinking",
    "signature",
    "data",
}


def detect(data: Any, kind: str) -> bool:
    if kind != "json" or not isinstance(data, list) or not data:
        return False
    first = [e for e in data[:20] if isinstance(e, dict)]
    if first and all("ts" in e and e.get("type") in ("say", "ask") for e in first):
        return True
    return (
        bool(first)
        and all(e.get("role") in ("user", "assistant") and isinstance(e.get("content"), list | str) for e in first)
        and any(set(e) - {"role", "content"} for e in first)
    )


def convert(data: Any, kind: str) -> tuple[list[Message], None]:
    if all("ts" in e for e in data if isinstance(e, dict)) and any("say" in e or "ask" in e for e in data):
        return _ui(data), None
    out = []
    for e in data:
        if not isinstance(e, dict):
            continue
        content = e.get("content")
        if isinstance(content, list):
            content = [{k: v for k, v in b.items() if k in _BLOCK_KEYS} if isinstance(b, dict) else b for b in content]
        out.append({"role": e["role"], "content": content})
    return out, None


def _ui(data: list[Any]) -> list[Message]:
    b = Builder()
    pending: str | None = None
    for e in data:
        if not isinstance(e, dict):
            continue
        kind = e.get("say") or e.get("ask")
        text = e.get("text") or ""
        if kind in ("task", "user_feedback"):
            b.text("user", text)
        elif kind in ("text", "completion_result", "reasoning"):
            b.text("assistant", text)
        elif kind == "command":
            pending = b.new_id()
            b.tool_call(pending, "execute_command", {"command": text})
        elif kind == "command_output" and pending:
            b.tool_result(pending, text)
            pending = None
        elif kind == "tool":
            try:
                args = json.loads(text)
            except ValueError:
                args = {"text": text}
            call_id = b.new_id()
            name = args.pop("tool", "tool") if isinstance(args, dict) else "tool"
            content = args.pop("content", "") if isinstance(args, dict) else ""
            b.tool_call(call_id, name, args)
            b.tool_result(call_id, as_text(content) or "ok")
    return b.result()
