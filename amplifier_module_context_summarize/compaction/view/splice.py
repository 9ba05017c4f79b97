"""The splice: the ``[CONTEXT SUMMARY]`` message a state shows, its segment summaries then the working set.

The state (``core.state``) says which groups the summary stands for; this module writes the message for it,
giving the working set of those groups (``working_set``) its room in the summary, and pins the requests
``core.state.pins_for`` keeps. It is a function of the state and the history alone, so a resumed session
shows the same text.
"""

from __future__ import annotations

from ...core.clip import MIN_CLIP_CHARS
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
from ...summarizer.extractive import KEPT
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


NARRATIVE_LEFT_OUT = (
    "[... the summary's narrative ({chars:,} characters) left out for this request: the newest messages fill it ...]"
)
"""What stands for the segment summaries when a request's view has no room for any of them (the working set stays)."""
NARRATIVE_CLIPPED = "\n[... {chars:,} characters of the summary's narrative left out for this request ...]\n"
"""The marker between the head and tail of segment summaries clipped for one request. Not a clip marker
(``core.clip``): the narrative has no stored original a handle could name, and the state keeps it whole."""


def summary_message(
    state: CompactionState,
    history: History,
    working_set_tokens: int = 0,
    recall_tool: str | None = None,
    summary_room: int = 0,
    narrative_chars: int | None = None,
    keep: tuple[str, ...] = (),
) -> Message | None:
    """The summary (or truncation marker) message; its last section is the working set of the summarized
    groups (``working_set/``), and with ``recall_tool`` its preamble names the recall tool. ``narrative_chars``:
    the segment summaries clipped head and tail to about that many characters (a request's fitted copy), keeping
    the lines that name what the user's guidance says to keep (``keep``)."""
    if state.segments:
        room = working_set_room(state, working_set_tokens, summary_room)
        working_set = index_of(history).render(state.segments[-1].end, room, history.counter.count_text)
        narrative = state.summary_text
        if narrative and narrative_chars is not None:
            narrative = shortened(narrative, narrative_chars, keep)
        text = "\n\n".join(p for p in (narrative, working_set) if p)
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


def shortened(narrative: str, limit: int, keep: tuple[str, ...] = ()) -> str:
    """The segment summaries clipped head and tail to ``limit`` characters (the goal it opens with and the newest
    work it ends with stay); one line saying what went when not even ``MIN_CLIP_CHARS`` are left. Lines naming one
    of ``keep`` (the guidance's "always keep ...") and the ``KEPT`` sections' stay wherever they are: the user
    asked for them in every view."""
    if len(narrative) <= limit:
        return narrative
    kept = kept_lines(narrative, keep)
    room = limit - sum(len(line) + 1 for line in kept)
    if room < MIN_CLIP_CHARS:
        return "\n".join([*kept, NARRATIVE_LEFT_OUT.format(chars=len(narrative))])
    half = room // 2
    head, tail = narrative[:half], narrative[-half:]
    between = "".join(f"{line}\n" for line in kept if line not in head and line not in tail)
    return head + NARRATIVE_CLIPPED.format(chars=len(narrative) - 2 * half) + between + tail


def kept_lines(narrative: str, keep: tuple[str, ...]) -> list[str]:
    """The narrative's lines that name one of ``keep`` (case-insensitive), and those of its ``KEPT`` sections (the
    offline summary's, which keep what the guidance in force when it was written named: a compaction's focus too,
    which a request does not know), once each, in order."""
    wanted = [name.lower() for name in keep]
    found: list[str] = []
    in_kept = False
    for line in narrative.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            in_kept = stripped == KEPT
        if stripped and (in_kept or any(name in line.lower() for name in wanted)):
            found.append(line)
    return list(dict.fromkeys(found))
