"""Reading the evaluation corpus, with errors that name the file and line at fault.

A corpus is a folder of ``<name>.jsonl`` sessions (one message per line), each optionally with
``<name>.probes.json`` (questions asked at a point of the session) and ``<name>.reference.json``
(another tool's own compaction summary of the session's head). Other files are ignored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.messages import Message, validate_message
from ..readers.session_io import UnreadableFile, parse_json, read_text

PROBE_KINDS = ("recall", "artifact", "continuation", "decision")
PROBE_FIELDS = ("id", "at", "kind", "question", "answer", "keys")


class CorpusError(ValueError):
    """A corpus file that cannot be used; the message starts with ``path:line:``."""


def _read(path: Path) -> str:
    """The file's text, read as untrusted input (``session_io.read_text``: regular files only, bounded)."""
    try:
        return read_text(path)
    except UnreadableFile as exc:
        raise CorpusError(f"{path}:1: {exc}") from None


def _parse(path: Path, text: str, what: str = "malformed JSON") -> Any:
    """``json.loads`` of ``text``, every failure a ``CorpusError`` naming the file and line."""
    try:
        return parse_json(text)
    except json.JSONDecodeError as exc:
        raise CorpusError(f"{path}:{exc.lineno}: {what} ({exc.msg})") from None
    except ValueError as exc:
        raise CorpusError(f"{path}:1: {exc}") from None


@dataclass(frozen=True)
class Probe:
    id: str
    at: int
    """0-based index of the message after which the question is asked."""
    kind: str
    question: str
    answer: str
    keys: tuple[str, ...]
    """Strings a view must contain (case-insensitive) to be able to answer."""


@dataclass(frozen=True)
class Reference:
    """Another tool's compaction summary standing for messages ``[0, boundary)``."""

    source: str
    summary: str
    boundary: int


@dataclass
class Session:
    name: str
    path: Path
    messages: list[Message]
    probes: list[Probe] = field(default_factory=list)
    reference: Reference | None = None


def load_corpus(folder: str | Path, select: list[str] | None = None, limit: int | None = None) -> list[Session]:
    """Every session of ``folder`` in name order; ``select`` keeps the named ones, ``limit`` the first N."""
    root = Path(folder)
    if not root.is_dir():
        raise CorpusError(f"{root}: corpus folder not found")
    names = session_names(root)
    for extra in sorted([*root.glob("*.probes.json"), *root.glob("*.reference.json")]):
        stem = extra.name.rsplit(".", 2)[0]
        if stem not in names:
            raise CorpusError(f"{extra}:1: no session file {stem}.jsonl beside it")
    if select:
        unknown = [s for s in select if s not in names]
        if unknown:
            raise CorpusError(f"{root}: no session named {', '.join(unknown)} (have: {', '.join(names)})")
        names = [n for n in names if n in select]
    if limit is not None:
        names = names[: max(limit, 0)]
    if not names:
        raise CorpusError(f"{root}: no <name>.jsonl sessions to evaluate")
    return [load_session(root / f"{name}.jsonl") for name in names]


