"""Long sequences the module keeps for a whole session, in forms a full collection does not walk item by item.

A full collection visits every reference a tracked container holds, so its time follows those references, not
only the number of containers: at 50,000 messages the history's prefix sums, chain hashes and user-turn indices
were three lists of 31,000, 31,000 and 6,000 items, about a third of what the module added to each collection
(issue 48). Integers go in an ``array`` (not a container the collector knows), anything else immutable in
``AtomChunks``: tuples of ``CHUNK`` items, which CPython untracks once they have survived a collection; items kept
in sorted order (the working set's keys by their last touch) in ``SortedChunks``, tuples too.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Sequence
from itertools import chain
from typing import TYPE_CHECKING, Generic, TypeVar, overload

CHUNK = 1_024
"""Items per tuple of an ``AtomChunks`` (the stored messages' frozen forms among them: ``core.frozen``)."""

SORTED_CHUNK = 256
"""Items per tuple of a ``SortedChunks`` (at most twice this many: a fuller one is split): an insertion copies one."""

T = TypeVar("T")
Ordered = TypeVar("Ordered", bound="SupportsRichComparison")

if TYPE_CHECKING:
    from _typeshed import SupportsRichComparison

    IntArray = array[int]
else:
    IntArray = array


def int_array(values: Iterable[int] = ()) -> IntArray:
    """Signed 64-bit integers: token sums, indices."""
    return array("q", values)


class AtomChunks(Sequence[T], Generic[T]):
    """An append-only sequence of immutable items (atoms, or tuples of them), kept in tuples of ``CHUNK`` (the
    newest in a list until it fills): a tuple of untracked items is untracked too."""

    __slots__ = ("_chunks", "_tail")

    def __init__(self, values: Iterable[T] = ()) -> None:
        self._chunks: list[tuple[T, ...]] = []
        self._tail: list[T] = []
        for value in values:
            self.append(value)

    def append(self, value: T) -> None:
        self._tail.append(value)
        if len(self._tail) == CHUNK:
            self._chunks.append(tuple(self._tail))
            self._tail = []

    def __len__(self) -> int:
        return len(self._chunks) * CHUNK + len(self._tail)

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> list[T]: ...

    def __getitem__(self, index: int | slice) -> T | list[T]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        chunks = self._chunks
        if index < 0:
            index += len(self)
        chunk, at = divmod(index, CHUNK)
        if 0 <= chunk < len(chunks):
            return chunks[chunk][at]
        if chunk == len(chunks):
            return self._tail[at]  # past the newest item: IndexError
        raise IndexError("index out of range")

    def __iter__(self) -> Iterator[T]:
        for chunk in self._chunks:
            yield from chunk
        yield from self._tail

    def parts(self) -> list[Sequence[T]]:
        """What holds the items: the full chunks (tuples), then the newest one (a list)."""
        return [*self._chunks, self._tail]


class SortedChunks(Generic[Ordered]):
    """Distinct immutable items in sorted order (``bisect.insort`` into a list, but kept in tuples of at most twice
    ``SORTED_CHUNK``): a working set's keys by their last touch, thousands in a long session."""

    __slots__ = ("_chunks", "_lasts", "_size")

    def __init__(self) -> None:
        self._chunks: list[tuple[Ordered, ...]] = []
        self._lasts: list[Ordered] = []
        """Each chunk's greatest item, to find the chunk an item belongs in."""
        self._size = 0

    def add(self, item: Ordered) -> None:
        chunks, lasts = self._chunks, self._lasts
        self._size += 1
        if not chunks:
            chunks.append((item,))
            lasts.append(item)
            return
        i = min(bisect_left(lasts, item), len(chunks) - 1)
        chunk = chunks[i]
        at = bisect_right(chunk, item)
        chunk = (*chunk[:at], item, *chunk[at:])
        if len(chunk) > 2 * SORTED_CHUNK:
            half = len(chunk) // 2
            chunks[i : i + 1] = [chunk[:half], chunk[half:]]
            lasts[i : i + 1] = [chunk[half - 1], chunk[-1]]
        else:
            chunks[i], lasts[i] = chunk, chunk[-1]

    def remove(self, item: Ordered) -> None:
        """Take ``item`` out (``ValueError`` if it is not in)."""
        chunks, lasts = self._chunks, self._lasts
        i = bisect_left(lasts, item)
        chunk = chunks[i] if i < len(chunks) else ()
        at = bisect_left(chunk, item)
        if at == len(chunk) or chunk[at] != item:
            raise ValueError(f"{item!r} is not in the sorted items")
        self._size -= 1
        chunk = chunk[:at] + chunk[at + 1 :]
        if chunk:
            chunks[i], lasts[i] = chunk, chunk[-1]
        else:
            del chunks[i], lasts[i]

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Ordered]:
        return chain.from_iterable(self._chunks)

    def __reversed__(self) -> Iterator[Ordered]:
        # chained in C: a layout reads the newest thousands of a working set's keys on every render
        return chain.from_iterable(map(reversed, reversed(self._chunks)))
