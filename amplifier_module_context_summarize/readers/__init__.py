"""Session readers: every common agent recording, auto-detected, as messages the manager takes.

Below the command line and the evaluation, which both read recordings with them (and ``tools/``). ``session_io``
reads a file: ``session_io.load_session(path)`` reads our own JSON / JSONL and, when a file is not that, asks each
reader in ``READERS`` (``convert_text``) whether it recognises the file and converts it. One small module per
format; each has ``NAME``, ``LABEL``, ``detect(data, kind)`` and ``convert(data, kind) -> (messages, reference)``
where ``kind`` says how the file parsed: ``"json"`` (one document), ``"jsonl"`` (a record per line) or ``"text"``. A
file no reader recognises gets one line naming what was seen and the formats that are read.

The readers: ``amplifier`` (the Amplifier CLI's ``transcript.jsonl``), ``claude_code``, ``codex``, ``gemini``,
``cline``, ``aider``, ``openhands``, ``swe_agent`` and ``generic`` (role/content messages under any of the usual
keys); ``_common`` holds what several share.

May import: ``core`` only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from . import aider, amplifier, claude_code, cline, codex, gemini, generic, openhands, swe_agent
from ._common import describe, parse_json

READERS = (amplifier, claude_code, codex, gemini, swe_agent, openhands, cline, aider, generic)
"""Tried in this order; the generic reader (any list of role-bearing objects) comes last."""

NATIVE_LABEL = "our own JSON array / JSONL of Amplifier messages"


def format_label(name: str) -> str:
    """``NAME — what it is`` for a ``Loaded.format``: how the commands name what they read (a dash, since a label
    may hold parentheses of its own and the line around it adds more)."""
    if name == "native":
        return f"native — {NATIVE_LABEL}"
    for reader in READERS:
        if name == reader.NAME:
            return f"{name} — {reader.LABEL}"
    return name


def formats_read() -> str:
    return "; ".join([NATIVE_LABEL] + [r.LABEL for r in READERS])


class ReadFailed(ValueError):
    """A reader recognised the file but could not convert it."""


@dataclass
class Loaded:
    messages: list[dict[str, Any]]
    format: str
    """``native`` for our own files, else the reader's ``NAME``."""
    reference: dict[str, Any] | None = None
    """The recording's own compaction summary, when it has one (Claude Code)."""
    skipped: list[tuple[int | None, str]] = field(default_factory=list)
    """(line, why) of every part of the file that was not read; the line is None for a converted message."""


@dataclass
class Parsed:
    """A file as one JSON document (``kind == "json"``), JSONL records (``"jsonl"``) or text, and what was skipped.

    ``lines`` is the line number of each JSONL record (or of each element of a top-level array); ``skipped``
    holds (line, why) for every line that could not be read: a comment line above the data, a line that is not
    JSON (cut off by a crash while writing), or the cut-off tail of a JSON array.
    """

    data: Any
    kind: str
    lines: list[int] = field(default_factory=list)
    skipped: list[tuple[int, str]] = field(default_factory=list)
    error: tuple[int, str] | None = None
    """Where and why the file failed to parse when nothing in it could be read as JSON."""


_COMMENT = ("//", "#")


def parse(text: str) -> Parsed:
    """The file as one JSON document, as JSONL records (lines that are not JSON skipped), or as text.

    Comment lines (``// Source: ...``, ``# ...``) above JSON data are skipped, each named by its line. A file
    whose lines are mostly not JSON (Markdown, a log) is text; one JSON line among prose does not make it JSONL.
    """
    text = text.lstrip("\ufeff")
    all_lines = text.splitlines()
    skipped: list[tuple[int, str]] = []
    first = 0
    while first < len(all_lines) and (not all_lines[first].strip() or all_lines[first].lstrip().startswith(_COMMENT)):
        first += 1
    body = all_lines[first:]
    start = body[0].lstrip()[:1] if body else ""
    if first and start in ("[", "{"):
        skipped = [(n + 1, "a comment line") for n in range(first) if all_lines[n].strip()]
    else:
        first, body = 0, all_lines
        start = text.lstrip()[:1]
    if start not in ("[", "{"):
        return Parsed(text, "text")
    joined = "\n".join(body)
    try:
        data = parse_json(joined)
    except json.JSONDecodeError as exc:
        whole_error: tuple[int, str] = (first + exc.lineno, f"invalid JSON ({exc.msg})")
    except ValueError as exc:
        whole_error = (first + 1, str(exc))
    else:
        if isinstance(data, list):
            lines = _element_lines(joined, data, first)
        else:  # the line the document starts on
            lines = [first + 1 + joined[: len(joined) - len(joined.lstrip())].count("\n")]
        return Parsed(data, "json", lines, skipped)
    records, lines, bad = [], [], []
    for number, line in enumerate(body, start=first + 1):
        if not line.strip():
            continue
        try:
            records.append(parse_json(line))
            lines.append(number)
        except json.JSONDecodeError as exc:
            bad.append((number, f"invalid JSON ({exc.msg}); the line was cut off or is not JSON"))
        except ValueError as exc:
            bad.append((number, str(exc)))
    if records and len(records) >= len(bad) and all(isinstance(r, dict) for r in records):
        return Parsed(records, "jsonl", lines, skipped + bad)
    if start == "[":
        salvaged = _array_prefix(joined, first)
        if salvaged is not None:
            items, item_lines, cut = salvaged
            return Parsed(items, "json", item_lines, skipped + [cut])
    if records and len(records) >= len(bad):
        return Parsed(records, "jsonl", lines, skipped + bad)
    parsed = Parsed(text, "text")
    parsed.error = bad[0] if len(body) > 1 and bad and start != "[" else whole_error
    return parsed


