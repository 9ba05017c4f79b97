"""What a compaction lost: the artifacts of a hidden span that the text standing for it no longer names.

The artifacts are the ledger's (files, commands, URLs, identifiers, error lines of the span, found the
same way with or without an LLM); one counts as kept when its exact string (or the clipped form the
summary's ``### Artifacts`` list prints) still appears in the text that replaced the span. The cost is
one ledger of the span and one substring test per artifact against that text.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from .ledger import ITEM_MAX_CHARS, Ledger, build_ledger, clip
from .messages import Message

KINDS = ("files", "commands", "urls", "identifiers", "errors")


@dataclass(frozen=True)
class Account:
    """Artifacts of a span, by kind, split into those the replacing text still names and those it does not."""

    kept: dict[str, list[str]]
    lost: dict[str, list[str]]

    @property
    def kept_count(self) -> int:
        return sum(map(len, self.kept.values()))

    @property
    def lost_count(self) -> int:
        return sum(map(len, self.lost.values()))


def account(span: list[Message], shown_text: str) -> Account:
    """Which artifacts of ``span`` ``shown_text`` still names."""
    return account_ledger(build_ledger(span), shown_text)


def account_ledger(ledger: Ledger, shown_text: str) -> Account:
    flat = " ".join(shown_text.split())
    kept: dict[str, list[str]] = {kind: [] for kind in KINDS}
    lost: dict[str, list[str]] = {kind: [] for kind in KINDS}
    for field in fields(ledger):
        for item in getattr(ledger, field.name):
            named = item in shown_text or clip(item, ITEM_MAX_CHARS).rstrip("…") in flat
            (kept if named else lost)[field.name].append(item)
    return Account(kept, lost)


def newly_hidden(before_boundary: int, before_tail: int, boundary: int, tail: int) -> list[tuple[int, int]]:
    """Group ranges a compaction took out of their previous form: newly summarized, then newly masked."""
    spans = []
    if boundary > before_boundary:
        spans.append((before_boundary, boundary))
    start = max(boundary, before_tail)
    if tail > start:
        spans.append((start, tail))
    return spans
