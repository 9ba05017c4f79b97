"""Message shapes, atomic groups and what makes a view valid.

Four tool-call shapes occur, often mixed in one history:

* OpenAI: ``assistant.tool_calls[*] = {"id", "function": {"name", "arguments": "<json>"}}`` answered by
  ``{"role": "tool", "tool_call_id": ...}``.
* Amplifier orchestrators (loop-basic, loop-streaming): ``assistant.tool_calls[*] = {"id", "tool",
  "arguments"}`` (a dict or a JSON string), answered the OpenAI way.
* Anthropic blocks: ``{"type": "tool_use", "id"}`` in assistant content, answered by
  ``{"type": "tool_result", "tool_use_id"}`` blocks in the next user message(s).
* Amplifier blocks: ``{"type": "tool_call", "id"}`` answered by ``{"type": "tool_result", "tool_call_id"}``.

loop-streaming stores each call twice, as a ``tool_call`` content block and as a ``tool_calls`` entry with
the same id, plus the first thinking block again under ``thinking_block``; providers send each once, so
``message_calls`` and ``extra_thinking`` report them once. ``tool_call_parts`` reads any one call.

A *group* is the unit compaction cuts on: a standalone message, or an assistant turn that calls
tools together with the messages that carry its results. What makes a whole view valid
lives in ``invariants.py`` in this package.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, overload

from .blocks import TEXT_FIELDS, carried

VALID_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
CALL_BLOCK_TYPES = frozenset({"tool_use", "tool_call"})
RESULT_BLOCK_TYPE = "tool_result"

Message = dict[str, Any]


def validate_message(message: Any) -> None:
    """Raise ``ValueError`` naming the field that makes ``message`` unusable.

    Runs before anything is stored, so a message is accepted whole or not at all: every later step
    (copying, counting, hashing, grouping) may then rely on bounded nesting and string ids.
    """
    if not isinstance(message, dict):
        raise ValueError(f"message must be a dict, got {type(message).__name__}")
    for key, value in message.items():
        problem = nesting_problem(key) or nesting_problem(value)
        if problem:
            raise ValueError(f"message field {key!r} {problem}")
    role = message.get("role")
    if role is not None and not isinstance(role, str):  # checked before any set lookup: a list is unhashable
        raise ValueError(f"message field 'role' must be a string, got {type(role).__name__}")
    if role not in VALID_ROLES:
        allowed = ", ".join(sorted(VALID_ROLES))
        if role is None:
            raise ValueError(f"message has no 'role' field (allowed roles: {allowed})")
        raise ValueError(f"message field 'role' is {role!r}; allowed roles: {allowed}")
    content = message.get("content")
    if content is not None and not isinstance(content, str | list):
        raise ValueError(
            f"message field 'content' must be a string, a list of blocks or None, got {type(content).__name__}"
        )
    if isinstance(content, list):
        for i, block in enumerate(content):
            if not isinstance(block, dict | str):
                raise ValueError(f"message field 'content[{i}]' must be a block dict, got {type(block).__name__}")
            _check_block_types(f"content[{i}]", block)
            if isinstance(block, dict) and block.get("type") in CALL_BLOCK_TYPES and not block.get("id"):
                raise ValueError(f"message field 'content[{i}]' is a {block['type']} block without an 'id'")
            if isinstance(block, dict):
                for key in ("id", "tool_use_id", "tool_call_id"):
                    _check_id(f"content[{i}].{key}", block.get(key))
    tool_calls = message.get("tool_calls")
    if tool_calls is not None:
        if not isinstance(tool_calls, list):
            raise ValueError("message field 'tool_calls' must be a list")
        for i, call in enumerate(tool_calls):
            if not isinstance(call, dict) or not call.get("id"):
                raise ValueError(f"message field 'tool_calls[{i}]' has no 'id'")
            _check_id(f"tool_calls[{i}].id", call.get("id"))
    _check_id("tool_call_id", message.get("tool_call_id"))
    if isinstance(message.get("thinking_block"), dict):
        _check_block_types("thinking_block", message["thinking_block"])
    if role == "tool" and not message.get("tool_call_id") and not _result_blocks(content):
        raise ValueError("message with role 'tool' has no 'tool_call_id'")


MAX_NESTING = 100
"""Deepest nesting of lists and dicts a message may have: far beyond any real tool output, far below
Python's recursion limit, which copying, counting and hashing would otherwise hit."""
MAX_VALUES = 1_000_000
"""Most values (containers and scalars) one message field may hold once shared containers are counted at
every place they appear: copying, counting and hashing visit each place, so sharing must not multiply it."""
_NESTED = (dict, list, tuple, set, frozenset)


