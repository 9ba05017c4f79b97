"""The records a summary store holds, typed, and the rows they are written as.

A store holds one shape of row (``CachedSummary``: a key ``(start, end)``, text, tokens, groups, tier) and knows
nothing of what a row means. Eight kinds of record live in it, told apart by their start key's namespace; this
module is the one place that writes each as a row and reads it back, so every backend stays as it is and a store
written by any earlier version reads the same (the rows are byte for byte those written before records were typed):

- ``SegmentRecord``: start the chain at the segment's start, end the chain at its end (with ``|focus:`` and the
  focus's hash when a focus steered it), text the summary, ``groups`` the segment's length, ``tier`` its tier.
- ``CutRecord``: start ``cut:``, the plan tag and the chain at the segment's start; end the chain at its end; no
  text when the segment's summary is the one stored for that span, else the text the plan installed (a fallback
  summary, which is not stored as a segment: a later LLM call may still summarize the span), its tokens and tier.
- ``DropRecord``: start ``drop:``, the plan tag and the chain where the summary ends (``C0`` without one); end the
  chain at the boundary; no text; ``groups`` the boundary less the summary's end (the groups truncation dropped).
- ``MaskEndRecord``: start ``mask:``, the plan tag and the chain at the boundary; end the chain at the mask end; no
  text; ``groups`` the mask end less the boundary.
- ``WorkingSetRecord``: start ``ws:`` and the chain after the first group; end the render tag (render version,
  counter); text the chain at the summarized end, a space, the room, a newline, then the working set; ``groups`` the
  summarized end.
- ``InjectionRecord``: start ``inject:``, the plan tag and the state's key (a hash of its cuts, masking and summaries);
  end the chain where the state's verbatim tail starts; text what a ``context:post_compact`` hook put back after that
  state; ``groups`` the groups before the tail.

- ``ArtefactRecord``: start ``native:`` and the chain at the segment's start; end the segment's end key (as its
  ``SegmentRecord``'s); text a provider's native compaction artefact for the span, verbatim; ``groups`` the
  segment's length.
- ``StandInRecord``: start ``standin:``, the plan tag and the chain at the segment's start (as its ``CutRecord``'s);
  end the chain at its end; text the digest of the text the cut carries, the summary size it was asked for (0: the
  output cap) and the span's tokens as it read them, space-separated; ``groups`` the segment's length. It says that
  text is an extractive summary standing in for the LLM's (``Writer.STAND_IN``), still owed, not a fallback; a
  store written before has none: no stand-in.

Each record is read with a key (``SegmentKey``, ``CutKey``, ``DropKey``, ``MaskEndKey``, ``WorkingSetKey``,
``InjectionKey``, ``ArtefactKey``, ``StandInKey``): ``read`` asks the store for the rows starting at the key and
decodes them, leaving out a row that is not a record of that key (another key, a malformed head): a hand-edited or
shared store is read as a miss, never a crash.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, TypeVar

from .base import CachedSummary, SummaryStore, is_valid_entry

CUT_MARK = "cut:"
"""Namespace of the cuts a plan installed: a resume steps only along segments its own plan installed, since a
session sharing the store (a sub-agent at another budget, another strategy) may have cut the same prefix elsewhere."""
DROP_MARK = "drop:"
"""Namespace of where a plan's truncation put the boundary past its summary: a resume drops the same groups (the
cut a plan would recompute depends on what happened before, a denying hook's postponements among it)."""
MASK_MARK = "mask:"
"""Namespace of mask ends: where a plan's masking reached from a boundary, so a resume shows the same masked view."""
WORKING_SET_MARK = "ws:"
"""Namespace of the summary's working set: one row per session line, rewritten at each compaction."""
INJECTION_MARK = "inject:"
"""Namespace of injected context: what a post_compact hook put back after a state, so a resume shows it again."""
ARTEFACT_MARK = "native:"
"""Namespace of native compaction artefacts: a provider's signed block or encrypted item beside a segment's summary."""
STAND_IN_MARK = "standin:"
"""Namespace of the marks beside a plan's cuts whose text stands in for an LLM summary still owed: a resume writes
the LLM's in its place (``compaction/run/stand_in.py``), and never rewrites a fallback (its cut has no mark)."""
FOCUS_MARK = "|focus:"
"""A segment summarized with a focus ends its key with this and the focus's hash."""
MAX_ROOM_DIGITS = 12
"""A working set's room is a token count: more digits than this is no room of ours (and no int worth parsing)."""

R_co = TypeVar("R_co", covariant=True)


@dataclass(frozen=True)
class SegmentRecord:
    """A segment's summary: ``groups`` groups from the chain ``start`` to the chain ``end``, written with ``focus``
    (the focus's hash; None without one)."""

    start: str
    end: str
    text: str
    tokens: int
    groups: int
    tier: int = 0
    focus: str | None = None

    def row(self) -> CachedSummary:
        end = segment_end(self.end, self.focus)
        return CachedSummary(self.start, end, self.text, self.tokens, self.groups, self.tier)


