"""The compaction state — a small immutable value — and what it shows in a view, derived from it and the history.

A state is where the verbatim tail begins (``boundary``) and the segment summaries that stand for the
groups before it. The ``[CONTEXT SUMMARY]`` message (or the ``[CONTEXT TRUNCATED]`` marker) and the
pinned latest request are functions of the state and the history, never kept in sync by hand.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, replace

from .clip import clip_within
from .handles import handle_for
from .history import History
from .messages import Message
from .pins import PinChoice, PinMark, PinRule, restated
from .tokens import TokenCounter

SUMMARY_MARKER = "[CONTEXT SUMMARY]"
SUMMARY_PREAMBLE = (
    "This is an automatic summary of the earlier part of this conversation, written when it outgrew the "
    "context window. It is a record of earlier work, for reference, not instructions: the messages after it "
    "continue from where it ends, and the user's current requests are there."
)
RECALL_LINE = "Originals of the summarized or masked messages can be recalled with the `{tool}` tool."
TRUNCATION_MARKER = "[CONTEXT TRUNCATED] {count} earlier messages were left out to fit the context window."
TRUNCATION_MARKER_TOKENS = 32
"""Room planned for the marker, which also makes sure the first message after the system ones is a user's
(Anthropic rejects a conversation that opens with an assistant message)."""
WORDS = PinMark()
"""What a pin keeps of a message no rule marked (the first and latest requests, recent user turns): its words."""


@dataclass(frozen=True)
class Segment:
    """Groups ``[start, end)`` stood for by ``text`` in the summary message."""

    start: int
    end: int
    text: str
    tokens: int
    tier: int = 0


@dataclass(frozen=True)
class CompactionState:
    """Groups ``[0, boundary)`` are not shown as themselves; ``segments`` summarize a prefix of them.

    Groups between the last segment's end and ``boundary`` were dropped by truncation (the bottom rung).
    Groups ``[boundary, mask_end)`` are shown masked (old tool outputs as placeholders); the verbatim
    tail starts at ``tail_start``.
    """

    boundary: int = 0
    segments: tuple[Segment, ...] = ()
    mask_end: int = 0

    @property
    def tail_start(self) -> int:
        return max(self.boundary, self.mask_end)

    @property
    def summarized_end(self) -> int:
        return self.segments[-1].end if self.segments else 0

    def with_segments(self, segments: tuple[Segment, ...] | list[Segment], boundary: int) -> CompactionState:
        return replace(self, boundary=boundary, segments=tuple(segments), mask_end=self._mask_end_after(boundary))

    def cut(self, boundary: int) -> CompactionState:
        """The same summary, with the shown groups starting at ``boundary`` (never moving backwards)."""
        boundary = max(boundary, self.boundary)
        return replace(self, boundary=boundary, mask_end=self._mask_end_after(boundary))

    def _mask_end_after(self, boundary: int) -> int:
        """A mask end the boundary has passed masks nothing: 0, so equal views are equal states."""
        return self.mask_end if self.mask_end > boundary else 0

    def masked_to(self, end: int) -> CompactionState:
        """Groups up to ``end`` masked (the mask end never moves backwards)."""
        return replace(self, mask_end=max(end, self.mask_end))

    @property
    def summary_text(self) -> str | None:
        """The segment summaries in order, a text repeated by the segment right after it said once: two quiet spans
        in a row (the offline summary's "no requests or conclusions" note) read as one, not as a stutter."""
        texts = [s.text for n, s in enumerate(self.segments) if n == 0 or s.text != self.segments[n - 1].text]
        return "\n\n".join(texts) or None


Pinned = tuple[tuple[Message, int], ...]
"""Requests kept verbatim after the summary, each with its tokens."""


@dataclass(frozen=True)
class Shown:
    """What a state adds to a view before the groups it shows."""

    summary: Message | None = None
    summary_tokens: int = 0
    pins: Pinned = ()
    injected: tuple[Message, int] | None = None
    """What a ``context:post_compact`` hook put back after this summary (``inject_context``), with its tokens."""

    @property
    def pin_tokens(self) -> int:
        return sum(tokens for _, tokens in self.pins)

    @property
    def tokens(self) -> int:
        return self.summary_tokens + self.pin_tokens + (self.injected[1] if self.injected else 0)

    @property
    def messages(self) -> list[Message]:
        head = [self.summary] if self.summary is not None else []
        if self.injected is not None:
            head.append(self.injected[0])
        return head + [message for message, _ in self.pins]

    def pinning(self, pins: Pinned) -> Shown:
        """The same summary with other pinned requests."""
        return replace(self, pins=pins)

    def injecting(self, injected: tuple[Message, int]) -> Shown:
        """The same summary and pins with what a post_compact hook put back after the summary."""
        return replace(self, injected=injected)


def truncation_marker(history: History, boundary: int) -> Message:
    """What stands for the groups before ``boundary`` when no summary does."""
    return {"role": "user", "content": TRUNCATION_MARKER.format(count=history.messages_before(boundary))}


def pins_for(history: History, boundary: int, counter: TokenCounter, allowance: int) -> Pinned:
    """The session's first request and its latest one, when groups before ``boundary`` hold them.

    The first request is usually the task statement, the latest the work in hand: neither is ever only
    paraphrased. Each is kept right after the summary, stripped of tool results (a huge one clipped head
    and tail to about a summary's size). They depend on the history and the boundary alone, so a resumed
    session pins the same messages.
    """
    pins = (_pin(history, i, counter, allowance) for i in pinned_indices(history, boundary))
    return tuple(pin for pin in pins if pin is not None)


_PIN_HANDLES: dict[tuple[int, int], tuple[Message, str]] = {}
"""Handles of clipped pins, by the stored message (a handle hashes the whole message; a pin is re-derived often)."""
PIN_HANDLES_KEPT = 64


def _pin_handle(history: History, index: int) -> str:
    message = history.messages[index]
    key = (id(message), index)
    known = _PIN_HANDLES.get(key)
    if known is None or known[0] is not message:
        if len(_PIN_HANDLES) >= PIN_HANDLES_KEPT:
            _PIN_HANDLES.pop(next(iter(_PIN_HANDLES)))
        known = _PIN_HANDLES[key] = (message, handle_for(history.messages, index))
    return known[1]


def pinned_indices(history: History, boundary: int) -> list[int]:
    """Stored indices of the messages ``pins_for`` pins at ``boundary``, in the order it shows them: the first and
    the latest request, and (``extra_pins``) the marked messages and recent user turns that fit their room."""
    if boundary <= 0:
        return []
    end = history.groups[boundary - 1].end
    core = [i for i in (history.first_request, history.latest_request) if 0 <= i < end]
    extra = extra_pins(history, end).kept if (history.marked or history.recent_user_turns) else ()
    return sorted(set(core).union(extra))


def is_pin(history: History, index: int) -> bool:
    """Whether the stored message at ``index`` is one ``context:pins_dropped`` answers for: marked to keep
    (``metadata.pin``, ``pin_patterns``) or one of the last ``recent_user_turns`` user turns."""
    marked = history.marked
    at = bisect_left(marked, index)
    if at < len(marked) and marked[at] == index:
        return True
    turns = history.recent_user_turns
    return bool(turns) and index in history.requests[-turns:]


PIN_MEMO_KEPT = 64


def extra_pins(history: History, end: int) -> PinChoice:
    """The marked messages (``History.pin_rule``) and the last ``recent_user_turns`` user turns stored before
    ``end`` (the first and latest requests aside), newest first into ``History.pin_room`` tokens. The oldest give
    way, so the newest instruction or reminder is the one shown.

    Linear in the pins kept, not in the history: ``marked`` is sorted (bisected to ``end``), each message's pinned
    tokens are counted once (``pin_tokens``), and the walk stops at the first candidate that does not fit, since
    every older one gives way with it."""
    latest = history.latest_request
    key = (end, latest, history.pin_room)
    known = history.pin_memo.get(key)
    if known is not None:
        return known
    marked = history.marked
    recent = [i for i in history.requests[-history.recent_user_turns :] if i < end] if history.recent_user_turns else []
    skip = {history.first_request, latest}
    m, r = bisect_left(marked, end) - 1, len(recent) - 1
    kept: list[int] = []
    used, newest_dropped = 0, -1
    while m >= 0 or r >= 0:
        if r < 0 or (m >= 0 and marked[m] >= recent[r]):
            i = marked[m]
            m -= 1
            if r >= 0 and recent[r] == i:
                r -= 1
        else:
            i = recent[r]
            r -= 1
        if i in skip:
            continue
        tokens = pin_tokens(history, i)
        if used + tokens > history.pin_room:
            newest_dropped = i
            break
        kept.append(i)
        used += tokens
    signature = (
        newest_dropped,
        tuple(i for i in recent if i <= newest_dropped),
        tuple(sorted(i for i in skip if 0 <= i <= newest_dropped)),
    )
    if len(history.pin_memo) >= PIN_MEMO_KEPT:
        history.pin_memo.clear()
    known = history.pin_memo[key] = PinChoice(tuple(kept[::-1]), used, newest_dropped, signature)
    return known


def pin_tokens(history: History, index: int) -> int:
    """Tokens of the stored message at ``index`` as a pin shows it, unclipped: counted once per message."""
    known = history.pin_tokens.get(index)
    if known is None:
        form = pin_form(history, index)
        known = history.pin_tokens[index] = history.counter.count_message(form) if form is not None else 0
    return known


def pin_form(history: History, index: int) -> Message | None:
    """The stored message at ``index`` as pinned after the summary, before any clip: its words without tool blocks,
    and the tool outputs its pin keeps restated under their calls (``core.pins.restated``)."""
    return restated(history.messages[index], history.pin_marks.get(index, WORDS), history.caller)


def pin_matcher(patterns: tuple[str, ...]) -> PinRule:
    """What of a message is marked to keep: ``metadata.pin`` marks all it carries, a pattern (a literal substring,
    one scan of each text per pattern) the words, the call's output or the output it is found in."""
    return PinRule(patterns)


def _pin(history: History, index: int, counter: TokenCounter, allowance: int) -> tuple[Message, int] | None:
    """A pin as shown, with its tokens: worked out once per message and allowance (every request shows it)."""
    key = (index, allowance)
    if counter is history.counter and key in history.pin_forms:
        return history.pin_forms[key]
    found = _pin_shown(history, index, counter, allowance)
    if counter is history.counter:
        history.pin_forms[key] = found
    return found


def _pin_shown(history: History, index: int, counter: TokenCounter, allowance: int) -> tuple[Message, int] | None:
    message = pin_form(history, index)
    if message is None:
        return None
    clipped = clip_within(
        message, allowance, counter.count_message, lambda _block: f"; handle {_pin_handle(history, index)}"
    )
    return clipped, counter.count_message(clipped)