def nesting_problem(value: Any, limit: int = MAX_NESTING, max_values: int = MAX_VALUES) -> str | None:
    """Why ``value`` cannot be walked safely (a cycle, nesting deeper than ``limit``, more than ``max_values``
    values once shared containers are counted at every place), or None.

    Every add pays for this, so the usual case is one plain walk that recurses at most ``limit`` levels and
    stops after ``max_values`` values: hostile input can neither exhaust the stack nor make it slow (a cycle
    only runs into the depth limit). Only a value that fails is walked again, remembering each container,
    to say which problem it has.
    """
    if not isinstance(value, _NESTED):
        return None
    try:
        _count_values(value, 1, limit, max_values)
    except _Unsafe:
        try:
            _measure(value, 1, _Walk(limit, max_values))
        except _Unsafe as exc:
            return str(exc)
        return f"is nested more than {limit} levels deep or holds more than {max_values:,} values"
    return None


def _count_values(node: Any, depth: int, limit: int, budget: int) -> int:
    """``budget`` less the values in ``node``; raises ``_Unsafe`` past ``limit`` levels or the budget."""
    if depth > limit:
        raise _Unsafe
    if isinstance(node, dict):
        for key in node:
            if type(key) is not str and isinstance(key, _NESTED):
                budget = _count_values(key, depth + 1, limit, budget)
        node = node.values()
    for child in node:
        budget -= 1
        if type(child) not in _SCALARS and isinstance(child, _NESTED):
            budget = _count_values(child, depth + 1, limit, budget)
    if budget < 0:
        raise _Unsafe
    return budget


class _Unsafe(Exception):
    """Raised inside the walks; ``nesting_problem`` turns it into its answer."""


class _Walk:
    __slots__ = ("limit", "max_values", "known", "on_path")

    def __init__(self, limit: int, max_values: int) -> None:
        self.limit = limit
        self.max_values = max_values
        self.known: dict[int, tuple[int, int]] = {}
        """id -> (height, values inside counted at every place they appear) of each container measured."""
        self.on_path: set[int] = set()


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _measure(node: Any, depth: int, walk: _Walk) -> int:
    """Values in ``node`` (itself included), expanded; ``node`` sits ``depth`` levels deep."""
    key = id(node)
    known = walk.known.get(key)
    if known is not None:
        if depth + known[0] - 1 > walk.limit:
            raise _Unsafe(f"is nested more than {walk.limit} levels deep")
        return known[1]
    if key in walk.on_path:
        raise _Unsafe("contains itself (a cycle)")
    if depth > walk.limit:
        raise _Unsafe(f"is nested more than {walk.limit} levels deep")
    walk.on_path.add(key)
    height = size = 1
    if isinstance(node, dict):
        children: Any = node.values()
        size += len(node)
        for k in node:
            if type(k) not in _SCALARS and isinstance(k, _NESTED):
                size += _measure(k, depth + 1, walk) - 1
    else:
        children = node
    for child in children:
        if type(child) in _SCALARS or not isinstance(child, _NESTED):
            size += 1
            continue
        size += _measure(child, depth + 1, walk)
        height = max(height, walk.known[id(child)][0] + 1)
        if size > walk.max_values:
            break
    walk.on_path.discard(key)
    if size > walk.max_values:
        raise _Unsafe(f"holds more than {walk.max_values:,} values (shared lists or dicts repeated)")
    walk.known[key] = (height, size)
    return size


