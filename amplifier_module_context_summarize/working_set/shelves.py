"""The working set's facts arranged the way its layout reads them, kept up to date group by group.

``WorkingSet`` folds facts keyed by spelling (a path as written, a command with its ``cd``); the layout wants
them by what they show as under the workspace root: one entry per file, files by folder, definitions and
commands merged per shown path or command, and each kind newest first. Re-deriving that from everything
folded at every render made a compaction late in a long session pay for the whole history. The shelves
hold that arrangement for one root and redo only what the keys the newest groups touched (``Touched``)
change; a new root rebuilds them. The layout then reads what it may show (the newest items of each kind, up
to its allowance) and stops.
"""

from __future__ import annotations

import posixpath
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import fields
from operator import itemgetter
from typing import Any, NamedTuple
from weakref import WeakKeyDictionary

from ..core.atoms import SortedChunks
from .fold import (
    CHANGED_ORDER,
    DEFINITIONS_KEEP,
    DELETED,
    FOLD_KEEP,
    MOVED_AWAY,
    FileEntry,
    Touched,
    WorkingSet,
    canonical,
    command_in_root,
    merge_entry,
)
from .reads import READ_GROUP, read_form

Row = tuple[Any, ...]
READS_KEY = "\0reads "
"""Key prefix of a file's folded reads on the rank-0 command shelf (no shown command starts with NUL)."""
MEASURED_KEEP = 32_768
"""Line token counts remembered, of the lines counted last (the lines of recent renders stay)."""
COUNTERS_KEPT = 4
"""Counters whose line counts are remembered (a session uses one; a test or the evaluation a few)."""
_LINE_TOKENS: dict[Callable[[str], int], Callable[[str], int]] = {}
"""Line counts by counter, shared by every working set's shelves: a working set folded again to a nearer end (a
request planning beside a background summary) lays out mostly the lines the furthest one did, and measuring them
all afresh held the loop for 0.1-0.8 s late in a long session (issue 48)."""
_LINE_TOKENS_LOCK = threading.Lock()


class Recency:
    """Keys ordered by a sequence number (their last touch): the newest are read without sorting the rest."""

    def __init__(self) -> None:
        self._order: SortedChunks[tuple[int, str]] = SortedChunks()
        self._seq: dict[str, int] = {}
        self.rows: dict[str, Row] = {}
        self.made: dict[str, Any] = {}
        """What the layout made of a key's row (its line and that line's tokens), until the row changes."""

    def __len__(self) -> int:
        return len(self._seq)

    def put(self, key: str, seq: int, row: Row = ()) -> None:
        known = self._seq.get(key)
        if known != seq:
            if known is not None:
                self._order.remove((known, key))
            self._order.add((seq, key))
            self._seq[key] = seq
        if self.rows.get(key) != row:
            self.made.pop(key, None)
        self.rows[key] = row

    def remove(self, key: str) -> None:
        known = self._seq.pop(key, None)
        if known is not None:
            self._order.remove((known, key))
            del self.rows[key]
            self.made.pop(key, None)

    def newest(self) -> Iterator[str]:
        return map(itemgetter(1), reversed(self._order))


class FolderShelf:
    """One folder of changed (or of read or used) files, as the layout shows it: its entries in first-seen order,
    their newest touch, and its lines and their tokens per ladder shape, made once per version of the folder."""

    def __init__(self, name: str, changed: bool) -> None:
        self.name, self.changed = name, changed
        self.by_order: dict[int, tuple[str, str, int, str]] = {}
        """Its entries by the order their paths were first seen, as plain tuples (``FileEntry``'s fields): the
        collector stops walking a tuple of atoms, not a named one (issue 48)."""
        self.last = 0
        self.lines: dict[str, list[str]] = {}
        self.sizes: dict[str, int] = {}
        """Tokens of its lines per shape (counted by the shelves' current counter: ``Shelves.measure``)."""

    def put(self, ordinal: int, entry: FileEntry) -> None:
        self.by_order[ordinal] = (entry.path, entry.state, entry.last, entry.moved_from)
        self.last = max(self.last, entry.last)
        self.lines, self.sizes = {}, {}

    def remove(self, ordinal: int) -> None:
        del self.by_order[ordinal]
        self.last = max((e[2] for e in self.by_order.values()), default=0)
        self.lines, self.sizes = {}, {}

    @property
    def files(self) -> list[FileEntry]:
        """Its entries in first-seen order (read only to make its lines, which are kept)."""
        return [FileEntry(*self.by_order[o]) for o in sorted(self.by_order)]

    @property
    def weight(self) -> int:
        """What the folder stands for in its kind's count line: its files."""
        return len(self.by_order)


