"""The stored history in a form the garbage collector does not walk, thawed into ordinary messages on read.

A long session holds tens of thousands of messages, and a copy kept as dicts and lists is two or three tracked
objects per message: every full collection of the host process walks them all (at 50,000 messages the module's
copies made a full collection 2.8 times the host's own, issue 48). Here each message is kept as one flat tuple:
its shape (a string naming its containers and their sizes, shared by every message of that shape), then its atoms
(``str``, ``int``, ``float``, ``bool``, ``None``) in order. CPython untracks such a tuple at the first collection
it survives, so the stored history costs the collector nothing after that, and a tuple is smaller than the dicts
and lists it stands for. The atoms are the caller's own (shared, never copied: they are immutable).

Readers get ordinary dicts and lists (``thaw``). A session has few shapes, and each is compiled once into a
function that builds the message in one expression (``{a[1]: a[2], a[3]: [{a[4]: a[5]}]}``: indices only, never a
message's text), so a thaw costs about what ``copy_message`` did and ``get_messages()`` can hand out fresh copies of
the whole history. A small cache keeps the messages read lately, so the same message read twice in one step is the
same object and steady requests thaw only what is new. Values JSON cannot hold (a ``set``, a ``datetime``, an
object) are deep-copied when frozen and again on thaw, so a reader never reaches the stored one.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Sequence
from typing import Any, overload

from .atoms import AtomChunks
from .messages import Message, encodable, has_lone_surrogate

_ATOMS = frozenset({str, int, float, bool, type(None)})

CACHE_SIZE = 128
"""Thawed messages kept per generation of the cache (two generations: at most twice this many are alive): the
messages of a group read together stay one object each; small, so the copies a read of the whole history (a cold
resume's extraction) thaws die young instead of reaching the collector's oldest generation, where they would set
off full collections (with 1,024, a 50,000-message cold resume made 9 full collections where the code before
made 3)."""

SHAPES_KEPT = 4_096
"""Compiled shapes kept (a session has tens); past this, or for a shape too large or deep to compile, the
general reader thaws (slower, same result)."""
_COMPILED_ATOMS = 2_000
"""Atoms a compiled shape may hold: one expression per message, so the compiler's time and limits stay small."""
_COMPILED_DEPTH = 40
"""Nesting a compiled shape may have (the parser refuses about 200 nested brackets)."""

Thaw = Callable[[tuple[Any, ...]], Any]
_compiled: dict[str, Thaw] = {}
_shapes: dict[str, str] = {}
"""Each shape string once: the frozen forms share it rather than each holding its own copy."""


def freeze(value: Any) -> tuple[Any, ...]:
    """``value`` as one flat tuple (its shape, then its atoms): the collector untracks it at the first collection it
    survives, whatever the value's nesting."""
    return frozen_copy(value)[0]


def frozen_copy(value: Any) -> tuple[tuple[Any, ...], Any]:
    """``freeze(value)`` and a deep copy of ``value`` (what ``thaw`` would give), made in one walk: what an append
    stores and what it reads back, at about the cost of ``copy_message`` alone."""
    shape: list[str] = []
    atoms: list[Any] = [None]
    try:
        copied = _emit(value, shape, atoms)
    except RecursionError:  # cyclic, or nested past the interpreter's limit: kept whole, as ``copy.deepcopy`` copies
        return ("o", copy.deepcopy(value)), copy.deepcopy(value)
    key = ",".join(shape)
    atoms[0] = _shapes.setdefault(key, key) if len(_shapes) < SHAPES_KEPT or key in _shapes else key
    return tuple(atoms), copied


def _emit(value: Any, shape: list[str], atoms: list[Any]) -> Any:
    """Write ``value``'s shape and atoms; return its copy (atoms, the commonest items, are handled inline)."""
    kind = type(value)
    if kind in _ATOMS:
        shape.append("a")
        atoms.append(value)
        return value
    if kind is dict:
        shape.append(f"d{len(value)}")
        made = {}
        for key, item in value.items():
            if type(key) is str:
                shape.append("a")
                atoms.append(key)
            else:
                key = _emit(key, shape, atoms)
            if type(item) in _ATOMS:
                shape.append("a")
                atoms.append(item)
                made[key] = item
            else:
                made[key] = _emit(item, shape, atoms)
        return made
    if kind is list or kind is tuple:
        shape.append(f"{'l' if kind is list else 't'}{len(value)}")
        items = [_emit(item, shape, atoms) for item in value]
        return items if kind is list else tuple(items)
    shape.append("o")  # not JSON: a copy of its own, deep-copied again on thaw
    atoms.append(copy.deepcopy(value))
    return copy.deepcopy(value)


def holds_lone_surrogate(frozen: tuple[Any, ...]) -> bool:
    """``has_lone_surrogate`` of the value ``frozen`` stands for, read from its atoms: its strings (keys included)
    are all there in a flat tuple, so no encoder walks the nesting again (``json.dumps`` of every appended message
    was an eighth of a 50,000-message ``set_messages``). What JSON cannot hold (the ``o`` atoms) is searched whole,
    as ``has_lone_surrogate`` searches it."""
    for atom in frozen[1:]:
        kind = type(atom)
        if kind is str:
            if not atom.isascii() and not encodable(atom):
                return True
        elif kind not in _ATOMS and has_lone_surrogate(atom):
            return True
    return False


def thaw(frozen: tuple[Any, ...]) -> Any:
    """The ordinary value ``freeze`` stood for: new dicts and lists, the same atoms."""
    shape: str = frozen[0]
    build = _compiled.get(shape)
    if build is None:
        build = _compile(shape)
    return build(frozen)


def _compile(shape: str) -> Thaw:
    """The function that thaws every form of ``shape`` (the general reader when it is too large to compile)."""
    codes = shape.split(",")
    if len(codes) > _COMPILED_ATOMS or len(_compiled) >= SHAPES_KEPT:
        return _read_all
    parts: list[str] = []
    at, depth, deepest = 1, 0, 0
    closers: list[tuple[str, int]] = []
    """Per open container: its closing bracket and the items it still waits for (a dict's keys and values)."""
    for code in codes:
        if parts and parts[-1] not in "([{":
            parts.append(": " if closers and closers[-1][0] == "}" and closers[-1][1] % 2 else ", ")
        if code == "a" or code == "o":
            parts.append(f"a[{at}]" if code == "a" else f"_copy(a[{at}])")
            at += 1
        else:
            count = int(code[1:]) * (2 if code[0] == "d" else 1)
            parts.append({"d": "{", "l": "[", "t": "("}[code[0]])
            closers.append(({"d": "}", "l": "]", "t": ",)"}[code[0]], count + 1))
            depth += 1
            deepest = max(deepest, depth)
        while closers:  # the item just written is one fewer the innermost open container waits for
            closer, left = closers[-1]
            closers[-1] = (closer, left - 1)
            if left - 1:
                break
            closers.pop()
            depth -= 1
            parts.append(")" if closer == ",)" and parts[-1] == "(" else closer)
    if deepest > _COMPILED_DEPTH:
        return _read_all
    build: Thaw = eval(f"lambda a: {''.join(parts)}", {"_copy": copy.deepcopy})  # noqa: S307 (indices only)
    _compiled[shape] = build
    return build


def _read_all(frozen: tuple[Any, ...]) -> Any:
    value, _, _ = _read(frozen[0].split(","), 0, frozen, 1)
    return value


def _read(codes: list[str], code_at: int, atoms: tuple[Any, ...], at: int) -> tuple[Any, int, int]:
    code = codes[code_at]
    if code == "a":
        return atoms[at], code_at + 1, at + 1
    if code == "o":
        return copy.deepcopy(atoms[at]), code_at + 1, at + 1
    count, code_at = int(code[1:]), code_at + 1
    if code[0] == "d":
        made: dict[Any, Any] = {}
        for _ in range(count):
            key, code_at, at = _read(codes, code_at, atoms, at)
            made[key], code_at, at = _read(codes, code_at, atoms, at)
        return made, code_at, at
    items = []
    for _ in range(count):
        item, code_at, at = _read(codes, code_at, atoms, at)
        items.append(item)
    return (items if code[0] == "l" else tuple(items)), code_at, at


class MessageLog(Sequence[Message]):
    """The history's messages: appended frozen, read thawed (``Sequence[Message]``; a slice is a new list).

    The forms are kept in chunks (``AtomChunks``): a tuple of untracked tuples is untracked too, so a full
    collection does not even visit the stored messages one by one, as it would the items of one long list.
    """

    def __init__(self) -> None:
        self._forms: AtomChunks[tuple[Any, ...]] = AtomChunks()
        self._size = 0
        """``len(self._forms)``, read on every access (an attribute, not a call)."""
        self._recent: dict[int, Message] = {}
        self._older: dict[int, Message] = {}
        """Two generations of thawed messages: a hit in the older one moves to the recent one; when the recent one
        is full it becomes the older one (the one before is let go)."""

    def append(self, message: Message) -> Message:
        """Keep ``message`` frozen; return the copy of it the next read returns (the caller's own is never kept)."""
        index = self._size
        frozen, copied = frozen_copy(message)
        self._forms.append(frozen)
        self._size += 1
        self._keep(index, copied)
        return copied  # type: ignore[no-any-return]  # a dict copies to a dict

    def __len__(self) -> int:
        return self._size

    @overload
    def __getitem__(self, index: int) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...

    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        if isinstance(index, slice):
            return [self._read(i) for i in range(*index.indices(len(self)))]
        found = self._recent.get(index)
        if found is not None:  # read lately (each pass over a group reads its messages in turn): a valid index
            return found
        size = self._size
        if index < 0:
            index += size
        if not 0 <= index < size:
            raise IndexError("message index out of range")
        return self._read(index)

    def __iter__(self) -> Iterator[Message]:
        for i in range(len(self)):
            yield self._read(i)

    def copies(self) -> list[Message]:
        """Every message thawed afresh, none shared with the cache: ``get_messages()``'s list the caller may change."""
        return [thaw(frozen) for frozen in self._forms]

    def frozen(self, index: int) -> Any:
        """Message ``index`` as stored."""
        return self._forms[index]

    def holds_lone_surrogate(self, index: int) -> bool:
        """Whether message ``index`` holds a lone surrogate anywhere (``holds_lone_surrogate``), without a thaw."""
        return holds_lone_surrogate(self.frozen(index))

    def stored(self) -> list[Sequence[Any]]:
        """What holds the forms: the full chunks (tuples), then the newest one (a list)."""
        return self._forms.parts()

    def _read(self, index: int) -> Message:
        found = self._recent.get(index)
        if found is not None:
            return found
        found = self._older.pop(index, None)
        if found is None:
            found = thaw(self.frozen(index))
        self._keep(index, found)
        return found

    def _keep(self, index: int, message: Message) -> None:
        if len(self._recent) >= CACHE_SIZE:
            self._older, self._recent = self._recent, {}
        self._recent[index] = message