def parse_embedded_json(text: str) -> Any:
    """JSON carried inside a message (tool-call arguments, stringified tool output), or ``ValueError``.

    Only the message itself was checked for nesting when it was added; a string in it can hold JSON nested
    thousands deep, which ``json.loads`` answers with ``RecursionError`` and a later walk of the parsed value
    would too. Both are refused here like a syntax error, so every caller keeps the string as plain text.
    """
    try:
        value = json.loads(text)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    if nesting_problem(value):
        raise ValueError("JSON nested too deeply or too large")
    return value


def _check_block_types(field: str, block: Any) -> None:
    """A block's ``type`` is looked up in sets (hashed), so it must be a string or absent; a tool result's body
    holds blocks too, at any depth. Anything else is refused naming the field (``content[2].content[0].type``)."""
    if not isinstance(block, dict):
        return
    kind = block.get("type")
    if kind is not None and not isinstance(kind, str):
        raise ValueError(f"message field '{field}.type' must be a string, got {type(kind).__name__}")
    if kind == RESULT_BLOCK_TYPE:
        for key in ("content", "output"):
            body = block.get(key)
            if isinstance(body, list):
                for i, inner in enumerate(body):
                    _check_block_types(f"{field}.{key}[{i}]", inner)


def block_kind(block: dict[str, Any]) -> str | None:
    """A block's ``type`` when it is a string, else None: lists of arbitrary values (tool arguments, outputs)
    are read as blocks too, and a ``type`` there may be anything JSON holds."""
    kind = block.get("type")
    return kind if isinstance(kind, str) else None


def _check_id(field: str, value: Any) -> None:
    """Call ids are matched and hashed as text: anything but a string (or absent) is refused."""
    if value is not None and not isinstance(value, str):
        raise ValueError(f"message field {field!r} must be a string id, got {type(value).__name__}")


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def _result_blocks(content: Any) -> list[dict[str, Any]]:
    return [b for b in _blocks(content) if b.get("type") == RESULT_BLOCK_TYPE]


def tool_call_parts(call: Any) -> tuple[str, str, Any]:
    """``(id, tool name, arguments)`` of one call in any shape, so no caller re-parses the shapes.

    Reads an OpenAI ``tool_calls`` entry, an Amplifier one (``tool`` + ``arguments``) and a
    ``tool_use``/``tool_call`` content block (``name`` + ``input``). Arguments come back as stored (a dict, a
    JSON string, or None when absent): counting and hashing must see what the provider is sent.
    """
    if not isinstance(call, dict):
        return "", "", None
    fn = call["function"] if isinstance(call.get("function"), dict) else {}
    name = fn.get("name") or call.get("name") or call.get("tool") or ""
    if "arguments" in fn:
        args = fn["arguments"]
    else:
        args = call["input"] if call.get("input") is not None else call.get("arguments")
    return str(call.get("id") or ""), str(name), args


def listed_calls(message: Message) -> list[tuple[str, str, Any]]:
    """``tool_call_parts`` of each entry of the message's ``tool_calls`` list."""
    return [tool_call_parts(c) for c in message.get("tool_calls") or [] if isinstance(c, dict)]


def unique_content(message: Message) -> Any:
    """``content`` without call blocks that repeat a ``tool_calls`` entry (loop-streaming stores both)."""
    content = message.get("content")
    if not isinstance(content, list) or not message.get("tool_calls"):
        return content
    listed = {call_id for call_id, _, _ in listed_calls(message) if call_id}
    return [
        b for b in content if not (isinstance(b, dict) and block_kind(b) in CALL_BLOCK_TYPES and b.get("id") in listed)
    ]


