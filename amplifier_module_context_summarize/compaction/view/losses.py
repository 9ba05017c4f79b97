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
from ...working_set.facts import extract
from ...working_set.fold import WorkingSet, canonical, command_in_root, named_files
from ...working_set.index import index_of
from ...working_set.reads import named_reads, read_form
from ...working_set.records import NO_FACTS, Facts, clip

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
"""``Facts``' fields in order (``FactsRun.add`` reads a ``Facts`` as these, in turn)."""


class FactsRun:
    """The facts of consecutive groups joined as they are read, in order (as ``joined`` joins them). A long span
    (a cold resume hides 31,000 groups at once) then keeps its items, not a ``Facts`` per group: that many alive
    together outlive the collector's young generations and set off full collections over the whole heap."""

    def __init__(self) -> None:
        self._items: tuple[list[Any], ...] = tuple([] for _ in _FIELDS)
        self.empty = True

    def add(self, facts: Facts) -> None:
        self.empty = False
        if facts is not NO_FACTS:  # most groups of a long span (a resume adds 31,000 at once) have none
            for items, found in zip(self._items, facts, strict=True):  # a ``Facts`` is its fields, ``_FIELDS``
                if found:
                    items.extend(found)

    def facts(self) -> Facts:
        return Facts(*(tuple(items) for items in self._items))


def account_of(facts: Facts, shown_text: str) -> Account:
    """Which artifacts of a span whose facts are ``facts`` ``shown_text`` still names."""
    working_set = WorkingSet()
    working_set.add(facts)
    root = working_set.root()
    found = {kind: list(dict.fromkeys(i for i in items if i and i != ".")) for kind, items in _raw(facts, root).items()}
    return _named(found, root, shown_text)


def _raw(facts: Facts, root: str | None) -> dict[str, list[str]]:
    """The artifacts of ``facts`` by kind, paths and commands spelled relative to ``root``, in order, repeats kept."""
    return {
        "files": [canonical(p, root) for f in facts.files for p in (f.path, f.target) if p],
        "commands": [command_in_root(o.key, root) for o in facts.outcomes if o.command],
        "urls": list(facts.urls),
        "identifiers": list(facts.identifiers),
        "errors": [o.error for o in facts.outcomes if o.error],
    }


Forms = dict[str, tuple[str, bool, tuple[str, str] | None]]
"""Item -> what checking it reads, whatever the text: its clipped form, whether collapsing its whitespace changes
it, and its one-file read form (``read_form``)."""


def _forms(item: str, forms: Forms) -> tuple[str, bool, tuple[str, str] | None]:
    known = forms.get(item)
    if known is None:
        known = forms[item] = (clip(item, ITEM_MAX_CHARS).rstrip("…"), item != " ".join(item.split()), read_form(item))
    return known


def _named(found: dict[str, list[str]], root: str | None, shown_text: str, forms: Forms | None = None) -> Account:
    """``found`` (distinct items by kind) split into those ``shown_text`` names and those it does not; ``forms``
    keeps what each item's check reads for the next text (a ledger checks the same items again and again)."""
    forms = {} if forms is None else forms
    shown = Substrings(shown_text)
    flat = Substrings(" ".join(shown_text.split()))
    kept: dict[str, list[str]] = {kind: [] for kind in KINDS}
    lost: dict[str, list[str]] = {kind: [] for kind in KINDS}
    for kind in KINDS:
        items = found[kind]
        named = set(named_files(shown_text, items)) if kind == "files" else set()
        if kind == "commands":
            reads = [(item, canonical(f[0], root), f[1]) for item in items if (f := _forms(item, forms)[2])]
            named = named_reads(shown_text, reads, ITEM_MAX_CHARS)
        for item in items:
            if kind != "files":
                # An item on one line with single spaces that the text holds is in the text with its whitespace
                # collapsed too, and so is its clipped form (a prefix): the text itself is only searched for
                # items the collapsing changes.
                short, spaced, _ = _forms(item, forms)
                if short in flat or (spaced and item in shown):
                    named.add(item)
            (kept if item in named else lost)[kind].append(item)
    return Account(kept, lost)


class HiddenLedger:
    """The artifacts of a history's hidden groups ``[0, end)``, gathered as ``end`` grows, for a report that accounts
    at every compaction: each group is read once (the working set's index, or as stored when it is shown otherwise,
    as a compaction's own account reads it) and folded once; an account then costs one check per distinct artifact
    against the text, not a new extraction and fold of the whole hidden prefix (quadratic over a long replay). A
    new workspace root re-spells the paths once; an ``end`` that falls (a new history) starts afresh."""

    def __init__(self, history: History) -> None:
        self.history = history
        self._reset()

    def _reset(self) -> None:
        self.end = 0
        self._folded = WorkingSet()
        self._facts: list[Facts] = []
        self._root: str | None = None
        self._found: dict[str, dict[str, None]] = {kind: {} for kind in KINDS}
        self._forms: Forms = {}
        self._spelled = 0
        """Groups of ``_facts`` whose artifacts ``_found`` holds, spelled relative to ``_root``."""

    def account(self, end: int, shown_text: str) -> Account:
        """Which artifacts of groups ``[0, end)`` ``shown_text`` names."""
        if end < self.end:
            self._reset()
        index, irregular, groups = index_of(self.history), self.history.shown_as, self.history.groups
        for group in range(self.end, end):
            g = groups[group]
            facts = extract(self.history.messages[g.start : g.end]) if group in irregular else index.facts(group)
            self._folded.add(facts)
            self._facts.append(facts)
        self.end = end
        root = self._folded.root()
        if root != self._root:
            self._root, self._spelled = root, 0
            self._found = {kind: {} for kind in KINDS}
        for facts in self._facts[self._spelled :]:
            for kind, items in _raw(facts, root).items():
                self._found[kind].update(dict.fromkeys(i for i in items if i and i != "."))
        self._spelled = len(self._facts)
        return _named({kind: list(items) for kind, items in self._found.items()}, root, shown_text, self._forms)


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