def segment_end(chain: str, focus: str | None) -> str:
    """The end key of a segment ending at ``chain``, written with the focus hashed as ``focus`` (None: the chain)."""
    return f"{chain}{FOCUS_MARK}{focus}" if focus else chain


@dataclass(frozen=True)
class SegmentKey:
    """The segments starting at the chain ``start``."""

    start: str

    @property
    def row_start(self) -> str:
        return self.start

    def decode(self, row: CachedSummary) -> SegmentRecord | None:
        if not _row_of(row, self.row_start):
            return None
        chain, mark, focus = row.end.partition(FOCUS_MARK)
        return SegmentRecord(row.start, chain, row.text, row.tokens, row.groups, row.tier, focus if mark else None)


@dataclass(frozen=True)
class CutKey:
    """The cuts the plan ``plan`` (a plan tag) installed at the chain ``start``."""

    plan: str
    start: str

    @property
    def row_start(self) -> str:
        return CUT_MARK + self.plan + self.start

    def decode(self, row: CachedSummary) -> CutRecord | None:
        if not _row_of(row, self.row_start):
            return None
        return CutRecord(self, row.end, row.groups, row.text, row.tokens, row.tier)


@dataclass(frozen=True)
class CutRecord:
    """A segment the plan installed: ``groups`` groups from the key's chain to the chain ``end``; ``text`` (with its
    ``tokens`` and ``tier``) when what it installed is not the summary stored for the span (a fallback), else empty."""

    key: CutKey
    end: str
    groups: int
    text: str = ""
    tokens: int = 0
    tier: int = 0

    def row(self) -> CachedSummary:
        return CachedSummary(self.key.row_start, self.end, self.text, self.tokens, self.groups, self.tier)


@dataclass(frozen=True)
class DropKey:
    """Where the plan ``plan`` put the boundary past a summary ending at the chain ``summary_end``."""

    plan: str
    summary_end: str

    @property
    def row_start(self) -> str:
        return DROP_MARK + self.plan + self.summary_end

    def decode(self, row: CachedSummary) -> DropRecord | None:
        return DropRecord(self, row.end, row.groups) if _row_of(row, self.row_start) else None


@dataclass(frozen=True)
class DropRecord:
    """Truncation dropped ``groups`` groups past the key's summary end, to the boundary at the chain ``end``."""

    key: DropKey
    end: str
    groups: int

    def row(self) -> CachedSummary:
        return CachedSummary(self.key.row_start, self.end, "", 0, self.groups)


@dataclass(frozen=True)
class MaskEndKey:
    """The mask ends the plan ``plan`` recorded with the summary's boundary at the chain ``boundary``."""

    plan: str
    boundary: str

    @property
    def row_start(self) -> str:
        return MASK_MARK + self.plan + self.boundary

    def decode(self, row: CachedSummary) -> MaskEndRecord | None:
        return MaskEndRecord(self, row.end, row.groups) if _row_of(row, self.row_start) else None


@dataclass(frozen=True)
class MaskEndRecord:
    """Masking reached ``groups`` groups past the key's boundary, to the chain ``end``."""

    key: MaskEndKey
    end: str
    groups: int

    def row(self) -> CachedSummary:
        return CachedSummary(self.key.row_start, self.end, "", 0, self.groups)


@dataclass(frozen=True)
class WorkingSetKey:
    """The working set stored for the session line whose chain after its first group is ``line`` (its forks and a
    session that begins the same way share it; each record names the end it renders)."""

    line: str

    @property
    def row_start(self) -> str:
        return WORKING_SET_MARK + self.line

    def decode(self, row: CachedSummary) -> WorkingSetRecord | None:
        if not _row_of(row, self.row_start):
            return None
        head, newline, text = row.text.partition("\n")
        chain, _, room = head.partition(" ")
        if not (newline and chain and room.isascii() and room.isdigit() and len(room) <= MAX_ROOM_DIGITS):
            return None
        return WorkingSetRecord(self, row.end, chain, int(room), row.groups, text)


@dataclass(frozen=True)
class WorkingSetRecord:
    """The working set of groups ``[0, groups)``, rendered as ``text`` in ``room`` tokens under the render tag
    ``tag`` (render version, counter), the chain after those groups being ``end``."""

    key: WorkingSetKey
    tag: str
    end: str
    room: int
    groups: int
    text: str

    @property
    def head(self) -> str:
        """What the row's text starts with: the end and the room it renders, so a row of another is never served."""
        return f"{self.end} {self.room}"

    def row(self, count_text: Callable[[str], int]) -> CachedSummary:
        """The row, its tokens ``count_text``'s count of the whole row text (as a checked store counts it)."""
        text = f"{self.head}\n{self.text}"
        return CachedSummary(self.key.row_start, self.tag, text, count_text(text), self.groups)


