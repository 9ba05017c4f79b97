"""The last rungs of fitting a request's copy of the view: pins give way, then any text too large is clipped.

Runs only when the view, cut as far as a cut may go, still does not fit (the newest group alone, or a pasted
request, is larger than the budget). The session's first request, pinned after the summary, gives way first
(clipped to the room left, or left out); then every text still over the water level is clipped head and tail.
Each clip names the handle of its stored original (``core.handles``), so the recall tool fetches what it took
out, and the stored indices clipped are reported, so recall's search reaches them while the view hides them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ...core.clip import CHARS_PER_TOKEN_CAP, MIN_CLIP_CHARS, Note, clip_all, clip_text, fit_texts
from ...core.handles import handle_for
from ...core.history import History
from ...core.messages import Message, call_ids, result_ids

PIN_MIN_TOKENS = 48
"""A first-request pin with less room than this is left out rather than clipped to a stub."""


@dataclass(frozen=True)
class Fitted:
    """A request's copy of the view, its tokens, the stored indices of the messages it shows clipped, and of the
    pins it left out or shows clipped (reported by ``context:pins_dropped``)."""

    view: list[Message]
    tokens: int
    clipped: tuple[int, ...] = ()
    pins_given_way: tuple[int, ...] = ()


def group_sources(history: History, group: int, shown: list[Message]) -> list[int]:
    """The stored index of each message of ``shown``, group ``group`` as a view shows it (the stored messages
    themselves, or copies sanitized from them, in order)."""
    g = history.groups[group]
    stored = history.messages
    if len(shown) == g.end - g.start and all(a is b for a, b in zip(shown, stored[g.start : g.end], strict=True)):
        return list(range(g.start, g.end))
    out: list[int] = []
    position = g.start
    for message in shown:
        found = next((i for i in range(position, g.end) if _same_source(stored[i], message)), None)
        if found is None:
            found = min(position, g.end - 1)
        out.append(found)
        position = found + 1
    return out


def _same_source(stored: Message, shown: Message) -> bool:
    if stored is shown:
        return True
    if stored.get("role") != shown.get("role"):
        return False
    return set(result_ids(shown)) <= set(result_ids(stored)) and set(call_ids(shown)) <= set(call_ids(stored))


def handle_notes(history: History, sources: list[int | None], recall_tool: str | None) -> list[Note | None]:
    """For each view message with a stored original, the note its clip markers carry (its handle, worked out only
    when a clip is made: a handle hashes the whole message)."""
    messages = history.messages

    def note_for(index: int) -> Note:
        known: dict[int | None, str] = {}

        def note(block: int | None) -> str:
            if block not in known:
                handle = handle_for(messages, index, block)
                known[block] = f"; recall with {recall_tool}, handle {handle}" if recall_tool else f"; handle {handle}"
            return known[block]

        return note

    return [note_for(i) if i is not None else None for i in sources]


def pins_give_way(
    view: list[Message],
    positions: list[int],
    budget: int,
    count: Callable[[Message], int],
    notes: list[Note | None],
) -> tuple[list[Message], list[int]]:
    """The view with the pinned messages at ``positions`` (not the latest request: it is never left out) given the
    room the rest leaves in the order of ``positions`` (the caller's priority: the newest pins first, the first
    request last), each clipped to what is left of it or left out when that is under ``PIN_MIN_TOKENS``. Returns
    the view and the positions of the original view it keeps, in order."""
    if not positions:
        return view, list(range(len(view)))
    chosen = set(positions)
    room = budget - sum(count(m) for i, m in enumerate(view) if i not in chosen)
    fitted: dict[int, Message | None] = {}
    for i in positions:
        message = _clip_to(view[i], room, count, notes[i]) if room >= PIN_MIN_TOKENS else None
        fitted[i] = message
        if message is not None:
            room -= count(message)
    out, kept = [], []
    for i, message in enumerate(view):
        if i in chosen:
            clipped = fitted[i]
            if clipped is None:
                continue
            message = clipped
        out.append(message)
        kept.append(i)
    return out, kept


def pre_clip(view: list[Message], sources: list[int | None], budget: int, notes: list[Note | None]) -> list[Message]:
    """Texts longer than any that could fit the budget clipped to that length before anything counts them: what
    follows then counts at most ``CHARS_PER_TOKEN_CAP`` characters per token of the budget per text."""
    limit = budget * CHARS_PER_TOKEN_CAP
    return [
        clip_all(m, limit, note) if s is not None and (note := notes[i]) is not None else m
        for i, (m, s) in enumerate(zip(view, sources, strict=True))
    ]


def _clip_to(message: Message, room: int, count: Callable[[Message], int], note: Note | None) -> Message | None:
    """``message`` clipped head and tail to the longest text within ``room`` tokens (halving, then bisecting),
    or None when not even ``MIN_CLIP_CHARS`` fit."""
    limit = room * CHARS_PER_TOKEN_CAP
    fits = None
    high = None
    while limit >= MIN_CLIP_CHARS:
        clipped = clip_text(message, limit, note or (lambda _b: ""))
        if count(clipped) <= room:
            fits = (limit, clipped)
            break
        high, limit = limit, limit // 2
    if fits is None:
        return None
    low, best = fits
    while high is not None and high - low > max(low // 16, 1):
        middle = (low + high) // 2
        clipped = clip_text(message, middle, note or (lambda _b: ""))
        if count(clipped) <= room:
            low, best = middle, clipped
        else:
            high = middle
    return best


def fit_rest(
    view: list[Message],
    sources: list[int | None],
    budget: int,
    count: Callable[[Message], int],
    notes: list[Note | None],
) -> tuple[list[Message], list[int]]:
    """Every message with a stored original (not the system messages, the summary or the marker) clipped to one
    water level so that the view fits; the view positions clipped."""
    clippable = [s is not None for s in sources]
    return fit_texts(view, clippable, budget, count, notes)
