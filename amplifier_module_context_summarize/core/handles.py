"""Stable handles to stored messages and tool outputs, for placeholders, summaries and the recall tool.

A handle names a stored message by its index (and, for a tool output inside a message, the block's
index) plus a short checksum of what it names: ``m42-3f9a1c`` or ``m42.1-07be55``. It is derived from
the history alone, so a resumed session gives the same handles; a handle from another session or a
forged one fails the checksum and is refused with a clear error.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .messages import Message, canonical_json, content_hash

CHECKSUM_CHARS = 6
_HANDLE = re.compile(rf"^m(\d{{1,9}})(?:\.(\d{{1,6}}))?-([0-9a-f]{{{CHECKSUM_CHARS}}})$")


class HandleError(ValueError):
    """A handle that is malformed or does not name anything in this session's history."""


@dataclass(frozen=True)
class Handle:
    message: int
    block: int | None = None

    def text(self, messages: Sequence[Message]) -> str:
        target = _target(messages, self)
        index = f"{self.message}" if self.block is None else f"{self.message}.{self.block}"
        return f"m{index}-{_checksum(target)}"


def handle_for(messages: Sequence[Message], message: int, block: int | None = None) -> str:
    """The handle of message ``message`` (or of its content block ``block``)."""
    return Handle(message, block).text(messages)


def resolve(messages: Sequence[Message], text: str) -> tuple[Handle, Any]:
    """The handle and what it names (a message, or one content block), or ``HandleError`` saying why not."""
    match = _HANDLE.match(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise HandleError(f"{text!r} is not a handle (handles look like m42-3f9a1c or m42.1-07be55)")
    handle = Handle(int(match.group(1)), int(match.group(2)) if match.group(2) is not None else None)
    try:
        target = _target(messages, handle)
    except HandleError:
        raise HandleError(f"handle {text} does not belong to this session's history") from None
    if _checksum(target) != match.group(3):
        raise HandleError(f"handle {text} does not belong to this session's history (checksum mismatch)")
    return handle, target


def _target(messages: Sequence[Message], handle: Handle) -> Any:
    if not 0 <= handle.message < len(messages):
        raise HandleError(f"no message {handle.message}")
    message = messages[handle.message]
    if handle.block is None:
        return message
    content = message.get("content")
    if not isinstance(content, list) or not 0 <= handle.block < len(content):
        raise HandleError(f"message {handle.message} has no block {handle.block}")
    return content[handle.block]


def _checksum(target: Any) -> str:
    return content_hash(canonical_json(target))[:CHECKSUM_CHARS]
