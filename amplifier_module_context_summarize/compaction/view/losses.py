"""What a compaction lost: the artifacts of a hidden span that the text standing for it no longer names.

The artifacts are the ledger's (files, commands, URLs, identifiers, error lines of the span, found the
same way with or without an LLM); one counts as kept when the text that replaced the span still names
it: a file by its path relative to the workspace root or by its name on its folder's line (as the working
set folds them), a one-file read by the rest of its command on its file's line of folded reads, anything else
by its string or its clipped form. The cost is one extraction of the
span and one search per artifact in that text.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ...core.history import History
from ...core.messages import Message
from ...core.state import CompactionState
from ...core.substrings import Substrings
from ...working_set.facts import Facts, clip, extract
from ...working_set.fold import WorkingSet, canonical, command_in_root, named_files
from ...working_set.index import index_of
from ...working_set.reads import named_reads, read_form

ITEM_MAX_CHARS = 200

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
    return account_of(extract(span), shown_text)


def joined(parts: Iterable[Facts | list[Message]]) -> Facts:
    """The facts of consecutive groups as one run: each part's own (a list of messages is extracted here), in
    order. For groups whose calls are all answered within them (every group a view shows as stored) this is
    ``extract`` of all their messages at once, item for item."""
    done = [part if isinstance(part, Facts) else extract(part) for part in parts]
    return Facts(*(tuple(item for facts in done for item in getattr(facts, name)) for name in _FIELDS))


_FIELDS = ("files", "outcomes", "urls", "identifiers", "workdirs", "definitions")


class FactsRun:
    """The facts of consecutive groups joined as they are read, in order (as ``joined`` joins them). A long span
    (a cold resume hides 31,000 groups at once) then keeps its items, not a ``Facts`` per group: that many alive
    together outlive the collector's young generations and set off full collections over the whole heap."""

    def __init__(self) -> None:
        self._items: tuple[list[Any], ...] = tuple([] for _ in _FIELDS)
        self.empty = True

    def add(self, facts: Facts) -> None:
        for items, name in zip(self._items, _FIELDS, strict=True):
            items.extend(getattr(facts, name))
        self.empty = False

    def facts(self) -> Facts:
        return Facts(*(tuple(items) for items in self._items))


def account_of(facts: Facts, shown_text: str) -> Account:
    """Which artifacts of a span whose facts are ``facts`` ``shown_text`` still names."""
    working_set = WorkingSet()
    working_set.add(facts)
    root = working_set.root()
    found = {
        "files": [canonical(p, root) for f in facts.files for p in (f.path, f.target) if p],
        "commands": [command_in_root(o.key, root) for o in facts.outcomes if o.command],
        "urls": list(facts.urls),
        "identifiers": list(facts.identifiers),
        "errors": [o.error for o in facts.outcomes if o.error],
    }
    shown = Substrings(shown_text)
    flat = Substrings(" ".join(shown_text.split()))
    kept: dict[str, list[str]] = {kind: [] for kind in KINDS}
    lost: dict[str, list[str]] = {kind: [] for kind in KINDS}
    for kind in KINDS:
        items = list(dict.fromkeys(i for i in found[kind] if i and i != "."))
        named = set(named_files(shown_text, items)) if kind == "files" else set()
        if kind == "commands":
            reads = [(item, canonical(form[0], root), form[1]) for item in items if (form := read_form(item))]
            named = named_reads(shown_text, reads, ITEM_MAX_CHARS)
        for item in items:
            if kind != "files":
                # An item on one line with single spaces that the text holds is in the text with its whitespace
                # collapsed too, and so is its clipped form (a prefix): the text itself is only searched for
                # items the collapsing changes.
                short = clip(item, ITEM_MAX_CHARS).rstrip("…")
                if short in flat or (item != " ".join(item.split()) and item in shown):
                    named.add(item)
            (kept if item in named else lost)[kind].append(item)
    return Account(kept, lost)


def hidden_facts(history: History, end_group: int) -> Facts:
    """The facts of groups ``[0, end_group)``, read as a compaction's own account reads a span: each group shown as
    stored from the working set's index (extracted once per group), a group shown otherwise (sanitized) extracted
    as stored. O(groups) once the index holds them, so a report may ask at every compaction."""
    index, irregular = index_of(history), history.shown_as
    run = FactsRun()
    for group in range(end_group):
        if group in irregular:
            g = history.groups[group]
            run.add(extract(history.messages[g.start : g.end]))
        else:
            run.add(index.facts(group))
    return run.facts()


def newly_hidden_messages(history: History, before: CompactionState, after: CompactionState) -> tuple[int, int]:
    """Stored messages a compaction newly summarized (or truncated) and newly masked: what it did, for the reports
    (``summarized_messages`` counts every message the summary stands for, earlier compactions' too)."""
    summarized = masked = 0
    for start, end in newly_hidden(before.boundary, before.tail_start, after.boundary, after.tail_start):
        count = history.messages_before(end) - history.messages_before(start)
        if end <= after.boundary:
            summarized += count
        else:
            masked += count
    return summarized, masked


def newly_hidden(before_boundary: int, before_tail: int, boundary: int, tail: int) -> list[tuple[int, int]]:
    """Group ranges a compaction took out of their previous form: newly summarized, then newly masked."""
    spans = []
    if boundary > before_boundary:
        spans.append((before_boundary, boundary))
    start = max(boundary, before_tail)
    if tail > start:
        spans.append((start, tail))
    return spans