def message_calls(message: Message) -> list[tuple[str, str, Any]]:
    """``(id, name, arguments)`` of every call a message carries, each once, ``tool_calls`` entries first."""
    blocks = [b for b in _blocks(unique_content(message)) if block_kind(b) in CALL_BLOCK_TYPES]
    return listed_calls(message) + [tool_call_parts(b) for b in blocks]


def extra_thinking(message: Message) -> dict[str, Any] | None:
    """The ``thinking_block`` loop-streaming adds, unless it only repeats a block of ``content``.

    The Anthropic provider sends it (with its signature) in place of the content's thinking, so it costs
    tokens; counted on top of an identical content block it would cost them twice.
    """
    block = message.get("thinking_block")
    if not isinstance(block, dict) or not block:
        return None
    content = message.get("content")
    return None if isinstance(content, list) and block in content else block


def arguments_text(args: Any) -> str:
    """Arguments as shown in transcripts: a JSON string as sent, a dict as canonical JSON."""
    return "" if args is None else _as_text(args)


def call_ids(message: Message) -> list[str]:
    """Ids of the tool calls a message makes, in every shape, each once: ``message_calls``' ids, read without taking
    each call apart (every message appended asks, twice; a resume appends tens of thousands at once). A content
    block repeating a ``tool_calls`` entry (which ``message_calls`` leaves out) has that entry's id, so it adds
    nothing here either."""
    if message.get("role") != "assistant":
        return []
    ids: list[str] = []
    for call in message.get("tool_calls") or ():
        if isinstance(call, dict) and (call_id := call.get("id")):
            ids.append(str(call_id))
    content = message.get("content")
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and (call_id := block.get("id")):
                kind = block.get("type")
                if isinstance(kind, str) and kind in CALL_BLOCK_TYPES:
                    ids.append(str(call_id))
    return list(dict.fromkeys(ids)) if len(ids) > 1 else ids


def result_ids(message: Message) -> list[str]:
    """Ids of the tool calls that a message answers."""
    ids: list[str] = []
    if message.get("role") == "tool" and message.get("tool_call_id"):
        ids.append(message["tool_call_id"])
    for block in _result_blocks(message.get("content")):
        ref = block.get("tool_use_id") or block.get("tool_call_id")
        if ref:
            ids.append(ref)
    return ids


def is_user_turn(message: Message) -> bool:
    """A user message that says something (not only a carrier of tool results)."""
    if message.get("role") != "user":
        return False
    content = message.get("content")
    if isinstance(content, list):
        return any(not (isinstance(b, dict) and b.get("type") == RESULT_BLOCK_TYPE) for b in content)
    return True


_NO_IDS: frozenset[str] = frozenset()


@dataclass(slots=True)
class Group:
    """Messages ``[start, end)`` of the history that must stay together.

    A long history holds one of these per turn, so it is slotted and holds a set only while calls
    wait for results: per-group bytes are most of the manager's own memory per message.
    """

    start: int
    end: int
    pending: set[str] | frozenset[str] = _NO_IDS
    """Calls of this group still waiting for a result (a real set only while there are some)."""
    closed: bool = False

    @property
    def size(self) -> int:
        return self.end - self.start


class GroupList(Sequence[Group]):
    """A history's groups, the closed ones kept as their starts in an ``array`` (no object the collector walks; a
    group's end is the next one's start), the newest as a ``Group`` the ``Grouper`` may still extend.

    Reading a closed group builds a ``Group`` (closed, its dangling calls as ``pending``) for the reader; only the
    newest one is shared, and only the ``Grouper`` changes it.
    """

    def __init__(self) -> None:
        self._starts = array("q")
        """Starts of the groups before the newest."""
        self._dangling: dict[int, set[str] | frozenset[str]] = {}
        """Closed groups whose calls were never all answered: their ``pending``."""
        self._last: Group | None = None

    def append(self, group: Group) -> None:
        """Open ``group`` as the newest; the one before it must be closed."""
        last = self._last
        if last is not None:
            if last.pending:
                self._dangling[len(self._starts)] = last.pending
            self._starts.append(last.start)
        self._last = group

    def __len__(self) -> int:
        return len(self._starts) + (self._last is not None)

    @overload
    def __getitem__(self, index: int) -> Group: ...

    @overload
    def __getitem__(self, index: slice) -> list[Group]: ...

    def __getitem__(self, index: int | slice) -> Group | list[Group]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        settled = len(self._starts)
        if index < 0:
            index += settled + (self._last is not None)
        last = self._last
        if index == settled and last is not None:
            return last
        if not 0 <= index < settled:
            raise IndexError("group index out of range")
        assert last is not None  # a settled group has a newer one
        end = self._starts[index + 1] if index + 1 < settled else last.start
        return Group(self._starts[index], end, self._dangling.get(index, _NO_IDS), True)

    def __iter__(self) -> Iterator[Group]:
        for i in range(len(self)):
            yield self[i]


