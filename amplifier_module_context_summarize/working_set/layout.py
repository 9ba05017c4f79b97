"""How the working set's section is laid out within its room: every line it can show, and the ladder that
shrinks it.

Within ``max_tokens`` the section shrinks along a fixed ladder (``Layout._ladder``): folders fold to the
names of their files (``- lib/x/ — edited: a.ex · read: b.ex``: nothing lost); then, oldest first, URLs,
succeeded commands (reads first), a command's earlier failures, the older names of read folders
(``lib/x/ — 7 read or used: a.ex, b.ex, c.ex, +4 more``), a file's definitions beyond its newest three,
resolved failures, read folders, definitions, identifiers and failing commands go; only then do changed
folders keep just their newest names, and go. Whatever is dropped is counted in the text (``- +12 more read
or used files in 3 folders``). ``search`` finds the fewest rungs that fit, on ``ladder_tokens``' estimate.
"""

from __future__ import annotations

import posixpath
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from .facts import clip
from .fold import (
    CHANGED_ORDER,
    COMMAND_MAX_CHARS,
    ERROR_KEY_MAX_CHARS,
    FOLD_KEEP,
    HEADING,
    SEEN_ORDER,
    URL_MAX_CHARS,
    FileEntry,
    canonical,
)
from .reads import READ_GROUP
from .shelves import Folder, Item, Shelves

if TYPE_CHECKING:
    from .fold import WorkingSet
    from .shelves import Recency

FOLD, TRIM, DROP = "fold", "trim", "drop"
"""Ladder rungs: a folder's files as names under it (nothing lost), its newest names only, or nothing."""


def _last(item: Folder | Item) -> int:
    return item.last


