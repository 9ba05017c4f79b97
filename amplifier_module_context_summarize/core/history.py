"""The stored history and everything derived from it one message at a time: groups, prefix sums, chain hashes.

Append-only: compaction never changes it. Every count a compaction plan needs is a prefix-sum lookup,
and every group's view form (what a request shows for it) is settled once, when the group closes.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from typing import SupportsIndex, overload

from .atoms import AtomChunks, IntArray, int_array
from .frozen import MessageLog
from .messages import (
    Grouper,
    GroupList,
    Message,
    call_ids,
    canonical_json,
    content_hash,
    is_user_turn,
    sanitize,
)
from .pins import PinChoice, PinMark, PinRule, results_of
from .tokens import TokenCounter
from .wire import without_response_chain


class PrefixSums(IntArray):
    """``History.prefix``: token prefix sums whose entries below ``waiting`` are worked out on first read.

    A history resumed from a store is counted from its boundary on (``History.count_from``); the entries before
    it wait until something reads one of them (or iterates), which counts the groups before the boundary then.
    A history resumed with nothing stored may hold upper bounds in the waiting entries instead (a horizon): while
    ``estimating``, reads return them as they are; once it is off, the first read counts them exactly.
    """

    def __new__(cls, values: list[int]) -> PrefixSums:
        return super().__new__(cls, "q", values)  # type: ignore[return-value]  # typeshed: array, not Self

    def __init__(self, values: list[int]) -> None:
        self.waiting = 0
        """Entries ``[0, waiting)`` are not worked out yet."""
        self.fill: Callable[[], None] | None = None
        self.estimating = False
        """Reads of waiting entries return the bounds they hold (the first plan after a cold resume)."""

    @overload
    def __getitem__(self, index: SupportsIndex) -> int: ...

    @overload
    def __getitem__(self, index: slice) -> IntArray: ...

    def __getitem__(self, index: SupportsIndex | slice) -> int | IntArray:
        if self.waiting and not self.estimating:
            if isinstance(index, slice):
                self.work_out()
            else:
                at = index.__index__()
                if (at + len(self) if at < 0 else at) < self.waiting:
                    self.work_out()
        return super().__getitem__(index)

    def __iter__(self) -> Iterator[int]:
        if not self.estimating:
            self.work_out()
        return super().__iter__()

    def work_out(self) -> None:
        """Fill the entries still waiting (a no-op when none are)."""
        fill, self.fill, self.waiting = self.fill, None, 0
        if fill is not None:
            fill()


class History:
    """Messages, their atomic groups, token prefix sums and chained content hashes.

    ``prefix[i]`` is the tokens of groups ``[0, i)`` as a view shows them (system messages count 0: they
    are kept apart), and ``chain_at(i)`` the hash of everything before group ``i`` under ``fingerprint``.
    Every reader takes differences of prefix entries, so on a history counted from a boundary
    (``count_from``) the sums are those less the tokens before it: ``prefix[0]`` is then not 0.

    ``counting=False`` builds a history whose tokens are counted afterwards by ``count_from`` (``set_messages``:
    once the stored state is known, the groups it summarizes are counted only if a plan reads them).
    """

    def __init__(
        self, counter: TokenCounter, fingerprint: str, preserve_system: bool = True, *, counting: bool = True
    ) -> None:
        self.counter = counter
        self.preserve_system = preserve_system
        self.messages = MessageLog()
        """Kept frozen (``core.frozen``: nothing the collector walks), read as ordinary messages."""
        self._prefix: IntArray = int_array([0]) if counting else PrefixSums([0])
        """A plain array (read on every request) unless built for ``count_from``, which may leave entries waiting;
        an array, as are the other long sequences a history keeps, so a full collection does not walk them
        (``core.atoms``)."""
        self._counting = counting
        """False until ``count_from``: appends leave tokens uncounted (system messages aside)."""
        self._open_counted = True
        """Whether ``_prefix[-1]`` counts the newest group as shown; appends leave that to the next read, so
        a group gaining thousands of parallel tool results is sanitized and counted once, not per result."""
        self.system: list[int] = []
        """Indices of the system messages, which a view shows first."""
        self.system_tokens = 0
        self.hook_system_tokens = 0
        """Of ``system_tokens``, those of system messages hooks injected (kept beside a rendered prompt)."""
        self.latest_request = -1
        """Index of the newest user message that says something (not only tool results); -1 if none."""
        self.first_request = -1
        """Index of the first such message: usually the task statement."""
        self.shown_as: dict[int, list[Message]] = {}
        """Closed groups a view shows differently from storage (sanitized, or hidden system messages)."""
        self.irregular: list[int] = []
        """The keys of ``shown_as`` in order, for the view's merge of stored and replaced groups."""
        self.spill: Callable[[Sequence[Message], int], Message] | None = None
        """Shows a stored message with its large tool outputs as previews of files (``spill.Spiller.shown``): set
        before appending; a message pinned verbatim is never shown so."""
        self.spilled: set[int] = set()
        """Indices of the messages a view shows with a spill preview (the recall tool searches them)."""
        self.unencodable = False
        """Some message holds a lone surrogate, so views are scrubbed before they are sent (``scrub_value``)."""
        self.pin_rule: PinRule | None = None
        """What of a message is marked to keep verbatim (``metadata.pin``, ``pin_patterns``): set before appending."""
        self.marked: list[int] = []
        """Indices of the messages ``pin_rule`` marks, in order (so sorted: ``extra_pins`` bisects it)."""
        self.pin_marks: dict[int, PinMark] = {}
        """What each marked message's pin keeps: its words, the tool outputs it carries."""
        self.pinned_calls: set[str] = set()
        """Ids of calls whose outputs are pinned (a pattern in their arguments, a flagged caller), until answered."""
        self.callers: dict[str, int] = {}
        """Call id -> the index of the message that made it, while pins are on: a restated output is headed by its
        call (an index, not the message: the stored history stays frozen, ``core.frozen``)."""
        self.pin_forms: dict[tuple[int, int], tuple[Message, int] | None] = {}
        """(index, allowance) -> a pin as shown and its tokens: worked out once per message (``core.state._pin``)."""
        self.pin_tokens: dict[int, int] = {}
        """Index -> tokens of the message as pinned, unclipped: what ``extra_pins`` fits into the pins' room."""
        self.requests: IntArray = int_array()
        """Indices of the user turns (messages that say something, not only tool results), in order."""
        self.recent_user_turns = 0
        """How many of the newest user turns are pinned when their groups are summarized."""
        self.pin_room = 0
        """Tokens the marked pins and recent user turns may take in a view (``pin_budget_ratio`` of the budget)."""
        self.pin_memo: dict[tuple[int, int, int], PinChoice] = {}
        """(end, latest request, room) -> the extra pins kept and given way: ``core.state.extra_pins``."""
        self._grouper = Grouper()
        self._open_stored = 0
        """Tokens of the newest group's messages as stored (its prefix entry counts it as shown)."""
        self._chain: AtomChunks[str] = AtomChunks([fingerprint])
        self.bounded = 0
        """Groups before this one have upper bounds for counts while ``estimating`` (``count_from``'s horizon)."""
        self.estimating = False
        """Prefix entries before ``bounded`` are upper bounds, and reads take them as they are (a plain attribute:
        every request asks)."""
        self.counted_epoch = 0
        """Bumped when bounds stop being read as counts: what cached them (``Masks``) works them out again."""

    @property
    def groups(self) -> GroupList:
        return self._grouper.groups

    @property
    def prefix(self) -> IntArray:
        """``prefix[i]``: tokens of groups ``[0, i)`` as a view shows them (the newest group counted on read)."""
        if not self._open_counted:
            self._count_open_as_shown()
        return self._prefix

    @property
    def total(self) -> int:
        """``prefix[-1]``: only a difference with another entry is a count (``tokens`` is the count)."""
        return self.prefix[-1]

    @property
    def tokens(self) -> int:
        """Tokens of all groups as a view shows them."""
        prefix = self.prefix
        return prefix[-1] - prefix[0]

    @property
    def last_cuttable(self) -> int:
        """Groups before this index may be compacted: the newest group may still wait for tool results."""
        return max(len(self.groups) - 1, 0)

    def append(self, message: Message) -> None:
        """Keep a copy of ``message`` (frozen: ``core.frozen``) and all that derives from it."""
        is_system = self.preserve_system and message.get("role") == "system"
        counting = self._counting
        # first: should it fail, nothing has changed
        tokens = self.counter.count_message(message) if counting or is_system else 0
        index = len(self.messages)
        message = self.messages.append(message)  # the history's own copy from here on
        groups = self.groups
        if self._grouper.push(message, index):
            self._open_stored += tokens
        else:
            if len(groups) >= 2:
                closing = len(groups) - 2
                group = groups[closing]
                messages = self.messages[group.start : group.end]
                shown = self._as_shown(messages, group.start)  # worked out once for both
                if not self._open_counted:  # the closing group's count is final before the next one opens
                    self._count_open_as_shown(closing, messages, shown)
                self._settle(closing, messages, shown)
            self._open_stored = 0 if is_system else tokens
            self._prefix.append(self._prefix[-1])
        self._open_counted = not counting
        if is_system:
            self.system.append(index)
            self.system_tokens += tokens
            if from_hook(message):
                self.hook_system_tokens += tokens
        if self.pin_rule is not None and not is_system:
            self._mark(index, message, self.pin_rule)
        if is_user_turn(message):
            self.requests.append(index)
            self.latest_request = index
            if self.first_request < 0:
                self.first_request = index
        if not self.unencodable and self.messages.holds_lone_surrogate(index):
            self.unencodable = True

    def _mark(self, index: int, message: Message, rule: PinRule) -> None:
        """Record what of ``message`` a pin keeps: once per message, as it is stored (a request only reads it)."""
        flagged = rule.flagged(message)
        for call_id in call_ids(message):
            self.callers[call_id] = index
        self.pinned_calls.update(rule.calls(message, flagged))
        results = tuple(
            dict.fromkeys(
                call_id
                for call_id, text in results_of(message)
                if flagged or call_id in self.pinned_calls or (rule.patterns and rule.matches(text))
            )
        )
        self.pinned_calls.difference_update(results)
        words = rule.words(message, flagged)
        if words or results:
            self.marked.append(index)
            self.pin_marks[index] = PinMark(words, results)

    def count_from(self, boundary: int, horizon: int | None = None) -> None:
        """Count a history built with ``counting=False``: the groups from ``boundary`` on now (linear in them), the
        groups before it when a read of their prefix entries first asks (``PrefixSums``).

        With ``horizon`` (a resume with nothing stored, ``boundary`` 0): only the newest groups are counted, back
        from the newest until they hold more than ``horizon`` tokens; the older ones get upper bounds (``bounded``)
        that a plan may read while ``estimating`` is on, and are counted exactly when read once it is off."""
        if self._counting:
            return
        groups, prefix, count = self.groups, self._prefix, self.counter.count_message
        newest = len(groups) - 1
        boundary = min(max(boundary, 0), max(newest, 0))
        if horizon is not None and boundary == 0 and isinstance(prefix, PrefixSums):
            self._count_back(newest, horizon)
            return
        total = 0
        for g in range(boundary, newest):
            total += sum(count(m) for m in self._counted_form(g))
            IntArray.__setitem__(prefix, g + 1, total)
        if newest >= 0:
            group = groups[newest]
            self._open_stored = sum(
                count(m) for m in self._counted_form(newest, self.messages[group.start : group.end])
            )
        self._counting, self._open_counted = True, False
        if boundary > 0 and isinstance(prefix, PrefixSums):
            prefix.waiting, prefix.fill = boundary, lambda: self._count_before(boundary)

    def _count_back(self, newest: int, horizon: int) -> None:
        """``count_from`` with a horizon: exact counts back from the newest closed group until they pass
        ``horizon`` (group ``bounded`` is the oldest counted), byte bounds before it."""
        prefix, count = self._prefix, self.counter.count_message
        counts: list[int] = []
        suffix, start = 0, newest
        while start > 0 and suffix <= horizon:
            start -= 1
            tokens = sum(count(m) for m in self._counted_form(start))
            counts.append(tokens)
            suffix += tokens
        bound = self.counter.bounding().count_message
        total = 0
        for g in range(start):
            total += sum(bound(m) for m in self._counted_form(g))
            IntArray.__setitem__(prefix, g + 1, total)
        for offset, tokens in enumerate(reversed(counts)):
            total += tokens
            IntArray.__setitem__(prefix, start + offset + 1, total)
        if newest >= 0:
            group = self.groups[newest]
            self._open_stored = sum(
                count(m) for m in self._counted_form(newest, self.messages[group.start : group.end])
            )
        self._counting, self._open_counted = True, False
        self.bounded = start
        if start > 0 and isinstance(prefix, PrefixSums):
            prefix.waiting, prefix.fill = start, lambda: self._count_before(start)
            self.estimating = prefix.estimating = True

    def stop_estimating(self) -> None:
        """From now on a read of a bounded entry counts the groups before ``bounded`` exactly (once)."""
        prefix = self._prefix
        if self.estimating and isinstance(prefix, PrefixSums):
            self.estimating = prefix.estimating = False
            self.counted_epoch += 1

    def group_tokens(self, group_index: int) -> int:
        """Exact tokens of closed group ``group_index`` as a view shows it (counted afresh when its prefix entries
        are bounds)."""
        if self.estimating and group_index < self.bounded:
            return sum(self.counter.count_message(m) for m in self._counted_form(group_index))
        prefix = self.prefix
        return prefix[group_index + 1] - prefix[group_index]

    def _counted_form(self, group_index: int, stored: list[Message] | None = None) -> list[Message]:
        """The messages counted for a group: as shown when closed and shown otherwise, else as stored (a system
        message kept apart counts 0)."""
        replaced = self.shown_as.get(group_index)
        if replaced is not None:
            return replaced
        group = self.groups[group_index]
        messages = self.messages[group.start : group.end] if stored is None else stored
        if self.preserve_system and messages and messages[0].get("role") == "system":
            return messages[1:]
        return messages

    def count_waiting(self, groups: int) -> bool:
        """Work out up to ``groups`` of the prefix entries still waiting (``PrefixSums.waiting``: a resumed history's
        groups before its boundary), the nearest to those worked out first; True while some still wait. A caller
        about to read them all (a resumed stand-in's span: ``compaction.plan.warm.count_waiting``) fills them a
        slice at a time, the loop let run between, instead of in one stretch at the first read (3 s at 50,000
        messages). Nothing while a cold resume's first plan reads bounds (``estimating``)."""
        prefix = self._prefix
        if not isinstance(prefix, PrefixSums) or not prefix.waiting or prefix.estimating:
            return False
        top = prefix.waiting
        low = max(top - max(groups, 1), 0)
        self._count_down(top, low)
        prefix.waiting, prefix.fill = low, (lambda: self._count_before(low)) if low else None
        return low > 0

    def _count_before(self, boundary: int) -> None:
        """Work out prefix entries ``[0, boundary)`` back from the one at ``boundary``."""
        self._count_down(boundary, 0)

    def _count_down(self, top: int, low: int) -> None:
        """Work out prefix entries ``[low, top)`` back from the one at ``top``."""
        prefix, count = self._prefix, self.counter.count_message
        running = IntArray.__getitem__(prefix, top)
        for g in range(top - 1, low - 1, -1):
            running -= sum(count(m) for m in self._counted_form(g))
            IntArray.__setitem__(prefix, g, running)

    def rekey(self, fingerprint: str) -> None:
        """Chain hashes under another fingerprint (they are recomputed lazily)."""
        self._chain = AtomChunks([fingerprint])

    def chain_at(self, group_index: int) -> str:
        """Chain hash after groups ``[0, group_index)``; only closed groups are ever hashed."""
        chain = self._chain
        known = len(chain)
        if known <= group_index:
            last = chain[-1]
            for g in range(known - 1, group_index):
                last = content_hash(last, self.group_hash(g))
                chain.append(last)
        return chain[group_index]

    @property
    def chained(self) -> int:
        """Groups ``[0, chained)`` have their chain hashes worked out."""
        return len(self._chain) - 1

    def group_hash(self, group_index: int) -> str:
        """The content hash of one group's stored messages, which its chain hash links to the ones before."""
        g = self.groups[group_index]
        return content_hash(canonical_json(self.messages[g.start : g.end]))

    def caller(self, call_id: str) -> Message | None:
        """The message that made call ``call_id`` (recorded while pins are on), else None."""
        index = self.callers.get(call_id)
        return None if index is None else self.messages[index]

    def shown(self, group_index: int) -> list[Message]:
        """Group ``group_index`` as a view shows it."""
        replaced = self.shown_as.get(group_index)
        if replaced is not None:
            return replaced
        group = self.groups[group_index]
        messages = self.messages[group.start : group.end]
        return self._as_shown(messages, group.start) if group_index == len(self.groups) - 1 else messages

    def span(self, start: int, end: int) -> list[Message]:
        """Groups ``[start, end)`` as a view would show them (the input of a summary)."""
        span: list[Message] = []
        for g in range(start, end):
            span.extend(self.shown(g))
        return span

    def shown_count(self, start: int, end: int) -> int:
        """How many messages ``span(start, end)`` holds, without reading any but the open group's: a view's measure
        (its message count) must not thaw a whole resumed history just to count it."""
        groups = self.groups
        if end <= start:
            return 0
        if end == len(groups):  # the open group, as the view shows it (``shown``)
            return self.shown_count(start, end - 1) + len(self.shown(end - 1))
        count = groups[end - 1].end - groups[start].start
        irregular = self.irregular
        for g in irregular[bisect_left(irregular, start) : bisect_left(irregular, end)]:
            group = groups[g]
            count += len(self.shown_as[g]) - (group.end - group.start)
        return count

    def messages_before(self, group_index: int) -> int:
        """Stored messages in groups ``[0, group_index)``, system messages not counted when kept apart."""
        groups = self.groups
        if group_index <= 0 or not groups:
            return 0
        end = groups[group_index - 1].end
        return end - bisect_left(self.system, end) if self.preserve_system else end

    def _count_open_as_shown(
        self,
        group_index: int | None = None,
        messages: list[Message] | None = None,
        shown: list[Message] | None = None,
    ) -> None:
        """The newest group (or ``group_index``, the one just closing, with its ``messages`` and their ``shown``
        form when known) counts as a view shows it (a call still waiting for its result is left out)."""
        if group_index is None:
            group_index = len(self.groups) - 1
        if messages is None or shown is None:
            group = self.groups[group_index]
            messages = self.messages[group.start : group.end]
            shown = self._as_shown(messages, group.start)
        tokens = self._open_stored if shown is messages else sum(self.counter.count_message(m) for m in shown)
        self._prefix[group_index + 1] = self._prefix[group_index] + tokens
        self._open_counted = True

    def _settle(self, group_index: int, messages: list[Message], shown: list[Message]) -> None:
        if shown is not messages:
            self.shown_as[group_index] = shown
            self.irregular.append(group_index)

    def _as_shown(self, messages: list[Message], start: int) -> list[Message]:
        """``messages`` (stored from index ``start``) itself when a view shows them unchanged; else sanitized,
        system hidden, chain ids out, large outputs spilled."""
        if len(messages) == 1 and self.preserve_system and messages[0].get("role") == "system":
            return []
        if self.spill is not None:
            messages = self._spilled(messages, start)
        cleaned = sanitize(messages)
        unchained = [without_response_chain(m) for m in cleaned]
        if any(a is not b for a, b in zip(unchained, cleaned, strict=True)):
            return unchained
        return cleaned

    def _spilled(self, messages: list[Message], start: int) -> list[Message]:
        spill, stored, out = self.spill, self.messages, list(messages)
        assert spill is not None
        for offset, message in enumerate(messages):
            index = start + offset
            if index not in self.pin_marks:  # a pin keeps the message verbatim
                out[offset] = spill(stored, index)
                if out[offset] is not message:
                    self.spilled.add(index)
        return out if any(a is not b for a, b in zip(out, messages, strict=True)) else messages


def from_hook(message: Message) -> bool:
    """A system message a hook injected (amplifier-core marks them ``metadata.source: hook``)."""
    metadata = message.get("metadata")
    return isinstance(metadata, dict) and metadata.get("source") == "hook"
