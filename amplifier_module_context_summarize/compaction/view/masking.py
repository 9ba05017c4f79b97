"""Observation masking: the cheapest rung, before any summary.

Old tool outputs are most of an agent's tokens and the least of what it needs later: the calls, the
assistant's words and its reasoning say what was done and found. A masked group keeps all of those and
replaces each tool output longer than a threshold by a one-line placeholder (its size, its first or
error line, and a handle to the original); huge call arguments (a whole file written through a tool)
are clipped the same way. It needs no LLM and no cache, and the same group always masks the same way,
so a resumed session shows the identical view.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...core.handles import handle_for
from ...core.messages import (
    CALL_BLOCK_TYPES,
    RESULT_BLOCK_TYPE,
    Message,
    block_kind,
    block_text,
    canonical_json,
    parse_embedded_json,
    result_ids,
)
from ...working_set.outcomes import error_line, looks_failed

if TYPE_CHECKING:
    from ...core.history import History
    from ...core.tokens import TokenCounter

FIRST_LINE_CHARS = 120
BACK_SCAN = 64
"""Groups ``Masks.limit`` reads back from the newest for the outputs kept verbatim before it counts them all from
the first (once; then only new groups): bounds the work of each call when outputs are rare."""
ARGUMENT_KEEP_CHARS = 80
"""Head of a clipped call argument that stays (enough to recognise the file or text)."""


@dataclass(frozen=True)
class MaskSettings:
    min_chars: int = 600
    """Tool outputs (and call arguments) longer than this are masked; shorter ones cost little more than a
    placeholder (about 200 characters with its first line and handle)."""
    keep_recent: int = 5
    """The newest tool outputs, which stay verbatim (the agent is still working with them) unless a summary or
    truncation would take their groups whole (``Compaction.masked``)."""
    recall_tool: str | None = None
    """Name of the mounted tool that fetches an original by its handle, which the placeholder then names."""

    @property
    def key(self) -> list[Any]:
        """What changes the masked text (and so the summarizer's input): part of the summary fingerprint."""
        return ["mask-v2", self.min_chars, self.recall_tool]


class Masks:
    """Masked forms of one history's closed groups and their token prefix sums, each group worked out once."""

    def __init__(self, history: History, settings: MaskSettings) -> None:
        self.history = history
        self.settings = settings
        self._origin: int | None = None
        self._prefix: list[int] = [0]
        """Masked tokens of groups ``[origin, origin + i)``."""
        self._changed: dict[int, list[Message]] = {}
        """Masked forms of the groups that masking makes smaller; every other group shows as the history does."""
        self._plain: set[int] = set()
        """Groups masking would not make smaller (nothing long in them, or placeholders costing more)."""
        self._epoch = history.counted_epoch
        self._ahead: dict[int, int] = {}
        """Tokens of groups worked out ahead of the prefix sums reaching them (``ahead``), under ``_epoch``."""
        self._floor: TokenCounter | None = None
        """Lower bounds of the history's counts (``TokenCounter.flooring``), made on first use."""
        self._outputs_scanned = 0
        self._output_groups: list[int] = []
        self._outputs_before: list[int] = []
        """Cumulative count of tool outputs up to and including ``_output_groups[i]``."""

    # ------------------------------------------------------------------ planning

    def tokens(self, start: int, end: int) -> int:
        """Tokens of groups ``[start, end)`` masked (closed groups only)."""
        if end <= start:
            return 0
        self._cover(start, end)
        origin = self._origin or 0
        return self._prefix[end - origin] - self._prefix[start - origin]

    def ahead(self, start: int, end: int) -> None:
        """Work out closed groups ``[start, end)`` now, forms and counts, for the prefix sums to take when they reach
        them: a caller reading these groups anyway (``warm.py``, extracting their facts) masks them while their
        messages are still in the history's thaw cache, instead of a later pass thawing them all again."""
        self._renew()
        origin, covered = self._origin, len(self._prefix) - 1
        for g in range(max(start, self._bounded_before()), end):
            if g not in self._ahead and not (origin is not None and origin <= g < origin + covered):
                self._ahead[g] = self._decide(g)[1]

    def limit(self) -> int:
        """The furthest mask end allowed: the groups holding the newest ``keep_recent`` outputs stay verbatim."""
        history = self.history
        closed = history.last_cuttable
        keep = self.settings.keep_recent
        open_outputs = len(result_ids_in(history, closed)) if history.groups else 0
        if keep <= open_outputs:
            return closed
        remaining = keep - open_outputs
        newest = self._newest_outputs(closed, remaining)
        if newest is not None:
            return newest
        self._scan_outputs(closed)
        counts, total = self._outputs_before, self._outputs_before[-1] if self._outputs_before else 0
        if total <= remaining:
            return 0
        first_kept = bisect_right(counts, total - remaining)
        return min(self._output_groups[first_kept], closed) if first_kept < len(counts) else closed

    # ------------------------------------------------------------------ showing

    def group(self, index: int) -> list[Message]:
        """Group ``index`` masked."""
        changed = self._changed.get(index)
        if changed is not None:
            return changed
        return self.history.shown(index) if index in self._plain else self._decide(index)[0]

    def span(self, start: int, end: int, authored: bool = False) -> list[Message]:
        """Groups ``[start, end)`` masked (a summary's input): a run of groups masking leaves as stored is read as
        one slice of the stored messages (groups are contiguous), not group by group.

        ``authored``: for a reader of only what the user and the assistant wrote (the extractive summary with no
        names to keep), which masking never changes (it replaces tool outputs and call arguments): the groups whose
        form is not decided yet (a cold resume's bounded ones, ``_tokens_of``) are read as shown, not masked for
        nothing."""
        history, changed, plain = self.history, self._changed, self._plain
        replaced, last = history.shown_as, len(history.groups) - 1
        undecided = self._bounded_before() if authored else 0
        out: list[Message] = []
        run = start  # groups [run, g) are shown as stored, not read yet
        for g in range(start, end):
            form = changed.get(g)
            as_shown = g in plain or (form is None and g < undecided)
            if as_shown and g not in replaced and g != last:
                continue
            self._read_run(out, run, g)
            run = g + 1
            out.extend(form if form is not None else history.shown(g) if as_shown else self.group(g))
        self._read_run(out, run, end)
        return out

    def _read_run(self, out: list[Message], start: int, end: int) -> None:
        if start < end:
            groups = self.history.groups
            out.extend(self.history.messages[groups[start].start : groups[end - 1].end])

    def forget_before(self, index: int) -> None:
        """Drop masked copies of groups no view shows any more (they are behind the summary)."""
        for g in [g for g in self._changed if g < index]:
            del self._changed[g]
        self._plain = {g for g in self._plain if g >= index}
        self._ahead = {g: tokens for g, tokens in self._ahead.items() if g >= index}

    # ------------------------------------------------------------------ internals

    def _renew(self) -> None:
        epoch = self.history.counted_epoch
        if epoch != self._epoch:  # bounds the history lent (a cold resume's first plan) are counts no more
            self._epoch, self._origin = epoch, None
            self._ahead.clear()

    def _bounded_before(self) -> int:
        """Groups before this one have bounds for counts (a cold resume's first plan, ``History.count_from``)."""
        history = self.history
        return history.bounded if history.estimating else 0

    def _tokens_of(self, index: int) -> int:
        """The masked tokens of group ``index``; for a group whose count is a bound, that bound, its form left to
        be decided when a reader asks for it (``group``): masking only ever makes a group smaller, so the bound
        stands for the masked form too, and a cold resume's first plan, which summarizes every bounded group, need
        not mask tens of thousands of groups to compare bounds (``compaction.run.horizon``)."""
        tokens = self._ahead.pop(index, None)
        if tokens is not None:
            return tokens
        if index < self._bounded_before():
            history = self.history
            return history.prefix[index + 1] - history.prefix[index]
        return self._decide(index)[1]

    def _cover(self, start: int, end: int) -> None:
        self._renew()
        if self._origin is None:
            self._origin, self._prefix = start, [0]
        elif start < self._origin:  # reach back: the groups already worked out keep their forms and counts
            head = [0]
            for g in range(start, self._origin):
                head.append(head[-1] + self._tokens_of(g))
            self._prefix = head + [tokens + head[-1] for tokens in self._prefix[1:]]
            self._origin = start
        origin = self._origin
        while origin + len(self._prefix) - 1 < end:
            g = origin + len(self._prefix) - 1
            self._prefix.append(self._prefix[-1] + self._tokens_of(g))

    def _decide(self, index: int) -> tuple[list[Message], int]:
        """Group ``index`` as a view shows it, masked only where that makes it smaller, and its tokens.

        Planning counts what the view will show, so a group whose placeholders would cost more than its
        outputs (short outputs under a low ``min_chars``) is shown as it is.
        """
        history = self.history
        shown = history.shown(index)
        masked, changed = self._masked(index, shown)
        # a bound while a cold resume's history lends them: only a plan's comparisons read it (``History.count_from``)
        raw = history.prefix[index + 1] - history.prefix[index]
        if changed:
            if index < self._bounded_before():  # a reader asked for its form (``group``): decided exactly all the same
                saved = self._saved_on_bound(shown, masked)
                if saved > 0:
                    self._changed[index] = masked
                    return masked, raw - saved
            else:
                tokens = history.counter.count_messages(masked)
                if tokens < raw:
                    self._changed[index] = masked
                    return masked, tokens
        self._plain.add(index)
        return shown, raw

    def _saved_on_bound(self, shown: list[Message], masked: list[Message]) -> int:
        """Tokens masking saves a group whose count is a bound (a cold resume's older groups, ``History.count_from``):
        positive exactly when whole exact counts make the masked group smaller, and at most the saving, so the bound
        less it stays a bound.

        A group counts as the sum of its messages, so only the replaced ones are counted; their originals (the long
        outputs, most of the tokenizer's work on a cold resume) only when their words alone do not settle it.
        """
        pairs = [(a, b) for a, b in zip(shown, masked, strict=True) if a is not b]
        counter = self.history.counter
        tokens = sum(counter.count_message(b) for _, b in pairs)
        if self._floor is None:
            self._floor = counter.flooring()
        at_least = sum(self._floor.count_message(a) for a, _ in pairs)
        if at_least > tokens:
            return at_least - tokens
        return sum(counter.count_message(a) for a, _ in pairs) - tokens

    def _masked(self, index: int, shown: list[Message]) -> tuple[list[Message], bool]:
        """``shown`` masked, and whether that changed anything. Unchanged messages and blocks are the shown ones
        (no copies), and where a message is stored is looked up only for one that does change (its handle)."""
        where = Positions(self.history, index)
        out: list[Message] | None = None
        for i, message in enumerate(shown):
            masked = self._mask_message(message, where, i)
            if masked is not message and out is None:
                out = shown[:i]
            if out is not None:
                out.append(masked)
        return (shown, False) if out is None else (out, True)

    def _mask_message(self, message: Message, where: Positions, i: int) -> Message:
        """``message`` (the ``i``-th of its group as shown) masked, or itself when nothing in it is long."""
        new: Message | None = None
        content = message.get("content")
        if isinstance(content, list):
            blocks = self._mask_blocks(content, message, where, i)
            if blocks is not content:
                new = {**message, "content": blocks}
        elif message.get("role") == "tool":
            spilled = self.history.spilled
            position = where.of(message, i) if spilled else None
            if position is not None and position in spilled:  # the placeholder describes the output, not its preview
                content = self.history.messages[position].get("content")
            text = block_text(content) if content is not None else ""
            if len(text) > self.settings.min_chars:
                placeholder = self._placeholder(text, where.of(message, i) if position is None else position, None)
                if placeholder is not None:
                    new = {**message, "content": placeholder}
        calls = message.get("tool_calls")
        if isinstance(calls, list):
            clipped: list[Any] | None = None
            for c, call in enumerate(calls):
                done = self._clip_listed_call(call, where, message, i)
                if done is not call and clipped is None:
                    clipped = calls[:c]
                if clipped is not None:
                    clipped.append(done)
            if clipped is not None:
                new = {**(new or message), "tool_calls": clipped}
        return new if new is not None else message

    def _mask_blocks(self, content: list[Any], message: Message, where: Positions, i: int) -> list[Any]:
        """``content`` with its long outputs and arguments masked, or ``content`` itself when none is."""
        out: list[Any] | None = None
        for b, block in enumerate(content):
            masked = self._mask_block(block, message, where, i, b)
            if masked is block:
                if out is not None:
                    out.append(block)
                continue
            if out is None:
                out = content[:b]
            out.append(masked)
        return content if out is None else out

    def _mask_block(self, block: Any, message: Message, where: Positions, i: int, b: int) -> Any:
        if not isinstance(block, dict):
            return block
        kind = block_kind(block)
        if kind == RESULT_BLOCK_TYPE:
            key = "content" if "content" in block else "output"
            spilled = self.history.spilled
            body = block.get(key, "")
            if not spilled and type(body) is str and len(body) <= self.settings.min_chars:
                return block  # its text is the body (``block_text``): too short to mask
            described = block
            position = where.of(message, i) if spilled else None
            index: int | None = None
            if position is not None and position in spilled:  # the placeholder describes the output, not its preview
                index = where.block(message, i, block, b)
                stored = self.history.messages[position].get("content")
                described = stored[index] if isinstance(stored, list) and index < len(stored) else block
            text = block_text(described)
            if len(text) <= self.settings.min_chars:
                return block
            if position is None:
                position = where.of(message, i)
            if index is None:
                index = where.block(message, i, block, b)
            placeholder = self._placeholder(text, position, index)
            if placeholder is not None:
                return {**block, key: placeholder}
        elif kind in CALL_BLOCK_TYPES and isinstance(block.get("input"), dict):
            args = block["input"]
            clipped = self._clip_arguments(args, Target(where, message, i, block, b)) if self._may_clip(args) else args
            if clipped is not args:
                return {**block, "input": clipped}
        return block

    def _clip_listed_call(self, call: Any, where: Positions, message: Message, i: int) -> Any:
        if not isinstance(call, dict):
            return call
        fn = call.get("function")
        if isinstance(fn, dict) and "arguments" in fn:
            args = fn["arguments"]
            if not self._may_clip(args):
                return call
            clipped = self._clip_arguments(args, Target(where, message, i))
            return call if clipped is args else {**call, "function": {**fn, "arguments": clipped}}
        if "arguments" in call:
            args = call["arguments"]
            if not self._may_clip(args):
                return call
            clipped = self._clip_arguments(args, Target(where, message, i))
            return call if clipped is args else {**call, "arguments": clipped}
        return call

    def _may_clip(self, args: Any) -> bool:
        """False where ``_clip_arguments`` certainly returns ``args`` itself: short, or neither text nor an object."""
        limit = self.settings.min_chars
        if isinstance(args, str):
            return len(args) > limit
        return isinstance(args, dict) and json_longer_than(args, limit)

    def _clip_arguments(self, args: Any, target: Target) -> Any:
        """Arguments with each long string value clipped; a JSON string stays a JSON string."""
        limit = self.settings.min_chars
        if isinstance(args, str):
            if len(args) <= limit:
                return args
            try:
                parsed = parse_embedded_json(args)
            except ValueError:
                return json.dumps({"clipped": self._clip_value(args, target)})
            clipped = self._clip_arguments(parsed, target)
            return args if clipped is parsed else json.dumps(clipped, ensure_ascii=False)
        if not isinstance(args, dict) or not json_longer_than(args, limit):
            return args
        out = {
            key: self._clip_value(value, target)
            if isinstance(value, str) and len(value) > ARGUMENT_KEEP_CHARS * 2
            else value
            for key, value in args.items()
        }
        return out if any(out[k] is not args[k] for k in args) else args

    def _clip_value(self, value: str, target: Target) -> str:
        head = value[:ARGUMENT_KEEP_CHARS].rstrip()
        return f"{head}… [clipped: {len(value):,} chars; {self._recall(target.handle())}]"

    def _placeholder(self, text: str, position: int, block: int | None) -> str | None:
        """The placeholder for a tool output over ``min_chars``, when it is shorter than the output."""
        if len(text) <= self.settings.min_chars:
            return None
        handle = handle_for(self.history.messages, position, block)
        lines = text.count("\n") + 1
        if looks_failed(text):
            label, line = "error line", error_line(text)
        else:
            label, line = "first line", first_line(text)
        if len(line) > FIRST_LINE_CHARS:
            line = line[: FIRST_LINE_CHARS - 1].rstrip() + "…"
        quoted = json.dumps(line, ensure_ascii=False)
        placeholder = (
            f"[tool output masked: {len(text):,} chars, {lines:,} line{'' if lines == 1 else 's'}; {label}: {quoted}; "
            f"{self._recall(handle)}]"
        )
        return placeholder if len(placeholder) < len(text) else None

    def _recall(self, handle: str) -> str:
        tool = self.settings.recall_tool
        return f"recall with {tool}, handle {handle}" if tool else f"handle {handle}"

    def _newest_outputs(self, closed: int, outputs: int) -> int | None:
        """``limit``'s answer found going back from ``closed`` through at most ``BACK_SCAN`` groups the forward scan
        has not read: the group holding the ``outputs``-th newest tool output once an older output shows there are
        more than that (else 0: every output is kept); None when those groups do not settle it. A resumed
        history's first plan then reads its newest groups only, not every group to count outputs from the first
        (a whole pass of thaws at 50,000 messages)."""
        history, found, kept = self.history, 0, None
        stop = max(self._outputs_scanned, closed - BACK_SCAN)
        for g in range(closed - 1, stop - 1, -1):
            found += len(result_ids_in(history, g))
            if kept is not None and found > outputs:
                return kept
            if found >= outputs and kept is None:
                if found > outputs:
                    return g
                kept = g
        return 0 if stop == 0 else None

    def _scan_outputs(self, closed: int) -> None:
        history = self.history
        while self._outputs_scanned < closed:
            g = self._outputs_scanned
            count = len(result_ids_in(history, g))
            if count:
                self._output_groups.append(g)
                self._outputs_before.append((self._outputs_before[-1] if self._outputs_before else 0) + count)
            self._outputs_scanned += 1


_JSON_WORDS = {True: 4, False: 5, None: 4}
"""Lengths of ``true``, ``false`` and ``null``."""


def json_longer_than(args: dict[Any, Any], limit: int) -> bool:
    """``len(canonical_json(args)) > limit``, without writing the JSON when its length is bounded either side.

    A flat object of strings (most calls' arguments) writes as its braces, and per item two quoted strings, a colon
    and a comma; an escape writes one character as at most six (``\\u001f``), so each string's JSON is between its
    length and six times it. Short arguments fall under ``limit`` and a long written file goes over it by these
    bounds alone; anything else (nested values, numbers, lengths between the bounds) is written and measured.
    """
    low = high = 1  # the braces, less the comma the first item does not have
    for key, value in args.items():
        if type(key) is not str:
            return len(canonical_json(args)) > limit
        if type(value) is str:
            size = len(value)
            low, high = low + len(key) + size + 6, high + 6 * (len(key) + size) + 6
        elif value is None or type(value) is bool:
            size = _JSON_WORDS[value]
            low, high = low + len(key) + size + 4, high + 6 * len(key) + size + 4
        else:
            return len(canonical_json(args)) > limit
        if low > limit:
            return True
    return high > limit and len(canonical_json(args)) > limit


def result_ids_in(history: History, group_index: int) -> list[str]:
    group = history.groups[group_index]
    return [r for m in history.messages[group.start : group.end] for r in result_ids(m)]


class Positions:
    """Where the messages of one group as shown are stored, and their blocks: the same place when the view shows
    the stored message itself (every group but a sanitized or spilled one), else as ``StoredPositions`` and
    ``StoredBlocks`` find it, their tables built only for a message that needs a handle."""

    def __init__(self, history: History, group: int) -> None:
        self.history, self.group = history, group
        self._range: range | None = None
        self._stored: StoredPositions | None = None
        self._blocks: dict[int, StoredBlocks] = {}

    def of(self, message: Message, i: int) -> int:
        """Where the ``i``-th message of the group as shown, ``message``, is stored."""
        stored = self._range
        if stored is None:
            group = self.history.groups[self.group]
            stored = self._range = range(group.start, group.end)
        at = stored.start + i
        if at < stored.stop and self.history.messages[at] is message:
            return at
        if self._stored is None:
            self._stored = StoredPositions(self.history, stored)
        return self._stored.of(message)

    def block(self, message: Message, i: int, block: Any, b: int) -> int:
        """Where block ``b`` of that message, ``block``, is in the stored message's content."""
        blocks = self._blocks.get(i)
        if blocks is None:
            blocks = self._blocks[i] = StoredBlocks(self.history.messages[self.of(message, i)].get("content"))
        return blocks.of(block, b)


class Target:
    """What a clipped argument's handle names: a message, or one of its blocks, found when a clip needs it."""

    def __init__(self, where: Positions, message: Message, i: int, block: Any = None, b: int | None = None) -> None:
        self.where, self.message, self.i, self.block, self.b = where, message, i, block, b

    def handle(self) -> str:
        where, message, i = self.where, self.message, self.i
        index = None if self.b is None else where.block(message, i, self.block, self.b)
        return handle_for(where.history.messages, where.of(message, i), index)


class StoredBlocks:
    """Where each block of a message as shown is in the stored content (sanitizing may have removed blocks before
    it): the same index when the block is there, else the first stored block that is it or shares its id. The
    lookup tables are built once per message, on the first miss, so a message of N blocks costs O(N), not O(N²)."""

    def __init__(self, stored: Any) -> None:
        self.stored = stored if isinstance(stored, list) else None
        self._by_identity: dict[int, int] | None = None
        self._by_ref: dict[Any, int] = {}

    def of(self, block: Any, index: int) -> int:
        stored = self.stored
        if stored is None or (index < len(stored) and stored[index] is block):
            return index
        if self._by_identity is None:
            self._index()
        found = [i for i in (self._by_identity_of(block), self._by_ref.get(_block_ref(block))) if i is not None]
        return min(found) if found else index

    def _by_identity_of(self, block: Any) -> int | None:
        assert self._by_identity is not None
        i = self._by_identity.get(id(block))
        return i if i is not None and self.stored is not None and self.stored[i] is block else None

    def _index(self) -> None:
        self._by_identity = {}
        for i, candidate in enumerate(self.stored or ()):
            self._by_identity.setdefault(id(candidate), i)
            if isinstance(candidate, dict):
                for key in ("tool_use_id", "tool_call_id", "id"):
                    ref = candidate.get(key)
                    if ref and _hashable(ref):
                        self._by_ref.setdefault(ref, i)


def _block_ref(block: Any) -> Any:
    if not isinstance(block, dict):
        return None
    ref = block.get("tool_use_id") or block.get("tool_call_id") or block.get("id")
    return ref if ref and _hashable(ref) else None


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


class StoredPositions:
    """Where each message of a group as shown is stored: itself, or the stored message it was sanitized from (the
    first of its role sharing a result id, or the first of its role when it has none). Tables are built once per
    group, on the first message that is not stored as it is, so a group of N parallel calls costs O(N), not
    O(N²) (24,000 calls took 5 s)."""

    def __init__(self, history: History, stored: range) -> None:
        self.history, self.stored = history, stored
        self._by_identity: dict[int, int] | None = None
        self._by_result: dict[tuple[Any, str], int] = {}
        self._first_of_role: dict[Any, int] = {}

    def of(self, message: Message) -> int:
        messages = self.history.messages
        if self._by_identity is None:
            self._by_identity = {id(messages[i]): i for i in self.stored}
        i = self._by_identity.get(id(message))
        if i is not None and messages[i] is message:
            return i
        if not self._first_of_role:
            self._index()
        role = message.get("role")
        if not _hashable(role):
            return self.stored.start
        ids = result_ids(message)
        if not ids:
            return self._first_of_role.get(role, self.stored.start)
        found = [self._by_result[(role, r)] for r in ids if (role, r) in self._by_result]
        return min(found) if found else self.stored.start

    def _index(self) -> None:
        messages = self.history.messages
        for i in self.stored:
            candidate = messages[i]
            role = candidate.get("role")
            if not _hashable(role):
                continue
            self._first_of_role.setdefault(role, i)
            for r in result_ids(candidate):
                self._by_result.setdefault((role, r), i)


def first_line(text: str) -> str:
    """The first line of ``text`` with something on it, stripped: read from a head that grows until a whole such
    line is in it, so a long output is not split into all its lines for one."""
    size = 256
    while True:
        head = text[:size]
        lines = head.splitlines()
        whole = lines if size >= len(text) else lines[:-1]  # the last line of a head may go on after it
        found = next((line.strip() for line in whole if line.strip()), None)
        if found is not None or size >= len(text):
            return found or ""
        size *= 4
