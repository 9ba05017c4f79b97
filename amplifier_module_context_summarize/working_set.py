"""The working set: one deterministic index of the files, commands, errors, ids and URLs a summary stands for.

It ends the ``[CONTEXT SUMMARY]`` message as its own section, rendered from the history (never written
or rewritten by an LLM) for the groups the summary covers:

* files with their state (created, edited, moved, deleted; read or used), one spelling each, relative to
  the workspace root the session shows, changed files first, grouped by folder when room is short;
* the definitions (functions, classes, constants) the changes wrote into each file still there, newest
  change first, and the ones they removed (``definitions.py``);
* commands de-duplicated with their latest outcome, run count and last failure (said to be resolved when
  a later run passed); failures of other tools; identifiers; URLs.

``WorkingSetIndex`` folds groups one by one and keeps the folded state at the furthest end asked for, so
rendering after a compaction costs the new groups, not the history. The text is a function of the history
and the arguments alone, so a resumed session renders it byte for byte the same.

Within ``max_tokens`` the section shrinks along a fixed ladder (``_Layout._ladder``): folders fold to the
names of their files (``- lib/x/ — edited: a.ex · read: b.ex``: nothing lost); then, oldest first, URLs,
succeeded commands (reads first), a command's earlier failures, the older names of read folders
(``lib/x/ — 7 read or used: a.ex, b.ex, c.ex, +4 more``), a file's definitions beyond its newest three,
resolved failures, read folders, definitions, identifiers and failing commands go; only then do changed
folders keep just their newest names, and go. Whatever is dropped is counted in the text (``- +12 more read
or used files in 3 folders``).
"""

from __future__ import annotations

import marshal
import posixpath
import re
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from .ledger import DELETE, EDIT, MOVE, READ, USE, WRITE, CallOutcome, Facts, FileAction, clip, extract
from .messages import Message
from .reads import READ_GROUP, fold_reads

if TYPE_CHECKING:
    from .compaction import Compaction
    from .history import History
    from .state import CompactionState

HEADING = "### Working set"
FOLD_KEEP = 3
"""Names a folded folder still lists (its most recently touched files)."""
DEFINITIONS_KEEP = 8
"""Names of definitions listed per changed file (its newest change's first)."""
COMMAND_MAX_CHARS = 160
READS_KEEP = 3
"""Reads a trimmed folded line still lists (its file's newest)."""
EARLIER_FAILURES = 2
"""Distinct failures of one command kept before its last one (the first lines to go when room is short)."""
ERROR_KEY_MAX_CHARS = 80
URL_MAX_CHARS = 200

# File states, in the order a folder line lists them.
CREATED, EDITED, MOVED, DELETED, READ_STATE, USED = "created", "edited", "moved", "deleted", "read", "used"
MOVED_AWAY = "moved away"
FOLD, TRIM, DROP = "fold", "trim", "drop"
"""Ladder rungs: a folder's files as names under it (nothing lost), its newest names only, or nothing."""
_CHANGED_ORDER = (CREATED, EDITED, MOVED, DELETED)
_SEEN_ORDER = (READ_STATE, USED)

Record = tuple[int, int, str, int, str]
"""Per spelling of a path: first seq, last seq, state, seq of its last change (-1: none), moved from."""


