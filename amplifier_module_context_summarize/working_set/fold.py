"""How facts fold, group after group, into one ``WorkingSet``: records keyed by spelling, numbered in order.

Every fact gets the next sequence number, so "newest" is one integer comparison everywhere after. A file is
one record per spelling (first and last touch, state, last change, where it moved from) until the layout
knows the workspace root and merges spellings under it (``canonical``, ``merge_entry``); the evidence for the
root (folders commands ran in, absolute paths ending in relative ones seen) is kept as it comes, so ``root``
costs the root's depth. A command keeps its latest outcome, run count and last failures; a failure is
resolved when a later run passed. ``touched`` notes the keys each fold changed, for the shelves.
"""

from __future__ import annotations

import posixpath
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from ..core.messages import Message
from ..core.substrings import Substrings
from .facts import extract
from .records import DELETE, EDIT, MOVE, READ, USE, WRITE, Facts

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
CHANGED_ORDER = (CREATED, EDITED, MOVED, DELETED)
SEEN_ORDER = (READ_STATE, USED)

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
        self.commits: dict[str, tuple[str, ...]] = {}
        """Commit ids by their first ``COMMIT_KEY`` characters (``""``: shorter ones)."""
        self.commit_order: dict[str, int] = {}
        self.touched = Touched()

    def copy(self) -> WorkingSet:
        """A working set that folds on from here alone (nothing touched yet: its shelves are made afresh)."""
        other = WorkingSet()
        for name, value in vars(self).items():
            if isinstance(value, dict | set):  # (records and counts are immutable: a shallow copy will do)
                setattr(other, name, value.copy())
            elif name != "touched":
                setattr(other, name, value)
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

    def add_root_evidence(self, files: Iterable[Sequence[str]], workdirs: Iterable[str]) -> None:
        """Of ``files`` (``FileAction``s, named or plain tuples) then ``workdirs``, only what ``add`` reads as evidence
        of the root: a path's first spelling and a folder a command ran in. ``root()`` then reads as after ``add``
        of facts holding them (the artifact account of a cold resume's 31,000 groups reads only their root)."""
        seen = set(self.files)
        for action, path, target in files:
            for spelled in (path, target) if action == MOVE else (path,):
                if spelled not in seen:
                    seen.add(spelled)
                    self._register(spelled)
        for folder in workdirs:
            self._vote(folder)

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
            key = identifier[:COMMIT_KEY] if len(identifier) >= COMMIT_KEY else ""
            commits[key] = (*commits.get(key, ()), identifier)  # tuples of strings: the collector stops walking them
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

    def entries(self) -> list[FileEntry]:
        """One entry per file (spellings merged), in first-seen order, paths relative to ``root()``."""
        root = self.root()
        merged: dict[str, list[Record]] = {}
        for spelling, record in self.files.items():
            merged.setdefault(canonical(spelling, root), []).append(record)
        return [merge_entry(path, records, root) for path, records in merged.items() if path not in (".", "/")]


def _spellings(index: dict[str, str | tuple[str, ...]], name: str) -> tuple[str, ...]:
    known = index.get(name)
    return () if known is None else (known,) if isinstance(known, str) else known


def _add_spelling(index: dict[str, str | tuple[str, ...]], name: str, spelling: str) -> None:
    index[name] = (*_spellings(index, name), spelling) if name in index else spelling


class FileEntry(NamedTuple):
    """A file as the working set shows it. A tuple of atoms: the collector stops walking it (issue 48)."""

    path: str
    state: str
    last: int
    moved_from: str = ""


def command_in_root(command: str, root: str | None) -> str:
    """``command`` without a leading ``cd <root> &&`` (it ran where the working set's paths are relative to)."""
    prefix = f"cd {root} && " if root else ""
    return command[len(prefix) :] if prefix and command.startswith(prefix) and len(command) > len(prefix) else command


_WINDOWS_SEPARATOR = re.compile(r"(?<=[\w.:~-])\\(?=[\w.~-])")
"""A backslash between path characters: a Windows separator (``backend\\db.py``, ``C:\\src``), as ``facts`` reads it."""


