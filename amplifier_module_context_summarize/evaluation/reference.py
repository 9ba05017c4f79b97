"""Scoring another tool's own compaction summary (Claude Code's) on the same footing as the strategies.

Its view is that summary followed by the messages after its boundary, as the tool itself continued.
Two measures need no probe: the share of files the summarized span touched that the summary still
names (by path relative to the project), and the summary's size as a share of the span's text.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..ledger import build_ledger
from ..messages import Message, group_messages, message_text, sanitize
from .loader import Reference


def reference_view(messages: list[Message], reference: Reference, at: int) -> list[Message]:
    """System messages, the reference summary as a user message, then messages ``[boundary, at]`` made valid."""
    system = [m for m in messages[: reference.boundary] if m.get("role") == "system"]
    summary = {"role": "user", "content": reference.summary}
    return [*system, summary, *valid_messages(messages[reference.boundary : at + 1])]


def valid_messages(messages: list[Message]) -> list[Message]:
    """The messages with dangling calls and orphan results removed, group by group."""
    out: list[Message] = []
    for group in group_messages(messages):
        out.extend(sanitize(messages[group.start : group.end]))
    return out


@dataclass
class Coverage:
    """How much of a span's file trail a summary keeps, and how big it is next to the span."""

    files: list[str] = field(default_factory=list)
    found: list[str] = field(default_factory=list)
    summary_chars: int = 0
    span_chars: int = 0

    @property
    def file_share(self) -> float | None:
        return len(self.found) / len(self.files) if self.files else None

    @property
    def size_share(self) -> float | None:
        return self.summary_chars / self.span_chars if self.span_chars else None

    def as_dict(self) -> dict[str, object]:
        return {
            "files": self.files,
            "found": self.found,
            "missing": [f for f in self.files if f not in self.found],
            "file_share": self.file_share,
            "summary_chars": self.summary_chars,
            "span_chars": self.span_chars,
            "size_share": self.size_share,
        }


def coverage(summary: str, span: list[Message]) -> Coverage:
    files = relative_files(build_ledger(span).files)
    lowered = summary.lower()
    return Coverage(
        files=files,
        found=[f for f in files if f.lower() in lowered],
        summary_chars=len(summary),
        span_chars=sum(len(message_text(m)) for m in span),
    )


def relative_files(paths: list[str]) -> list[str]:
    """Paths relative to the project root, de-duplicated; the root itself and directories are left out.

    Claude Code mixes absolute paths (``/home/u/proj/lib/a.ex``) with relative ones (``lib/a.ex``) for
    the same file; a summary usually writes the relative form.
    """
    root = project_root(paths)
    out: list[str] = []
    for path in paths:
        if path.endswith("/") or (root and path == root):
            continue
        if root and path.startswith(root + "/"):
            path = path[len(root) + 1 :]
        elif path.startswith("./"):
            path = path[2:]
        if path and path not in out:
            out.append(path)
    return out


def project_root(paths: list[str]) -> str | None:
    """The folder absolute paths are relative to.

    Best evidence: an absolute path that ends with a relative one seen in the same span. Otherwise
    the deepest folder holding more than half of the absolute paths.
    """
    absolute = [p for p in paths if p.startswith("/")]
    relative = [p.removeprefix("./") for p in paths if not p.startswith(("/", "~"))]
    votes: Counter[str] = Counter()
    for a in absolute:
        for r in relative:
            if a.endswith("/" + r):
                votes[a[: -len(r) - 1]] += 1
    if votes:
        return votes.most_common(1)[0][0]
    folders: Counter[str] = Counter()
    for a in absolute:
        parts = a.split("/")[1:-1]
        for depth in range(1, len(parts) + 1):
            folders["/" + "/".join(parts[:depth])] += 1
    majority = [f for f, n in folders.items() if n * 2 > len(absolute)]
    return max(majority, key=len) if majority else None