class Grouper:
    """Splits a history into groups incrementally, one message at a time.

    A group opened by an assistant tool call takes in the following messages that answer its calls.
    It closes at the first message that is not such an answer: results that arrive later are
    orphans, and calls never answered are dangling. Both are left out of views by ``sanitize``.
    """

    def __init__(self) -> None:
        self.groups = GroupList()

    def push(self, message: Message, index: int) -> bool:
        """Place message ``index``; return True when it joined the last group instead of opening one."""
        last = self.groups[-1] if self.groups else None
        answers = result_ids(message)
        if (
            last is not None
            and not last.closed
            and last.pending
            and answers
            and any(a in last.pending for a in answers)
            and not call_ids(message)
        ):
            last.end = index + 1
            last.pending.difference_update(answers)  # type: ignore[union-attr]  # non-empty, so a set
            return True
        if last is not None:
            last.closed = True
            if not last.pending:
                last.pending = _NO_IDS
        calls = call_ids(message)
        self.groups.append(Group(start=index, end=index + 1, pending=set(calls) if calls else _NO_IDS))
        return False


def group_messages(messages: list[Message]) -> list[Group]:
    grouper = Grouper()
    for i, message in enumerate(messages):
        grouper.push(message, i)
    return list(grouper.groups)


def sanitize(messages: list[Message]) -> list[Message]:
    """Return the messages of one group made valid on their own (``invariants.ToolPairing`` holds).

    Unanswered calls are removed, and so is every stray part of a result: a result for a call not in the
    group, a second result for a call already answered, a result inside the message that makes the call
    (the rule reads those as calls), and a ``tool_call_id`` that answers nothing while the message's
    blocks do answer. A message left with nothing to say is dropped; one that answers a call always keeps
    that answer. Untouched messages are returned as the same objects (thinking blocks and signatures stay
    byte-for-byte).
    """
    made: set[str] = set()
    open_calls: set[str] = set()
    answered: set[str] = set()
    kept: list[set[str]] = []
    """Per message: the calls its results answer in the view (empty for a message that makes calls)."""
    stray = False
    for m in messages:
        calls, results = call_ids(m), result_ids(m)
        if calls:
            made.update(calls)
            open_calls = set(calls)
            kept.append(set())
            stray = stray or bool(results)
            continue
        answers = {r for r in results if r in open_calls}
        stray = stray or len(answers) < len(set(results))
        open_calls -= answers
        answered |= answers
        kept.append(answers)
    if not stray and made == answered:
        return messages  # the usual group: every call answered once, nothing else
    out: list[Message] = []
    for m, answers in zip(messages, kept, strict=True):
        cleaned = strip_tool_blocks(m, keep_calls=answered, keep_results=answers)
        if cleaned is not None:
            out.append(cleaned)
    return out