@dataclass(frozen=True)
class InjectionKey:
    """What the plan ``plan`` showed after the state whose key is ``state`` (``keys.state_key``)."""

    plan: str
    state: str

    @property
    def row_start(self) -> str:
        return INJECTION_MARK + self.plan + self.state

    def decode(self, row: CachedSummary) -> InjectionRecord | None:
        return InjectionRecord(self, row.end, row.groups, row.text) if _row_of(row, self.row_start) else None


@dataclass(frozen=True)
class InjectionRecord:
    """``text`` was shown after the key's state, whose verbatim tail starts ``groups`` groups in, at the chain
    ``end``."""

    key: InjectionKey
    end: str
    groups: int
    text: str

    def row(self, count_text: Callable[[str], int]) -> CachedSummary:
        return CachedSummary(self.key.row_start, self.end, self.text, count_text(self.text), self.groups)


@dataclass(frozen=True)
class ArtefactKey:
    """The native compaction artefacts stored for the segments starting at the chain ``start``."""

    start: str

    @property
    def row_start(self) -> str:
        return ARTEFACT_MARK + self.start

    def decode(self, row: CachedSummary) -> ArtefactRecord | None:
        return ArtefactRecord(self, row.end, row.groups, row.text) if _row_of(row, self.row_start) else None


@dataclass(frozen=True)
class ArtefactRecord:
    """The provider's own artefact (``Completion.artefact``: its signed block or encrypted item as JSON, verbatim)
    for the segment of ``groups`` groups from the key's chain to the segment end key ``end`` (focus included), kept
    beside that segment's summary. The store's root (``C0``) names the provider and model, so another model's
    session never reads it."""

    key: ArtefactKey
    end: str
    groups: int
    text: str

    def row(self, count_text: Callable[[str], int]) -> CachedSummary:
        return CachedSummary(self.key.row_start, self.end, self.text, count_text(self.text), self.groups)


@dataclass(frozen=True)
class StandInKey:
    """The stand-in marks beside the cuts the plan ``plan`` installed at the chain ``start``."""

    plan: str
    start: str

    @property
    def row_start(self) -> str:
        return STAND_IN_MARK + self.plan + self.start

    def decode(self, row: CachedSummary) -> StandInRecord | None:
        if not _row_of(row, self.row_start):
            return None
        digest, *sizes = row.text.split(" ")
        if len(digest) != DIGEST_CHARS or len(sizes) != 2:
            return None
        if not all(size.isascii() and size.isdigit() and len(size) <= MAX_ROOM_DIGITS for size in sizes):
            return None
        return StandInRecord(self, row.end, row.groups, digest, int(sizes[0]) or None, int(sizes[1]))


DIGEST_CHARS = 32
"""Hex digits of a stand-in mark's digest of the cut's text (128 bits: no two texts of one span share it)."""


def text_digest(text: str) -> str:
    """The digest a stand-in mark holds of its cut's text: a mark names the text it was written for, so a cut
    written again at the same span with another text (a fallback) is not taken for a stand-in."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:DIGEST_CHARS]


@dataclass(frozen=True)
class StandInRecord:
    """The cut of ``groups`` groups from the key's chain to the chain ``end`` carries a stand-in whose text has the
    digest ``digest`` (``text_digest``), asked for at ``max_tokens`` (None: the output cap) from ``span_tokens``:
    the LLM's summary of the span is owed and is asked for the same size."""

    key: StandInKey
    end: str
    groups: int
    digest: str
    max_tokens: int | None = None
    span_tokens: int = 0
    """The span's tokens as the stand-in read them: the rewrite's time is given for them, uncounted by a resume."""

    def marks(self, cut: CutRecord) -> bool:
        """This mark is for ``cut`` (same plan, span and text): the text it carries stands in."""
        same_key = (self.key.plan, self.key.start) == (cut.key.plan, cut.key.start)
        return same_key and (self.end, self.groups) == (cut.end, cut.groups) and self.digest == text_digest(cut.text)

    def row(self) -> CachedSummary:
        text = f"{self.digest} {self.max_tokens or 0} {self.span_tokens}"
        return CachedSummary(self.key.row_start, self.end, text, len(text), self.groups)


class Key(Protocol[R_co]):
    """What a record is read with: the rows' start key, and a decoder that says None to a row not of the key."""

    @property
    def row_start(self) -> str: ...

    def decode(self, row: CachedSummary) -> R_co | None: ...


async def read(store: SummaryStore, key: Key[R_co]) -> list[R_co]:
    """The records of ``key`` in ``store`` (rows of another key or malformed are left out)."""
    decoded = (key.decode(row) for row in await store.starting_at(key.row_start))
    return [record for record in decoded if record is not None]


def _row_of(row: object, start: str) -> bool:
    """``row`` is a well-formed row under ``start`` (an unchecked store may answer with anything)."""
    return is_valid_entry(row) and isinstance(row, CachedSummary) and row.start == start
