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
from ...working_set.index import Plain, index_of
from ...working_set.reads import named_reads, read_form
from ...working_set.records import CallOutcome, Facts, FileAction, clip

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


def joined(parts: Iterable[Plain | list[Message]]) -> Plain:
    """The facts of consecutive groups as one run: each part's own (a list of messages is extracted here; a
    ``Facts`` or its plain form, ``index.Plain``, taken as it is), in order, files and outcomes as the parts hold
    them (named or plain tuples). For groups whose calls are all answered within them (every group a view shows as
    stored) this is ``extract`` of all their messages at once, item for item."""
    done = [extract(part) if isinstance(part, list) else part for part in parts]
    return tuple(tuple(item for facts in done for item in facts[field]) for field in range(len(_FIELDS)))


_FIELDS = ("files", "outcomes", "urls", "identifiers", "workdirs", "definitions")
"""``Facts``' fields in order (``FactsRun.add`` reads a ``Facts`` as these, in turn)."""


class FactsRun:
    """The facts of consecutive groups joined as they are read, in order (as ``joined`` joins them). A long span
    (a cold resume hides 31,000 groups at once) then keeps its items, not a ``Facts`` per group: that many alive
    together outlive the collector's young generations and set off full collections over the whole heap. Groups
    read as ``FactsLog`` keeps them (``add_plain``) keep their files and outcomes as plain tuples, which the
    collector stops tracking (named tuples it tracks for as long as they live)."""

    def __init__(self) -> None:
        self._items: tuple[list[Any], ...] = tuple([] for _ in _FIELDS)
        self.empty = True

    def add(self, facts: Facts) -> None:
        self.add_plain(facts)  # a ``Facts`` is its fields, ``_FIELDS``, as a plain form is

    def add_plain(self, plain: Plain) -> None:
        """Add one group's facts in ``FactsLog``'s plain form (``index.Plain``)."""
        self.empty = False
        if any(plain):  # most groups of a long span (a resume adds 31,000 at once) have none
            for items, found in zip(self._items, plain, strict=True):
                if found:
                    items.extend(found)

    def plain(self) -> Plain:
        """The joined facts, each field a tuple of the items as added (named or plain tuples)."""
        return tuple(tuple(items) for items in self._items)

    def facts(self) -> Facts:
        """The joined facts as a ``Facts``, its files and outcomes named tuples."""
        files, outcomes, *rest = self.plain()
        return _new(Facts, (_named_files(files), _named_outcomes(outcomes), *rest))


_new = tuple.__new__
"""Builds a named tuple from the tuple of its fields in C (as ``index._facts`` does)."""


def _named_files(files: tuple[Any, ...]) -> tuple[FileAction, ...]:
    return tuple([_new(FileAction, f) for f in files])


def _named_outcomes(outcomes: tuple[Any, ...]) -> tuple[CallOutcome, ...]:
    return tuple([_new(CallOutcome, o) for o in outcomes])


def account_of(facts: Plain, shown_text: str) -> Account:
    """Which artifacts of a span whose facts are ``facts`` (a ``Facts`` or its plain form) ``shown_text`` still
    names."""
    files, _, _, _, workdirs, _ = facts
    evidence = WorkingSet()
    evidence.add_root_evidence(files, workdirs)
    root = evidence.root()
    found = {kind: list(dict.fromkeys(i for i in items if i and i != ".")) for kind, items in _raw(facts, root).items()}
    return _named(found, root, shown_text)


def _raw(facts: Plain, root: str | None) -> dict[str, list[str]]:
    """The artifacts of ``facts`` by kind, paths and commands spelled relative to ``root``, in order, repeats kept.
    Files and outcomes are read by position (``FileAction``: action, path, target; ``CallOutcome``: key, command,
    ok, label, error, reads), so their plain forms read as the named ones."""
    files, outcomes, urls, identifiers, _, _ = facts
    return {
        "files": [canonical(p, root) for f in files for p in (f[1], f[2]) if p],
        "commands": [command_in_root(o[0], root) for o in outcomes if o[1]],
        "urls": list(urls),
        "identifiers": list(identifiers),
        "errors": [o[4] for o in outcomes if o[4]],
    }


Forms = dict[str, tuple[str, bool]]
"""Item -> what checking it reads, whatever the text: its clipped form and whether collapsing its whitespace changes
it."""
ReadForms = dict[str, tuple[str, str] | None]
"""Command -> its one-file read form (``read_form``): worked out for commands only (most items are files, ids,
URLs and error lines, which are never read as a command)."""


def _forms(item: str, forms: Forms) -> tuple[str, bool]:
    known = forms.get(item)
    if known is None:
        known = forms[item] = (clip(item, ITEM_MAX_CHARS).rstrip("…"), item != " ".join(item.split()))
    return known


def _read_form(item: str, reads: ReadForms) -> tuple[str, str] | None:
    if item in reads:
        return reads[item]
    found = reads[item] = read_form(item)
    return found


def _named(
    found: dict[str, list[str]],
    root: str | None,
    shown_text: str,
    forms: Forms | None = None,
    reads: ReadForms | None = None,
) -> Account:
    """``found`` (distinct items by kind) split into those ``shown_text`` names and those it does not; ``forms``
    and ``reads`` keep what each item's check reads for the next text (a ledger checks the same items again and
    again)."""
    forms = {} if forms is None else forms
    reads = {} if reads is None else reads
    shown = Substrings(shown_text)
    flat = Substrings(" ".join(shown_text.split()))
    kept: dict[str, list[str]] = {kind: [] for kind in KINDS}
    lost: dict[str, list[str]] = {kind: [] for kind in KINDS}
    for kind in KINDS:
        items = found[kind]
        named = set(named_files(shown_text, items)) if kind == "files" else set()
        if kind == "commands":
            read = [(item, canonical(f[0], root), f[1]) for item in items if (f := _read_form(item, reads))]
            named = named_reads(shown_text, read, ITEM_MAX_CHARS)
        for item in items:
            if kind != "files":
                # An item on one line with single spaces that the text holds is in the text with its whitespace
                # collapsed too, and so is its clipped form (a prefix): the text itself is only searched for
                # items the collapsing changes.
                short, spaced = _forms(item, forms)
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
        self._reads: ReadForms = {}
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
        found = {kind: list(items) for kind, items in self._found.items()}
        return _named(found, root, shown_text, self._forms, self._reads)


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
