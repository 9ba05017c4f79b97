"""What a pin keeps, decided once per message as it is stored, and the form a pinned message takes in a view.

A pin keeps what it names: a pattern in the assistant's or the user's words pins those words; a pattern in a
tool call's arguments (``Read({"file_path": "AGENTS.md"})``) pins the output that call got, since the rules read
are what the user wants kept, not the line asking to read them; a pattern in a tool output pins that output;
``metadata.pin`` pins everything its message carries (its words, the outputs its calls get, the results it holds).

A pinned tool output is restated verbatim in a user message of its own right after the summary, headed by the
call that produced it, rather than shown as a call and its result: the call's group is summarized, and a pair
shown apart from its group would have to give way, be clipped and be counted as one unit with two messages,
where a restated output is one message that gives way, is clipped with its handle and is reported dropped like
any other pin, and can never leave a call unanswered on the wire.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass

from .messages import (
    RESULT_BLOCK_TYPE,
    Message,
    arguments_text,
    block_text,
    call_ids,
    message_calls,
    message_text,
    strip_tool_blocks,
)

PINNED_OUTPUT_HEADER = "[PINNED TOOL OUTPUT] {call} returned:"
CALL_SHOWN_CHARS = 200
"""A restated output's header shows this much of its call's arguments (the call may have written a whole file)."""


@dataclass(frozen=True, slots=True)
class PinChoice:
    """The extra pins before a cut: ``kept`` (stored order), and every candidate at or before ``newest_dropped``
    given way (-1: none). ``signature`` names the dropped set without listing it, so a request compares it in
    constant time; ``dropped`` lists it (once per change, for ``context:pins_dropped``)."""

    kept: tuple[int, ...]
    kept_tokens: int
    newest_dropped: int
    signature: tuple[object, ...]

    def dropped(self, marked: list[int]) -> list[int]:
        """The candidates given way, in stored order (``marked``: ``History.marked`` of the history chosen in)."""
        if self.newest_dropped < 0:
            return []
        last = self.newest_dropped
        recent, skip = self.signature[1], self.signature[2]
        assert isinstance(recent, tuple) and isinstance(skip, tuple)
        marked = marked[: bisect_right(marked, last)]
        return sorted(set(marked).union(recent).difference(skip))


@dataclass(frozen=True, slots=True)
class PinMark:
    """What a pin keeps of one stored message: its words, and the tool outputs (by call id) it carries."""

    words: bool = True
    results: tuple[str, ...] = ()


class PinRule:
    """Which parts of a message ``metadata.pin`` and ``pin_patterns`` (literal substrings) mark to keep."""

    def __init__(self, patterns: tuple[str, ...]) -> None:
        self.patterns = patterns

    def matches(self, text: str) -> bool:
        return any(p in text for p in self.patterns)

    @staticmethod
    def flagged(message: Message) -> bool:
        metadata = message.get("metadata")
        return isinstance(metadata, dict) and metadata.get("pin") is True

    def words(self, message: Message, flagged: bool) -> bool:
        """Whether the message's own words (without its calls and results) are pinned."""
        if message.get("role") == "tool" or not (flagged or self.patterns):
            return False  # nothing could pin them: no need to take the message apart (every append asks)
        words = strip_tool_blocks(message, keep_calls=set(), keep_results=set())
        if words is None:
            return False
        return flagged or (bool(self.patterns) and self.matches(message_text(words)))

    def calls(self, message: Message, flagged: bool) -> list[str]:
        """Ids of the calls whose outputs are pinned: every call of a flagged message, else those whose arguments
        hold a pattern."""
        if message.get("role") != "assistant":
            return []
        if flagged:
            return call_ids(message)
        if not self.patterns:
            return []
        return [i for i, _, args in message_calls(message) if i and self.matches(arguments_text(args))]


def results_of(message: Message) -> list[tuple[str, str]]:
    """``(call id, output text)`` of each tool result a message carries (a ``tool`` message, ``tool_result`` blocks)."""
    found: list[tuple[str, str]] = []
    if message.get("role") == "tool" and isinstance(message.get("tool_call_id"), str):
        found.append((message["tool_call_id"], message_text(message)))
    content = message.get("content")
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("type") == RESULT_BLOCK_TYPE:
            ref = block.get("tool_use_id") or block.get("tool_call_id")
            if isinstance(ref, str) and ref:
                found.append((ref, block_text(block)))
    return found


def restated(message: Message, mark: PinMark, call_of: Callable[[str], Message | None]) -> Message | None:
    """The user message a pinned message shows as after the summary: its words, then each pinned output verbatim
    under the call that produced it (``call_of``: call id -> the message that made it, if known). None: nothing to
    show."""
    words = strip_tool_blocks(message, keep_calls=set(), keep_results=set()) if mark.words else None
    if not mark.results:
        return words
    parts = [message_text(words)] if words is not None else []
    outputs = dict(results_of(message))
    for call_id in mark.results:
        header = PINNED_OUTPUT_HEADER.format(call=_call_shown(call_id, call_of(call_id)))
        parts.append(f"{header}\n{outputs[call_id]}")
    return {"role": "user", "content": "\n\n".join(p for p in parts if p)}


def _call_shown(call_id: str, caller: Message | None) -> str:
    for found, name, args in message_calls(caller) if caller is not None else []:
        if found == call_id:
            text = arguments_text(args)
            if len(text) > CALL_SHOWN_CHARS:
                text = text[:CALL_SHOWN_CHARS] + "…"
            return f"{name}({text})"
    return f"call {call_id}"
