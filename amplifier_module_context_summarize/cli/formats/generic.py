"""Chat messages anywhere in a JSON document: ``{"messages": [...]}``, ``{"data": {"conversation": [...]}}``,
a pretty-printed array, JSONL of such objects.

The first list (breadth first, a list under a key named ``messages`` preferred) whose items are objects with a
``role`` is the session. Roles other APIs use are mapped (``model``, ``ai``, ``bot`` -> assistant; ``human`` ->
user) and ``exit`` entries dropped; everything else is kept as it is and checked like our own files.
"""

from __future__ import annotations

from typing import Any

from ._common import Message

NAME = "messages"
LABEL = 'chat messages in any JSON layout ({"messages": [...]} and kin)'
_ROLES = {"model": "assistant", "ai": "assistant", "bot": "assistant", "human": "user"}
_MAX_NODES = 10_000


def _is_chat(value: Any) -> bool:
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
    m["role"] = _ROLES.get(role, role)
    return m


def convert(data: Any, kind: str) -> tuple[list[Message], None]:
    if kind == "jsonl":
        items: list[Any] = []
        for r in data:
            items.extend([r] if isinstance(r.get("role"), str) else find(r) or [])
    else:
        items = find(data) or []
    return [m for m in (_message(i) for i in items) if m is not None], None
