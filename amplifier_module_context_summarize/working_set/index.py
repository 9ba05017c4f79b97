"""The working set of a ``History``: each closed group's facts kept (compressed), folded once, rendered for any end.

A compaction renders the working set for the groups its summary stands for; folding each group once and
keeping the state at the furthest end asked for makes that cost the new groups, not the history.
"""

from __future__ import annotations

import asyncio
import marshal
import threading
import zlib
from collections.abc import Callable, Iterator
from typing import Any
from weakref import WeakKeyDictionary, ref

from ..core.history import History
from .facts import extract
from .fold import WorkingSet
from .layout import estimated_text, render
from .records import NO_FACTS, CallOutcome, Facts, FileAction

RENDER_VERSION = "1"
"""Names what a render writes for given groups, room and counter in a store (``compaction/run/install.py`` keeps the
text beside the segments so a resume need not extract the history). Bump it when extraction, folding or layout
change the text for the same groups: a text stored before is then not served, and the resume renders afresh."""


YIELDS = 3
"""Loop iterations given away between folding and laying out (``compaction/plan/warm.py``'s ``YIELDS``: a task
woken by a timer or by I/O runs one iteration after the callback that wakes it)."""


class FactsLog:
    """The facts of closed groups in order, kept compressed in blocks of ``BLOCK`` groups.

    They are read back only to fold a nearer end than the furthest one, which normal use never asks for;
    kept as objects they would cost more than the rest of the manager's own memory per message.
    """

    BLOCK = 64

    def __init__(self) -> None:
        self._blocks: list[bytes] = []
        self._open: list[Facts] = []
        self._read: tuple[int, list[Any]] | None = None
        """The block read last, decompressed: a fold of groups extracted ahead (``compaction/plan/warm.py``) reads
        them in order, so each block is decompressed once, not once per group."""

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
        return _facts(self._decompressed(block)[offset])

    def plain(self, group: int) -> Plain:
        """The facts of one group as kept (``_plain``: tuples of strings, which the collector stops tracking), not
        built into named tuples: a reader joining thousands of groups builds the joined ones once."""
        block, offset = divmod(group, self.BLOCK)
        if block == len(self._blocks):
            return _plain(self._open[offset])
        return self._decompressed(block)[offset]  # type: ignore[no-any-return]  # marshal gives back what ``_plain`` made

    def read(self, start: int, end: int) -> Iterator[Facts]:
        """The facts of groups ``[start, end)`` in order, each block decompressed once (a fold of thousands of
        groups, ``WorkingSetIndex.state``, reads them this way rather than group by group)."""
        size, closed = self.BLOCK, len(self._blocks)
        group = max(start, 0)
        while group < end:
            block, offset = divmod(group, size)
            if block == closed:
                yield from self._open[offset : end - block * size]
                return
            stop = min(end - block * size, size)
            for plain in self._decompressed(block)[offset:stop]:
                yield _facts(plain)
            group = block * size + stop

    def _decompressed(self, block: int) -> list[Any]:
        if self._read is None or self._read[0] != block:
            self._read = (block, marshal.loads(zlib.decompress(self._blocks[block])))
        return self._read[1]


Plain = tuple[Any, ...]
"""A group's facts as ``FactsLog`` keeps them: ``Facts``' fields in order, each file and outcome a plain tuple."""


def _plain(facts: Facts) -> Plain:
    files = tuple((f.action, f.path, f.target) for f in facts.files)
    outcomes = tuple((o.key, o.command, o.ok, o.label, o.error, o.reads) for o in facts.outcomes)
    return (files, outcomes, facts.urls, facts.identifiers, facts.workdirs, facts.definitions)


_new = tuple.__new__
"""Builds a named tuple from a tuple of all its fields in C (its own ``__new__`` is a Python call with a parameter
per field): each group's facts read back (folding, the artifact account) are thousands of these on a resume."""


def _facts(plain: Any) -> Facts:
    files, outcomes, urls, identifiers, workdirs, definitions = plain
    if not (files or outcomes or urls or identifiers or workdirs or definitions):
        return NO_FACTS
    return _new(
        Facts,
        (
            tuple([_new(FileAction, f) for f in files]),
            tuple([_new(CallOutcome, o) for o in outcomes]),
            urls,
            identifiers,
            workdirs,
            definitions,
        ),
    )


