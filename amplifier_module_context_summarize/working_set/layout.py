"""How the working set's section is laid out within its room: the pieces it can show, the ladder that shrinks
it, the size at every rung, and the search for the fewest rungs that fit.

The shelves (``shelves.py``) hand each kind over newest first, already merged under the workspace root. A
``Layout`` takes the pieces that could show within ``max_tokens`` (a folder of files: its shelf; or one line: a
definition, command, tool error, identifier or URL) and sizes each once, in every shape it can take. The ladder
(``LADDER``, laid out as ``Layout.ladder``) changes one piece's shape per rung: folders fold to the names of their
files (``- lib/x/ — edited: a.ex · read: b.ex``: nothing lost); then, oldest first, URLs, succeeded commands
(reads first), a command's earlier failures, the older names of read folders (``lib/x/ — 7 read or used: a.ex,
b.ex, c.ex, +4 more``), a file's definitions beyond its newest three, resolved failures, read folders,
definitions, identifiers and failing commands go; only then do changed folders keep just their newest names, and
go. Whatever is dropped is counted in the text (``- +12 more read or used files in 3 folders``).

``Layout.text`` bisects the ladder on an estimate, the sum of the tokens of the lines at that rung:
``Layout.estimate`` works it out per rung from the pieces' sizes and the few count lines, without writing the
section out, and equals ``sum(measure(line) for line in layout.lines(steps))`` (``lines`` and the estimate
share every line builder). The text chosen is then counted whole, and shrunk further in the rare case the
estimate was short.

The cut. Of each kind only the newest ``max_tokens // 3`` can ever show (a line costs at least 3 tokens, an
identifier 2: ``max_tokens // 2`` of those), and of those only the newest whose shortest lines, together with
the shortest lines of every kind the ladder drops after it, fit the room: the rest is counted up front, so a
render costs what can be shown, not the history. The ladder the search counts on is the one without this
second cut (``fit=False``; the tests render both ways and compare): the rungs the cut left out
(``hidden_rungs``) are the first of their segments, all before ``first_fitting``, and no step before that can
fit (a kind's newest lines alone pass the room), so the search probes the same steps and reads them off the
shorter ladder.
"""

from __future__ import annotations

import bisect
import posixpath
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import accumulate, chain, islice
from operator import itemgetter
from typing import TYPE_CHECKING, Any, TypeVar

from .fold import (
    CHANGED_ORDER,
    COMMAND_MAX_CHARS,
    ERROR_KEY_MAX_CHARS,
    FOLD_KEEP,
    HEADING,
    SEEN_ORDER,
    URL_MAX_CHARS,
    FileEntry,
    WorkingSet,
    canonical,
)
from .reads import READ_GROUP
from .records import clip
from .shelves import FolderShelf, Recency, Shelves, shelved

if TYPE_CHECKING:
    from .shelves import Row

FOLD, TRIM, DROP = "fold", "trim", "drop"
"""Ladder rungs: a folder's files as names under it (nothing lost), its newest names only (an item: its
short form), or nothing."""
TITLES = {
    "changed": "Files changed:",
    "seen": "Files read or used:",
    "definitions": "Definitions written (newest first; · removed):",
    "command": "Commands (latest outcome, last failure):",
    "error": "Tool errors (last failure of each):",
    "id": "",
    "URL": "URLs:",
}
"""The kinds in the order the section shows them, with their titles (the identifiers are one line)."""
T = TypeVar("T")


@dataclass(eq=False)
class Item:
    """One line: a definition, a command (or a file's folded reads), a tool error, an identifier or a URL.

    Equal only to itself (a piece is keyed by identity on the ladder): the lines of commands and errors are made
    once per row and kept on their shelf, so two layouts share them.
    """

    text: str
    last: int
    short: str = ""
    """The text trimmed (a command's earlier failures left out); "" when there is nothing to trim."""
    rank: int = 0
    """Commands and errors: 0 a read that succeeded, 1 another success, 2 a failure since resolved, 3 failing."""
    weight: int = 1
    """What the line stands for in its kind's count line: a file's folded reads are several commands."""
    sizes: dict[str, int] = field(default_factory=dict)
    """Tokens of its line as written and trimmed (none for an identifier: they share one line)."""


Piece = FolderShelf | Item
"""A folder (its shelf, as the shelves keep it) or one line."""
P = TypeVar("P", FolderShelf, Item)

