"""Scoring another tool's own compaction summary (Claude Code's) on the same footing as the strategies.

Its view is that summary followed by the messages after its boundary, as the tool itself continued.
Two measures need no probe: the share of files the summarized span touched that the summary still
names (by path relative to the workspace root), and the summary's size as a share of the span's text.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.messages import Message, group_messages, message_text, sanitize
from ..working_set.fold import named_files, working_set_of
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
    """Files of the span's working set (one spelling each, relative to its root) that ``summary`` names.

    One matcher for every summary, ours or another tool's: a file is named by its relative path, or by its
    file name on a line that names its folder (``working_set.named_files``).
    """
    files = [e.path for e in working_set_of(span).entries()]
    return Coverage(
        files=files,
        found=named_files(summary, files),
        summary_chars=len(summary),
        span_chars=sum(len(message_text(m)) for m in span),
    )