class WorkingSet:
    """The facts of groups ``[0, end)`` folded in order: everything ``render`` needs, nothing per message."""

    def __init__(self) -> None:
        self.seq = 0
        self.files: dict[str, Record] = {}
        self.votes: Counter[str] = Counter()
        """Evidence of the workspace root: folders commands ran in, and ``/abs/x/y`` seen beside ``x/y``."""
        self.folders: Counter[str] = Counter()
        """Ancestor folders of the absolute paths (the fallback root is the deepest holding most of them)."""
        self.absolute = 0
        self.absolute_by_name: dict[str, str | tuple[str, ...]] = {}
        self.relative_by_name: dict[str, str | tuple[str, ...]] = {}
        """Spellings by file name (one string, or a tuple when there are several): the root votes look them up."""
        self.commands: dict[str, tuple[int, int, bool, str, bool]] = {}
        """Command -> (last seq, runs, latest ok, latest label, only reads), in first-run order."""
        self.errors: dict[str, tuple[int, str, bool, tuple[str, ...]]] = {}
        """Command or tool key -> (seq, last failure line, is a command, the distinct failures before it)."""
        self.resolved: dict[str, int] = {}
        """Keys whose last failure a later successful run followed."""
        self.urls: dict[str, int] = {}
        self.ids: dict[str, int] = {}
        self.definitions: dict[str, dict[str, tuple[int, int, bool]]] = {}
        """Path (as spelled) -> name -> (seq of the change that last touched it, place in it, removed)."""

    def copy(self) -> WorkingSet:
        other = WorkingSet()
        other.seq, other.absolute = self.seq, self.absolute
        other.files = dict(self.files)
        other.votes, other.folders = self.votes.copy(), self.folders.copy()
        other.absolute_by_name, other.relative_by_name = dict(self.absolute_by_name), dict(self.relative_by_name)
        other.commands, other.errors, other.resolved = dict(self.commands), dict(self.errors), dict(self.resolved)
        other.urls, other.ids = dict(self.urls), dict(self.ids)
        other.definitions = {path: dict(names) for path, names in self.definitions.items()}
        return other

    # ------------------------------------------------------------------ folding

    def add(self, facts: Facts) -> None:
        for action in facts.files:
            self.seq += 1
            if action.action == MOVE:
                self._touch(action.path, MOVE)
                self._touch(action.target, "moved in", moved_from=action.path)
            else:
                self._touch(action.path, action.action)
        for outcome in facts.outcomes:
            self.seq += 1
            key = outcome.key
            if outcome.command:
                runs = self.commands[key][1] + 1 if key in self.commands else 1
                self.commands[key] = (self.seq, runs, outcome.ok, outcome.label, outcome.reads)
            if not outcome.ok:
                line = outcome.error or "(no output)"
                known = self.errors.get(key)
                earlier: tuple[str, ...] = ()
                if known is not None:
                    earlier = known[3] if known[1] == line else (known[1], *(e for e in known[3] if e != line))
                self.errors[key] = (self.seq, line, outcome.command, earlier[:EARLIER_FAILURES])
                self.resolved.pop(key, None)
            elif key in self.errors and key not in self.resolved:
                self.resolved[key] = self.seq
        for url in facts.urls:
            self.seq += 1
            self.urls[url] = self.seq
        for identifier in facts.identifiers:
            self.seq += 1
            self._identifier(identifier)
        for folder in facts.workdirs:
            self.votes[folder] += 1
        for path, written, removed in facts.definitions:
            self.seq += 1
            names = self.definitions.setdefault(path, {})
            for place, (name, gone) in enumerate([*((n, False) for n in written), *((n, True) for n in removed)]):
                names.pop(name, None)
                names[name] = (self.seq, place, gone)

    def _touch(self, path: str, action: str, moved_from: str = "") -> None:
        record = self.files.get(path)
        if record is None:
            self._register(path)
            record = (self.seq, self.seq, "", -1, "")
        first, _, state, changed, source = record
        if action == READ:
            state = READ_STATE if state in ("", USED) else state
        elif action == USE:
            state = state or USED
        else:
            changed = self.seq
            if action == WRITE:
                state = CREATED if state in ("", CREATED, DELETED, MOVED_AWAY) else EDITED
            elif action == EDIT:
                state = CREATED if state == CREATED else EDITED
            elif action == DELETE:
                state = DELETED
            elif action == MOVE:
                state = MOVED_AWAY
            else:  # moved in
                state, source = MOVED, moved_from
        self.files[path] = (first, self.seq, state, changed, source)

    def _register(self, path: str) -> None:
        """Root evidence from a new spelling: an absolute path that ends with a relative one seen (or vice versa)."""
        name = posixpath.basename(path)
        if path.startswith("/"):
            self.absolute += 1
            parts = path.split("/")[1:-1]
            for depth in range(1, len(parts) + 1):
                self.folders["/" + "/".join(parts[:depth])] += 1
            for relative in _spellings(self.relative_by_name, name):
                if path.endswith("/" + relative):
                    self.votes[path[: -len(relative) - 1]] += 1
            _add_spelling(self.absolute_by_name, name, path)
        elif not path.startswith(("~", "../")):
            relative = path.removeprefix("./")
            for absolute in _spellings(self.absolute_by_name, name):
                if absolute.endswith("/" + relative):
                    self.votes[absolute[: -len(relative) - 1]] += 1
            _add_spelling(self.relative_by_name, name, relative)

    def _identifier(self, identifier: str) -> None:
        """Like the URLs, except that a short commit SHA and a longer one already seen (or vice versa) are one."""
        if identifier not in self.ids and identifier.startswith("commit "):
            for known in self.ids:
                if known.startswith("commit ") and (known.startswith(identifier) or identifier.startswith(known)):
                    self.ids[known] = self.seq
                    return
        self.ids[identifier] = self.seq

    # ------------------------------------------------------------------ reading

    def root(self) -> str | None:
        """The workspace root: the best-evidenced folder, else the deepest one holding most absolute paths."""
        if self.votes:
            return self.votes.most_common(1)[0][0]
        majority = [f for f, n in self.folders.items() if n * 2 > self.absolute]
        if not majority:
            return None
        root = max(majority, key=len)
        parent, name = posixpath.split(root)
        if parent != "/" and name in self._relative_firsts():
            return parent  # relative paths start inside it (``src/x.py`` beside ``/repo/src/y.py``): one level up
        return root

    def _relative_firsts(self) -> set[str]:
        names = self.relative_by_name
        return {r.split("/", 1)[0] for name in names for r in _spellings(names, name) if "/" in r}

    def entries(self) -> list[FileEntry]:
        """One entry per file (spellings merged), in first-seen order, paths relative to ``root()``."""
        root = self.root()
        merged: dict[str, list[Record]] = {}
        for spelling, record in self.files.items():
            merged.setdefault(canonical(spelling, root), []).append(record)
        return [_merge(path, records, root) for path, records in merged.items() if path not in (".", "/")]

    def render(self, max_tokens: int, count_tokens: Callable[[str], int]) -> str:
        """The section within ``max_tokens`` ("" when empty or when not even its counts fit).

        The ladder is searched on an estimate, each distinct line counted once with its newline (within a
        token or two of the whole text's count); the text chosen is then counted whole, and shrunk further
        in the rare case the estimate was short.
        """
        if max_tokens <= 0:
            return ""
        known: dict[str, int] = {}

        def measure(line: str) -> int:
            tokens = known.get(line)
            if tokens is None:
                tokens = known[line] = count_tokens(line + "\n")
            return tokens

        layout = _Layout(self, max_tokens, measure)
        if layout.empty:
            return ""

        def estimate(steps: int) -> int:
            return sum(measure(line) for line in layout.lines(steps))

        low, high = -1, len(layout.ladder)
        while high - low > 1:  # the fewest ladder steps whose estimate fits
            middle = (low + high) // 2
            if estimate(middle) <= max_tokens:
                high = middle
            else:
                low = middle
        for steps in range(high, len(layout.ladder) + 1):
            text = "\n".join(layout.lines(steps))
            if count_tokens(text) <= max_tokens:
                return text
        return ""


