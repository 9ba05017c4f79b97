"""Last resort for a view that cannot fit: clip tool outputs in the view copy, never in storage."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .messages import RESULT_BLOCK_TYPE, Message

CLIP_FLOOR_CHARS = 400


def clip_middle(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = max(limit // 2, 1)
    clipped = f"{text[:half]}\n[... {len(text) - 2 * half} characters clipped ...]\n{text[-half:]}"
    return clipped if len(clipped) < len(text) else text  # just over the limit, the marker would add more


def _clip_value(value: Any, limit: int) -> Any:
    if isinstance(value, str):
        return clip_middle(value, limit)
    if isinstance(value, list):
        return [_clip_block(b, limit) for b in value]
    if isinstance(value, dict):  # structured output, e.g. {"stdout": ..., "code": 0}
        return {k: _clip_value(v, limit) for k, v in value.items()}
    return value


def _clip_block(block: Any, limit: int) -> Any:
    if isinstance(block, str):
        return clip_middle(block, limit)
    if not isinstance(block, dict):
        return block
    if block.get("type") == "text":
        return {**block, "text": clip_middle(str(block.get("text", "")), limit)}
    if block.get("type") == RESULT_BLOCK_TYPE:
        key = "content" if "content" in block else "output"
        return {**block, key: _clip_value(block.get(key), limit)}
    return block


def clip_tool_outputs(
    messages: list[Message], budget: int, count: Callable[[list[Message]], int]
) -> tuple[list[Message], bool]:
    """Halve the character limit on tool outputs until the messages fit ``budget`` or the floor is hit.

    Returns the (possibly new) list and whether anything was clipped. Calls and user text are kept whole.
    """
    before = count(messages)
    if before <= budget:
        return messages, False
    longest = max((len(str(m.get("content") or "")) for m in messages), default=0)
    # No output longer than ~8 characters per token of the whole budget can fit: start there, not at half
    # of a 10 MB output (every halving recounts the view).
    limit = max(min(longest // 2, budget * 8), CLIP_FLOOR_CHARS)
    clipped = messages
    while True:
        clipped = [_clip_message(m, limit) for m in messages]
        after = count(clipped)
        if after <= budget or limit <= CLIP_FLOOR_CHARS:
            return (clipped, True) if after < before else (messages, False)  # markers can outweigh a small clip
        limit = max(limit // 2, CLIP_FLOOR_CHARS)


def _clip_message(message: Message, limit: int) -> Message:
    content = message.get("content")
    if message.get("role") == "tool":
        return {**message, "content": _clip_value(content, limit)}
    if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == RESULT_BLOCK_TYPE for b in content):
        return {**message, "content": [_clip_block(b, limit) if _is_result(b) else b for b in content]}
    return message


def _is_result(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") == RESULT_BLOCK_TYPE


def clip_text(message: Message, limit: int) -> Message:
    """The message with its text clipped head and tail to ``limit`` characters (a copy only when it changes)."""
    content = message.get("content")
    if isinstance(content, str) and len(content) > limit:
        return {**message, "content": clip_middle(content, limit)}
    if isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "text" and len(str(b.get("text", ""))) > limit for b in content
    ):
        return {**message, "content": [_clip_block(b, limit) if isinstance(b, dict) else b for b in content]}
    return message
