"""Long sequences the module keeps for a whole session, in forms a full collection does not walk item by item.

A full collection visits every reference a tracked container holds, so its time follows those references, not
only the number of containers: at 50,000 messages the history's prefix sums, chain hashes and user-turn indices
were three lists of 31,000, 31,000 and 6,000 items, about a third of what the module added to each collection
(issue 48). Integers go in an ``array`` (not a container the collector knows), anything else immutable in
``AtomChunks``: tuples of ``CHUNK`` items, which CPython untracks once they have survived a collection.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Generic, TypeVar, overload

CHUNK = 1_024
"""Items per tuple of an ``AtomChunks`` (the stored messages' frozen forms among them: ``core.frozen``)."""

T = TypeVar("T")

if TYPE_CHECKING:
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
