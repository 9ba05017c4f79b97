"""The splice: the ``[CONTEXT SUMMARY]`` message a state shows, its segment summaries then the working set.

The state (``core.state``) says which groups the summary stands for; this module writes the message for it,
giving the working set of those groups (``working_set``) its room in the summary, and pins the requests
``core.state.pins_for`` keeps. It is a function of the state and the history alone, so a resumed session
shows the same text.
"""

from __future__ import annotations

from ...core.history import History
from ...core.messages import Message
from ...core.state import (
    RECALL_LINE,
    SUMMARY_MARKER,
    SUMMARY_PREAMBLE,
    CompactionState,
    Shown,
    pins_for,
    truncation_marker,
)
from ...core.tokens import TokenCounter
from ...working_set.index import index_of


def shown(
    state: CompactionState,
    history: History,
    counter: TokenCounter,
    summary_allowance: int,
    working_set_tokens: int = 0,
    recall_tool: str | None = None,
    summary_room: int = 0,
) -> Shown:
    summary = summary_message(state, history, working_set_tokens, recall_tool, summary_room)
    tokens = counter.count_message(summary) if summary is not None else 0
    return Shown(summary, tokens).pinning(pins_for(history, state.boundary, counter, summary_allowance))


def summary_message(
    state: CompactionState,
    history: History,
    working_set_tokens: int = 0,
    recall_tool: str | None = None,
    summary_room: int = 0,
) -> Message | None:
    """The summary (or truncation marker) message; its last section is the working set of the summarized
    groups (``working_set/``), and with ``recall_tool`` its preamble names the recall tool."""
    if state.segments:
        room = working_set_room(state, working_set_tokens, summary_room)
        working_set = index_of(history).render(state.segments[-1].end, room, history.counter.count_text)
        text = "\n\n".join(p for p in (state.summary_text, working_set) if p)
        preamble = SUMMARY_PREAMBLE + ("\n" + RECALL_LINE.format(tool=recall_tool) if recall_tool else "")
        return {"role": "user", "content": f"{SUMMARY_MARKER}\n{preamble}\n\n{text}"}
    if state.boundary > 0:
        return truncation_marker(history, state.boundary)
    return None


def working_set_room(state: CompactionState, working_set_tokens: int, summary_room: int) -> int:
    """The working set's own share, or more: what the segment summaries leave of the summary's room.

    Short summaries (a terse model, a freshly merged tier) would otherwise leave room unused while the
    working set drops its oldest commands. The segments' sizes are part of the state, so a resumed session
    gives the working set the same room and renders the same text.
    """
    if working_set_tokens <= 0:
        return 0
    return max(working_set_tokens, summary_room - sum(segment.tokens for segment in state.segments))