def _element_lines(text: str, items: list[Any], offset: int) -> list[int]:
    """Best-effort line of each top-level array element (one element per line is the common layout)."""
    decoder = json.JSONDecoder()
    position = text.index("[") + 1
    found: list[int] = []
    line, counted = 1 + offset, 0  # newlines are counted once, from where the previous element's count stopped
    for _ in items:
        while position < len(text) and text[position] in " \t\r\n,":
            position += 1
        line += text.count("\n", counted, position)
        counted = position
        found.append(line)
        try:
            _, position = decoder.raw_decode(text, position)
        except (ValueError, RecursionError):
            break
    return found + [found[-1] if found else 1 + offset] * (len(items) - len(found))


def _array_prefix(text: str, offset: int) -> tuple[list[Any], list[int], tuple[int, str]] | None:
    """The elements of a JSON array cut off part way (a crash while writing), their lines, and where it stops."""
    decoder = json.JSONDecoder()
    position = text.index("[") + 1
    items: list[Any] = []
    lines: list[int] = []
    line, counted = offset + 1, 0  # newlines counted once each, from where the last count stopped: linear
    while True:
        while position < len(text) and text[position] in " \t\r\n,":
            position += 1
        line += text.count("\n", counted, position)
        counted = position
        if position >= len(text) or text[position] == "]":
            return None  # not cut off: the whole-document error stands
        try:
            item, position = decoder.raw_decode(text, position)
        except (ValueError, RecursionError) as exc:
            if not items:
                return None
            reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "invalid JSON"
            return items, lines, (line, f"the array is cut off or broken here ({reason}); the rest is not read")
        items.append(item)
        lines.append(line)


def convert_text(
    text: str | Parsed,
) -> tuple[str, list[dict[str, Any]], dict[str, Any] | None] | str:
    """(reader name, messages, reference) for a recording a reader recognises, else what was seen."""
    parsed = text if isinstance(text, Parsed) else parse(text)
    data, kind = parsed.data, parsed.kind
    for reader in READERS:
        try:
            recognised = reader.detect(data, kind)
        except (AttributeError, KeyError, TypeError, ValueError, IndexError):
            recognised = False
        if recognised:
            return _convert(reader, data, kind)
    return describe(data, kind)


def claimed(parsed: Parsed) -> tuple[str, list[dict[str, Any]], dict[str, Any] | None] | None:
    """A recording a reader claims before our own format is tried: files that would also validate as our own
    messages but mean something else (Cline's API history, Gemini stream-json events carrying a ``role``, an
    Amplifier transcript whose tool results are ``str()`` of what the tool returned)."""
    for reader in READERS:
        claims = getattr(reader, "claims", None)
        if claims is None:
            continue
        try:
            recognised = claims(parsed.data, parsed.kind)
        except (AttributeError, KeyError, TypeError, ValueError, IndexError):
            recognised = False
        if recognised:
            return _convert(reader, parsed.data, parsed.kind)
    return None


def _convert(reader: Any, data: Any, kind: str) -> tuple[str, list[dict[str, Any]], dict[str, Any] | None]:
    try:
        messages, reference = reader.convert(data, kind)
    except (AttributeError, KeyError, TypeError, ValueError, IndexError) as exc:
        problem = f"looks like {reader.LABEL} but could not be read ({exc.__class__.__name__}: {exc})"
        raise ReadFailed(problem) from None
    return reader.NAME, messages, reference


def dump_line(message: dict[str, Any]) -> str:
    """One message as a JSONL line of our own format (line breaks JSON leaves raw are escaped)."""
    text = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
    for raw, escaped in (("\u0085", "\\u0085"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(raw, escaped)
    return text
