"""SWE-agent (``*.traj``) and mini-swe-agent (``*.traj.json``) trajectories.

* mini-swe-agent: ``{"info", "messages", "trajectory_format": "mini-swe-agent-1.x"}``; ``messages`` is OpenAI
  chat (v2 with ``tool_calls``, v1 with the bash command in the reply text). The trailing ``role: "exit"``
  entry and the ``extra`` / ``provider_specific_fields`` / ``function_call`` keys are dropped.
* SWE-agent: ``{"trajectory": [{"action", "observation", "response", "thought", ...}], "history": [...],
  "info"}``. ``history`` is the chat the model saw (``role``, ``content``, ``tool_calls`` / ``tool_call_ids``
  in function-calling mode); when it is missing, or holds no ``tool_calls`` (SWE-agent 0.x keeps the command in
  the reply text), the steps of ``trajectory`` are replayed instead after the opening system and task messages,
  each action as a call and its observation as the result. SWE-agent's own file commands become editor calls:
  ``open F`` views F, ``create F`` creates it, ``edit N:M`` / ``insert`` change the file the step's ``state``
  (``{"open_file": ...}``) says is open; anything else is a ``bash`` call.
"""

from __future__ import annotations

import json
from typing import Any

from ._common import Builder, Message, as_text, loads_or

NAME = "swe-agent"
LABEL = "SWE-agent *.traj and mini-swe-agent *.traj.json trajectories"


def detect(data: Any, kind: str) -> bool:
    if kind != "json" or not isinstance(data, dict):
        return False
    if str(data.get("trajectory_format", "")).startswith("mini-swe-agent"):
        return True
    if isinstance(data.get("messages"), list) and isinstance(data.get("info"), dict):
        return True
    steps = data.get("trajectory")
    return isinstance(steps, list) and any(isinstance(s, dict) and "action" in s and "observation" in s for s in steps)


def convert(data: Any, kind: str) -> tuple[list[Message], None]:
    if isinstance(data.get("messages"), list):
        return mini_swe(data["messages"]), None
    history = data.get("history")
    if isinstance(history, list) and history and all(isinstance(m, dict) and "role" in m for m in history):
        if any(m.get("tool_calls") for m in history) or not data.get("trajectory"):
            return _history(history), None
        opening = []
        for m in history:  # the system prompt, demonstrations and the task, up to the first reply
            if m.get("role") == "assistant":
                break
            opening.append(m)
        return _history(opening) + _steps(data["trajectory"]), None
    return _steps(data["trajectory"]), None


def mini_swe(messages: list[Any]) -> list[Message]:
    out: list[Message] = []
    for raw in messages:
        role = raw.get("role")
        if role == "exit":
            continue
        msg: Message = {"role": role, "content": raw.get("content")}
        if raw.get("reasoning_content") is not None:
            msg["reasoning_content"] = raw["reasoning_content"]
        if raw.get("tool_calls"):
            calls = []
            for call in raw["tool_calls"]:
                fn = call.get("function") or {}
                args = fn.get("arguments", "")
                if not isinstance(args, str):
                    args = json.dumps(args, ensure_ascii=False)
                calls.append(
                    {
                        "id": call["id"],
                        "type": "function",
                        "function": {"name": fn.get("name", ""), "arguments": args},
                    }
                )
            msg["tool_calls"] = calls
        if raw.get("tool_call_id"):
            msg["tool_call_id"] = raw["tool_call_id"]
        out.append(msg)
    return out


def _history(history: list[dict[str, Any]]) -> list[Message]:
    b = Builder()
    for m in history:
        role = m.get("role")
        if role == "system":
            b.messages.append({"role": "system", "content": as_text(m.get("content"))})
        elif role == "assistant" and m.get("tool_calls"):
            b.text("assistant", m.get("content"))
            for call in m["tool_calls"]:
                fn = call.get("function") or {}
                b.tool_call(str(call.get("id") or b.new_id()), fn.get("name"), fn.get("arguments"))
        elif role == "tool":
            ids = m.get("tool_call_ids") or [m.get("tool_call_id")]
            for call_id in ids:
                b.tool_result(str(call_id), m.get("content"))
        elif role in ("user", "assistant"):
            b.text(role, m.get("content"))
    return b.result()


def _steps(steps: list[Any]) -> list[Message]:
    b = Builder()
    for step in steps:
        if not isinstance(step, dict):
            continue
        thought = step.get("thought") or step.get("response") or ""
        b.text("assistant", thought)
        action = step.get("action")
        if action:
            call_id = b.new_id()
            name, args = _action_call(action, step.get("state"))
            b.tool_call(call_id, name, args)
            b.tool_result(call_id, step.get("observation"))
    return b.result()


_EDITOR = {"open": "view", "create": "create", "edit": "str_replace", "insert": "insert"}


def _action_call(action: str, state: Any) -> tuple[str, dict[str, Any]]:
    """The tool call one SWE-agent action is: its own file commands as editor calls on their file, else bash."""
    words = action.strip().split(None, 2)
    command = _EDITOR.get(words[0]) if words else None
    if command is None:
        return "bash", {"command": action}
    opened = words[1].strip("\"'") if len(words) > 1 else ""
    path = opened if command in ("view", "create") else _open_file(state)  # edit / insert: the open file
    if not path:
        return "bash", {"command": action}
    return words[0], {"command": command, "path": path, "text": action}


def _open_file(state: Any) -> str:
    """The file SWE-agent's recorded ``state`` (a JSON string or object) says is open, or ''."""
    if isinstance(state, str):
        state = loads_or(state, None)
    found = state.get("open_file") if isinstance(state, dict) else None
    return found if isinstance(found, str) and found not in ("", "n/a") else ""