def strip_tool_blocks(message: Message, keep_calls: set[str], keep_results: set[str]) -> Message | None:
    """``message`` without the calls and results not kept (itself when nothing goes); None when nothing is left.

    A ``tool`` message lives to answer: it is kept only while it still answers a kept call (through
    ``tool_call_id`` or a result block), and a ``tool_call_id`` that answers nothing kept is removed.
    """
    own_calls = set(call_ids(message))
    own_results = set(result_ids(message))
    if own_calls <= keep_calls and own_results <= keep_results:
        return message
    new = dict(message)
    if message.get("tool_calls"):
        kept = [c for c in message["tool_calls"] if c.get("id") in keep_calls]
        if kept:
            new["tool_calls"] = kept
        else:
            new.pop("tool_calls")
    content = message.get("content")
    if isinstance(content, list):
        new["content"] = [
            b
            for b in content
            if not (
                isinstance(b, dict)
                and (
                    (block_kind(b) in CALL_BLOCK_TYPES and b.get("id") not in keep_calls)
                    or (
                        b.get("type") == RESULT_BLOCK_TYPE
                        and (b.get("tool_use_id") or b.get("tool_call_id")) not in keep_results
                    )
                )
            )
        ]
    if message.get("role") == "tool":
        if message.get("tool_call_id") not in keep_results:
            new.pop("tool_call_id", None)
        if not result_ids(new):
            return None
        if isinstance(content, list) and not new["content"]:
            new["content"] = ""  # the call's answer stays; only stray blocks were in it
        return new
    if not new.get("content") and not new.get("tool_calls"):
        return None
    return new


_ATOMIC = frozenset({str, int, float, bool, type(None)})


def copy_message(message: Message) -> Message:
    """A deep copy of a message, about 4x faster than ``copy.deepcopy`` on JSON-shaped data.

    Every ``add_message`` pays for one, so it matters. Dicts, lists and scalars are copied directly;
    anything else goes through ``copy.deepcopy``, and so does a message nested too deeply (or cyclic).
    """
    try:
        copied: Message = _copy_json(message)  # a dict copies to a dict
        return copied
    except RecursionError:
        return copy.deepcopy(message)


def _copy_json(value: Any) -> Any:
    kind = type(value)
    if kind is dict:
        return {k: _copy_json(v) for k, v in value.items()}
    if kind is list:
        return [_copy_json(v) for v in value]
    if kind in _ATOMIC:
        return value
    return copy.deepcopy(value)


def canonical_json(value: Any) -> str:
    """Stable text form used for hashing; values JSON cannot hold are written with ``repr``."""
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=_json_default)
    except (TypeError, ValueError):  # keys JSON cannot sort or hold (mixed types, tuples), or a cycle
        return json.dumps(
            _plain(value, set()), sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=_json_default
        )


def _json_default(value: Any) -> Any:
    if isinstance(value, set | frozenset):  # repr order of a set of strings changes between processes
        return sorted(value, key=repr)
    return repr(value)


def _plain(value: Any, path: set[int]) -> Any:
    """``value`` with every dict key a string and cycles cut, so ``json.dumps`` cannot fail on it."""
    if type(value) is int:
        try:
            str(value)
        except ValueError:  # more digits than Python converts to text: written in hex instead
            return f"<int {hex(value)}>"
        return value
    if not isinstance(value, dict | list | tuple):
        return value
    if id(value) in path:
        return "<cycle>"
    path.add(id(value))
    try:
        if isinstance(value, dict):
            return {k if isinstance(k, str) else repr(k): _plain(v, path) for k, v in value.items()}
        return [_plain(v, path) for v in value]
    finally:
        path.discard(id(value))


def content_hash(*parts: str) -> str:
    """SHA-256 of the parts; a lone surrogate (text that is not valid UTF-8) hashes as its own code point."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
    return digest.hexdigest()


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def scrub_text(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD: what can be encoded as UTF-8 and sent.

    Python strings can hold surrogates (JSON ``"\\ud800"`` escapes, ``surrogateescape`` decoding of tool
    output) that no UTF-8 encoder, HTTP client or SQLite binding accepts.
    """
    return text if encodable(text) else _LONE_SURROGATE.sub(REPLACEMENT, text)


