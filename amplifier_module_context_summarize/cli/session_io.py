"""Reading recorded sessions: a JSON array or JSONL of messages, or an Amplifier ``transcript.jsonl``.

Errors name the file and the line so a user can fix the input. A file is untrusted input: only regular
files are read, at most ``MAX_FILE_BYTES`` of them, and JSON that Python cannot parse safely (nesting
deeper than the stack, numbers with thousands of digits) is an error like any other invalid JSON.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from ..core.messages import scrub_text, validate_message
from .formats import Loaded, ReadFailed, convert_text, formats_read
from .formats._common import parse_json

MAX_FILE_BYTES = 256 * 2**20
"""Largest session (or corpus) file read; a larger one is refused rather than read into memory whole."""
_CHUNK = 2**20

TRANSCRIPT_EXTRAS = ("timestamp", "turn")
"""Bookkeeping keys the Amplifier CLI adds to transcript lines; providers never see them."""


class SessionFileError(ValueError):
    def __init__(self, path: Path, line: int | None, problem: str) -> None:
        where = f"{path}:{line}" if line is not None else str(path)
        self.line, self.problem = line, problem
        super().__init__(scrub_text(f"{where}: {problem}"))  # a path need not be UTF-8; the message must be


class UnreadableFile(ValueError):
    """Why a file was not read; the message names no path, the caller's error adds it."""


def read_text(path: str | Path, limit: int | None = None) -> str:
    """The UTF-8 text of the regular file ``path``, refusing anything else and anything over ``limit`` bytes
    (``MAX_FILE_BYTES`` by default).

    Opened without blocking and checked on the open descriptor, so a FIFO (which would wait for a writer)
    or a device (``/dev/zero`` never ends) is refused before a byte is read.
    """
    limit = MAX_FILE_BYTES if limit is None else limit
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise UnreadableFile(f"cannot read the file ({exc.__class__.__name__})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnreadableFile("not a regular file (a directory, FIFO or device); refusing to read it")
        chunks: list[bytes] = []
        total = 0
        while total <= limit:
            chunk = os.read(fd, min(_CHUNK, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > limit:
            raise UnreadableFile(f"larger than {limit:,} bytes; refusing to read it")
    except OSError as exc:
        raise UnreadableFile(f"cannot read the file ({exc.__class__.__name__})") from None
    finally:
        os.close(fd)
    try:
        return b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnreadableFile(f"not UTF-8 text (invalid byte at offset {exc.start})") from None


def load_messages(path: str | Path) -> list[dict[str, Any]]:
    """Messages of a session file in our own format or any agent recording ``formats`` reads."""
    return load_session(path).messages


def load_session(path: str | Path) -> Loaded:
    """Messages of a recorded session of any format read; ``SessionFileError`` (one line) otherwise."""
    path = Path(path)
    try:
        text = read_text(path)
    except UnreadableFile as exc:
        raise SessionFileError(path, None, str(exc)) from None
    try:
        return Loaded(native_messages(path, text), "native")
    except SessionFileError as native:
        try:
            found = convert_text(text)
        except ReadFailed as exc:
            raise SessionFileError(path, None, str(exc)) from None
        if isinstance(found, str):
            problem = f"{native.problem}; nor is it an agent recording that is read: saw {found}."
            problem += f" Read: {formats_read()}"
            raise SessionFileError(path, native.line, problem) from None
        name, messages, reference = found
        if not messages:
            raise SessionFileError(path, None, f"read as {name} but it holds no messages") from None
        checked = []
        for i, m in enumerate(messages):
            try:
                checked.append(_checked(path, None, m))
            except SessionFileError as exc:
                raise SessionFileError(path, None, f"read as {name}, message {i}: {exc}") from None
        return Loaded(checked, name, reference)


def native_messages(path: Path, text: str) -> list[dict[str, Any]]:
    """Messages of a file in our own format (a JSON array or JSONL of messages)."""
    if text.lstrip().startswith("["):
        return _from_array(path, text)
    return _from_lines(path, text)


def _from_array(path: Path, text: str) -> list[dict[str, Any]]:
    try:
        items = parse_json(text)
    except json.JSONDecodeError as exc:
        raise SessionFileError(path, exc.lineno, f"invalid JSON ({exc.msg})") from None
    except ValueError as exc:
        raise SessionFileError(path, None, str(exc)) from None
    lines = _line_numbers(text, len(items))
    return [_checked(path, lines[i], item) for i, item in enumerate(items)]


def _from_lines(path: Path, text: str) -> list[dict[str, Any]]:
    messages = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = parse_json(line)
        except json.JSONDecodeError as exc:
            raise SessionFileError(path, number, f"invalid JSON ({exc.msg})") from None
        except ValueError as exc:
            raise SessionFileError(path, number, str(exc)) from None
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
    line, counted = 1, 0  # newlines are counted once, from where the previous element's count stopped
    for _ in range(count):
        while position < len(text) and text[position] in " \t\r\n,":
            position += 1
        line += text.count("\n", counted, position)
        counted = position
        found.append(line)
        _, position = decoder.raw_decode(text, position)
    return found