class _File(NamedTuple):
    """One canonical path: its spellings (in the order they were first seen), its entry, where it is shelved.

    Kept as a plain tuple of atoms (``Shelves._keep``), replaced whole when it changes: the collector stops walking
    it after its first look, which it does for no named tuple (issue 48: one per file the session touched,
    thousands in a long one)."""

    ordinal: int
    spellings: tuple[str, ...] = ()
    """Usually one."""
    entry: FileEntry | None = None
    folder: tuple[bool, str] | None = None


class Shelves:
    """The layout's inputs for one workspace root (``root``), brought up to date by ``refresh``."""

    def __init__(self, working_set: WorkingSet, root: str | None) -> None:
        self.root = root
        self.files: dict[str, tuple[Any, ...]] = {}
        """Canonical path -> its ``_File`` as a plain tuple (``_known``, ``_keep``)."""
        self.spelled: dict[str, str] = {}
        """Spelling -> canonical path."""
        self.folders: dict[bool, dict[str, FolderShelf]] = {True: {}, False: {}}
        """Per kind (changed or not), the folders by name."""
        self.counts: dict[bool, Counter[str]] = {True: Counter(), False: Counter()}
        """Per kind of folder: its files and folders."""
        self.folder_recency: dict[bool, Recency] = {True: Recency(), False: Recency()}
        self.relative_entries = 0
        """Entries shown in folders whose path is relative (the section then says what it is relative to)."""
        self.definitions: dict[str, tuple[str, ...]] = {}
        """Canonical path -> its spellings with definitions, in the order they were first seen (a tuple of strings,
        which the collector stops walking)."""
        self.definition_items: dict[str, tuple[str, str, int]] = {}
        """Canonical path -> (text, trimmed text, newest change) of the files still there."""
        self.definition_recency = Recency()
        self.groups: dict[str, tuple[str, ...]] = {}
        """Shown command -> the commands as run that show as it, in first-run order (a tuple, usually of one: of
        strings only, so the collector stops walking it, issue 48)."""
        self.command_rank: dict[str, int] = {}
        """Shown command -> its rank, for commands shelved on their own (not a file's folded reads)."""
        self.file_reads: dict[str, dict[str, tuple[Any, ...]]] = {}
        """Canonical path -> shown command -> (seq, the command without the path, runs, its own row): the
        successful one-file reads of each file (``reads.read_form``)."""
        self.read_file: dict[str, str] = {}
        """Shown command -> the file it reads, while it is one of ``file_reads``."""
        self.commands: dict[int, Recency] = {}
        self.in_root = 0
        """Commands shown without their ``cd <root> &&``."""
        self.error_rank: dict[str, int] = {}
        self.errors: dict[int, Recency] = {}
        self.ids, self.urls = Recency(), Recency()
        self.id_order: dict[str, int] = {}
        self.url_order: dict[str, int] = {}
        self._measured: tuple[Callable[[str], int], Callable[[str], int]] | None = None
        self.refresh(working_set, Touched(*(dict.fromkeys(getattr(working_set, f.name)) for f in fields(Touched))))

    # ------------------------------------------------------------------ keeping up

    def refresh(self, ws: WorkingSet, touched: Touched) -> None:
        """Redo what the touched keys change (their entries, folders, merged commands and definitions)."""
        excluded = (DELETED, MOVED_AWAY)
        redefine: dict[str, None] = {}
        for spelling in touched.files:
            path, was = self._file(ws, spelling)
            known = self._known(path)
            now = known.entry if known is not None else None
            if path in self.definitions and (was in excluded) != (now is not None and now.state in excluded):
                redefine[path] = None
        for spelling in touched.definitions:
            path = self._canonical(spelling)
            spellings = self.definitions.get(path, ())
            if spelling not in spellings:
                self.definitions[path] = (*spellings, spelling)
            redefine[path] = None
        for path in redefine:
            self._define(ws, path)
        regroup = dict.fromkeys(self._group(key) for key in touched.commands)
        regroup.update(dict.fromkeys(command_in_root(k, self.root) for k in touched.errors if k in ws.commands))
        for shown in regroup:
            self._command(ws, shown)
        for key in touched.errors:
            self._error(ws, key)
        for identifier in touched.ids:
            self.id_order.setdefault(identifier, len(self.id_order))
            self.ids.put(identifier, ws.ids[identifier])
        for url in touched.urls:
            self.url_order.setdefault(url, len(self.url_order))
            self.urls.put(url, ws.urls[url])

    def _canonical(self, spelling: str) -> str:
        path = self.spelled.get(spelling)
        if path is None:
            path = self.spelled[spelling] = canonical(spelling, self.root)
        return path

    def _known(self, path: str) -> _File | None:
        row = self.files.get(path)
        if row is None:
            return None
        ordinal, spellings, entry, folder = row
        return _File(ordinal, spellings, None if entry is None else FileEntry(*entry), folder)

    def _keep(self, path: str, known: _File) -> None:
        entry = None if known.entry is None else tuple(known.entry)
        self.files[path] = (known.ordinal, known.spellings, entry, known.folder)

    def _file(self, ws: WorkingSet, spelling: str) -> tuple[str, str | None]:
        """Re-merge the entry ``spelling`` belongs to and move it to its folder; returns (path, previous state)."""
        path = self._canonical(spelling)
        if path in (".", "/"):
            return path, None
        known = self._known(path) or _File(len(self.files))
        spellings = known.spellings if spelling in known.spellings else (*known.spellings, spelling)
        before = known.entry
        entry = merge_entry(path, [ws.files[s] for s in spellings], self.root)
        folder = None if entry.state == MOVED_AWAY else (entry.state in CHANGED_ORDER, posixpath.dirname(path))
        shelved_in = known.folder
        if shelved_in is not None and shelved_in != folder:
            self._unshelve(path, known.ordinal, shelved_in)
            shelved_in = None
        if folder is not None:
            changed, name = folder
            shelf = self.folders[changed].get(name)
            if shelf is None:
                shelf = self.folders[changed][name] = FolderShelf(name, changed)
            if shelved_in is None and not path.startswith(("/", "~")):
                self.relative_entries += 1
            size = shelf.weight
            shelf.put(known.ordinal, entry)
            self._resized(changed, name, shelf, size)
        self._keep(path, _File(known.ordinal, spellings, entry, folder))
        return path, before.state if before is not None else None

    def _unshelve(self, path: str, ordinal: int, folder: tuple[bool, str]) -> None:
        changed, name = folder
        shelf = self.folders[changed][name]
        size = shelf.weight
        shelf.remove(ordinal)
        self._resized(changed, name, shelf, size)
        if not shelf.weight:
            del self.folders[changed][name]
        if not path.startswith(("/", "~")):
            self.relative_entries -= 1

    def _resized(self, changed: bool, name: str, shelf: FolderShelf, before: int) -> None:
        """Keep the counts the layout's ladder is sized by, and the folder's place among the newest."""
        after = shelf.weight
        count = self.counts[changed]
        count["files"] += after - before
        count["folders"] += (after > 0) - (before > 0)
        if after:
            self.folder_recency[changed].put(name, shelf.last)
        else:
            self.folder_recency[changed].remove(name)

    def _define(self, ws: WorkingSet, path: str) -> None:
        """A file's definitions merged over its spellings, newest change first; none once it is deleted or moved."""
        known = self._known(path)
        if known is not None and known.entry is not None and known.entry.state in (DELETED, MOVED_AWAY):
            self.definition_items.pop(path, None)
            self.definition_recency.remove(path)
            return
        names: dict[str, tuple[int, int, bool]] = {}
        for spelling in self.definitions[path]:
            for name, mark in ws.definitions[spelling].items():
                if name not in names or mark[:2] > names[name][:2]:
                    names[name] = mark
        order = sorted(names, key=lambda n: (-names[n][0], names[n][1]))
        written = [n for n in order if not names[n][2]]
        removed = [n for n in order if names[n][2]]
        text, short = definition_lines(path, written, removed)
        last = max(mark[0] for mark in names.values())
        self.definition_items[path] = (text, short, last)
        self.definition_recency.put(path, last)

    def _group(self, key: str) -> str:
        shown = command_in_root(key, self.root)
        keys = self.groups.get(shown, ())
        if key not in keys:
            self.groups[shown] = (*keys, key)
            self.in_root += shown != key
        return shown

    def _command(self, ws: WorkingSet, shown: str) -> None:
        """The merged row of the commands that show as ``shown`` (latest outcome, runs, last failure), by rank."""
        merged: list[Any] = []
        for key in self.groups[shown]:
            seq, runs, ok, label, reads = ws.commands[key]
            failure = ws.errors.get(key)
            if not merged:
                merged = [seq, runs, ok, label, reads, failure]
                continue
            if seq > merged[0]:
                merged[0], merged[2], merged[3] = seq, ok, label
            merged[1] += runs
            merged[4] = merged[4] and reads
            if failure is not None and (merged[5] is None or failure[0] > merged[5][0]):
                merged[5] = failure
        seq, runs, ok, label, reads, failure = merged
        rank = (0 if reads else 1) if failure is None else (2 if ok else 3)
        row = (rank, seq, shown, runs, label, failure)
        form = read_form(shown) if rank == 0 else None
        path = self._canonical(form[0]) if form else None
        was = self.read_file.get(shown)
        if was is not None and was != path:  # no longer a successful read of that file
            del self.read_file[shown], self.file_reads[was][shown]
            self.commands[0].remove(shown)  # shelved on its own while it was the file's only read
            self._file_line(was)
        if form is None or path is None:
            self._rank(self.commands, self.command_rank, shown, rank, seq, row)
            return
        before = self.command_rank.pop(shown, None)
        if before is not None:
            self.commands[before].remove(shown)
        self.read_file[shown] = path
        self.file_reads.setdefault(path, {})[shown] = (seq, form[1], runs, row)
        self._file_line(path)

    def _file_line(self, path: str) -> None:
        """Shelve a file's successful reads: one read as its own row, several as one row of them all (``reads.py``).

        Costs the reads of that one file, never the other commands.
        """
        shelf = self.commands.setdefault(0, Recency())
        reads = self.file_reads.get(path, {})
        shelf.remove(READS_KEY + path)
        for shown in reads:
            shelf.remove(shown)
        if len(reads) == 1:
            ((shown, (seq, _, _, row)),) = reads.items()
            shelf.put(shown, seq, row)
        elif reads:
            listed = tuple(sorted((seq, rest, runs) for seq, rest, runs, _ in reads.values()))
            shelf.put(READS_KEY + path, listed[-1][0], (0, listed[-1][0], path, listed, READ_GROUP, None))
        else:
            self.file_reads.pop(path, None)

    def _error(self, ws: WorkingSet, key: str) -> None:
        """A failure of a call other than a command: its last line, and whether a later call worked."""
        known = ws.errors.get(key)
        if known is None or known[2]:
            rank = self.error_rank.pop(key, None)
            if rank is not None:
                self.errors[rank].remove(key)
            return
        seq, line = known[0], known[1]
        rank = 2 if key in ws.resolved else 3
        self._rank(self.errors, self.error_rank, key, rank, seq, (rank, seq, key, line))

    @staticmethod
    def _rank(shelves: dict[int, Recency], ranks: dict[str, int], key: str, rank: int, seq: int, row: Row) -> None:
        before = ranks.get(key)
        if before is not None and before != rank:
            shelves[before].remove(key)
        ranks[key] = rank
        shelves.setdefault(rank, Recency()).put(key, seq, row)

    # ------------------------------------------------------------------ reading

    def measure(self, count_tokens: Callable[[str], int]) -> Callable[[str], int]:
        """Tokens of a line with its newline, remembered across renders (old items' lines recur in every one)."""
        if self._measured is None or self._measured[0] is not count_tokens:
            for recency in (*self.commands.values(), *self.errors.values()):  # another counter: forget what was
                recency.made.clear()  # made and sized with the last one
            for shelf in (*self.folders[True].values(), *self.folders[False].values()):
                shelf.sizes = {}
            self._measured = (count_tokens, _line_tokens(count_tokens))
        return self._measured[1]