LADDER = (
    ("seen", FOLD),
    ("changed", FOLD),
    ("URL", DROP),
    ("rank 0", DROP),
    ("rank 1", DROP),
    ("calls", TRIM),
    ("seen", TRIM),
    ("definitions", TRIM),
    ("rank 2", DROP),
    ("seen", DROP),
    ("definitions", DROP),
    ("id", DROP),
    ("rank 3", DROP),
    ("changed", TRIM),
    ("changed", DROP),
)
"""The ladder's segments in order: a rung on the pieces of a kind that can take it, oldest first (``calls``: the
commands and tool errors, ``rank N`` those of one rank)."""


def _last(piece: Piece) -> int:
    return piece.last


def _rungs(piece: Piece) -> list[str]:
    """The rungs the ladder can take ``piece`` down: a folder of several files folds, of more than it keeps
    trims; a line with a short form trims; every piece drops."""
    if isinstance(piece, Item):
        return [TRIM, DROP] if piece.short else [DROP]
    return [FOLD] * (piece.weight > 1) + [TRIM] * (piece.weight > FOLD_KEEP + 1) + [DROP]


def _definition_item(row: tuple[str, str, int]) -> Item:
    text, short, last = row
    return Item(text, last, short)


def _row_rungs(rows: list[tuple[str, str, int]]) -> dict[str, int]:
    """How many of each rung (``_rungs``) the items definition rows would make have, counted without making them."""
    trims = sum(map(bool, map(itemgetter(1), rows)))  # a row's short form
    return {rung: count for rung, count in ((TRIM, trims), (DROP, len(rows))) if count}


def _shaped(piece: Piece, shape: str) -> list[str]:
    """``piece``'s lines in ``shape`` (a folder's made once per version of it, kept on its shelf)."""
    if isinstance(piece, Item):
        return [] if shape == DROP else [f"- {piece.short if shape == TRIM else piece.text}"]
    lines = piece.lines.get(shape)
    if lines is None:
        lines = piece.lines[shape] = _folder_lines(piece, shape)
    return lines


def _cut(newest: Iterable[T], size: Callable[[T], int], room: int) -> tuple[list[T], int]:
    """The first of ``newest`` whose sizes add up to ``room``, and the tokens counted: past ``room`` when one
    did not fit (then nothing the ladder drops before this kind can show either)."""
    kept: list[T] = []
    tokens = 0
    for each in newest if room >= 0 else ():
        tokens += size(each)
        if tokens > room:
            break
        kept.append(each)
    return kept, tokens