@dataclass
class Layout:
    """Every line the section can show, and the ladder of folds and drops that shrinks it, lowest value first.

    What cannot fit whatever else goes is dropped up front and only counted: within each kind (and rank) the
    ladder drops the oldest first, so of the commands and errors only the newest whose lines (at their
    shortest) add up to ``max_tokens`` can ever be shown, and of the rest only the newest ``max_tokens // 3``
    (a line costs at least 3 tokens, an id 2). Rendering thus costs what can be shown, not the history: the
    shelves hand each kind over newest first, already merged under the root.

    Folders, definitions and URLs are cut the same way as commands, by their shortest lines. The ladder they
    were first cut by (a count) is kept in view: ``hidden_rungs`` of its rungs concern what the cut left out,
    all before ``first_fitting``, and no step before that can fit (a kind's newest lines alone pass the room),
    so ``section.render`` searches that ladder's steps as before and reads them off this shorter one.
    """

    shelves: Shelves
    working_set: WorkingSet
    max_tokens: int
    measure: Callable[[str], int]
    """Tokens of one line with its newline (a text costs about the sum of its lines)."""
    root: str | None = None
    changed: list[Folder] = field(default_factory=list)
    seen: list[Folder] = field(default_factory=list)
    definitions: list[Item] = field(default_factory=list)
    commands: list[Item] = field(default_factory=list)
    errors: list[Item] = field(default_factory=list)
    ids: list[Item] = field(default_factory=list)
    urls: list[Item] = field(default_factory=list)
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
        self.ids = [Item(identifier, ws.ids[identifier]) for identifier in ids]
        urls = self._fitting_urls(limit, self.max_tokens - later)
        self.gone["URL"] = len(ws.urls) - len(urls)
        self.urls = [Item(clip(url, URL_MAX_CHARS), ws.urls[url]) for url in urls]
        items: list[Folder | Item] = [
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

    def _fitting_folders(self, changed: bool, limit: int, room: int) -> tuple[list[Folder], int]:
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
            folder = Folder(shelf.heading, shelf.entries(), shelf.last, changed, lines=shelf.lines)
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

    def _shortest_folder(self, folder: Folder) -> int:
        """Tokens of the folder's lines in its shortest shape on the ladder."""
        shapes = [
            "",
            *([FOLD] if len(folder.files) > 1 else []),
            *([TRIM] if len(folder.files) > FOLD_KEEP + 1 else []),
        ]
        return min(sum(self.measure(line) for line in shaped(folder, shape)) for shape in shapes)

    def _shortest_item(self, item: Item) -> int:
        full = self.measure(f"- {item.text}")
        return min(full, self.measure(f"- {item.short}")) if item.short else full

    def _calls_tokens(self, commands: dict[int, list[tuple[Item, int]]], rank: int) -> int:
        """Tokens of the shortest lines of the commands and errors of ``rank`` the count cut keeps."""
        calls = [item for item, _ in commands.get(rank, [])] + [c for c in self.errors if c.rank == rank]
        return sum(self._shortest_item(c) for c in calls)

    def _fitting_calls(self, made: list[tuple[Item, int]], room: int, segment: str) -> list[tuple[Item, int]]:
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

    def _newest_folders(self, folders: list[Folder], limit: int) -> list[Folder]:
        if len(folders) <= limit:
            return folders
        newest = {id(f) for f in sorted(folders, key=_last)[-limit:]}
        noun = "changed" if folders[0].changed else "seen"
        for folder in folders:
            if id(folder) not in newest:
                self.gone[noun] += len(folder.files)
                self.gone[f"{noun} folders"] += 1
        return [f for f in folders if id(f) in newest]

    def _definitions(self, limit: int, room: int) -> tuple[list[Item], int]:
        """Per file still there, the names its changes defined (newest change first) and removed; by path. The
        newest whose shortest lines add up to ``room`` (the rest only counted), and the tokens of those lines."""
        shelves = self.shelves
        if shelves.definition_items:
            self.present.add("definitions")
        if len(shelves.definition_items) <= limit and self.fit:
            items, tokens = [], 0
            for path in shelves.definition_recency.newest() if room >= 0 else ():
                text, short, last = shelves.definition_items[path]
                item = Item(text, last, short=short)
                tokens += self._shortest_item(item)
                if tokens > room:
                    break
                items.append(item)
            self.unshown["definitions"] = len(shelves.definition_items) - len(items)
            self.unshown["trimmable definitions"] = shelves.trimmable - sum(1 for item in items if item.short)
            self.gone["definitions"] = self.unshown["definitions"]
            return sorted(items, key=lambda item: item.text), tokens
        items = [Item(text, last, short=short) for text, short, last in shelves.definition_items.values()]
        if len(items) > limit:
            self.gone["definitions"] = len(items) - limit
            items = sorted(items, key=_last)[-limit:]
        return sorted(items, key=lambda item: item.text), sum(self._shortest_item(item) for item in items)

    def _commands(self) -> dict[int, list[tuple[Item, int]]]:
        """Each command, its latest outcome and run count, and its last failure (said to be resolved if it is).

        A command that ran in the workspace root is shown without its ``cd <root> &&`` (``command_in_root``):
        the section says where paths are relative to, and ``X`` and ``cd <root> && X`` are one command.
        """
        self.in_root = self.shelves.in_root > 0
        return self._newest_fitting(self.shelves.commands, self._command_item)

    @staticmethod
    def _command_item(row: tuple[Any, ...]) -> Item:
        rank, seq, key, runs, label, failure = row
        if label == READ_GROUP:
            return _read_group_item(key, runs, seq)
        text = f"`{clip(key, COMMAND_MAX_CHARS)}` — {label}" + (f", {runs} runs" if runs > 1 else "")
        if failure is None:
            return Item(text, seq, rank=rank)
        _, line, _, earlier = failure
        text = f"{text}: {line}" if rank == 3 else f"{text}; an earlier failure is resolved: {line}"
        history = f" (failed before with: {'; '.join(earlier)})" if earlier else ""
        return Item(text + history, seq, short=text if earlier else "", rank=rank)

    def _newest_fitting(
        self, ranked: dict[int, Recency], make: Callable[[tuple[Any, ...]], Item]
    ) -> dict[int, list[tuple[Item, int]]]:
        """Per rank, items made newest first until their shortest lines alone pass the room, with their tokens."""
        items: dict[int, list[tuple[Item, int]]] = {}
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

    def _errors(self) -> list[Item]:
        """Failures of calls other than commands: the last of each tool and path, and whether a later call worked."""
        shelves = self.shelves
        ranked = self._newest_fitting(shelves.errors, self._error_item)
        items = sorted((replace(item) for made in ranked.values() for item, _ in made), key=_last)
        self.gone["error"] = len(shelves.error_rank) - len(items)
        return items

    def _error_item(self, row: tuple[Any, ...]) -> Item:
        rank, seq, key, line = row
        note = " — resolved: a later call succeeded" if rank == 2 else ""
        return Item(f"{self._relative_key(key)}: {line}{note}", seq, rank=rank)

    def _relative_key(self, key: str) -> str:
        name, _, path = key.partition(" ")
        return clip(f"{name} {canonical(path, self.root)}" if path else name, ERROR_KEY_MAX_CHARS)

    def _ladder(self) -> list[tuple[str, int]]:
        def oldest(items: Iterable[Folder | Item]) -> list[Folder | Item]:
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
                lines += shaped(folder, shape.get(folder.ident, ""))
            gone = [f for f in folders if shape.get(f.ident) == DROP]
            files = sum(len(f.files) for f in gone) + self.gone[kind]
            if files:
                where = len(gone) + self.gone[f"{kind} folders"]
                lines.append(f"- +{files} more {noun} {plural(files, 'file')} in {where} {plural(where, 'folder')}")
        if "definitions" in self.present:
            lines.append("Definitions written (newest first; · removed):")
            for item in self.definitions:
                if item.ident not in shape:
                    lines.append(f"- {item.text}")
                elif shape[item.ident] == TRIM:
                    lines.append(f"- {item.short}")
            gone_count = sum(1 for d in self.definitions if shape.get(d.ident) == DROP) + self.gone["definitions"]
            if gone_count:
                lines.append(f"- +{gone_count} more changed {plural(gone_count, 'file')} with definitions")
        for title, items, noun in (
            ("Commands (latest outcome, last failure):", self.commands, "command"),
            ("Tool errors (last failure of each):", self.errors, "error"),
        ):
            if not items and noun not in self.present:
                continue
            lines.append(title)
            gone_count = sum(item.commands for item in items if shape.get(item.ident) == DROP) + self.gone[noun]
            if gone_count:
                lines.append(f"- +{gone_count} earlier {plural(gone_count, noun)}")
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
                lines.append(f"- +{gone_count} more {plural(gone_count, 'URL')}")
        return lines


def _folders(shelves: Shelves, changed: bool) -> list[Folder]:
    """The folders of changed (or of read or used) files, by name, as the shelves keep them."""
    return [
        Folder(shelf.heading, files, shelf.last, changed, lines=shelf.lines)
        for shelf, files in shelves.folder_list(changed)
    ]


def shaped(folder: Folder, shape: str) -> list[str]:
    """The folder's lines in ``shape``, made once per version of the folder."""
    shown = folder.lines.get(shape)
    if shown is None:
        shown = folder.lines[shape] = _folder_lines(folder, shape)
    return shown


def _folder_lines(folder: Folder, shape: str) -> list[str]:
    """A folder's files: a line each with its whole path; folded, one line of names; trimmed, the newest names."""
    order = CHANGED_ORDER if folder.changed else SEEN_ORDER
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


def _read_group_item(path: str, reads: tuple[tuple[Any, ...], ...], last: int) -> Item:
    """One file's successful reads on one line (``reads.py``), oldest first, each by the rest of its command."""
    listed = [f"`{clip(rest, COMMAND_MAX_CHARS)}`" + (f" ×{runs}" if runs > 1 else "") for _, rest, runs in reads]
    return Item(f"{path}{READ_GROUP}{' · '.join(listed)}", last, rank=0, commands=len(reads))


def _with_source(name: str, entry: FileEntry) -> str:
    return f"{name} (from {entry.moved_from})" if entry.moved_from else name


def plural(count: int, noun: str) -> str:
    return noun if count == 1 else noun + "s"