def session_names(root: Path) -> list[str]:
    """In ``index.json`` order when the corpus has one (sessions it does not list follow, by name)."""
    found = sorted(p.name[: -len(".jsonl")] for p in root.glob("*.jsonl"))
    index = root / "index.json"
    if not index.is_file():
        return found
    entries = _parse(index, _read(index))
    listed = [e.get("name") for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []
    for name in listed:
        if name not in found:
            raise CorpusError(f"{index}:1: lists session {name!r} but there is no {name}.jsonl")
    ordered = [str(name) for name in listed]  # each names a file found: a string already
    return [*ordered, *(n for n in found if n not in listed)]


def load_session(path: Path) -> Session:
    messages = read_messages(path)
    name = path.name[: -len(".jsonl")]
    probes_path = path.with_name(f"{name}.probes.json")
    reference_path = path.with_name(f"{name}.reference.json")
    return Session(
        name=name,
        path=path,
        messages=messages,
        probes=read_probes(probes_path, len(messages)) if probes_path.is_file() else [],
        reference=read_reference(reference_path, len(messages)) if reference_path.is_file() else None,
    )


def read_messages(path: Path) -> list[Message]:
    """One message per line. Split on ``\\n`` only: U+2028 may sit unescaped inside a JSON string."""
    messages: list[Message] = []
    for number, line in enumerate(_read(path).split("\n"), start=1):
        if not line.strip():
            continue
        try:
            message = parse_json(line)
        except json.JSONDecodeError as exc:
            raise CorpusError(f"{path}:{number}: malformed JSON line ({exc.msg} at column {exc.colno})") from None
        except ValueError as exc:
            raise CorpusError(f"{path}:{number}: {exc}") from None
        try:
            validate_message(message)
        except ValueError as exc:
            raise CorpusError(f"{path}:{number}: {exc}") from None
        messages.append(message)
    if not messages:
        raise CorpusError(f"{path}:1: the session has no messages")
    return messages


def _json_items(path: Path) -> list[tuple[int, Any]]:
    """(line, value) of each element of a top-level JSON list, so errors can point at the element."""
    text = _read(path)
    _parse(path, text)
    decoder = json.JSONDecoder()
    position = len(text) - len(text.lstrip())
    if not text.startswith("[", position):
        raise CorpusError(f"{path}:{text.count(chr(10), 0, position) + 1}: expected a JSON list of probes")
    position += 1
    items: list[tuple[int, Any]] = []
    while True:
        while position < len(text) and text[position] in " \t\r\n,":
            position += 1
        if text.startswith("]", position):
            return items
        value, end = decoder.raw_decode(text, position)
        items.append((text.count("\n", 0, position) + 1, value))
        position = end


def read_probes(path: Path, message_count: int) -> list[Probe]:
    probes: list[Probe] = []
    seen: set[str] = set()
    for index, (line, raw) in enumerate(_json_items(path)):
        label = raw.get("id") if isinstance(raw, dict) else None
        where = f"{path}:{line}: probe {index}" + (f" ({label!r})" if isinstance(label, str) else "")
        if not isinstance(raw, dict):
            raise CorpusError(f"{where}: must be an object with fields {', '.join(PROBE_FIELDS)}")
        missing = [f for f in PROBE_FIELDS if f not in raw]
        if missing:
            raise CorpusError(f"{where}: missing field {', '.join(repr(f) for f in missing)}")
        if not isinstance(raw["id"], str) or not raw["id"]:
            raise CorpusError(f"{where}: field 'id' must be a non-empty string")
        if raw["id"] in seen:
            raise CorpusError(f"{where}: duplicate id {raw['id']!r}")
        seen.add(raw["id"])
        if raw["kind"] not in PROBE_KINDS:
            raise CorpusError(f"{where}: unknown kind {raw['kind']!r} (expected one of {', '.join(PROBE_KINDS)})")
        at = raw["at"]
        if isinstance(at, bool) or not isinstance(at, int) or not 0 <= at < message_count:
            raise CorpusError(f"{where}: field 'at' must be a message index in [0, {message_count}), got {at!r}")
        for name in ("question", "answer"):
            if not isinstance(raw[name], str) or not raw[name].strip():
                raise CorpusError(f"{where}: field {name!r} must be a non-empty string")
        keys = raw["keys"]
        if not isinstance(keys, list) or not keys or not all(isinstance(k, str) and k.strip() for k in keys):
            raise CorpusError(f"{where}: field 'keys' must be a non-empty list of non-empty strings")
        probes.append(Probe(raw["id"], at, raw["kind"], raw["question"], raw["answer"], tuple(keys)))
    return probes


def read_reference(path: Path, message_count: int) -> Reference:
    text = _read(path)
    raw = _parse(path, text)

    def fail(field_name: str, problem: str) -> CorpusError:
        offset = text.find(f'"{field_name}"')
        line = text.count("\n", 0, offset) + 1 if offset >= 0 else 1
        return CorpusError(f"{path}:{line}: field {field_name!r} {problem}")

    if not isinstance(raw, dict):
        raise CorpusError(f"{path}:1: expected an object with 'summary' and 'boundary'")
    summary, boundary = raw.get("summary"), raw.get("boundary")
    if not isinstance(summary, str) or not summary.strip():
        raise fail("summary", "must be a non-empty string")
    if isinstance(boundary, bool) or not isinstance(boundary, int) or not 0 < boundary <= message_count:
        raise fail("boundary", f"must be a message count in [1, {message_count}], got {boundary!r}")
    source = raw.get("source", "reference")
    if not isinstance(source, str) or not source:
        raise fail("source", "must be a non-empty string")
    return Reference(source=source, summary=summary, boundary=boundary)
