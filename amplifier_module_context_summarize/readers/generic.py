"""Chat messages anywhere in a JSON document: ``{"messages": [...]}``, ``{"data": {"conversation": [...]}}``,
a pretty-printed array, JSONL of such objects.

The first list (breadth first, a list under a key named ``messages`` preferred) whose items are objects with a
``role`` is the session. Roles other APIs use are mapped (``model``, ``ai``, ``bot`` -> assistant; ``human`` ->
user) and ``exit`` entries dropped. Exports that hold content blocks next to a standard ``tool_calls`` array
(Codex trajectory exports: a call rendered as a block without an ``id`` and as a ``tool_calls`` entry; results
with ``tool_call_id``) have each call once, with its id. A tool message whose content is a list of text-carrying
blocks of any type (``tool_output``, ``output_text`` ...) is read as the text they hold, and a Codex output envelope
or ``exec_command`` header as the output and its exit code; a user message that is Codex's own context
(``<environment_context>``, AGENTS.md) is a ``developer`` message. Everything else is kept as it is and checked
like our own files.
"""

from __future__ import annotations

from typing import Any, TypeGuard

from . import codex
from ._common import Message, as_text

NAME = "messages"
LABEL = 'chat messages in any JSON layout ({"messages": [...]} and kin)'
_ROLES = {"model": "assistant", "ai": "assistant", "bot": "assistant", "human": "user"}
_MAX_NODES = 10_000


def _is_chat(value: Any) -> TypeGuard[list[Any]]:
    if not isinstance(value, list) or not value:
        return False
    dicts = [v for v in value[:50] if isinstance(v, dict)]
    return len(dicts) == len(value[:50]) and all(isinstance(d.get("role"), str) for d in dicts)


def find(data: Any) -> list[Any] | None:
    queue, seen, fallback = [data], 0, None
    while queue and seen < _MAX_NODES:
        node = queue.pop(0)
        seen += 1
        if isinstance(node, dict):
            for key, value in node.items():
                if _is_chat(value):
                    if key == "messages":
                        return value
                    fallback = fallback or value
                elif isinstance(value, dict | list):
                    queue.append(value)
        elif isinstance(node, list):
            if _is_chat(node):
                return node
            queue.extend(v for v in node[:1000] if isinstance(v, dict | list))
    return fallback


def _renamed_roles(items: list[Any]) -> bool:
    return any(isinstance(i, dict) and (i.get("role") in _ROLES or i.get("role") == "exit") for i in items)


def detect(data: Any, kind: str) -> bool:
    """A list of messages nested in a document; a bare list (our own shape) only when it uses other roles, so a
    file of ours with a bad message keeps the error that names its line."""
    if kind == "jsonl":
        if not data or not all(isinstance(r, dict) for r in data):
            return False
        if all(isinstance(r.get("role"), str) for r in data):
            return _renamed_roles(data)
        return all(isinstance(r.get("role"), str) or find(r) for r in data)
    if kind != "json" or find(data) is None:
        return False
    return not isinstance(data, list) or not _is_chat(data) or _renamed_roles(data)


def _message(m: dict[str, Any]) -> Message | None:
    role = m.get("role")
    if role == "exit":
        return None
    m = dict(m)
    m["role"] = _ROLES.get(role, role) if isinstance(role, str) else role
    calls = m.get("tool_calls")
    if isinstance(calls, list):
        m["tool_calls"] = [_with_id(c, ("call_id", "tool_call_id")) if isinstance(c, dict) else c for c in calls]
    if m["role"] == "tool" and _only_text(m.get("content")):
        m["content"] = as_text(m["content"])
    if isinstance(m.get("content"), list):
        m["content"] = _blocks(m["content"], m["tool_calls"] if isinstance(calls, list) else [], m.get("tool_call_id"))
    if m["role"] == "tool" and isinstance(m.get("content"), str) and isinstance(m.get("tool_call_id"), str):
        m["content"] = _unwrapped(m["tool_call_id"], m["content"])
    if m["role"] == "user" and codex.is_harness_note(as_text(m.get("content"))):
        m["role"] = "developer"
    return m


