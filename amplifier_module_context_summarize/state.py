"""The compaction state — a small immutable value — and what it shows in a view, derived from it and the history.

A state is where the verbatim tail begins (``boundary``) and the segment summaries that stand for the
groups before it. The ``[CONTEXT SUMMARY]`` message (or the ``[CONTEXT TRUNCATED]`` marker) and the
pinned latest request are functions of the state and the history, never kept in sync by hand.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .clip import clip_text
from .history import History
from .messages import Message, message_text, strip_tool_blocks
from .tokens import TokenCounter

SUMMARY_MARKER = "[CONTEXT SUMMARY]"
SUMMARY_PREAMBLE = (
    "This is an automatic summary of the earlier part of this conversation, written when it outgrew the "
    "context window. Treat it as established context; the messages after it continue from where it ends."
)
TRUNCATION_MARKER = "[CONTEXT TRUNCATED] {count} earlier messages were left out to fit the context window."
TRUNCATION_MARKER_TOKENS = 32
"""Room planned for the marker, which also makes sure the first message after the system ones is a user's
(Anthropic rejects a conversation that opens with an assistant message)."""
PIN_MAX_CHARS_PER_TOKEN = 3


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
    """Groups ``[0, boundary)`` are not shown verbatim; ``segments`` summarize a prefix of them.

    Groups between the last segment's end and ``boundary`` were dropped by truncation (the bottom rung).
    """

    boundary: int = 0
    segments: tuple[Segment, ...] = ()

    def with_segments(self, segments: tuple[Segment, ...] | list[Segment], boundary: int) -> CompactionState:
        return CompactionState(boundary, tuple(segments))

    def cut(self, boundary: int) -> CompactionState:
        """The same summary, with the verbatim tail starting at ``boundary`` (never moving backwards)."""
        return replace(self, boundary=max(boundary, self.boundary))

    @property
    def summary_text(self) -> str | None:
        return "\n\n".join(s.text for s in self.segments) or None


@dataclass(frozen=True)
class Shown:
    """What a state adds to a view before the verbatim tail."""

    summary: Message | None = None
    summary_tokens: int = 0
    pin: Message | None = None
    pin_tokens: int = 0

    @property
    def tokens(self) -> int:
        return self.summary_tokens + self.pin_tokens

    @property
    def messages(self) -> list[Message]:
        return [m for m in (self.summary, self.pin) if m is not None]

    def pinning(self, pinned: tuple[Message, int] | None) -> Shown:
        """The same summary with another pinned request (or none)."""
        return replace(self, pin=pinned[0] if pinned else None, pin_tokens=pinned[1] if pinned else 0)


def shown(
    state: CompactionState, history: History, counter: TokenCounter, summary_allowance: int, working_set_tokens: int = 0
) -> Shown:
    summary = summary_message(state, history, working_set_tokens)
    tokens = counter.count_message(summary) if summary is not None else 0
    return Shown(summary, tokens).pinning(pin_for(history, state.boundary, counter, summary_allowance))


def summary_message(state: CompactionState, history: History, working_set_tokens: int = 0) -> Message | None:
    """The summary message; its last section is the working set of the summarized groups (``working_set.py``)."""
    if state.segments:
        working_set = history.working_set.render(state.segments[-1].end, working_set_tokens, history.counter.count_text)
        text = "\n\n".join(p for p in (state.summary_text, working_set) if p)
        return {"role": "user", "content": f"{SUMMARY_MARKER}\n{SUMMARY_PREAMBLE}\n\n{text}"}
    if state.boundary > 0:
        return {"role": "user", "content": TRUNCATION_MARKER.format(count=history.messages_before(state.boundary))}
    return None


def pin_for(history: History, boundary: int, counter: TokenCounter, allowance: int) -> tuple[Message, int] | None:
    """The latest user request, stripped of tool results, when groups before ``boundary`` hold it.

    It is kept right after the summary (a huge one clipped head and tail to about a summary's size), so the
    request being worked on is never only paraphrased. It depends on the history and the boundary alone,
    so a resumed session pins the same message.
    """
    groups = history.groups
    latest = history.latest_request
    if boundary <= 0 or not 0 <= latest < groups[boundary - 1].end:
        return None
    message = strip_tool_blocks(history.messages[latest], keep_calls=set(), keep_results=set())
    if message is None:
        return None
    limit = PIN_MAX_CHARS_PER_TOKEN * allowance
    clipped = clip_text(message, limit)
    tokens = counter.count_message(clipped)
    if clipped is not message and len(message_text(message)) <= 2 * limit:  # only just over: worth clipping?
        whole = counter.count_message(message)
        if tokens >= whole:
            return message, whole  # the clip marker would cost more than the text it takes out
    return clipped, tokens
