"""The stored history in a form the garbage collector does not walk, thawed into ordinary messages on read.

A long session holds tens of thousands of messages, and a copy kept as dicts and lists is two or three tracked
objects per message: every full collection of the host process walks them all (at 50,000 messages the module's
copies made a full collection 2.8 times the host's own, issue 48). Here each message is kept as one flat tuple
of atoms (``str``, ``int``, ``float``, ``bool``, ``None``; containers written as a tag, a length and their items):
CPython untracks such a tuple at the first collection it survives, so the stored history costs the collector
nothing after that, and a tuple is smaller than the dicts and lists it stands for. The atoms are the caller's own
(shared, never copied: they are immutable).

Readers get ordinary dicts and lists (``thaw``), built on demand; a small cache keeps the messages read lately,
so the same message read twice in one step (a group's stored form beside its shown form, the tail of every
request) is the same object, and steady requests thaw only what is new. Values JSON cannot hold (a ``set``, a
``datetime``, an object) are kept as they are and deep-copied on thaw, so a reader never reaches the stored one.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any, overload

from .messages import Message

_DICT = "".join(("\x00", "frozen dict"))
_LIST = "".join(("\x00", "frozen list"))
_TUPLE = "".join(("\x00", "frozen tuple"))
_OTHER = "".join(("\x00", "frozen other"))
"""Tags in a frozen form, compared by identity: built at run time, so never the same object as a string of a
message (which could only be equal to them). A container is its tag, its length, then its items (a dict's keys and
values in turn); anything else not an atom is ``_OTHER`` then the value itself."""
_ATOMS = frozenset({str, int, float, bool, type(None)})

CACHE_SIZE = 128
"""Thawed messages kept per generation of the cache (two generations: at most twice this many are alive): the
messages of a group read together stay one object each; small, so the copies a read of the whole history (a cold
resume's extraction) thaws die young instead of reaching the collector's oldest generation, where they would set
off full collections (with 1,024, a 50,000-message cold resume made 9 full collections where the code before
made 3)."""


def freeze(value: Any) -> tuple[Any, ...]:
    """``value`` as one flat tuple of atoms (for a JSON-shaped message): the collector untracks it at the first
    collection it survives, whatever its nesting (a nested tuple is untracked only once the ones inside it are)."""
    out: list[Any] = []
    _emit(value, out)
    return tuple(out)


def _emit(value: Any, out: list[Any]) -> None:
    kind = type(value)
    if kind in _ATOMS:
        out.append(value)
    elif kind is dict:
        out.append(_DICT)
        out.append(len(value))
        for key, item in value.items():
            _emit(key, out)
            _emit(item, out)
    elif kind is list or kind is tuple:
        out.append(_LIST if kind is list else _TUPLE)
        out.append(len(value))
        for item in value:
            _emit(item, out)
    else:  # not JSON: kept as is (the caller's copy), deep-copied on thaw
        out.append(_OTHER)
        out.append(value)


def thaw(frozen: tuple[Any, ...]) -> Any:
    """The ordinary value ``freeze`` stood for: new dicts and lists, the same atoms."""
    value, _ = _read(frozen, 0)
    return value


def _read(frozen: tuple[Any, ...], at: int) -> tuple[Any, int]:
    item = frozen[at]
    if type(item) is not str or item[:1] != "\x00":  # an atom (a tag starts with NUL; few strings do)
        return item, at + 1
    if item is _DICT:
        count, at = frozen[at + 1], at + 2
        made: dict[Any, Any] = {}
        for _ in range(count):
            key, at = _read(frozen, at)
            made[key], at = _read(frozen, at)
        return made, at
    if item is _LIST or item is _TUPLE:
        count, at = frozen[at + 1], at + 2
        items = []
        for _ in range(count):
            value, at = _read(frozen, at)
            items.append(value)
        return (items if item is _LIST else tuple(items)), at
    if item is _OTHER:
        return copy.deepcopy(frozen[at + 1]), at + 2
    return item, at + 1  # a message's own string that merely starts with NUL


class MessageLog:
    """The history's messages: appended frozen, read thawed (``Sequence[Message]``; a slice is a new list)."""

    def __init__(self) -> None:
        self._frozen: list[Any] = []
        self._recent: dict[int, Message] = {}
        self._older: dict[int, Message] = {}
        """Two generations of thawed messages: a hit in the older one moves to the recent one; when the recent one
        is full it becomes the older one (the one before is let go)."""

    def append(self, message: Message) -> None:
        """Keep ``message`` frozen; ``message`` itself (a copy the history owns) is what the next read returns."""
        index = len(self._frozen)
        self._frozen.append(freeze(message))
        self._keep(index, message)

    def __len__(self) -> int:
        return len(self._frozen)

    @overload
    def __getitem__(self, index: int) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...

    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        if isinstance(index, slice):
            return [self._read(i) for i in range(*index.indices(len(self._frozen)))]
        if index < 0:
            index += len(self._frozen)
        if not 0 <= index < len(self._frozen):
            raise IndexError("message index out of range")
        return self._read(index)

    def __iter__(self) -> Iterator[Message]:
        for i in range(len(self._frozen)):
            yield self._read(i)

    def copies(self) -> list[Message]:
        """Every message thawed afresh, none shared with the cache: ``get_messages()``'s list the caller may change."""
        return [thaw(frozen) for frozen in self._frozen]

    def frozen(self, index: int) -> Any:
        """Message ``index`` as stored."""
        return self._frozen[index]

    def _read(self, index: int) -> Message:
        found = self._recent.get(index)
        if found is not None:
            return found
        found = self._older.pop(index, None)
        if found is None:
            found = thaw(self._frozen[index])
        self._keep(index, found)
        return found

    def _keep(self, index: int, message: Message) -> None:
        if len(self._recent) >= CACHE_SIZE:
            self._older, self._recent = self._recent, {}
        self._recent[index] = message