def canonical(path: str, root: str | None) -> str:
    """The one spelling of ``path``: relative to ``root`` when under it, normalised, ``./`` dropped, Windows
    separators as ``/`` (an agent on Windows names ``backend\\db.py`` and ``backend/db.py``: one file)."""
    path = _WINDOWS_SEPARATOR.sub("/", path) if "\\" in path else path
    if path.startswith("~"):
        return path
    normal = posixpath.normpath(path)
    if root and normal.startswith(root + "/"):
        return normal[len(root) + 1 :]
    return "." if normal == root else normal


def merge_entry(path: str, records: list[Record], root: str | None) -> FileEntry:
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


def working_set_of(messages: list[Message]) -> WorkingSet:
    """The working set of a plain list of messages (no history): the evaluation's reference spans."""
    folded = WorkingSet()
    folded.add(extract(messages))
    return folded


# ---------------------------------------------------------------------------------------------- naming


_PATH_CHAR = r"[\w.~+@/-]"
_FOLDER_HEADING = re.compile(rf"(?<!{_PATH_CHAR}){_PATH_CHAR}*/(?!{_PATH_CHAR})")
"""A folder standing on its own (``lib/x/``, not inside a longer path): a whole run of path characters ending in
``/``."""
_ONLY_PATH_CHARS = re.compile(rf"{_PATH_CHAR}*")


def named_files(text: str, paths: list[str]) -> list[str]:
    """Which of ``paths`` ``text`` names: the path itself, or its file name on a line that names its folder.

    A folder is named when ``folder/`` stands on its own (not inside a longer path), and the file name must
    follow it on the same line as a whole word: the grouped lines of the working set (``- lib/a/ — edited:
    x.ex, y.ex``) name every file they list, and so does any summary that writes them that way.
    """
    lowered = text.lower()
    searched = Substrings(lowered)
    lines = lowered.splitlines()
    headed: dict[str, list[tuple[str, int]]] = {}
    """Folder -> the lines naming it, each with where its first mention ends (found once per folder)."""
    headings: dict[str, list[tuple[str, int]]] | None = None
    """Every folder heading of the text, by folder: one pass over the text, made when a path is first looked up by
    its folder (a span's thousands of folders each scanning every line was folders x lines)."""
    found = []
    for path in paths:
        spelled = path.lower()
        if spelled in searched:
            found.append(path)
            continue
        folder, name = posixpath.split(spelled)
        if not folder:
            continue
        rows = headed.get(folder)
        if rows is None and (stem := folder.rstrip("/")) not in searched:
            rows = headed[folder] = []  # no line names a folder the whole text does not hold: no scan of its lines
        if rows is None and _ONLY_PATH_CHARS.fullmatch(stem):  # then a heading of it is a whole run: indexed
            if headings is None:
                headings = _folder_headings(lines)
            rows = headed[folder] = headings.get(stem, [])
        elif rows is None:
            heading = re.compile(rf"(?<!{_PATH_CHAR}){re.escape(stem)}/(?!{_PATH_CHAR})")
            rows = headed[folder] = [(line, m.end()) for line in lines if stem in line and (m := heading.search(line))]
        if any(_names_word(line, name, end) for line, end in rows):
            found.append(path)
    return found


def _folder_headings(lines: list[str]) -> dict[str, list[tuple[str, int]]]:
    """Folder (without its ``/``) -> each line that names it on its own, with where the line's first such mention
    ends: what ``named_files``' heading search gives for a folder of path characters only, for all at once."""
    headings: dict[str, list[tuple[str, int]]] = {}
    for line in lines:
        if "/" not in line:
            continue
        seen: set[str] = set()
        for match in _FOLDER_HEADING.finditer(line):
            stem = match.group()[:-1]
            if stem not in seen:
                seen.add(stem)
                headings.setdefault(stem, []).append((line, match.end()))
    return headings


def _names_word(line: str, name: str, start: int) -> bool:
    """``name`` stands in ``line`` from ``start`` on as a whole word: no path character before it, and after it
    neither a word character, ``/`` or ``-``, nor a ``.`` that starts an extension (a longer file name)."""
    end = len(line)
    at = line.find(name, min(start, end))
    while at >= 0:
        after = at + len(name)
        if not (at and _is_path_char(line[at - 1])) and not (
            after < end
            and (
                _is_word_char(line[after])
                or line[after] in "/-"
                or (line[after] == "." and after + 1 < end and _is_word_char(line[after + 1]))
            )
        ):
            return True
        at = line.find(name, at + 1)
    return False


def _is_word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


def _is_path_char(char: str) -> bool:
    return _is_word_char(char) or char in ".~+@/-"