def _spellings(index: dict[str, str | tuple[str, ...]], name: str) -> tuple[str, ...]:
    known = index.get(name)
    return () if known is None else (known,) if isinstance(known, str) else known


def _add_spelling(index: dict[str, str | tuple[str, ...]], name: str, spelling: str) -> None:
    index[name] = (*_spellings(index, name), spelling) if name in index else spelling


@dataclass(frozen=True)
class FileEntry:
    path: str
    state: str
    last: int
    moved_from: str = ""

    @property
    def changed(self) -> bool:
        return self.state in _CHANGED_ORDER


def command_in_root(command: str, root: str | None) -> str:
    """``command`` without a leading ``cd <root> &&`` (it ran where the working set's paths are relative to)."""
    prefix = f"cd {root} && " if root else ""
    return command[len(prefix) :] if prefix and command.startswith(prefix) and len(command) > len(prefix) else command


def canonical(path: str, root: str | None) -> str:
    """The one spelling of ``path``: relative to ``root`` when under it, normalised, ``./`` dropped."""
    if path.startswith("~"):
        return path
    normal = posixpath.normpath(path)
    if root and normal.startswith(root + "/"):
        return normal[len(root) + 1 :]
    return "." if normal == root else normal


def _merge(path: str, records: list[Record], root: str | None) -> FileEntry:
    last = max(r[1] for r in records)
    changes = [r for r in records if r[3] >= 0]
    if changes:
        latest = max(changes, key=lambda r: r[3])
        state = latest[2]
        if state == CREATED and any(r[0] < latest[0] for r in records):
            state = EDITED  # another spelling of it was seen before it was written: it existed
    else:
        state = READ_STATE if any(r[2] == READ_STATE for r in records) else USED
    source = next((r[4] for r in sorted(records, key=lambda r: -r[3]) if r[4]), "")
    return FileEntry(path, state, last, canonical(source, root) if source else "")


# ---------------------------------------------------------------------------------------------- layout


@dataclass
class _Folder:
    heading: str
    files: list[FileEntry]
    last: int
    changed: bool
    ident: int = 0


@dataclass
class _Item:
    text: str
    last: int
    short: str = ""
    """The text trimmed (a command's earlier failures left out); "" when there is nothing to trim."""
    rank: int = 0
    """Commands and errors: 0 a read that succeeded, 1 another success, 2 a failure since resolved, 3 failing."""
    ident: int = 0
    commands: int = 1
    """Commands (or errors) the line stands for: a file's folded reads are several."""


def _last(item: _Folder | _Item) -> int:
    return item.last


