"""The offline summary: the user's asks and the assistant's conclusions, verbatim.

Used when no summarizer model is configured and as the fallback when the model fails, so it must
never need the network, must be the same for the same span, and must fit the summary allowance.
Files, commands, errors and ids are the working set's (``working_set.py``), which ends the summary message.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .ledger import authored_text, clip
from .messages import Message, is_user_turn

REQUEST_MAX_CHARS = 300
LATEST_REQUEST_MAX_CHARS = 800
CONCLUSION_MAX_CHARS = 300
LAST_CONCLUSION_MAX_CHARS = 600
QUOTE_MIN_CHARS = 20
"""Shorter asks ("yes", "go on") stay even when the previous summary contains them: that proves little."""
MIN_CLIP_CHARS = 20
EMPTY_SPAN = (
    "(No requests or conclusions in this part of the conversation; its files and commands are in the working set.)"
)

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def extractive_summary(
    messages: list[Message],
    *,
    previous_summary: str | None,
    max_tokens: int,
    count_tokens: Callable[[str], int],
) -> str:
    """Summarize ``messages`` alone (the caller puts it after ``previous_summary``) within ``max_tokens``.

    Every section keeps its most recent items when trimming, because the latest request and the
    latest conclusion are what the agent resumes from. Returns "" only when not even those fit.
    """
    requests = _requests(messages, previous_summary or "")
    conclusions = _conclusions(messages)
    if not requests and not conclusions:
        return EMPTY_SPAN if count_tokens(EMPTY_SPAN) <= max_tokens else ""

    def compose(keep: int) -> str:
        return _compose(requests[-keep:], conclusions[-keep:])

    if count_tokens(compose(1)) > max_tokens:
        return _squeeze(requests[-1:], conclusions[-1:], max_tokens, count_tokens)
    low = 1
    high = max(len(requests), len(conclusions))
    while low < high:  # the most items per section that still fit
        middle = (low + high + 1) // 2
        if count_tokens(compose(middle)) <= max_tokens:
            low = middle
        else:
            high = middle - 1
    return compose(low)


def _requests(messages: list[Message], previous_summary: str) -> list[str]:
    """User asks, oldest first: a repeat keeps its latest place, and asks already quoted are left out."""
    asks = [text for text in (authored_text(m) for m in messages if is_user_turn(m)) if text]
    clipped = [clip(a, REQUEST_MAX_CHARS) for a in asks[:-1]]
    clipped += [clip(a, LATEST_REQUEST_MAX_CHARS) for a in asks[-1:]]
    kept = [a for a in clipped if len(a) < QUOTE_MIN_CHARS or a not in previous_summary]
    return _dedup_keep_last(kept)


def _dedup_keep_last(items: list[str]) -> list[str]:
    return list(reversed(dict.fromkeys(reversed(items))))


def _conclusions(messages: list[Message]) -> list[str]:
    """The closing words of each assistant turn (its last text), the span's final one given more room."""
    finals: list[str] = []
    turn_text = ""
    for message in messages:
        if is_user_turn(message):
            if turn_text:
                finals.append(turn_text)
            turn_text = ""
        elif message.get("role") == "assistant":
            turn_text = authored_text(message) or turn_text
    if turn_text:
        finals.append(turn_text)
    tails = [_tail(text, CONCLUSION_MAX_CHARS) for text in finals[:-1]]
    tails += [_tail(text, LAST_CONCLUSION_MAX_CHARS) for text in finals[-1:]]
    return _dedup_keep_last(tails)


def _tail(text: str, limit: int) -> str:
    """The last lines (or, inside one long paragraph, the last sentences) that fit in ``limit`` characters."""
    pieces: list[str] = []
    for line in reversed([line for line in text.splitlines() if line.strip()]):
        for sentence in reversed(_SENTENCE_END.split(line.strip())):
            candidate = " ".join([sentence, *pieces])
            if len(" ".join(candidate.split())) > limit:
                if not pieces:
                    flat = " ".join(sentence.split())
                    return "…" + flat[len(flat) - limit + 1 :].lstrip()
                return " ".join(" ".join(pieces).split())
            pieces.insert(0, sentence)
    return " ".join(" ".join(pieces).split())


def _compose(requests: list[str], conclusions: list[str]) -> str:
    sections = []
    if requests:
        sections.append("\n".join(["### User requests", *(f"- {r}" for r in requests)]))
    if conclusions:
        sections.append("\n".join(["### Assistant progress", *(f"- {c}" for c in conclusions)]))
    return "\n\n".join(sections)


def _squeeze(
    requests: list[str],
    conclusions: list[str],
    max_tokens: int,
    count_tokens: Callable[[str], int],
) -> str:
    """The latest request and conclusion, clipped shorter and shorter; "" when nothing fits."""
    limit = max((len(text) for text in [*requests, *conclusions]), default=0) // 2
    while limit >= MIN_CLIP_CHARS:
        text = _compose([clip(r, limit) for r in requests], [_tail(c, limit) for c in conclusions])
        if count_tokens(text) <= max_tokens:
            return text
        limit //= 2
    return ""