def _only_text(content: Any) -> bool:
    """A list of blocks that each carry only text (a string ``text`` beside a ``type``, whatever the type is called:
    ``tool_output``, ``output_text``): read as that text, not as the JSON of blocks no provider knows."""
    return (
        isinstance(content, list)
        and bool(content)
        and all(isinstance(b, dict) and isinstance(b.get("text"), str) and set(b) <= {"type", "text"} for b in content)
    )


def _unwrapped(call_id: str, content: str) -> Any:
    """A Codex output kept as its JSON envelope (``{"output": "...", "metadata": {"exit_code": 1}}``) or under its
    ``exec_command`` header as the text it holds and its recorded exit code, so it reads (and masks) as the output it
    was, not as one escaped line or a header of bookkeeping."""
    if content.lstrip().startswith("{"):
        text, code = codex.output_and_exit(content)
    else:
        headed = codex.exec_output(content)
        if headed is None:
            return content
        text, code = headed
    if text == content:
        return content
    if code is None:
        return text
    block = {"type": "tool_result", "tool_call_id": call_id, "output": {"output": text, "exit_code": code}}
    return [{**block, "is_error": code != 0}]


def _with_id(item: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """``item`` with an ``id`` taken from the first of ``keys`` it has, when it has none."""
    if item.get("id"):
        return item
    for key in keys:
        if isinstance(item.get(key), str) and item[key]:
            return {**item, "id": item[key]}
    return item


def _blocks(content: list[Any], calls: list[Any], result_for: Any) -> list[Any]:
    """Content blocks next to an OpenAI ``tool_calls`` array (exports that render each call twice, as a block
    without an ``id`` and as a ``tool_calls`` entry), and result blocks answering the message's ``tool_call_id``.

    A call block gets its id from ``call_id`` / ``tool_call_id``; one with none is dropped when the message has a
    ``tool_calls`` array (which carries it) and kept as text otherwise, so no call goes unanswered. A result
    block without an id takes the ``tool_call_id`` of its message.
    """
    listed = {c.get("id") for c in calls if isinstance(c, dict)}
    out: list[Any] = []
    for block in content:
        if not isinstance(block, dict):
            out.append(block)
            continue
        kind = block.get("type")
        if kind in ("tool_call", "tool_use", "function_call") and not block.get("id"):
            block = _with_id(block, ("call_id", "tool_call_id", "tool_use_id"))
            if block.get("id") in listed:
                continue  # the tool_calls entry of the same id is this call
            if not block.get("id"):
                if calls:
                    continue  # the tool_calls array carries this call; providers see it once
                args = block.get("arguments", block.get("input", ""))
                out.append({"type": "text", "text": f"[tool call {block.get('name') or 'tool'}] {args}"})
                continue
            if kind == "function_call":
                block = {
                    "type": "tool_call",
                    "id": block["id"],
                    "name": block.get("name"),
                    "input": block.get("arguments"),
                }
        elif kind in ("tool_result", "function_call_output") and not (
            block.get("tool_call_id") or block.get("tool_use_id")
        ):
            ident = block.get("call_id") or result_for
            if not isinstance(ident, str) or not ident:
                out.append({"type": "text", "text": str(block.get("output", block.get("content", "")))})
                continue
            block = {**block, "type": "tool_result", "tool_call_id": ident}
        out.append(block)
    return out


def convert(data: Any, kind: str) -> tuple[list[Message], None]:
    if kind == "jsonl":
        items: list[Any] = []
        for r in data:
            items.extend([r] if isinstance(r.get("role"), str) else find(r) or [])
    else:
        items = find(data) or []
    return [m for m in (_message(i) for i in items) if m is not None], None