class WorkingSetIndex:
    """The working set of a ``History``, folded group by group and rendered for any end.

    Each closed group is extracted once (``extract`` on the group as a view shows it) and its facts kept
    (``FactsLog``); the folded state at the furthest end asked for is kept too, so a further end folds only
    the new groups. A nearer end folds from the nearest state kept at or before it (the last ``SNAPSHOTS``
    nearer ends folded), else from the start, and is kept in turn. The newest group may still change, so it is
    read afresh and never kept.

    A nearer end is what a request asks while a summary is written in the background (it plans on the summary
    in force; the summary under way has folded further): folding the whole history again at every such request
    held the event loop for the history's length (issue 48). Kept, each summary's end folds from the previous
    one's, so that costs the groups between them; copying the furthest state before every fold past a rendered end
    would cost every compaction a copy for the few that need it.
    """

    SNAPSHOTS = 2
    """Folded states kept at nearer ends, and renders kept: the summary in force and the one being written."""

    def __init__(self, history: History) -> None:
        self._history = ref(history)
        """Weakly: ``_INDEXES`` keeps an index while its history lives, which a strong reference here would make
        forever (every manager's whole history outlived it: issue 48's ``bench --collector`` rounds found it)."""
        self._facts = FactsLog()
        self._state = WorkingSet()
        self._end = 0
        self._folds = 0
        """Times ``_state`` was folded further in place: a layout handed it checks it still stands for its end."""
        self._rendered: dict[tuple[int, int, Callable[[str], int]], tuple[str, int | None]] = {}
        """The last renders (``SNAPSHOTS``, oldest first): arguments -> text and, when a render counted it whole,
        its tokens."""
        self._snapshots: dict[int, WorkingSet] = {}
        """End group -> the folded state there, for ends before the furthest (``SNAPSHOTS``, oldest first)."""
        self._layout_lock = threading.RLock()
        """Held to fold (the furthest state is folded further in place) and to lay a state out (which brings its
        shelves up to date): ``render_off_loop`` lays out in a worker thread, and a fold or layout on the loop
        meanwhile waits for it rather than change what the worker reads."""
        self._seeded: dict[tuple[int, int], str] = {}
        """(end group, room) -> the text a resume found stored for it, counted by the history's own counter:
        served as that render (the text is a function of the groups, the room and the counter), so the groups
        need not be extracted until a compaction folds further."""

    @property
    def extracted(self) -> int:
        """Closed groups ``[0, extracted)`` have their facts kept."""
        return len(self._facts)

    @property
    def folded(self) -> int:
        """The furthest end folded so far (a further end folds only the groups after it)."""
        return self._end

    def seed(self, end_group: int, max_tokens: int, text: str) -> None:
        """``text`` is the render of groups ``[0, end_group)`` in ``max_tokens`` by the history's counter, as stored."""
        self._seeded[(end_group, max_tokens)] = text

    def _closed(self) -> int:
        return max(len(self.history.groups) - 1, 0)

    def facts(self, group: int) -> Facts:
        """The facts of one group (kept once the group is closed)."""
        kept = self._facts
        self.extract_to(group + 1)
        return kept[group] if group < len(kept) else extract(self.history.shown(group))

    def plain(self, group: int) -> Plain:
        """``facts``, as ``FactsLog.plain`` reads them."""
        kept = self._facts
        self.extract_to(group + 1)
        return kept.plain(group) if group < len(kept) else _plain(extract(self.history.shown(group)))

    def extract_to(self, end: int) -> None:
        """Extract and keep the facts of closed groups ``[0, end)`` not kept yet (none read back: ``warm.py``)."""
        kept, closed = self._facts, self._closed()
        while len(kept) < end and len(kept) < closed:
            kept.append(extract(self.history.shown(len(kept))))

    def state(self, end_group: int) -> WorkingSet:
        """The facts of groups ``[0, end_group)`` folded (the kept state itself when it is the furthest)."""
        end = max(min(end_group, len(self.history.groups)), 0)
        closed = min(end, self._closed())
        with self._layout_lock:
            return self._folded(end, closed)

    def _folded(self, end: int, closed: int) -> WorkingSet:
        if closed >= self._end:
            self.extract_to(closed)
            for facts in self._facts.read(self._end, closed):
                self._state.add(facts)
            self._folds += closed > self._end
            self._end = closed
            folded = self._state
        else:
            folded = self._nearer(closed)
        if end > closed:  # the folded states are kept: the open groups fold onto a copy
            folded = folded.copy()
            for group in range(closed, end):
                folded.add(self.facts(group))
        return folded

    def _nearer(self, end: int) -> WorkingSet:
        """The state folded at ``end`` (before the furthest): from the nearest kept state, kept in turn."""
        start = max((kept for kept in self._snapshots if kept <= end), default=0)
        if start == end and start in self._snapshots:
            return self._snapshots[start]
        folded = self._snapshots[start].copy() if start in self._snapshots else WorkingSet()
        for fact in self._facts.read(start, end):
            folded.add(fact)
        self._keep_state(end, folded)
        return folded

    def _keep_state(self, end: int, state: WorkingSet) -> None:
        self._snapshots.pop(end, None)
        self._snapshots[end] = state
        while len(self._snapshots) > self.SNAPSHOTS:
            del self._snapshots[next(iter(self._snapshots))]

    def render(self, end_group: int, max_tokens: int, count_tokens: Callable[[str], int]) -> str:
        """The ``### Working set`` section for groups ``[0, end_group)`` within ``max_tokens`` ("" if empty)."""
        known = self._known(end_group, max_tokens, count_tokens)
        if known is not None:
            return known
        with self._layout_lock:
            text = render(self.state(end_group), max_tokens, count_tokens)
        return self._keep(end_group, max_tokens, count_tokens, text)

    async def render_off_loop(self, end_group: int, max_tokens: int, count_tokens: Callable[[str], int]) -> str:
        """``render``, with the layout and the whole text's count in a worker thread (late in a long session each
        held the loop for tens of milliseconds: the longest of the module's own blocks, issue 48), so the event
        loop runs meanwhile.

        The new groups are folded first, on the loop, and the loop let run; the state is then laid out from the
        groups folded by then (folded again if another task folded further meanwhile), under ``_layout_lock``.
        When the estimate was short (rare), the render is done again as ``render`` does it, on the loop.
        """
        known = self._known(end_group, max_tokens, count_tokens)
        if known is not None:
            return known
        self.state(end_group)
        for _ in range(YIELDS):
            await asyncio.sleep(0)
        known = self._known(end_group, max_tokens, count_tokens)  # another task may have rendered it meanwhile
        if known is not None:
            return known
        state, folds = self.state(end_group), self._folds
        laid_out = await asyncio.to_thread(self._laid_out, state, folds, max_tokens, count_tokens)
        if laid_out is not None and laid_out[0] and laid_out[1] <= max_tokens:
            return self._keep(end_group, max_tokens, count_tokens, *laid_out)
        return self.render(end_group, max_tokens, count_tokens)

    def _laid_out(
        self, state: WorkingSet, folds: int, max_tokens: int, count_tokens: Callable[[str], int]
    ) -> tuple[str, int] | None:
        """``estimated_text`` of ``state`` and its count, in a worker thread (``render_off_loop``); None when a task
        on the loop folded ``state`` further before this thread took the lock (it no longer stands for its end)."""
        with self._layout_lock:
            if state is self._state and self._folds != folds:
                return None
            text = estimated_text(state, max_tokens, count_tokens)
        return text, count_tokens(text) if text else 0

    async def tokens_off_loop(self, end_group: int, max_tokens: int, count_tokens: Callable[[str], int]) -> int:
        """Tokens of ``render_off_loop``'s text: the count its render made, else one made in a worker thread."""
        text = await self.render_off_loop(end_group, max_tokens, count_tokens)
        kept = self._rendered.get((end_group, max_tokens, count_tokens))
        if kept is not None and kept[1] is not None:
            return kept[1]
        return await asyncio.to_thread(count_tokens, text) if text else 0

    def _known(self, end_group: int, max_tokens: int, count_tokens: Callable[[str], int]) -> str | None:
        """The render kept last for these arguments, else the text a resume found stored for them."""
        kept = self._rendered.get((end_group, max_tokens, count_tokens))
        if kept is not None:
            return kept[0]
        if count_tokens != self.history.counter.count_text:
            return None
        seeded = self._seeded.get((end_group, max_tokens))
        return None if seeded is None else self._keep(end_group, max_tokens, count_tokens, seeded)

    def _keep(
        self, end_group: int, max_tokens: int, count_tokens: Callable[[str], int], text: str, tokens: int | None = None
    ) -> str:
        """Keep the render of closed groups (the newest group may still change)."""
        if end_group <= self._closed():
            key = (end_group, max_tokens, count_tokens)
            self._rendered.pop(key, None)
            self._rendered[key] = (text, tokens)
            while len(self._rendered) > self.SNAPSHOTS:
                del self._rendered[next(iter(self._rendered))]
        return text

    @property
    def history(self) -> History:
        history = self._history()
        if history is None:  # an index is reached only through its history (``index_of``)
            raise ReferenceError("the history of this working-set index is gone")
        return history


_INDEXES: WeakKeyDictionary[History, WorkingSetIndex] = WeakKeyDictionary()


def index_of(history: History) -> WorkingSetIndex:
    """The working set of ``history``'s messages, folded group by group on first use and kept while it lives."""
    index = _INDEXES.get(history)
    if index is None:
        index = _INDEXES[history] = WorkingSetIndex(history)
    return index
