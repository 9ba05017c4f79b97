"""Last resort for a view that cannot fit: clip texts head and tail in the view copy, never in storage.

Every clip a model sees names a handle to the stored original (``handles``), so the recall tool can fetch what
the clip took out. The work is linear in the text: a message is cut to a char limit before it is counted, and
each limit tried is at most half the one before, so a 50 MB message costs one slice, not a count of 50 MB.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .messages import RESULT_BLOCK_TYPE, Message

CLIP_FLOOR_CHARS = 400
"""Tool outputs of the newest groups are clipped no shorter than this while anything else may still give way."""
MIN_CLIP_CHARS = 48
"""Shortest head and tail (together) a text is clipped to when nothing else can make the view fit."""
CHARS_PER_TOKEN_CAP = 8
"""No text longer than this many characters per token of the budget can fit: the first limit tried."""
REFINE_STEPS = 6
"""Bisection steps between the last limit that did not fit and the first that did (keeps what can be kept)."""

CLIP_MARKER = "\n[... "
"""How a clip marker opens: the head kept is everything before it."""

PREVIEW_OPENS = "[LARGE TOOL OUTPUT SAVED TO A FILE"
"""How a spill preview (``spill/preview.py``) opens. Its second line names the file holding the whole output: a clip
keeps both lines whole (``whole_head``), so the model never reads a path cut short, a file that does not exist."""

Note = Callable[[int | None], str]
"""The note a clip marker carries for one view message: block index (None: the message's own text) -> text,
e.g. ``"; recall with context_recall, handle m5-3fa2b1"``."""


def clip_middle(text: str, limit: int, note: str = "") -> str:
    """``text`` with its middle cut out so that about ``limit`` characters stay, the marker saying how many went
    (and, with ``note``, how to get them back). A spill preview's opening lines stay whole (``whole_head``), past
    ``limit`` if need be: its tail gives way first."""
    if len(text) <= limit:
        return text
    half = max(limit // 2, 1)
    head = whole_head(text)
    if head <= half:
        head = tail = half
    else:
        tail = max(limit - head, 0)
    gone = len(text) - head - tail
    clipped = f"{text[:head]}{CLIP_MARKER}{gone} characters clipped{note} ...]\n{text[len(text) - tail :]}"
    return clipped if len(clipped) < len(text) else text  # just over the limit, the marker would add more


def whole_head(text: str) -> int:
    """Characters at the start of ``text`` a clip keeps whole: a spill preview's first two lines (that it is a
    preview, and the file that holds the whole output); none of any other text."""
    if not text.startswith(PREVIEW_OPENS):
        return 0
    first = text.find("\n")
    second = text.find("\n", first + 1) if first >= 0 else -1
    return len(text) if second < 0 else second


def _clip_value(value: Any, limit: int, note: str) -> Any:
    """``value`` with its long strings clipped; the same object when nothing is."""
    if isinstance(value, str):
        return clip_middle(value, limit, note)
    if isinstance(value, list):
        items = [_clip_block(b, limit, note) for b in value]
        return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
    if isinstance(value, dict):  # structured output, e.g. {"stdout": ..., "code": 0}
        fields = {k: _clip_value(v, limit, note) for k, v in value.items()}
        return fields if any(fields[k] is not value[k] for k in value) else value
    return value


def _clip_block(block: Any, limit: int, note: str) -> Any:
    if isinstance(block, str):
        return clip_middle(block, limit, note)
    if not isinstance(block, dict):
        return block
    if block.get("type") == "text":
        text = block.get("text", "")
        clipped = clip_middle(text, limit, note) if isinstance(text, str) else text
        return block if clipped is text else {**block, "text": clipped}
    if block.get("type") == RESULT_BLOCK_TYPE:
        key = "content" if "content" in block else "output"
        body = block.get(key)
        clipped = _clip_value(body, limit, note)
        return block if clipped is body else {**block, key: clipped}
    return block


def _no_note(block: int | None) -> str:
    return ""


def clip_tool_outputs(
    messages: list[Message],
    budget: int,
    count: Callable[[list[Message]], int],
    notes: list[Note | None] | None = None,
) -> tuple[list[Message], bool]:
    """Halve the character limit on tool outputs until the messages fit ``budget`` or the floor is hit.

    Returns the (possibly new) list and whether anything was clipped. Calls and user text are kept whole.
    ``notes[i]`` is the handle note of message ``i``'s clip markers.
    """
    before = count(messages)
    if before <= budget:
        return messages, False
    longest = max((_longest_text(m) for m in messages), default=0)
    # No output longer than ~8 characters per token of the whole budget can fit: start there, not at half
    # of a 10 MB output (every halving recounts the view).
    limit = max(min(longest // 2, budget * CHARS_PER_TOKEN_CAP), CLIP_FLOOR_CHARS)
    clipped = messages
    while True:
        clipped = [_clip_message(m, limit, _note_of(notes, i)) for i, m in enumerate(messages)]
        after = count(clipped)
        if after <= budget or limit <= CLIP_FLOOR_CHARS:
            return (clipped, True) if after < before else (messages, False)  # markers can outweigh a small clip
        limit = max(limit // 2, CLIP_FLOOR_CHARS)


def _note_of(notes: list[Note | None] | None, index: int) -> Note:
    note = notes[index] if notes is not None and index < len(notes) else None
    return note or _no_note


def _clip_message(message: Message, limit: int, note: Note) -> Message:
    content = message.get("content")
    if message.get("role") == "tool" and not isinstance(content, list):
        clipped = _clip_value(content, limit, note(None)) if content is not None else None
        return message if clipped is content else {**message, "content": clipped}
    if isinstance(content, list) and any(_is_result(b) for b in content):
        blocks = [_clip_block(b, limit, note(i)) if _is_result(b) else b for i, b in enumerate(content)]
        return message if all(a is b for a, b in zip(blocks, content, strict=True)) else {**message, "content": blocks}
    return message


def _is_result(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") == RESULT_BLOCK_TYPE


def clip_text(message: Message, limit: int, note: Note = _no_note) -> Message:
    """The message with its text clipped head and tail to ``limit`` characters (a copy only when it changes)."""
    content = message.get("content")
    if isinstance(content, str) and len(content) > limit:
        return {**message, "content": clip_middle(content, limit, note(None))}
    if isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "text" and len(str(b.get("text", ""))) > limit for b in content
    ):
        return {
            **message,
            "content": [_clip_block(b, limit, note(None)) if _is_text(b) else b for b in content],
        }
    return message


def _is_text(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") == "text"


def clip_within(message: Message, room: int, count: Callable[[Message], int], note: Note = _no_note) -> Message:
    """The message with its text clipped head and tail until ``count`` (the view's own counter) puts it within
    ``room`` tokens: a room is tokens, never characters, so a script of about a token a character (Chinese) gets no
    more of the budget than English does.

    Each try counts a copy of at most ``room × CHARS_PER_TOKEN_CAP`` characters per text, and each limit is below
    the one before (scaled by how far over the count was, then halved), so the work is linear in the room, not in
    the text. Over ``room`` only when ``MIN_CLIP_CHARS`` of text and the marker are.
    """
    limit = min(max(room, 1) * CHARS_PER_TOKEN_CAP, _longest_own_text(message))
    clipped = clip_text(message, limit, note)
    tokens = count(clipped)
    steps = 0
    while tokens > room and limit > MIN_CLIP_CHARS:
        scaled = limit * max(room, 0) // tokens  # below ``limit``: the count was over the room
        limit = max(scaled if steps < REFINE_STEPS else min(scaled, limit // 2), MIN_CLIP_CHARS)
        clipped = clip_text(message, limit, note)
        tokens = count(clipped)
        steps += 1
    return clipped


def _longest_own_text(message: Message) -> int:
    """Length of the longest text ``clip_text`` may shorten in ``message`` (its content, or a text block)."""
    content = message.get("content")
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):
        return max((len(str(b.get("text", ""))) for b in content if _is_text(b)), default=0)
    return 0


def clip_all(message: Message, limit: int, note: Note) -> Message:
    """The message with every text a clip may shorten (its own text and its tool outputs, never a thinking block
    or a call) clipped head and tail to ``limit`` characters; a copy only when something changes."""
    if message.get("role") == "tool" or (
        isinstance(message.get("content"), list) and any(_is_result(b) for b in message["content"])
    ):
        message = _clip_message(message, limit, note)
    return clip_text(message, limit, note)


def fit_texts(
    messages: list[Message],
    clippable: list[bool],
    budget: int,
    count: Callable[[Message], int],
    notes: list[Note | None],
) -> tuple[list[Message], list[int]]:
    """Clip the texts of the ``clippable`` messages to one character limit, as long as the view fits ``budget``.

    Texts under the limit stay whole (the limit is a water level: only what is over it is cut). The limit is
    halved from the largest that could fit until the view fits, then bisected back up so no more is cut than
    needed. Each try counts only clipped copies (at most the limit's characters per text), so the work is linear
    in the input. Returns the messages and the indices of those clipped; over ``budget`` only when not even
    ``MIN_CLIP_CHARS`` per text fits (the unclippable messages alone are too large).
    """
    fixed = sum(count(m) for m, c in zip(messages, clippable, strict=True) if not c)

    # Messages that stay whole at a limit are counted once (memoized by index), the others per attempt.
    whole: dict[int, int] = {}

    def attempt_memo(limit: int) -> tuple[list[Message], int, list[int]]:
        out, total, changed = list(messages), fixed, []
        for i, message in enumerate(messages):
            if not clippable[i]:
                continue
            clipped = clip_all(message, limit, _note_of(notes, i))
            if clipped is not message:
                changed.append(i)
                out[i] = clipped
                total += count(clipped)
            else:
                if i not in whole:
                    whole[i] = count(message)
                total += whole[i]
        return out, total, changed

    longest = max((_longest_text(m) for m, c in zip(messages, clippable, strict=True) if c), default=0)
    limit = max(min(longest, budget * CHARS_PER_TOKEN_CAP), MIN_CLIP_CHARS)
    best = attempt_memo(limit)
    failed = None
    while best[1] > budget and limit > MIN_CLIP_CHARS:
        failed, limit = limit, max(limit // 2, MIN_CLIP_CHARS)
        best = attempt_memo(limit)
    if best[1] > budget or failed is None:
        return best[0], best[2]
    low, high = limit, failed  # low fits, high does not
    for _ in range(REFINE_STEPS):
        if high - low <= max(low // 16, 1):
            break
        middle = (low + high) // 2
        tried = attempt_memo(middle)
        if tried[1] <= budget:
            low, best = middle, tried
        else:
            high = middle
    return best[0], best[2]


def _longest_text(message: Message) -> int:
    """Length of the longest text a clip could shorten in ``message`` (a bound: nested outputs as their repr)."""
    content = message.get("content")
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):
        best = 0
        for block in content:
            if isinstance(block, str):
                best = max(best, len(block))
            elif isinstance(block, dict) and block.get("type") in ("text", RESULT_BLOCK_TYPE):
                body = block.get("text", block.get("content", block.get("output")))
                best = max(best, len(body) if isinstance(body, str) else len(str(body or "")))
        return best
    if content is not None and message.get("role") == "tool":
        return len(str(content))
    return 0
