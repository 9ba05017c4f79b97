"""OpenHands event exports (the trajectory a conversation downloads, or its ``events`` list).

A list of events, each ``{"id", "source": "user"|"agent"|"environment", "message", ...}`` with either an
``action`` (``message``, ``run``, ``read``, ``write``, ``edit``, ``browse``, ``think``, ``finish``,
``system`` ...) and its ``args``, or an ``observation`` (``run``, ``read``, ``edit``, ``error`` ...) with
``content``, ``extras`` (``metadata.exit_code`` for commands) and ``cause`` (the id of the action it answers).
``tool_call_metadata.tool_call_id`` links calls and results when present. The list may also sit under
``events``, ``history`` or ``trajectory`` of an object.

OpenHands' own bookkeeping is left out, as its observations (``recall``, ``agent_state_changed``) are: a ``recall``
action ("Retrieving content for: <the request, cut at 50 characters>", in the user's name) and a
``change_agent_state`` action ("Agent state changed to awaiting_user_input") are said by no one to the model, so
they are neither the user's request nor the assistant's progress.
"""

from __future__ import annotations

from typing import Any

from ._common import Builder, Message, as_text

NAME = "openhands"
LABEL = "OpenHands event export (actions and observations)"
_KEYS = ("events", "history", "trajectory")
_BOOKKEEPING = {"recall", "change_agent_state", "null"}
"""Actions the harness records for itself: no one's words, no tool call."""
_NOT_TOOLS = {"message", "system"}


def _events(data: Any) -> list[Any] | None:
    if isinstance(data, dict):
        for key in _KEYS:
            if isinstance(found := data.get(key), list):
                return found
        return None
    return data if isinstance(data, list) else None


def detect(data: Any, kind: str) -> bool:
    events = _events(data) if kind == "json" else data
    if not events:
        return False
    dicts = [e for e in events if isinstance(e, dict)]
    return bool(dicts) and all(("action" in e or "observation" in e) and "role" not in e for e in dicts[:20])


def convert(data: Any, kind: str) -> tuple[list[Message], None]:
    events = _events(data) if kind == "json" else data
    b = Builder()
    call_of: dict[Any, str] = {}
    for e in events or []:
        if not isinstance(e, dict):
            continue
        meta = found if isinstance(found := e.get("tool_call_metadata"), dict) else {}
        if "action" in e:
            action = e.get("action")
            args = given if isinstance(given := e.get("args"), dict) else {}
            if action in _BOOKKEEPING:
                continue
            if action == "system":
                b.messages.append({"role": "system", "content": as_text(args.get("content") or e.get("message"))})
            elif action in _NOT_TOOLS:
                role = "user" if e.get("source") == "user" else "assistant"
                b.text(role, args.get("content") or e.get("message"))
            else:
                b.text("assistant", args.get("thought"))
                call_id = str(meta.get("tool_call_id") or f"oh_{e.get('id', b.new_id())}")
                call_of[e.get("id")] = call_id
                name = meta.get("function_name") or action
                b.tool_call(call_id, name, {k: v for k, v in args.items() if k != "thought"})
        else:
            answers = meta.get("tool_call_id") or call_of.get(e.get("cause"))
            content = e.get("content") if e.get("content") is not None else e.get("message")
            if answers is None:
                if e.get("observation") not in ("agent_state_changed", "null", "recall"):
                    b.text("user", content)
                continue
            extras = more if isinstance(more := e.get("extras"), dict) else {}
            metadata = inner if isinstance(inner := extras.get("metadata"), dict) else {}
            code = metadata.get("exit_code", extras.get("exit_code"))
            code = code if isinstance(code, int) and code != -1 else None
            error = True if e.get("observation") == "error" else None
            b.tool_result(str(answers), content, code, error)
    return b.result(), None