class Layout:
    """Every piece the section can show within ``max_tokens``, sized, and the ladder that shrinks it."""

    def __init__(
        self,
        shelves: Shelves,
        working_set: WorkingSet,
        max_tokens: int,
        measure: Callable[[str], int],
        fit: bool = True,
    ) -> None:
        self.shelves, self.max_tokens, self.measure, self.fit = shelves, max_tokens, measure, fit
        """``measure``: tokens of one line with its newline (a text costs about the sum of its lines)."""
        self.root = shelves.root
        self.relative = self.root is not None and shelves.relative_entries > 0
        self.in_root = shelves.in_root > 0
        """Some command is shown without its ``cd <root> &&``."""
        self.present: set[str] = set()
        """Kinds with anything at all (shown or only counted): their titles (or the identifiers line) show."""
        self.gone: Counter[str] = Counter()
        """Cut up front, by kind (``changed``/``seen`` count files; ``changed folders``/``seen folders``)."""
        self.unshown: Counter[tuple[str, str]] = Counter()
        """Per ladder segment (``LADDER``), the rungs of what the second cut left out."""
        ws, limit = working_set, max(max_tokens // 3, 1)
        commands = self._calls(shelves.commands, self._command_item)
        if any(commands.values()):
            self.present.add("command")
        errors = self._calls(shelves.errors, self._error_item)
        self.errors = sorted((item for made in errors.values() for item in made), key=_last)
        self.gone["error"] = len(shelves.error_rank) - len(self.errors)
        if self.errors:
            self.present.add("error")
        # Kinds from the last the ladder drops to the first: while anything of a kind shows, all that is dropped
        # after it shows too, so its room is what their shortest lines leave.
        self.changed, later = self._folders(True, limit, max_tokens)
        later += self._calls_tokens(commands, 3)
        ids = sorted(islice(shelves.ids.newest(), max(max_tokens // 2, 1)), key=shelves.id_order.__getitem__)
        if ids:
            self.present.add("id")
        if self.fit and later > max_tokens:  # no room left for any identifier (their one line is not cut)
            self.unshown["id", DROP], ids = len(ids), []
        self.gone["id"] = len(ws.ids) - len(ids)
        paths = islice(shelves.definition_recency.newest(), limit)
        rows = list(map(shelves.definition_items.__getitem__, paths))  # (text, short, last): made only where read
        definitions: list[Item]
        definitions, tokens = self._fitting(
            "definitions", rows, max_tokens - later, len(shelves.definition_items), definition_rows=True
        )
        self.definitions = sorted(definitions, key=lambda item: item.text)
        later += tokens
        self.seen, tokens = self._folders(False, limit, max_tokens - later)
        later += tokens + self._calls_tokens(commands, 2)
        for rank in (1, 0):  # succeeded commands: only dropped, never trimmed, so cut like the folders
            made = commands.get(rank, [])
            kept, _ = self._fit(made, lambda item: item.sizes[""], max_tokens - later)
            self.unshown[f"rank {rank}", DROP] = len(made) - len(kept)
            later += self._calls_tokens(commands, rank)
            commands[rank] = kept
        self.commands = sorted((item for made in commands.values() for item in made), key=_last)
        self.gone["command"] = len(shelves.groups) - sum(item.weight for item in self.commands)
        self.ids = [Item(identifier, ws.ids[identifier]) for identifier in ids]
        newest = list(islice(shelves.urls.newest(), limit))
        made = [Item(clip(url, URL_MAX_CHARS), ws.urls[url]) for url in newest]
        urls, _ = self._fitting("URL", made, max_tokens - later, len(shelves.urls))
        order = [shelves.url_order[url] for url in newest[: len(urls)]]  # in first-seen order
        self.urls = [url for _, url in sorted(zip(order, urls, strict=True), key=lambda pair: pair[0])]
        shown = (self.changed, self.seen, self.definitions, self.commands, self.errors, self.ids, self.urls)
        self.kinds: dict[str, list[Any]] = dict(zip(TITLES, shown, strict=True))
        self.ladder: list[tuple[str, Piece]] = []
        self.hidden_rungs = self.first_fitting = 0
        self._build_ladder()

    # ------------------------------------------------------------------ what can show

    def _fit(self, newest: Iterable[T], size: Callable[[T], int], room: int) -> tuple[list[T], int]:
        """``_cut`` of the newest that fit ``room``; all of them, with their tokens, when not ``fit``."""
        if self.fit:
            return _cut(newest, size, room)
        kept = list(newest)
        return kept, sum(size(each) for each in kept)

    def _sized(self, piece: T) -> T:
        """``piece`` with the tokens of its lines as shown and at every rung that reshapes it (kept on it)."""
        assert isinstance(piece, FolderShelf | Item)
        if not piece.sizes:
            shapes = ["", *(rung for rung in _rungs(piece) if rung != DROP)]
            piece.sizes = {shape: sum(self.measure(line) for line in _shaped(piece, shape)) for shape in shapes}
        return piece

    def _shortest(self, piece: Piece) -> int:
        return min(self._sized(piece).sizes.values())

    def _fitting(
        self, kind: str, newest: list[Any], room: int, total: int, definition_rows: bool = False
    ) -> tuple[list[P], int]:
        """The first of ``newest`` that fit ``room`` at their shortest, and the tokens of those lines (past ``room``:
        nothing the ladder drops before this kind can show). The rest are only counted: of ``total`` (the kind's
        files or lines) what is not kept, and the rungs they would have had.

        ``definition_rows``: ``newest`` are rows of ``Shelves.definition_items``, made into items only as far as the
        cut reads them. Of a long session's thousands only the few that fit are made: the layout is the longest
        stretch a compaction holds the event loop, and the collector's pauses fall where it allocates."""
        if total:
            self.present.add(kind)
        pieces = map(_definition_item, newest) if definition_rows else newest
        kept, tokens = self._fit(pieces, self._shortest, room)
        rest = newest[len(kept) :]
        rungs = _row_rungs(rest) if definition_rows else Counter(chain.from_iterable(map(_rungs, rest)))
        for rung, count in rungs.items():
            self.unshown[kind, rung] += count
        self.gone[kind] = total - sum(piece.weight for piece in kept)
        return kept, tokens

    def _folders(self, changed: bool, limit: int, room: int) -> tuple[list[FolderShelf], int]:
        """The newest folders that fit ``room`` at their shortest, by name; and the tokens of those lines."""
        shelves, kind = self.shelves, "changed" if changed else "seen"
        count, shelf = shelves.counts[changed], shelves.folders[changed]
        newest = [shelf[name] for name in islice(shelves.folder_recency[changed].newest(), limit)]
        folders, tokens = self._fitting(kind, newest, room, count["files"])
        self.gone[f"{kind} folders"] = count["folders"] - len(folders)
        return sorted(folders, key=lambda folder: folder.name), tokens

    def _calls(self, ranked: dict[int, Recency], make: Callable[[Row], Item]) -> dict[int, list[Item]]:
        """Per rank, the newest calls whose lines (trimmed where they can be) alone fit the room, made and sized
        once per row (kept on the shelf until the row changes)."""
        calls: dict[int, list[Item]] = {}
        for rank in sorted(ranked):
            recency = ranked[rank]
            made = (self._made(recency, key, make) for key in recency.newest())
            calls[rank], _ = _cut(made, lambda item: item.sizes[TRIM if item.short else ""], self.max_tokens)
            reached = len(calls[rank]) + 1
            if len(recency.made) > 2 * reached:  # what older renders made and no render reaches any more
                recency.made = {key: recency.made[key] for key in islice(recency.newest(), reached)}
        return calls

    def _made(self, recency: Recency, key: str, make: Callable[[Row], Item]) -> Item:
        item = recency.made.get(key)
        if item is None:
            item = recency.made[key] = self._sized(make(recency.rows[key]))
        return item

    def _calls_tokens(self, commands: dict[int, list[Item]], rank: int) -> int:
        """Tokens of the shortest lines of the commands and errors of ``rank`` the first cut keeps."""
        calls = [*commands.get(rank, []), *(error for error in self.errors if error.rank == rank)]
        return sum(self._shortest(call) for call in calls)

    @staticmethod
    def _command_item(row: Row) -> Item:
        """A command, its latest outcome and run count, and its last failure (said to be resolved if it is).

        A command that ran in the workspace root is shown without its ``cd <root> &&`` (``command_in_root``):
        the section says where paths are relative to, and ``X`` and ``cd <root> && X`` are one command.
        """
        rank, seq, key, runs, label, failure = row
        if label == READ_GROUP:  # one file's successful reads (``reads.py``), oldest first, by the rest of each
            listed = [f"`{clip(rest, COMMAND_MAX_CHARS)}`" + (f" ×{n}" if n > 1 else "") for _, rest, n in runs]
            return Item(f"{key}{READ_GROUP}{' · '.join(listed)}", seq, weight=len(runs))
        text = f"`{clip(key, COMMAND_MAX_CHARS)}` — {label}" + (f", {runs} runs" if runs > 1 else "")
        if failure is None:
            return Item(text, seq, rank=rank)
        _, line, _, earlier = failure
        text = f"{text}: {line}" if rank == 3 else f"{text}; an earlier failure is resolved: {line}"
        history = f" (failed before with: {'; '.join(earlier)})" if earlier else ""
        return Item(text + history, seq, short=text if earlier else "", rank=rank)

    def _error_item(self, row: Row) -> Item:
        """A failure of a call other than a command: the last of each tool and path, and whether one later worked."""
        rank, seq, key, line = row
        name, _, path = key.partition(" ")
        shown = clip(f"{name} {canonical(path, self.root)}" if path else name, ERROR_KEY_MAX_CHARS)
        note = " — resolved: a later call succeeded" if rank == 2 else ""
        return Item(f"{shown}: {line}{note}", seq, rank=rank)

    # ------------------------------------------------------------------ the ladder

    def _build_ladder(self) -> None:
        """The rungs, segment by segment (``LADDER``), and where the rungs the second cut left out stood: each
        among the first of its segment (the oldest go first)."""
        calls = [*self.commands, *self.errors]
        pools = {**self.kinds, "calls": calls, **{f"rank {r}": [c for c in calls if c.rank == r] for r in range(4)}}
        oldest_first: dict[str, list[tuple[Piece, list[str]]]] = {}
        """Per kind, its pieces oldest first with their rungs (a kind has several segments)."""
        for kind, rung in LADDER:
            hidden = self.unshown[kind, rung]
            if hidden:
                self.first_fitting = len(self.ladder) + self.hidden_rungs + hidden
            self.hidden_rungs += hidden
            pieces = oldest_first.get(kind)
            if pieces is None:
                pieces = oldest_first[kind] = [(piece, _rungs(piece)) for piece in sorted(pools[kind], key=_last)]
            self.ladder += [(rung, piece) for piece, rungs in pieces if rung in rungs]

    # ------------------------------------------------------------------ the lines, and their size at every rung

    def _heading(self) -> list[str]:
        """The lines every step shows: the heading, where paths are relative to, the titles."""
        lines = [HEADING]
        if self.relative:
            cd = f" Commands run there are shown without `cd {self.root} &&`." if self.in_root else ""
            lines.append(f"Paths are relative to {self.root}.{cd}")
        return lines + [title for kind, title in TITLES.items() if kind in self.present and title]

    def _more(self, kind: str, dropped: int, weight: int) -> str:
        """The line counting what of ``kind`` is not shown, ``dropped`` pieces of ``weight`` by the ladder and
        the rest cut up front ("" when nothing is)."""
        gone = weight + self.gone[kind]
        if not gone:
            return ""
        if kind in ("changed", "seen"):
            where = dropped + self.gone[f"{kind} folders"]
            noun = "changed" if kind == "changed" else "read or used"
            return f"- +{gone} more {noun} {plural(gone, 'file')} in {where} {plural(where, 'folder')}"
        if kind == "definitions":
            return f"- +{gone} more changed {plural(gone, 'file')} with definitions"
        if kind == "URL":
            return f"- +{gone} more {plural(gone, 'URL')}"
        return f"- +{gone} earlier {plural(gone, kind)}"

    def _ids_line(self, kept: list[Item]) -> str:
        gone = len(self.ids) - len(kept) + self.gone["id"]
        prefix = f"(+{gone} more) " if gone else ""
        return f"Identifiers: {prefix}{', '.join(item.text for item in kept)}".rstrip()

    def lines(self, steps: int) -> list[str]:
        """The section's lines after the first ``steps`` rungs of the ladder."""
        shape = {piece: rung for rung, piece in self.ladder[:steps]}
        heading = self._heading()
        lines = heading[: 1 + self.relative]
        for kind, title in TITLES.items():
            if kind not in self.present:
                continue
            pieces = self.kinds[kind]
            if kind == "id":
                lines.append(self._ids_line([item for item in pieces if item not in shape]))
                continue
            dropped = [piece for piece in pieces if shape.get(piece) == DROP]
            more = [self._more(kind, len(dropped), sum(piece.weight for piece in dropped))]
            shown = [line for piece in pieces for line in _shaped(piece, shape.get(piece, ""))]
            before, after = (more, []) if kind in ("command", "error") else ([], more)
            lines += [title, *before, *shown, *after]
        return [line for line in lines if line]

    def estimate(self) -> Callable[[int], int]:
        """The size after the first ``steps`` rungs, without writing the lines: the pieces' part is a running sum
        of per-rung changes, the count lines depend only on how many of a kind were dropped by then."""
        measure = self.measure
        shapes: dict[Piece, str] = {}
        changes: list[int] = []
        for rung, piece in self.ladder:
            changes.append(piece.sizes.get(rung, 0) - piece.sizes.get(shapes.get(piece, ""), 0))
            shapes[piece] = rung
        shown = sum(piece.sizes.get("", 0) for pieces in self.kinds.values() for piece in pieces)
        running: list[int] = list(accumulate(changes, initial=sum(measure(line) for line in self._heading()) + shown))
        at = {piece: step for step, (rung, piece) in enumerate(self.ladder) if rung == DROP}
        drops: dict[str, tuple[list[int], list[int]]] = {}
        for kind in self.present:
            dropped = sorted((at[piece], piece.weight) for piece in self.kinds[kind] if piece in at)
            drops[kind] = ([step for step, _ in dropped], list(accumulate((w for _, w in dropped), initial=0)))
        ids_lines: dict[int, int] = {}

        def ids_line(dropped: int) -> int:
            tokens = ids_lines.get(dropped)
            if tokens is None:
                gone = {self.ladder[step][1] for step in drops["id"][0][:dropped]}
                kept = [item for item in self.ids if item not in gone]
                tokens = ids_lines[dropped] = measure(self._ids_line(kept))
            return tokens

        def size(steps: int) -> int:
            total = running[steps]
            for kind, (positions, weights) in drops.items():
                dropped = bisect.bisect_left(positions, steps)
                if kind == "id":
                    total += ids_line(dropped)
                elif more := self._more(kind, dropped, weights[dropped]):
                    total += measure(more)
            return total

        return size

    def text(self, count_tokens: Callable[[str], int]) -> str:
        """The text of the fewest ladder steps that fits ``max_tokens`` ("" if none does).

        Bisected on the estimate over the ladder the first cut gives (the steps before ``first_fitting`` cannot
        fit); the text chosen is then counted whole, and shrunk further in the rare case the estimate was short.
        """
        if not self.present:
            return ""
        for steps in range(self.estimated_steps(), len(self.ladder) + 1):
            text = "\n".join(self.lines(steps))
            if count_tokens(text) <= self.max_tokens:
                return text
        return ""

    def estimated_steps(self) -> int:
        """The fewest ladder steps whose estimate fits ``max_tokens``."""
        estimate = self.estimate()
        hidden, first = self.hidden_rungs, self.first_fitting
        low, high = -1, len(self.ladder) + hidden
        while high - low > 1:
            middle = (low + high) // 2
            if middle >= first and estimate(middle - hidden) <= self.max_tokens:
                high = middle
            else:
                low = middle
        return high - hidden


def render(ws: WorkingSet, max_tokens: int, count_tokens: Callable[[str], int]) -> str:
    """The section within ``max_tokens`` ("" when empty or when not even its counts fit).

    The shelves redo only what the groups folded since the last render touched; the ladder is searched on the
    estimate, each distinct line counted once with its newline (within a token or two of the whole text's count).
    """
    if max_tokens <= 0:
        return ""
    shelves = shelved(ws)
    return Layout(shelves, ws, max_tokens, shelves.measure(count_tokens)).text(count_tokens)


def estimated_text(ws: WorkingSet, max_tokens: int, count_tokens: Callable[[str], int]) -> str:
    """The text ``render`` gives when the estimate is not short (nearly always): what it counts whole, returned
    uncounted so the caller may count it off the event loop ("" when ``render`` gives "" without counting)."""
    if max_tokens <= 0:
        return ""
    shelves = shelved(ws)
    layout = Layout(shelves, ws, max_tokens, shelves.measure(count_tokens))
    return "\n".join(layout.lines(layout.estimated_steps())) if layout.present else ""


def _folder_lines(folder: FolderShelf, shape: str) -> list[str]:
    """A folder's files: a line each with its whole path; folded, one line of names; trimmed, the newest names."""
    order = CHANGED_ORDER if folder.changed else SEEN_ORDER
    heading = f"{folder.name}/" if folder.name not in ("", "/") else folder.name or "./"
    files = folder.files
    if shape == DROP:
        return []
    if not shape:
        files.sort(key=lambda e: (order.index(e.state), e.path))
        return [f"- {_with_source(e.path, e)} — {e.state}" for e in files]
    if shape == FOLD:
        parts = []
        for state in order:
            names = sorted(_with_source(posixpath.basename(e.path), e) for e in files if e.state == state)
            if names:
                parts.append(f"{state}: {', '.join(names)}")
        return [f"- {heading} — {' · '.join(parts)}"]
    recent = sorted(files, key=lambda e: -e.last)[:FOLD_KEEP]
    names = [*sorted(posixpath.basename(e.path) for e in recent), f"+{len(files) - len(recent)} more"]
    counts = Counter(e.state for e in files)
    if folder.changed:
        detail = ", ".join(f"{counts[s]} {s}" for s in order if counts[s])
        return [f"- {heading} — {len(files)} changed ({detail}): {', '.join(names)}"]
    return [f"- {heading} — {len(files)} read or used: {', '.join(names)}"]


def _with_source(name: str, entry: FileEntry) -> str:
    return f"{name} (from {entry.moved_from})" if entry.moved_from else name


def plural(count: int, noun: str) -> str:
    return noun if count == 1 else noun + "s"