def encodable(text: str) -> bool:
    """True when ``text`` can be encoded as UTF-8 (it holds no lone surrogate)."""
    return text.isascii() or not _LONE_SURROGATE.search(text)


def has_lone_surrogate(value: Any) -> bool:
    """True when any string in ``value`` (keys included) holds a lone surrogate; ``value`` is validated.

    Every add asks, so the usual case is one pass of the C JSON encoder (values it cannot write are left
    out: they are not sent as text); only keys it cannot write send it to the slower walk.
    """
    try:
        text = json.dumps(value, ensure_ascii=False, check_circular=False, default=_unwritten)
    except _SurrogateFound:
        return True
    except (TypeError, ValueError):  # keys JSON cannot hold, or integers too long to write
        return _walk_for_surrogates(value)
    return not encodable(text)


class _SurrogateFound(Exception):
    pass


def _unwritten(value: Any) -> None:
    """The encoder's fallback for a value JSON cannot write (a set, an object): searched on its own."""
    if _walk_for_surrogates(value):
        raise _SurrogateFound


def _walk_for_surrogates(value: Any) -> bool:
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            if not encodable(node):
                return True
        elif isinstance(node, dict):
            stack += node.keys()
            stack += node.values()
        elif isinstance(node, list | tuple | set | frozenset):
            stack += node
    return False


def scrub_value(value: Any) -> Any:
    """``value`` with ``scrub_text`` applied to every string; containers are copied only where one changes."""
    if isinstance(value, str):
        return scrub_text(value)
    if isinstance(value, dict):
        items = [(scrub_value(k), scrub_value(v)) for k, v in value.items()]
        if all(a is k and b is v for (a, b), (k, v) in zip(items, value.items(), strict=True)):
            return value
        return dict(items)
    if isinstance(value, list | tuple):
        scrubbed = [scrub_value(v) for v in value]
        if all(a is b for a, b in zip(scrubbed, value, strict=True)):
            return value
        return scrubbed if isinstance(value, list) else tuple(scrubbed)
    return value


def message_text(message: Message) -> str:
    """Readable text of a message (all blocks, calls and results) for transcripts and counting."""
    parts: list[str] = []
    content = unique_content(message)
    if isinstance(content, str):
        parts.append(content)
    else:
        for block in content or []:
            parts.append(block_text(block))
    parts += [f"{name}({arguments_text(args)})" for _, name, args in listed_calls(message)]
    if message.get("reasoning_content"):
        parts.append(str(message["reasoning_content"]))
    thinking = extra_thinking(message)
    if thinking:
        parts.append(block_text(thinking))
    return "\n".join(p for p in parts if p)


def block_text(block: Any) -> str:
    """The text a block carries, for transcripts, search and the summaries: a text block's text, a call as
    ``name(arguments)``, a result's body, an attachment named by a label and followed by its text (a document's
    context and data, a search result's content, a text file's contents; see ``blocks.py``). Binary parts (an
    image, a PDF's pages) are only named. A block of an unknown type is the JSON of what it carries."""
    if isinstance(block, str):
        return block
    if not isinstance(block, dict):
        return _as_text(block)
    kind = block_kind(block)
    if kind in TEXT_FIELDS:
        return str(block.get(TEXT_FIELDS[kind], ""))
    if kind == "thinking":
        return str(block.get("thinking", ""))
    if kind in CALL_BLOCK_TYPES:
        _, name, args = tool_call_parts(block)
        return f"{name}({arguments_text(args)})"
    if kind == RESULT_BLOCK_TYPE:
        body = block.get("content", block.get("output", ""))
        if isinstance(body, list):
            return "\n".join(block_text(b) for b in body)
        return _as_text(body)
    found = carried(block, kind)
    if found is not None:
        return "\n".join(p for p in (found.label, *found.texts, *(block_text(b) for b in found.nested)) if p)
    if kind == "redacted_thinking":
        return ""
    return _as_text({k: v for k, v in block.items() if k != "type"})


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return canonical_json(value)
