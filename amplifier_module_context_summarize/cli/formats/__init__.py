"""Session readers: every common agent recording, auto-detected, as messages the manager takes.

``session_io.load_session(path)`` reads our own JSON / JSONL and, when a file is not that, asks each reader
in ``READERS`` (``convert_text``) whether it recognises the file and converts it. One small module per format;
each has ``NAME``, ``LABEL``, ``detect(data, kind)`` and ``convert(data, kind) -> (messages, reference)`` where
``kind`` says how the file parsed: ``"json"`` (one document), ``"jsonl"`` (a record per line) or ``"text"``. A
file no reader recognises gets one line naming what was seen and the formats that are read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from . import aider, claude_code, cline, codex, gemini, generic, openhands, swe_agent
from ._common import describe, parse_json

READERS = (claude_code, codex, gemini, swe_agent, openhands, cline, aider, generic)
"""Tried in this order; the generic reader (any list of role-bearing objects) comes last."""

NATIVE_LABEL = "our own JSON array / JSONL of messages, or an Amplifier transcript.jsonl"


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


def parse(text: str) -> tuple[Any, str]:
    """The file as one JSON document, as JSONL records, or as text."""
    stripped = text.strip()
    if stripped[:1] in "[{":
        try:
            return parse_json(stripped), "json"
        except ValueError:
            pass
        records = []
        for line in stripped.splitlines():
            if not line.strip():
                continue
            try:
                records.append(parse_json(line))
            except ValueError:
                return text, "text"
        return records, "jsonl"
    return text, "text"


def convert_text(text: str) -> tuple[str, list[dict[str, Any]], dict[str, Any] | None] | str:
    """(reader name, messages, reference) for a recording a reader recognises, else what was seen."""
    data, kind = parse(text)
    for reader in READERS:
        try:
            recognised = reader.detect(data, kind)
        except (AttributeError, KeyError, TypeError, ValueError, IndexError):
            recognised = False
        if recognised:
            try:
                messages, reference = reader.convert(data, kind)
            except (AttributeError, KeyError, TypeError, ValueError, IndexError) as exc:
                problem = f"looks like {reader.LABEL} but could not be read ({exc.__class__.__name__}: {exc})"
                raise ReadFailed(problem) from None
            return reader.NAME, messages, reference
    return describe(data, kind)


def dump_line(message: dict[str, Any]) -> str:
    """One message as a JSONL line of our own format (line breaks JSON leaves raw are escaped)."""
    text = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
    for raw, escaped in (("\u0085", "\\u0085"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(raw, escaped)
    return text