@dataclass
class _Layout:
    """Every line the section can show, and the ladder of folds and drops that shrinks it, lowest value first.

    What cannot fit whatever else goes is dropped up front and only counted: within each kind (and rank) the
    ladder drops the oldest first, so of the commands and errors only the newest whose lines (at their
    shortest) add up to ``max_tokens`` can ever be shown, and of the rest only the newest ``max_tokens // 3``
    (a line costs at least 3 tokens, an id 2). Rendering thus costs what can be shown, not the history.
    """

    working_set: WorkingSet
    max_tokens: int
    measure: Callable[[str], int]
    """Tokens of one line with its newline (a text costs about the sum of its lines)."""
    root: str | None = None
    changed: list[_Folder] = field(default_factory=list)
    seen: list[_Folder] = field(default_factory=list)
    definitions: list[_Item] = field(default_factory=list)
    commands: list[_Item] = field(default_factory=list)
    errors: list[_Item] = field(default_factory=list)
    ids: list[_Item] = field(default_factory=list)
    urls: list[_Item] = field(default_factory=list)
    ladder: list[tuple[str, int]] = field(default_factory=list)
    relative: bool = False
    in_root: bool = False
    """Some command is shown without its ``cd <root> &&``."""
    folder_lines: dict[tuple[int, str], list[str]] = field(default_factory=dict)
    """A folder's lines by its shape on the ladder, made once per render."""
    gone: Counter[str] = field(default_factory=Counter)
    """Dropped up front, by kind (``changed``/``seen`` count files; ``changed folders``/``seen folders``)."""

    def __post_init__(self) -> None:
        ws = self.working_set
        limit = max(self.max_tokens // 3, 1)
        self.root = ws.root()
        every = ws.entries()
        entries = [e for e in every if e.state != MOVED_AWAY]
        self.relative = self.root is not None and any(not e.path.startswith(("/", "~")) for e in entries)
        self.changed = self._newest_folders(_folders([e for e in entries if e.changed], changed=True), limit)
        self.seen = self._newest_folders(_folders([e for e in entries if not e.changed], changed=False), limit)
        self.definitions = self._definitions({e.path: e.state for e in every}, limit)
        self.commands = self._commands()
        self.errors = self._errors()
        ids = sorted(ws.ids.items(), key=itemgetter(1))[-max(self.max_tokens // 2, 1) :]
        self.gone["id"] = len(ws.ids) - len(ids)
        kept = {identifier for identifier, _ in ids}
        self.ids = [_Item(identifier, seq) for identifier, seq in ws.ids.items() if identifier in kept]
        urls = sorted(ws.urls.items(), key=itemgetter(1))[-limit:]
        self.gone["URL"] = len(ws.urls) - len(urls)
        kept = {url for url, _ in urls}
        self.urls = [_Item(clip(url, URL_MAX_CHARS), seq) for url, seq in ws.urls.items() if url in kept]
        items: list[_Folder | _Item] = [
            *self.changed,
            *self.seen,
            *self.definitions,
            *self.commands,
            *self.errors,
            *self.ids,
            *self.urls,
        ]
        for ident, item in enumerate(items):
            item.ident = ident
        self.ladder = self._ladder()

    @property
    def empty(self) -> bool:
        return not (
            self.changed or self.seen or self.definitions or self.commands or self.errors or self.ids or self.urls
        )

    def _newest_folders(self, folders: list[_Folder], limit: int) -> list[_Folder]:
        if len(folders) <= limit:
            return folders
        newest = {id(f) for f in sorted(folders, key=_last)[-limit:]}
        noun = "changed" if folders[0].changed else "seen"
        for folder in folders:
            if id(folder) not in newest:
                self.gone[noun] += len(folder.files)
                self.gone[f"{noun} folders"] += 1
        return [f for f in folders if id(f) in newest]

    def _definitions(self, states: dict[str, str], limit: int) -> list[_Item]:
        """Per file still there, the names its changes defined (newest change first) and removed; by path."""
        merged: dict[str, dict[str, tuple[int, int, bool]]] = {}
        for spelling, names in self.working_set.definitions.items():
            path = canonical(spelling, self.root)
            if states.get(path) in (DELETED, MOVED_AWAY):
                continue
            known = merged.setdefault(path, {})
            for name, mark in names.items():
                if name not in known or mark[:2] > known[name][:2]:
                    known[name] = mark
        items = []
        for path, names in merged.items():
            order = sorted(names, key=lambda n: (-names[n][0], names[n][1]))
            written = [n for n in order if not names[n][2]]
            removed = [n for n in order if names[n][2]]
            items.append(_definition_item(path, written, removed, max(mark[0] for mark in names.values())))
        if len(items) > limit:
            self.gone["definitions"] = len(items) - limit
            items = sorted(items, key=_last)[-limit:]
        return sorted(items, key=lambda item: item.text)

    def _commands(self) -> list[_Item]:
        """Each command, its latest outcome and run count, and its last failure (said to be resolved if it is).

        A command that ran in the workspace root is shown without its ``cd <root> &&`` (``command_in_root``):
        the section says where paths are relative to, and ``X`` and ``cd <root> && X`` are one command.
        """
        ws = self.working_set
        merged: dict[str, list[Any]] = {}
        for key, (seq, runs, ok, label, reads) in ws.commands.items():
            shown, failure = command_in_root(key, self.root), ws.errors.get(key)
            self.in_root = self.in_root or shown != key
            known = merged.get(shown)
            if known is None:
                merged[shown] = [seq, runs, ok, label, reads, failure]
                continue
            if seq > known[0]:
                known[0], known[2], known[3] = seq, ok, label
            known[1] += runs
            known[4] = known[4] and reads
            if failure is not None and (known[5] is None or failure[0] > known[5][0]):
                known[5] = failure
        ranked = []
        for shown, (seq, runs, ok, label, reads, failure) in merged.items():
            rank = (0 if reads else 1) if failure is None else (2 if ok else 3)
            ranked.append((rank, seq, shown, runs, label, failure))
        ranked = fold_reads(ranked, lambda path: canonical(path, self.root))
        count = sum(len(row[3]) if row[4] is READ_GROUP else 1 for row in ranked)
        items = self._newest_fitting(ranked, self._command_item)
        self.gone["command"] = count - sum(item.commands for item in items)
        return items

    @staticmethod
    def _command_item(row: tuple[Any, ...]) -> _Item:
        rank, seq, key, runs, label, failure = row
        if label is READ_GROUP:
            return _read_group_item(key, runs, seq)
        text = f"`{clip(key, COMMAND_MAX_CHARS)}` — {label}" + (f", {runs} runs" if runs > 1 else "")
        if failure is None:
            return _Item(text, seq, rank=rank)
        _, line, _, earlier = failure
        text = f"{text}: {line}" if rank == 3 else f"{text}; an earlier failure is resolved: {line}"
        history = f" (failed before with: {'; '.join(earlier)})" if earlier else ""
        return _Item(text + history, seq, short=text if earlier else "", rank=rank)

    def _newest_fitting(self, ranked: list[tuple[Any, ...]], make: Callable[[tuple[Any, ...]], _Item]) -> list[_Item]:
        """Per rank, items made newest first until their shortest lines alone pass the room; oldest first."""
        items = []
        for rank in sorted({row[0] for row in ranked}):
            room = self.max_tokens
            for row in sorted((row for row in ranked if row[0] == rank), key=itemgetter(1), reverse=True):
                item = make(row)
                room -= self.measure(f"- {item.short or item.text}")
                if room < 0:
                    break
                items.append(item)
        return sorted(items, key=_last)

    def _errors(self) -> list[_Item]:
        """Failures of calls other than commands: the last of each tool and path, and whether a later call worked."""
        ws = self.working_set
        ranked = [
            (2 if key in ws.resolved else 3, seq, key, line)
            for key, (seq, line, command, _) in ws.errors.items()
            if not command
        ]
        items = self._newest_fitting(ranked, self._error_item)
        self.gone["error"] = len(ranked) - len(items)
        return items

    def _error_item(self, row: tuple[Any, ...]) -> _Item:
        rank, seq, key, line = row
        note = " — resolved: a later call succeeded" if rank == 2 else ""
        return _Item(f"{self._relative_key(key)}: {line}{note}", seq, rank=rank)

    def _relative_key(self, key: str) -> str:
        name, _, path = key.partition(" ")
        return clip(f"{name} {canonical(path, self.root)}" if path else name, ERROR_KEY_MAX_CHARS)

    def _ladder(self) -> list[tuple[str, int]]:
        def oldest(items: Iterable[_Folder | _Item]) -> list[_Folder | _Item]:
            return sorted(items, key=_last)

        steps: list[tuple[str, int]] = []
        steps += [(FOLD, f.ident) for f in oldest(self.seen) if len(f.files) > 1]
        steps += [(FOLD, f.ident) for f in oldest(self.changed) if len(f.files) > 1]
        calls = [*self.commands, *self.errors]
        steps += [(DROP, u.ident) for u in oldest(self.urls)]
        steps += [(TRIM, c.ident) for c in oldest(c for c in calls if c.rank == 0 and c.short)]
        steps += [(DROP, c.ident) for c in oldest(c for c in calls if c.rank == 0)]
        steps += [(DROP, c.ident) for c in oldest(c for c in calls if c.rank == 1)]
        steps += [(TRIM, c.ident) for c in oldest(c for c in calls if c.rank > 0 and c.short)]
        steps += [(TRIM, f.ident) for f in oldest(self.seen) if len(f.files) > FOLD_KEEP + 1]
        steps += [(TRIM, d.ident) for d in oldest(self.definitions) if d.short]
        steps += [(DROP, c.ident) for c in oldest(c for c in calls if c.rank == 2)]
        steps += [(DROP, f.ident) for f in oldest(self.seen)]
        steps += [(DROP, d.ident) for d in oldest(self.definitions)]
        steps += [(DROP, i.ident) for i in oldest(self.ids)]
        steps += [(DROP, c.ident) for c in oldest(c for c in calls if c.rank == 3)]
        steps += [(TRIM, f.ident) for f in oldest(self.changed) if len(f.files) > FOLD_KEEP + 1]
        steps += [(DROP, f.ident) for f in oldest(self.changed)]
        return steps

    def lines(self, steps: int) -> list[str]:
        """The section's lines after the first ``steps`` rungs of the ladder."""
        shape: dict[int, str] = {}
        for kind, ident in self.ladder[:steps]:
            shape[ident] = kind
        lines = [HEADING]
        if self.relative:
            cd = f" Commands run there are shown without `cd {self.root} &&`." if self.in_root else ""
            lines.append(f"Paths are relative to {self.root}.{cd}")
        for title, folders, kind, noun in (
            ("Files changed:", self.changed, "changed", "changed"),
            ("Files read or used:", self.seen, "seen", "read or used"),
        ):
            if not folders:
                continue
            lines.append(title)
            for folder in folders:
                key = (folder.ident, shape.get(folder.ident, ""))
                shown = self.folder_lines.get(key)
                if shown is None:
                    shown = self.folder_lines[key] = _folder_lines(folder, key[1])
                lines += shown
            gone = [f for f in folders if shape.get(f.ident) == DROP]
            files = sum(len(f.files) for f in gone) + self.gone[kind]
            if files:
                where = len(gone) + self.gone[f"{kind} folders"]
                lines.append(f"- +{files} more {noun} {_noun(files, 'file')} in {where} {_noun(where, 'folder')}")
        if self.definitions:
            lines.append("Definitions written (newest first; · removed):")
            for item in self.definitions:
                if item.ident not in shape:
                    lines.append(f"- {item.text}")
                elif shape[item.ident] == TRIM:
                    lines.append(f"- {item.short}")
            gone_count = sum(1 for d in self.definitions if shape.get(d.ident) == DROP) + self.gone["definitions"]
            if gone_count:
                lines.append(f"- +{gone_count} more changed {_noun(gone_count, 'file')} with definitions")
        for title, items, noun in (
            ("Commands (latest outcome, last failure):", self.commands, "command"),
            ("Tool errors (last failure of each):", self.errors, "error"),
        ):
            if not items:
                continue
            lines.append(title)
            gone_count = sum(item.commands for item in items if shape.get(item.ident) == DROP) + self.gone[noun]
            if gone_count:
                lines.append(f"- +{gone_count} earlier {_noun(gone_count, noun)}")
            for item in items:
                if item.ident not in shape:
                    lines.append(f"- {item.text}")
                elif shape[item.ident] == TRIM:
                    lines.append(f"- {item.short}")
        if self.ids:
            kept_ids = [item.text for item in self.ids if item.ident not in shape]
            gone_count = len(self.ids) - len(kept_ids) + self.gone["id"]
            prefix = f"(+{gone_count} more) " if gone_count else ""
            lines.append(f"Identifiers: {prefix}{', '.join(kept_ids)}".rstrip())
        if self.urls:
            lines.append("URLs:")
            lines += [f"- {item.text}" for item in self.urls if item.ident not in shape]
            gone_count = sum(1 for item in self.urls if item.ident in shape) + self.gone["URL"]
            if gone_count:
                lines.append(f"- +{gone_count} more {_noun(gone_count, 'URL')}")
        return lines


def _folders(entries: list[FileEntry], changed: bool) -> list[_Folder]:
    by_folder: dict[str, list[FileEntry]] = {}
    for entry in entries:
        by_folder.setdefault(posixpath.dirname(entry.path), []).append(entry)
    return [
        _Folder(f"{folder}/" if folder not in ("", "/") else folder or "./", files, max(e.last for e in files), changed)
        for folder, files in sorted(by_folder.items())
    ]


def _folder_lines(folder: _Folder, shape: str) -> list[str]:
    """A folder's files: a line each with its whole path; folded, one line of names; trimmed, the newest names."""
    order = _CHANGED_ORDER if folder.changed else _SEEN_ORDER
    if shape == DROP:
        return []
    if not shape:
        files = sorted(folder.files, key=lambda e: (order.index(e.state), e.path))
        return [f"- {_with_source(e.path, e)} — {e.state}" for e in files]
    if shape == FOLD:
        parts = []
        for state in order:
            names = sorted(_with_source(posixpath.basename(e.path), e) for e in folder.files if e.state == state)
            if names:
                parts.append(f"{state}: {', '.join(names)}")
        return [f"- {folder.heading} — {' · '.join(parts)}"]
    recent = sorted(folder.files, key=lambda e: -e.last)[:FOLD_KEEP]
    names = [*sorted(posixpath.basename(e.path) for e in recent), f"+{len(folder.files) - len(recent)} more"]
    counts = Counter(e.state for e in folder.files)
    if folder.changed:
        detail = ", ".join(f"{counts[s]} {s}" for s in order if counts[s])
        return [f"- {folder.heading} — {len(folder.files)} changed ({detail}): {', '.join(names)}"]
    return [f"- {folder.heading} — {len(folder.files)} read or used: {', '.join(names)}"]


def _read_group_item(path: str, reads: list[tuple[Any, ...]], last: int) -> _Item:
    """One file's successful reads on one line (``reads.py``), oldest first; trimmed, the newest few."""

    def shown(rest: str, runs: int) -> str:
        return f"`{clip(rest, COMMAND_MAX_CHARS)}`" + (f" ×{runs}" if runs > 1 else "")

    listed = [shown(rest, runs) for _, rest, runs, _ in reads]
    text = f"{path}{READ_GROUP}{' · '.join(listed)}"
    short = ""
    if len(listed) > READS_KEEP:
        short = f"{path}{READ_GROUP}(+{len(listed) - READS_KEEP} earlier) {' · '.join(listed[-READS_KEEP:])}"
    return _Item(text, last, short=short, rank=0, commands=len(reads))


def _definition_item(path: str, written: list[str], removed: list[str], last: int) -> _Item:
    """A file's definitions: up to ``DEFINITIONS_KEEP`` written names and ``FOLD_KEEP`` removed ones; trimmed,
    ``FOLD_KEEP`` written names and the count of the rest."""

    def names(found: list[str], keep: int) -> str:
        more = len(found) - keep
        return ", ".join(found[:keep]) + (f", +{more} more" if more > 0 else "")

    if not written:
        return _Item(f"{path}: removed: {names(removed, FOLD_KEEP)}", last)
    gone = f" · removed: {names(removed, FOLD_KEEP)}" if removed else ""
    text = f"{path}: {names(written, DEFINITIONS_KEEP)}{gone}"
    short = f"{path}: {names(written, FOLD_KEEP)}" + (f" · {len(removed)} removed" if removed else "")
    return _Item(text, last, short=short if short != text else "")


def _with_source(name: str, entry: FileEntry) -> str:
    return f"{name} (from {entry.moved_from})" if entry.moved_from else name


def _noun(count: int, noun: str) -> str:
    return noun if count == 1 else noun + "s"


# ---------------------------------------------------------------------------------------------- index


class FactsLog:
    """The facts of closed groups in order, kept compressed in blocks of ``BLOCK`` groups.

    They are read back only to fold a nearer end than the furthest one, which normal use never asks for;
    kept as objects they would cost more than the rest of the manager's own memory per message.
    """

    BLOCK = 64

    def __init__(self) -> None:
        self._blocks: list[bytes] = []
        self._open: list[Facts] = []

    def __len__(self) -> int:
        return len(self._blocks) * self.BLOCK + len(self._open)

    def append(self, facts: Facts) -> None:
        self._open.append(facts)
        if len(self._open) == self.BLOCK:
            self._blocks.append(zlib.compress(marshal.dumps([_plain(f) for f in self._open])))
            self._open = []

    def __getitem__(self, group: int) -> Facts:
        block, offset = divmod(group, self.BLOCK)
        if block == len(self._blocks):
            return self._open[offset]
        return _facts(marshal.loads(zlib.decompress(self._blocks[block]))[offset])

    def first(self, count: int) -> Iterator[Facts]:
        """The facts of groups ``[0, count)``, each block decompressed once."""
        for block in self._blocks[: -(-count // self.BLOCK)]:
            for plain in marshal.loads(zlib.decompress(block))[:count]:
                yield _facts(plain)
            count -= self.BLOCK
        yield from self._open[: max(count, 0)]


def _plain(facts: Facts) -> tuple[Any, ...]:
    files = tuple((f.action, f.path, f.target) for f in facts.files)
    outcomes = tuple((o.key, o.command, o.ok, o.label, o.error, o.reads) for o in facts.outcomes)
    return (files, outcomes, facts.urls, facts.identifiers, facts.workdirs, facts.definitions)


def _facts(plain: Any) -> Facts:
    files, outcomes, urls, identifiers, workdirs, definitions = plain
    return Facts(
        tuple(FileAction(*f) for f in files),
        tuple(CallOutcome(*o) for o in outcomes),
        urls,
        identifiers,
        workdirs,
        definitions,
    )


class WorkingSetIndex:
    """The working set of a ``History``, folded group by group and rendered for any end.

    Each closed group is extracted once (``extract`` on the group as a view shows it) and its facts kept
    (``FactsLog``); the folded state at the furthest end asked for is kept too, so a further end folds only
    the new groups. A nearer end is folded again from the kept facts. The newest group may still change, so
    it is read afresh and never kept.
    """

    def __init__(self, history: History) -> None:
        self.history = history
        self._facts = FactsLog()
        self._state = WorkingSet()
        self._end = 0
        self._rendered: tuple[tuple[int, int, Callable[[str], int]], str] | None = None

    def _closed(self) -> int:
        return max(len(self.history.groups) - 1, 0)

    def facts(self, group: int) -> Facts:
        """The facts of one group (kept once the group is closed)."""
        kept, closed = self._facts, self._closed()
        while len(kept) <= group and len(kept) < closed:
            kept.append(extract(self.history.shown(len(kept))))
        return kept[group] if group < len(kept) else extract(self.history.shown(group))

    def state(self, end_group: int) -> WorkingSet:
        """The facts of groups ``[0, end_group)`` folded (the kept state itself when it is the furthest)."""
        end = max(min(end_group, len(self.history.groups)), 0)
        closed = min(end, self._closed())
        if closed >= self._end:
            for group in range(self._end, closed):
                self._state.add(self.facts(group))
            self._end = closed
            folded = self._state
        else:
            folded = WorkingSet()
            for facts in self._facts.first(closed):
                folded.add(facts)
        if end > closed:
            folded = folded.copy() if folded is self._state else folded
            for group in range(closed, end):
                folded.add(self.facts(group))
        return folded

    def render(self, end_group: int, max_tokens: int, count_tokens: Callable[[str], int]) -> str:
        """The ``### Working set`` section for groups ``[0, end_group)`` within ``max_tokens`` ("" if empty)."""
        key = (end_group, max_tokens, count_tokens)
        if self._rendered is not None and self._rendered[0] == key:
            return self._rendered[1]
        text = self.state(end_group).render(max_tokens, count_tokens)
        if end_group <= self._closed():
            self._rendered = (key, text)
        return text


def working_set_room(state: CompactionState, working_set_tokens: int, summary_room: int) -> int:
    """The working set's own share, or more: what the segment summaries leave of the summary's room.

    Short summaries (a terse model, a freshly merged tier) would otherwise leave room unused while the
    working set drops its oldest commands. The segments' sizes are part of the state, so a resumed session
    gives the working set the same room and renders the same text.
    """
    if working_set_tokens <= 0:
        return 0
    return max(working_set_tokens, summary_room - sum(segment.tokens for segment in state.segments))


def shown_tokens(job: Compaction, state: CompactionState) -> int:
    """Tokens the working set takes in ``state``'s summary message (the segment summaries share the rest)."""
    if not state.segments:
        return 0
    history = job.history
    count = history.counter.count_text
    room = working_set_room(state, job.working_set_tokens, job.summary_room)
    text = history.working_set.render(state.segments[-1].end, room, count)
    return count(text) if text else 0


def working_set_of(messages: list[Message]) -> WorkingSet:
    """The working set of a plain list of messages (no history): the evaluation's reference spans."""
    folded = WorkingSet()
    folded.add(extract(messages))
    return folded


# ---------------------------------------------------------------------------------------------- naming


_PATH_CHAR = r"[\w.~+@/-]"


def named_files(text: str, paths: list[str]) -> list[str]:
    """Which of ``paths`` ``text`` names: the path itself, or its file name on a line that names its folder.

    A folder is named when ``folder/`` stands on its own (not inside a longer path), and the file name must
    follow it on the same line as a whole word: the grouped lines of the working set (``- lib/a/ — edited:
    x.ex, y.ex``) name every file they list, and so does any summary that writes them that way.
    """
    lowered = text.lower()
    lines = lowered.splitlines()
    found = []
    for path in paths:
        spelled = path.lower()
        if spelled in lowered:
            found.append(path)
            continue
        folder, name = posixpath.split(spelled)
        if not folder:
            continue
        heading = re.compile(rf"(?<!{_PATH_CHAR}){re.escape(folder.rstrip('/'))}/(?!{_PATH_CHAR})")
        word = re.compile(rf"(?<!{_PATH_CHAR}){re.escape(name)}(?![\w/-]|\.\w)")
        for line in lines:
            match = heading.search(line) if folder.rstrip("/") in line else None
            if match and word.search(line, match.end()):
                found.append(path)
                break
    return found
