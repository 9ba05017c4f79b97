"""The working set: one deterministic index of the files, commands, errors, ids and URLs a summary stands for.

It ends the ``[CONTEXT SUMMARY]`` message as its own section, rendered from the history (never written
or rewritten by an LLM) for the groups the summary covers:

* files with their state (created, edited, moved, deleted; read or used), one spelling each, relative to
  the workspace root the session shows, changed files first, grouped by folder when room is short;
* the definitions (functions, classes, constants) the changes wrote into each file still there, newest
  change first, and the ones they removed (``definitions.py``);
* commands de-duplicated with their latest outcome, run count and last failure (said to be resolved when
  a later run passed), a file's successful one-file reads sharing one line (``reads.py``); failures of
  other tools; identifiers; URLs.

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
from dataclasses import dataclass, field, replace
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from .ledger import DELETE, EDIT, MOVE, READ, USE, WRITE, CallOutcome, Facts, FileAction, clip, extract
from .messages import Message
from .reads import READ_GROUP

if TYPE_CHECKING:
    from .compaction import Compaction
    from .history import History
    from .shelves import Recency, Shelves
    from .state import CompactionState

HEADING = "### Working set"
FOLD_KEEP = 3
"""Names a folded folder still lists (its most recently touched files)."""
DEFINITIONS_KEEP = 8
"""Names of definitions listed per changed file (its newest change's first)."""
COMMAND_MAX_CHARS = 160
EARLIER_FAILURES = 2
"""Distinct failures of one command kept before its last one (the first lines to go when room is short)."""
ERROR_KEY_MAX_CHARS = 80
URL_MAX_CHARS = 200
COMMIT_KEY = len("commit ") + 7
"""A commit id's characters up to its shortest SHA (7 hex digits)."""

# File states, in the order a folder line lists them.
CREATED, EDITED, MOVED, DELETED, READ_STATE, USED = "created", "edited", "moved", "deleted", "read", "used"
MOVED_AWAY = "moved away"
FOLD, TRIM, DROP = "fold", "trim", "drop"
"""Ladder rungs: a folder's files as names under it (nothing lost), its newest names only, or nothing."""
_CHANGED_ORDER = (CREATED, EDITED, MOVED, DELETED)
_SEEN_ORDER = (READ_STATE, USED)

Record = tuple[int, int, str, int, str]
"""Per spelling of a path: first seq, last seq, state, seq of its last change (-1: none), moved from."""


@dataclass
class Touched:
    """Keys the folding changed since the render last looked, in the order they were first touched: what the
    shelves (``shelves.py``) must redo."""

    files: dict[str, None] = field(default_factory=dict)
    definitions: dict[str, None] = field(default_factory=dict)
    commands: dict[str, None] = field(default_factory=dict)
    errors: dict[str, None] = field(default_factory=dict)
    ids: dict[str, None] = field(default_factory=dict)
    urls: dict[str, None] = field(default_factory=dict)


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
        self.leader: str | None = None
        """The most voted folder (the first to reach the count on a tie), kept as votes come in."""
        self.vote_order: dict[str, int] = {}
        self.best_child: dict[str, str] = {}
        """Folder (``""`` above the top ones) -> its subfolder holding the most absolute paths."""
        self.relative_firsts: set[str] = set()
        """First folder names of the relative spellings (``src`` of ``src/x.py``)."""
        self.commits: dict[str, list[str]] = {}
        """Commit ids by their first ``COMMIT_KEY`` characters (``""``: shorter ones)."""
        self.commit_order: dict[str, int] = {}
        self.touched = Touched()
        self.shelves: Shelves | None = None

    def copy(self) -> WorkingSet:
        other = WorkingSet()
        other.seq, other.absolute = self.seq, self.absolute
        other.files = dict(self.files)
        other.votes, other.folders = self.votes.copy(), self.folders.copy()
        other.absolute_by_name, other.relative_by_name = dict(self.absolute_by_name), dict(self.relative_by_name)
        other.commands, other.errors, other.resolved = dict(self.commands), dict(self.errors), dict(self.resolved)
        other.urls, other.ids = dict(self.urls), dict(self.ids)
        other.definitions = {path: dict(names) for path, names in self.definitions.items()}
        other.leader, other.vote_order = self.leader, dict(self.vote_order)
        other.best_child, other.relative_firsts = dict(self.best_child), set(self.relative_firsts)
        other.commits = {key: list(bucket) for key, bucket in self.commits.items()}
        other.commit_order = dict(self.commit_order)
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
        touched = self.touched
        for outcome in facts.outcomes:
            self.seq += 1
            key = outcome.key
            touched.errors[key] = None
            if outcome.command:
                touched.commands[key] = None
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
            touched.urls[url] = None
        for identifier in facts.identifiers:
            self.seq += 1
            self._identifier(identifier)
        for folder in facts.workdirs:
            self._vote(folder)
        for path, written, removed in facts.definitions:
            self.seq += 1
            touched.definitions[path] = None
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
        self.touched.files[path] = None

    def _register(self, path: str) -> None:
        """Root evidence from a new spelling: an absolute path that ends with a relative one seen (or vice versa)."""
        name = posixpath.basename(path)
        if path.startswith("/"):
            self.absolute += 1
            parts = path.split("/")[1:-1]
            parent = ""
            for depth in range(1, len(parts) + 1):
                folder = "/" + "/".join(parts[:depth])
                self.folders[folder] += 1
                best = self.best_child.get(parent)
                if best is None or self.folders[folder] > self.folders[best]:
                    self.best_child[parent] = folder
                parent = folder
            for relative in _spellings(self.relative_by_name, name):
                if path.endswith("/" + relative):
                    self._vote(path[: -len(relative) - 1])
            _add_spelling(self.absolute_by_name, name, path)
        elif not path.startswith(("~", "../")):
            relative = path.removeprefix("./")
            for absolute in _spellings(self.absolute_by_name, name):
                if absolute.endswith("/" + relative):
                    self._vote(absolute[: -len(relative) - 1])
            _add_spelling(self.relative_by_name, name, relative)
            if "/" in relative:
                self.relative_firsts.add(relative.split("/", 1)[0])

    def _vote(self, folder: str) -> None:
        """One more vote for ``folder`` as the root; the leader is ``votes.most_common(1)``'s, kept as it goes."""
        votes = self.votes
        votes[folder] += 1
        order = self.vote_order.setdefault(folder, len(self.vote_order))
        leader = self.leader
        if leader is None or (votes[folder], -order) > (votes[leader], -self.vote_order[leader]):
            self.leader = folder

    def _identifier(self, identifier: str) -> None:
        """Like the URLs, except that a short commit SHA and a longer one already seen (or vice versa) are one.

        Commits that are one share their first ``COMMIT_KEY`` characters unless one is shorter: only those
        are compared (and every commit, for a short one), the first seen winning.
        """
        if identifier not in self.ids and identifier.startswith("commit "):
            commits = self.commits
            if len(identifier) >= COMMIT_KEY:
                candidates = [*commits.get("", ()), *commits.get(identifier[:COMMIT_KEY], ())]
            else:
                candidates = [known for bucket in commits.values() for known in bucket]
            matches = [k for k in candidates if k.startswith(identifier) or identifier.startswith(k)]
            if matches:
                known = min(matches, key=self.commit_order.__getitem__)
                self.ids[known] = self.seq
                self.touched.ids[known] = None
                return
            self.commit_order[identifier] = len(self.commit_order)
            commits.setdefault(identifier[:COMMIT_KEY] if len(identifier) >= COMMIT_KEY else "", []).append(identifier)
        self.ids[identifier] = self.seq
        self.touched.ids[identifier] = None

    # ------------------------------------------------------------------ reading

    def root(self) -> str | None:
        """The workspace root: the best-evidenced folder, else the deepest one holding most absolute paths.

        Folders holding most absolute paths nest, so the deepest is found by walking down the subfolders
        that hold the most: the cost is the root's depth, not the number of folders ever seen.
        """
        if self.votes:
            return self.leader
        root = ""
        while (child := self.best_child.get(root)) is not None and self.folders[child] * 2 > self.absolute:
            root = child
        if not root:
            return None
        parent, name = posixpath.split(root)
        if parent != "/" and name in self.relative_firsts:
            return parent  # relative paths start inside it (``src/x.py`` beside ``/repo/src/y.py``): one level up
        return root

    def shelved(self) -> Shelves:
        """The shelves for the current root, brought up to date with what was folded since the last look."""
        from .shelves import Shelves  # it arranges this module's records: imported when first needed

        root = self.root()
        if self.shelves is None or self.shelves.root != root:
            self.shelves = Shelves(self, root)
        else:
            self.shelves.refresh(self, self.touched)
        self.touched = Touched()
        return self.shelves

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
        token or two of the whole text's count; ``ladder_tokens.py`` works it out per step without writing the
        lines); the text chosen is then counted whole, and shrunk further in the rare case the estimate was short.
        """
        if max_tokens <= 0:
            return ""
        shelves = self.shelved()
        return search(_Layout(shelves, self, max_tokens, shelves.measure(count_tokens)), count_tokens)


def search(layout: _Layout, count_tokens: Callable[[str], int]) -> str:
    """The text of the fewest ladder steps that fits ``layout.max_tokens`` ("" if none does)."""
    from .ladder_tokens import LadderTokens  # it reads the layout this module makes: imported when needed

    max_tokens = layout.max_tokens
    if layout.empty:
        return ""
    estimate = LadderTokens(layout).at
    hidden, first = layout.hidden_rungs, layout.first_fitting
    low, high = -1, len(layout.ladder) + hidden
    while high - low > 1:  # the fewest ladder steps whose estimate fits (counted on the count cut's ladder)
        middle = (low + high) // 2
        if middle >= first and estimate(middle - hidden) <= max_tokens:
            high = middle
        else:
            low = middle
    for steps in range(high - hidden, len(layout.ladder) + 1):
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
    lines: dict[str, list[str]] = field(default_factory=dict)
    """Its lines by ladder shape (the shelf's: kept while the folder does not change)."""


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
    (a line costs at least 3 tokens, an id 2). Rendering thus costs what can be shown, not the history: the
    shelves hand each kind over newest first, already merged under the root.

    Folders, definitions and URLs are cut the same way as commands, by their shortest lines. The ladder they
    were first cut by (a count) is kept in view: ``hidden_rungs`` of its rungs concern what the cut left out,
    all before ``first_fitting``, and no step before that can fit (a kind's newest lines alone pass the room),
    so ``WorkingSet.render`` searches that ladder's steps as before and reads them off this shorter one.
    """

    shelves: Shelves
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
    gone: Counter[str] = field(default_factory=Counter)
    """Dropped up front, by kind (``changed``/``seen`` count files; ``changed folders``/``seen folders``)."""
    present: set[str] = field(default_factory=set)
    """Kinds of folders, definitions, commands, identifiers and URLs with anything at all (shown or only counted):
    their titles (or the identifiers line) show."""
    unshown: Counter[str] = field(default_factory=Counter)
    """Per ladder segment, the rungs of what the cut by shortest lines left out."""
    fit: bool = True
    """Cut folders, definitions and URLs by their shortest lines too (False: by count alone, as the layout did
    before; the tests render both ways and compare)."""
    segments: list[int] = field(default_factory=list)
    """Lengths of the ladder's segments (a kind of rung on a kind of item each), in ladder order."""
    hidden_rungs: int = 0
    first_fitting: int = 0

    def __post_init__(self) -> None:
        ws, shelves = self.working_set, self.shelves
        limit = max(self.max_tokens // 3, 1)
        self.root = shelves.root
        self.relative = self.root is not None and shelves.relative_entries > 0
        commands = self._commands()
        if any(commands.values()):
            self.present.add("command")
        self.errors = self._errors()
        # Kinds from the last the ladder drops to the first: while anything of a kind shows, all that is dropped
        # after it shows too, so its room is what their shortest lines leave (``_place_unshown`` relies on it).
        later = 0
        self.changed, tokens = self._fitting_folders(True, limit, self.max_tokens - later)
        later += tokens + self._calls_tokens(commands, 3)
        ids = shelves.newest(shelves.ids, shelves.id_order, max(self.max_tokens // 2, 1))
        if ids:
            self.present.add("id")
        if self.fit and later > self.max_tokens:  # no room left for any identifier (their one line is not cut)
            self.unshown["id"], ids = len(ids), []
        self.gone["id"] = len(ws.ids) - len(ids)
        self.definitions, tokens = self._definitions(limit, self.max_tokens - later)
        later += tokens
        self.seen, tokens = self._fitting_folders(False, limit, self.max_tokens - later)
        later += tokens + self._calls_tokens(commands, 2)
        for rank in (1, 0):  # succeeded commands: only dropped, never trimmed, so cut like the folders
            kept = self._fitting_calls(commands.get(rank, []), self.max_tokens - later, f"rank {rank}")
            later += self._calls_tokens(commands, rank)
            commands[rank] = kept
        self.commands = sorted((replace(item) for made in commands.values() for item, _ in made), key=_last)
        self.gone["command"] = len(shelves.groups) - sum(item.commands for item in self.commands)
        self.ids = [_Item(identifier, ws.ids[identifier]) for identifier in ids]
        urls = self._fitting_urls(limit, self.max_tokens - later)
        self.gone["URL"] = len(ws.urls) - len(urls)
        self.urls = [_Item(clip(url, URL_MAX_CHARS), ws.urls[url]) for url in urls]
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
        self._place_unshown()

    @property
    def empty(self) -> bool:
        return not (self.present or self.commands or self.errors)

    def _fitting_folders(self, changed: bool, limit: int, room: int) -> tuple[list[_Folder], int]:
        """The newest folders whose shortest lines add up to ``room``, by name, the rest only counted; and the
        tokens of the shortest lines taken (past ``room``: nothing before this kind can show)."""
        shelves, kind = self.shelves, "changed" if changed else "seen"
        count = shelves.counts[changed]
        if count["folders"]:
            self.present.add(kind)
        if count["folders"] > limit or not self.fit:  # the count cut: every folder it keeps (rare; not bounded)
            folders = self._newest_folders(_folders(shelves, changed), limit)
            return folders, sum(self._shortest_folder(folder) for folder in folders)
        kept, tokens = [], 0
        for name in shelves.folder_recency[changed].newest() if room >= 0 else ():
            shelf = shelves.folders[changed][name]
            folder = _Folder(shelf.heading, shelf.entries(), shelf.last, changed, lines=shelf.lines)
            tokens += self._shortest_folder(folder)
            if tokens > room:
                break
            kept.append((name, folder))
        folders = [folder for _, folder in sorted(kept, key=itemgetter(0))]
        unshown = self.unshown
        unshown[kind] = count["folders"] - len(folders)
        unshown[f"{kind} several"] = count["several"] - sum(len(f.files) > 1 for f in folders)
        unshown[f"{kind} many"] = count["many"] - sum(len(f.files) > FOLD_KEEP + 1 for f in folders)
        self.gone[kind] += count["files"] - sum(len(f.files) for f in folders)
        self.gone[f"{kind} folders"] += unshown[kind]
        return folders, tokens

    def _shortest_folder(self, folder: _Folder) -> int:
        """Tokens of the folder's lines in its shortest shape on the ladder."""
        shapes = [
            "",
            *([FOLD] if len(folder.files) > 1 else []),
            *([TRIM] if len(folder.files) > FOLD_KEEP + 1 else []),
        ]
        return min(sum(self.measure(line) for line in _shaped(folder, shape)) for shape in shapes)

    def _shortest_item(self, item: _Item) -> int:
        full = self.measure(f"- {item.text}")
        return min(full, self.measure(f"- {item.short}")) if item.short else full

    def _calls_tokens(self, commands: dict[int, list[tuple[_Item, int]]], rank: int) -> int:
        """Tokens of the shortest lines of the commands and errors of ``rank`` the count cut keeps."""
        calls = [item for item, _ in commands.get(rank, [])] + [c for c in self.errors if c.rank == rank]
        return sum(self._shortest_item(c) for c in calls)

    def _fitting_calls(self, made: list[tuple[_Item, int]], room: int, segment: str) -> list[tuple[_Item, int]]:
        """The newest of ``made`` (newest first, with their lines' tokens) whose lines add up to ``room``.

        Only for calls the ladder never trims: the rungs of those left out must be the first of their segments.
        """
        if not self.fit or any(item.short for item, _ in made):
            return made
        kept, tokens = [], 0
        for each in made if room >= 0 else ():
            tokens += each[1]
            if tokens > room:
                break
            kept.append(each)
        self.unshown[segment] = len(made) - len(kept)
        return kept

    def _fitting_urls(self, limit: int, room: int) -> list[str]:
        """The newest URLs whose lines add up to ``room``, in first-seen order."""
        shelves = self.shelves
        if shelves.urls:
            self.present.add("URL")
        if len(shelves.urls) > limit or not self.fit:
            return shelves.newest(shelves.urls, shelves.url_order, limit)
        kept, tokens = [], 0
        for url in shelves.urls.newest() if room >= 0 else ():
            tokens += self.measure(f"- {clip(url, URL_MAX_CHARS)}")
            if tokens > room:
                break
            kept.append(url)
        self.unshown["URL"] = len(shelves.urls) - len(kept)
        return sorted(kept, key=shelves.url_order.__getitem__)

    def _place_unshown(self) -> None:
        """Where the rungs of what the cuts by shortest lines left out stood on the ladder a count cut gives.

        Each is among the first rungs of its segment (the oldest go first), so the segments' lengths place them.
        """
        u = self.unshown
        unshown = [
            *(u["seen several"], u["changed several"], u["URL"], u["rank 0"], u["rank 1"], 0, u["seen many"]),
            *(u["trimmable definitions"], 0, u["seen"], u["definitions"], u["id"], 0, u["changed many"], u["changed"]),
        ]
        start = 0
        for length, hidden in zip(self.segments, unshown, strict=True):
            if hidden:
                self.first_fitting = start + hidden
            start += length + hidden
        self.hidden_rungs = sum(unshown)

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

    def _definitions(self, limit: int, room: int) -> tuple[list[_Item], int]:
        """Per file still there, the names its changes defined (newest change first) and removed; by path. The
        newest whose shortest lines add up to ``room`` (the rest only counted), and the tokens of those lines."""
        shelves = self.shelves
        if shelves.definition_items:
            self.present.add("definitions")
        if len(shelves.definition_items) <= limit and self.fit:
            items, tokens = [], 0
            for path in shelves.definition_recency.newest() if room >= 0 else ():
                text, short, last = shelves.definition_items[path]
                item = _Item(text, last, short=short)
                tokens += self._shortest_item(item)
                if tokens > room:
                    break
                items.append(item)
            self.unshown["definitions"] = len(shelves.definition_items) - len(items)
            self.unshown["trimmable definitions"] = shelves.trimmable - sum(1 for item in items if item.short)
            self.gone["definitions"] = self.unshown["definitions"]
            return sorted(items, key=lambda item: item.text), tokens
        items = [_Item(text, last, short=short) for text, short, last in shelves.definition_items.values()]
        if len(items) > limit:
            self.gone["definitions"] = len(items) - limit
            items = sorted(items, key=_last)[-limit:]
        return sorted(items, key=lambda item: item.text), sum(self._shortest_item(item) for item in items)

    def _commands(self) -> dict[int, list[tuple[_Item, int]]]:
        """Each command, its latest outcome and run count, and its last failure (said to be resolved if it is).

        A command that ran in the workspace root is shown without its ``cd <root> &&`` (``command_in_root``):
        the section says where paths are relative to, and ``X`` and ``cd <root> && X`` are one command.
        """
        self.in_root = self.shelves.in_root > 0
        return self._newest_fitting(self.shelves.commands, self._command_item)

    @staticmethod
    def _command_item(row: tuple[Any, ...]) -> _Item:
        rank, seq, key, runs, label, failure = row
        if label == READ_GROUP:
            return _read_group_item(key, runs, seq)
        text = f"`{clip(key, COMMAND_MAX_CHARS)}` — {label}" + (f", {runs} runs" if runs > 1 else "")
        if failure is None:
            return _Item(text, seq, rank=rank)
        _, line, _, earlier = failure
        text = f"{text}: {line}" if rank == 3 else f"{text}; an earlier failure is resolved: {line}"
        history = f" (failed before with: {'; '.join(earlier)})" if earlier else ""
        return _Item(text + history, seq, short=text if earlier else "", rank=rank)

    def _newest_fitting(
        self, ranked: dict[int, Recency], make: Callable[[tuple[Any, ...]], _Item]
    ) -> dict[int, list[tuple[_Item, int]]]:
        """Per rank, items made newest first until their shortest lines alone pass the room, with their tokens."""
        items: dict[int, list[tuple[_Item, int]]] = {}
        for rank in sorted(ranked):
            room, recency, kept = self.max_tokens, ranked[rank], items.setdefault(rank, [])
            reached = []
            for key in recency.newest():
                reached.append(key)
                made = recency.made.get(key)
                if made is None:
                    item = make(recency.rows[key])
                    made = recency.made[key] = (item, self.measure(f"- {item.short or item.text}"))
                room -= made[1]
                if room < 0:
                    break
                kept.append(made)
            if len(recency.made) > 2 * len(reached):  # what older renders made and no render reaches any more
                recency.made = {key: recency.made[key] for key in reached}
        return items

    def _errors(self) -> list[_Item]:
        """Failures of calls other than commands: the last of each tool and path, and whether a later call worked."""
        shelves = self.shelves
        ranked = self._newest_fitting(shelves.errors, self._error_item)
        items = sorted((replace(item) for made in ranked.values() for item, _ in made), key=_last)
        self.gone["error"] = len(shelves.error_rank) - len(items)
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

        calls = [*self.commands, *self.errors]
        segments: list[list[tuple[str, int]]] = [
            [(FOLD, f.ident) for f in oldest(self.seen) if len(f.files) > 1],
            [(FOLD, f.ident) for f in oldest(self.changed) if len(f.files) > 1],
            [(DROP, u.ident) for u in oldest(self.urls)],
            [(DROP, c.ident) for c in oldest(c for c in calls if c.rank == 0)],
            [(DROP, c.ident) for c in oldest(c for c in calls if c.rank == 1)],
            [(TRIM, c.ident) for c in oldest(c for c in calls if c.short)],
            [(TRIM, f.ident) for f in oldest(self.seen) if len(f.files) > FOLD_KEEP + 1],
            [(TRIM, d.ident) for d in oldest(self.definitions) if d.short],
            [(DROP, c.ident) for c in oldest(c for c in calls if c.rank == 2)],
            [(DROP, f.ident) for f in oldest(self.seen)],
            [(DROP, d.ident) for d in oldest(self.definitions)],
            [(DROP, i.ident) for i in oldest(self.ids)],
            [(DROP, c.ident) for c in oldest(c for c in calls if c.rank == 3)],
            [(TRIM, f.ident) for f in oldest(self.changed) if len(f.files) > FOLD_KEEP + 1],
            [(DROP, f.ident) for f in oldest(self.changed)],
        ]
        self.segments = [len(segment) for segment in segments]
        return [step for segment in segments for step in segment]

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
            if kind not in self.present:
                continue
            lines.append(title)
            for folder in folders:
                lines += _shaped(folder, shape.get(folder.ident, ""))
            gone = [f for f in folders if shape.get(f.ident) == DROP]
            files = sum(len(f.files) for f in gone) + self.gone[kind]
            if files:
                where = len(gone) + self.gone[f"{kind} folders"]
                lines.append(f"- +{files} more {noun} {_noun(files, 'file')} in {where} {_noun(where, 'folder')}")
        if "definitions" in self.present:
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
            if not items and noun not in self.present:
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
        if "id" in self.present:
            kept_ids = [item.text for item in self.ids if item.ident not in shape]
            gone_count = len(self.ids) - len(kept_ids) + self.gone["id"]
            prefix = f"(+{gone_count} more) " if gone_count else ""
            lines.append(f"Identifiers: {prefix}{', '.join(kept_ids)}".rstrip())
        if "URL" in self.present:
            lines.append("URLs:")
            lines += [f"- {item.text}" for item in self.urls if item.ident not in shape]
            gone_count = sum(1 for item in self.urls if item.ident in shape) + self.gone["URL"]
            if gone_count:
                lines.append(f"- +{gone_count} more {_noun(gone_count, 'URL')}")
        return lines


def _folders(shelves: Shelves, changed: bool) -> list[_Folder]:
    """The folders of changed (or of read or used) files, by name, as the shelves keep them."""
    return [
        _Folder(shelf.heading, files, shelf.last, changed, lines=shelf.lines)
        for shelf, files in shelves.folder_list(changed)
    ]


def _shaped(folder: _Folder, shape: str) -> list[str]:
    """The folder's lines in ``shape``, made once per version of the folder."""
    shown = folder.lines.get(shape)
    if shown is None:
        shown = folder.lines[shape] = _folder_lines(folder, shape)
    return shown


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


def _read_group_item(path: str, reads: tuple[tuple[Any, ...], ...], last: int) -> _Item:
    """One file's successful reads on one line (``reads.py``), oldest first, each by the rest of its command."""
    listed = [f"`{clip(rest, COMMAND_MAX_CHARS)}`" + (f" ×{runs}" if runs > 1 else "") for _, rest, runs in reads]
    return _Item(f"{path}{READ_GROUP}{' · '.join(listed)}", last, rank=0, commands=len(reads))


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
    headed: dict[str, list[tuple[str, int]]] = {}
    """Folder -> the lines naming it, each with where its first mention ends (found once per folder)."""
    found = []
    for path in paths:
        spelled = path.lower()
        if spelled in lowered:
            found.append(path)
            continue
        folder, name = posixpath.split(spelled)
        if not folder:
            continue
        rows = headed.get(folder)
        if rows is None:
            stem = folder.rstrip("/")
            heading = re.compile(rf"(?<!{_PATH_CHAR}){re.escape(stem)}/(?!{_PATH_CHAR})")
            rows = headed[folder] = [(line, m.end()) for line in lines if stem in line and (m := heading.search(line))]
        word = re.compile(rf"(?<!{_PATH_CHAR}){re.escape(name)}(?![\w/-]|\.\w)")
        if any(word.search(line, end) for line, end in rows):
            found.append(path)
    return found