def definition_lines(path: str, written: list[str], removed: list[str]) -> tuple[str, str]:
    """A file's definitions: up to ``DEFINITIONS_KEEP`` written names and ``FOLD_KEEP`` removed ones; and trimmed,
    ``FOLD_KEEP`` written names and the count of the rest ("" when that is the same)."""

    def names(found: list[str], keep: int) -> str:
        more = len(found) - keep
        return ", ".join(found[:keep]) + (f", +{more} more" if more > 0 else "")

    if not written:
        return f"{path}: removed: {names(removed, FOLD_KEEP)}", ""
    gone = f" · removed: {names(removed, FOLD_KEEP)}" if removed else ""
    text = f"{path}: {names(written, DEFINITIONS_KEEP)}{gone}"
    short = f"{path}: {names(written, FOLD_KEEP)}" + (f" · {len(removed)} removed" if removed else "")
    return text, short if short != text else ""


_SHELVES: WeakKeyDictionary[WorkingSet, Shelves] = WeakKeyDictionary()
"""Each working set's shelves (for its current root), kept while it lives so a render redoes only what changed."""


def shelved(ws: WorkingSet) -> Shelves:
    """The shelves for the current root, brought up to date with what was folded since the last look."""
    root = ws.root()
    shelves = _SHELVES.get(ws)
    if shelves is None or shelves.root != root:
        shelves = _SHELVES[ws] = Shelves(ws, root)
    else:
        shelves.refresh(ws, ws.touched)
    ws.touched = Touched()
    return shelves


