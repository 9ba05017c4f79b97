"""Reading recorded sessions: a JSON array or JSONL of messages, or an Amplifier ``transcript.jsonl``.

Errors name the file and the line so a user can fix the input. A file is untrusted input: only regular
files are read, at most ``MAX_FILE_BYTES`` of them, and JSON that Python cannot parse safely (nesting
deeper than the stack, numbers with thousands of digits) is an error like any other invalid JSON.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from ..core.messages import scrub_text, validate_message
from ..core.words import plural
from . import Loaded, Parsed, ReadFailed, claimed, convert_text, formats_read, parse
from ._common import parse_json as parse_json  # re-exported: the evaluation loaders read with it

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
    data = b"".join(chunks)
    bom = data.startswith(b"\xef\xbb\xbf")  # a UTF-8 byte order mark (Windows editors write one) is not text
    try:
        return data[3 if bom else 0 :].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnreadableFile(f"not UTF-8 text (invalid byte at offset {exc.start})") from None


def load_messages(path: str | Path) -> list[dict[str, Any]]:
    """Messages of a session file in our own format or any agent recording ``formats`` reads."""
    return load_session(path).messages


def load_session(path: str | Path) -> Loaded:
    """Messages of a recorded session of any format read; ``SessionFileError`` (one line) otherwise.

    A file is refused only when nothing in it can be read: a cut-off or malformed line, a comment line at the
    top, or a message that is not valid is skipped and named in ``Loaded.skipped`` with its line.
    """
    path = Path(path)
    try:
        text = read_text(path)
    except UnreadableFile as exc:
        raise SessionFileError(path, None, str(exc)) from None
    if not text.strip("\ufeff \t\r\n"):
        raise SessionFileError(path, None, "the file is empty: no messages to read")
    parsed = parse(text)
    found: tuple[str, list[dict[str, Any]], dict[str, Any] | None] | str | None
    try:
        found = claimed(parsed)
        if found is None:
            try:
                return Loaded(_native(path, parsed, strict=True)[0], "native", skipped=list(parsed.skipped))
            except SessionFileError as exc:
                native = exc
            found = convert_text(parsed)
    except ReadFailed as exc:
        raise SessionFileError(path, None, str(exc)) from None
    if isinstance(found, str):
        if parsed.kind != "text":
            try:
                messages, bad = _native(path, parsed, strict=False)
            except SessionFileError:
                pass
            else:
                return Loaded(messages, "native", skipped=sorted(parsed.skipped + bad))
        if parsed.kind == "text" and parsed.error is None:
            problem = f"not JSON, nor an agent recording that is read: saw {found}. Read: {formats_read()}"
            raise SessionFileError(path, None, problem)
        problem = f"{native.problem}; nor is it an agent recording that is read: saw {found}. Read: {formats_read()}"
        raise SessionFileError(path, native.line, problem) from None
    name, converted, reference = found
    if not converted:
        raise SessionFileError(path, None, f"read as {name} but it holds no messages") from None
    checked: list[dict[str, Any]] = []
    skipped: list[tuple[int | None, str]] = list(parsed.skipped)
    for i, m in enumerate(converted):
        try:
            checked.append(_checked(path, None, m))
        except SessionFileError as exc:
            skipped.append((None, f"message {i} as read from {name}: {exc.problem}"))
    if not checked:
        raise SessionFileError(path, None, f"read as {name}, but no message is valid: {skipped[-1][1]}") from None
    return Loaded(checked, name, reference, skipped)


def skipped_warnings(path: str | Path, loaded: Loaded, limit: int = 10) -> list[str]:
    """One ``warning:`` line per part of the file that was not read (the first ``limit``, then a count)."""
    where = scrub_text(str(path))
    lines = []
    for line, why in loaded.skipped[:limit]:
        lines.append(f"warning: {where}:{line}: skipped: {why}" if line else f"warning: {where}: skipped {why}")
    if len(loaded.skipped) > limit:
        lines.append(f"warning: {where}: {plural(len(loaded.skipped) - limit, 'more part')} skipped (see --json)")
    return lines


def native_messages(path: Path, text: str) -> list[dict[str, Any]]:
    """Messages of a file in our own format (a JSON array or JSONL of messages), every one valid."""
    return _native(path, parse(text), strict=True)[0]


def _native(path: Path, parsed: Parsed, strict: bool) -> tuple[list[dict[str, Any]], list[tuple[int | None, str]]]:
    """Our own messages in ``parsed`` and (line, why) of each item that is not one; ``strict``: the first
    invalid item is the error. Nothing valid is always an error, naming the first line that is wrong."""
    if parsed.kind == "text":
        line, problem = parsed.error or (None, "not JSON")
        raise SessionFileError(path, line, problem)
    items = parsed.data if isinstance(parsed.data, list) else [parsed.data]  # one object: a JSONL of one line
    lines: list[int | None] = [*parsed.lines] if parsed.lines else [None] * len(items)
    messages: list[dict[str, Any]] = []
    bad: list[tuple[int | None, str]] = []
    for item, line in zip(items, lines, strict=False):
        try:
            messages.append(_checked(path, line, item))
        except SessionFileError as exc:
            if strict:
                raise
            bad.append((line, exc.problem))
    if not messages:
        if bad:
            raise SessionFileError(path, bad[0][0], bad[0][1])
        raise SessionFileError(path, None, "no messages in the file")
    return messages, bad


def _checked(path: Path, line: int | None, item: Any) -> dict[str, Any]:
    if isinstance(item, dict):
        item = {k: v for k, v in item.items() if k not in TRANSCRIPT_EXTRAS}
    try:
        validate_message(item)
    except ValueError as exc:
        raise SessionFileError(path, line, str(exc)) from None
    if not isinstance(item, dict):  # validate_message refuses anything else: never taken
        raise SessionFileError(path, line, f"message must be a dict, got {type(item).__name__}")
    return item
