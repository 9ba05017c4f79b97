"""Aider chat histories (``.aider.chat.history.md``).

Markdown: each run starts with ``# aider chat started at <time>``; the user's input lines start with ``#### ``;
aider's own tool output (edits applied, commands run, their output) is quoted with ``> ``; everything else is
the model's reply. User lines become user turns, replies assistant turns, and aider's quoted output a user turn
prefixed ``[aider]`` (it is what the model was shown next).
"""

from __future__ import annotations

from typing import Any

from ._common import Builder, Message

NAME = "aider"
LABEL = "Aider chat history (.aider.chat.history.md)"


def detect(data: Any, kind: str) -> bool:
    return kind == "text" and any(
        line.startswith("# aider chat started at") for line in str(data).lstrip().splitlines()[:5]
    )


def convert(text: Any, kind: str) -> tuple[list[Message], None]:
    b = Builder()
    block: list[str] = []
    block_kind = ""

    def flush() -> None:
        body = "\n".join(block).strip()
        if body:
            if block_kind == "user":
                b.text("user", body, "\n")
            elif block_kind == "tool":
                b.text("user", "[aider] " + body)
            else:
                b.text("assistant", body)
        block.clear()

    for line in str(text).splitlines():
        if line.startswith("# aider chat started at"):
            kind_now, body = "skip", ""
        elif line.startswith("#### "):
            kind_now, body = "user", line[5:]
        elif line.startswith(">"):
            kind_now, body = "tool", line[2:] if line.startswith("> ") else line[1:]
        elif not line.strip():
            block.append("")
            continue
        else:
            kind_now, body = "assistant", line
        if kind_now != block_kind:
            flush()
            block_kind = kind_now
        if kind_now != "skip":
            block.append(body)
    flush()
    return b.result(), None
