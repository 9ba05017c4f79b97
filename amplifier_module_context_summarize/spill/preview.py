"""The text a spilled output shows in the view: a head and a tail, and words the model cannot read as the whole.

Agents skip reading persisted output and carry on as if they had seen it (claude-code#17407), so the preview
says, before any of the output, how much of it is *not* shown, where the rest is and how to read it, and ends by
saying again which lines were left out. Line numbers are ``str.splitlines`` lines, the numbering Amplifier's
``read_file`` uses for ``offset`` and ``limit``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.clip import PREVIEW_OPENS

HEAD_CHARS = 1_200
"""Most characters of the output's first lines the preview shows."""
TAIL_CHARS = 600
"""Most characters of its last lines."""
HEAD_LINES = 30
TAIL_LINES = 15
LINE_CHARS = 400
"""A longer line is shown in part, saying how long it is."""
READ_FILE_LINE_CHARS = 2_000
"""Amplifier's ``read_file`` cuts lines past this many characters (tool-filesystem ``max_line_length``)."""
MARKER = PREVIEW_OPENS
"""How every preview starts (tests and the recall tool's description name it). Its second line names the file: a
clip of the view keeps the two whole (``core.clip.whole_head``)."""


@dataclass(frozen=True)
class Spilled:
    """What the preview tells about one stored output."""

    path: str
    handle: str
    tokens: int
    recall_tool: str | None


def render(text: str, spilled: Spilled) -> str:
    """The preview of ``text`` (an output over the threshold): work linear in its size."""
    lines = text.splitlines() or [""]
    total = len(lines)
    head = _take(lines, range(total), HEAD_LINES, HEAD_CHARS)
    tail = _take(lines, range(total - 1, head - 1, -1), TAIL_LINES, TAIL_CHARS)
    first_tail = total - tail
    hidden = first_tail - head
    shown_chars = sum(min(len(lines[i]), LINE_CHARS) for i in (*range(head), *range(first_tail, total)))
    longest = max(len(line) for line in lines)
    parts = [
        f"{MARKER} — you have NOT seen all of it]",
        f"File: {spilled.path}",
        f"Only a preview is shown below: {_span(head, first_tail, total)} "
        f"({shown_chars:,} of {len(text):,} characters). "
        + (
            f"The other {hidden:,} line{'s' if hidden != 1 else ''} (lines {head + 1:,}–{first_tail:,}) are NOT in "
            "your context: do not guess or assume what they say."
            if hidden > 0
            else "Long lines are shown only in part: do not guess or assume what the rest of them says."
        ),
        f"Full output: {len(text):,} characters, {total:,} line{'s' if total != 1 else ''}, "
        f"about {spilled.tokens:,} tokens.",
        _how_to_read(spilled, longest),
    ]
    body = [f"--- lines 1–{head:,} ---", *(_shown(line) for line in lines[:head])]
    if hidden > 0:
        plural = "s" if hidden != 1 else ""
        body.append(f"--- {hidden:,} line{plural} NOT shown (lines {head + 1:,}–{first_tail:,}) ---")
    if tail:
        body += [f"--- lines {first_tail + 1:,}–{total:,} ---", *(_shown(line) for line in lines[first_tail:])]
    left_out = f"lines {head + 1:,}–{first_tail:,} were NOT shown" if hidden > 0 else "long lines were cut"
    body.append(f"[end of preview: {left_out}; read the file before relying on them]")
    return "\n".join(parts + body)


def _take(lines: list[str], order: range, max_lines: int, max_chars: int) -> int:
    """How many lines, taken in ``order``, fit the preview's room (at least one, when there is one)."""
    taken = used = 0
    for i in order:
        size = min(len(lines[i]), LINE_CHARS)
        if taken >= max_lines or (taken and used + size > max_chars):
            break
        taken, used = taken + 1, used + size
    return taken


def _span(head: int, first_tail: int, total: int) -> str:
    if first_tail >= total:
        return f"lines 1–{head:,} of {total:,}"
    return f"lines 1–{head:,} and {first_tail + 1:,}–{total:,} of {total:,}"


def _shown(line: str) -> str:
    if len(line) <= LINE_CHARS:
        return line
    return f"{line[:LINE_CHARS]}… [this line goes on: {len(line):,} characters in all]"


def _how_to_read(spilled: Spilled, longest: int) -> str:
    read = f'read_file with file_path "{spilled.path}" and offset/limit (line numbers, from 1)'
    if spilled.recall_tool:
        read += (
            f', or {spilled.recall_tool} with operation "fetch" and handle "{spilled.handle}" (pages by character '
            'offset) or operation "search" with a query'
        )
    else:
        read += f" (handle {spilled.handle})"
    wide = ""
    if longest > READ_FILE_LINE_CHARS:
        wide = f" Some lines are longer than read_file shows ({READ_FILE_LINE_CHARS:,} characters)"
        wide += f": {spilled.recall_tool} fetch gives them whole." if spilled.recall_tool else "."
    return f"Before you answer, quote, count or act on anything in this output, read the part you need: {read}.{wide}"