def _line_tokens(count_tokens: Callable[[str], int]) -> Callable[[str], int]:
    """Tokens of a line with its newline by ``count_tokens``, remembered across renders and working sets (a layout
    runs in a worker thread while another working set's runs on the loop: the oldest counter is let go under a
    lock, since reading it while another thread adds one would fail)."""
    with _LINE_TOKENS_LOCK:
        known = _LINE_TOKENS.get(count_tokens)
        if known is None:
            if len(_LINE_TOKENS) >= COUNTERS_KEPT:
                _LINE_TOKENS.pop(next(iter(_LINE_TOKENS)))
            known = _LINE_TOKENS[count_tokens] = LineTokens(count_tokens)
        return known


class LineTokens:
    """Line token counts in two generations of ``MEASURED_KEEP // 2`` lines: a line found in the older one moves to
    the recent one, and when the recent one is full it becomes the older one. Both are dicts of strings and ints,
    which the collector does not track (an ``lru_cache`` of the same lines held 23,000 references every full
    collection visited at 50,000 messages, issue 48)."""

    __slots__ = ("_count", "_older", "_recent")

    def __init__(self, count_tokens: Callable[[str], int]) -> None:
        self._count = count_tokens
        self._recent: dict[str, int] = {}
        self._older: dict[str, int] = {}

    def __call__(self, line: str) -> int:
        tokens = self._recent.get(line)
        if tokens is None:
            tokens = self._older.pop(line, None)
            if tokens is None:
                tokens = self._count(line + "\n")
            if len(self._recent) >= MEASURED_KEEP // 2:
                self._older, self._recent = self._recent, {}
            self._recent[line] = tokens
        return tokens
