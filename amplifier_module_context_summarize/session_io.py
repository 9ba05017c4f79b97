"""Reading recorded sessions: a JSON array or JSONL of messages, or an Amplifier ``transcript.jsonl``.

Errors name the file and the line so a user can fix the input.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .messages import validate_message

TRANSCRIPT_EXTRAS = ("timestamp", "turn")
"""Bookkeeping keys the Amplifier CLI adds to transcript lines; providers never see them."""


class SessionFileError(ValueError):
    def __init__(self, path: Path, line: int | None, problem: str) -> None:
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {problem}")


def load_messages(path: str | Path) -> list[dict[str, Any]]:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SessionFileError(path, None, f"cannot read the file ({exc.__class__.__name__})") from None
    if text.lstrip().startswith("["):
        return _from_array(path, text)
    return _from_lines(path, text)


def _from_array(path: Path, text: str) -> list[dict[str, Any]]:
    try:
        items = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SessionFileError(path, exc.lineno, f"invalid JSON ({exc.msg})") from None
    lines = _line_numbers(text, len(items))
    return [_checked(path, lines[i], item) for i, item in enumerate(items)]


def _from_lines(path: Path, text: str) -> list[dict[str, Any]]:
    messages = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SessionFileError(path, number, f"invalid JSON ({exc.msg})") from None
        messages.append(_checked(path, number, item))
    if not messages:
        raise SessionFileError(path, None, "no messages in the file")
    return messages


def _checked(path: Path, line: int | None, item: Any) -> dict[str, Any]:
    if isinstance(item, dict):
        item = {k: v for k, v in item.items() if k not in TRANSCRIPT_EXTRAS}
    try:
        validate_message(item)
    except ValueError as exc:
        raise SessionFileError(path, line, str(exc)) from None
    return item


def _line_numbers(text: str, count: int) -> list[int | None]:
    """Best-effort line of each top-level array element (one element per line is the common layout)."""
    decoder = json.JSONDecoder()
    position = text.index("[") + 1
    found: list[int | None] = []
    for _ in range(count):
        while position < len(text) and text[position] in " \t\r\n,":
            position += 1
        found.append(text.count("\n", 0, position) + 1)
        _, position = decoder.raw_decode(text, position)
    return found
