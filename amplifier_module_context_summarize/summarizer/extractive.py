"""The offline summary: the user's requests, the assistant's decisions and its progress, verbatim.

Used when no summarizer model is configured and as the fallback when the model fails, so it must
never need the network, must be the same for the same span, and must fit the summary allowance.
Files, commands, errors and ids are not repeated here: the working set (``working_set/``) ends the
summary message with all of them.

The latest request and the assistant's latest conclusion are kept whole (clipped only when either alone
would take more than ``LATEST_SHARE`` of the room) and never dropped. The rest of the room is shared
between the sections in priority order — earlier requests (all of them, shortened step by step before
the oldest go), decisions, earlier progress — each filling its own share first, then taking what the
others left.

Progress is every note the assistant wrote, not only the closing words of each user turn: an agent's
user turn often runs for dozens of tool calls, and the notes between them ("All 15 tests pass", "I need
to rename `load_transcript`") are the story of what it found and did. A note that ends a user turn is
shortened from the front (it ends with the outcome); one written mid-turn from the back (it starts with
what was just found, then says what comes next). A note that only announces the next call ("Let me look
at the In class:") is left out: the call is in the working set, and the room goes to notes that found
something.

A request the view shows verbatim anyway (``pinned``: the session's first request, kept right after
the summary) is only named, by its opening words, so the summary does not spend its room on a copy.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import dataclass

from ..core.messages import RESULT_BLOCK_TYPE, Message, block_text, is_user_turn, message_text
from ..working_set.facts import authored_text
from ..working_set.records import clip

REQUEST_CLIPS = (300, 150, 80, 40)
"""Lengths earlier requests are shortened to, in turn, before the oldest are dropped."""
CONCLUSION_CLIPS = (300, 150, 80)
DECISION_MAX_CHARS = 240
LATEST_SHARE = 0.35
"""Most of the room the latest request (and, apart, the latest conclusion) may take."""
SHARES = (("requests", 0.4), ("decisions", 0.3), ("progress", 0.3))
"""How the room left after the latest request and conclusion is first split, in priority order."""
QUOTE_MIN_CHARS = 20
"""Shorter asks ("yes", "go on") stay even when the previous summary contains them: that proves little."""
QUOTE_PREFIX_CHARS = 80
PINNED_CLIP_CHARS = 150
"""A pinned request is named by this many of its first characters."""
PINNED_NOTE = " (shown in full after this summary)"
MIN_CLIP_CHARS = 20
EMPTY_SPAN = (
    "(No requests or conclusions in this part of the conversation; its files and commands are in the working set.)"
)

REQUESTS, DECISIONS, PROGRESS = "### User requests", "### Decisions", "### Assistant progress"
KEPT = "### Kept as the user asked"
KEPT_SHARE = 0.4
"""Of the summary's size, what the sentences naming what the user's guidance says to keep may take first."""
KEPT_MAX_CHARS = 300
"""About how long a kept sentence is shown: around the names it mentions, never cutting one away."""
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
"""Where a sentence ends: after ``.``, ``!`` or ``?``, or at a line break (a pasted checklist's items are lines
without a full stop; read as one sentence, its head was all a kept mention showed)."""
_BULLET = re.compile(r"^[-*•+]\s+")
# A decision states the course the assistant chose: a verb of choosing ("decided", "switch to", "go with"),
# or a first-person plan ("I'll", "let's", "we should") that names what it uses or what it prefers it over.
_CHOICE = re.compile(
    r"\b(?:decid(?:e|ed|ing) (?:to|on|against)|decision|chose|chosen|opt(?:ed)? (?:for|to)|go(?:ing)? with"
    r"|settle(?:d)? on|switch(?:ed|ing)? to|prefer(?:red)?)\b",
    re.IGNORECASE,
)
_INTENT = re.compile(r"\b(?:I(?:'ll| will|'m going to| am going to)|we(?:'ll| will| should)|let's|I should)\b", re.I)
_REASON = re.compile(r"\b(?:use|using|instead|rather than|because|so that)\b", re.IGNORECASE)
# A note that only announces the next call ("Let me look at the In class:", "Now let me run the tests."):
# one short sentence of intent with nothing found in it. The call itself is in the working set.
_ANNOUNCEMENT = re.compile(
    r"(?:(?:good|great|ok|okay|perfect|alright|now|next|first|then|so)[,.!]?\s+)*"
    r"(?:let me|let's|i'll|i will|i need to|i'm going to)\b(?:[^.!?`\n]|\.(?=\S)){0,120}[.:!]?",
    re.IGNORECASE,
)
ANNOUNCEMENT_MAX_CHARS = 140


def is_decision(sentence: str) -> bool:
    return bool(_CHOICE.search(sentence) or (_INTENT.search(sentence) and _REASON.search(sentence)))


@dataclass
class _Section:
    items: list[str]
    """Oldest first, full length."""
    clips: tuple[int, ...]
    tails: tuple[bool, ...] = ()
    """Per item: shorten from the front (a turn's closing words end with what matters) rather than the back."""
    noun: str = "item"


def extractive_summary(
    messages: list[Message],
    *,
    previous_summary: str | None,
    max_tokens: int,
    count_tokens: Callable[[str], int],
    pinned: Collection[str] = (),
    keep: Collection[str] = (),
) -> str:
    """Summarize ``messages`` alone (the caller puts it after ``previous_summary``) within ``max_tokens``.

    ``pinned``: requests the view shows verbatim beside the summary (only named here). ``keep``: names the user's
    guidance says every summary must keep (``prompts.keep_names``): the span's sentences that mention one come first,
    in up to ``KEPT_SHARE`` of the size.
    Returns "" only when not even the latest request and conclusion, clipped, fit.
    """
    kept = _fit_all(_kept(messages, keep), int(max_tokens * KEPT_SHARE), count_tokens) if keep else []
    if kept:
        rest = extractive_summary(
            messages,
            previous_summary=previous_summary,
            max_tokens=max_tokens - count_tokens("\n".join([KEPT, *kept])) - 2,
            count_tokens=count_tokens,
            pinned=pinned,
        )
        return "\n\n".join(p for p in ("\n".join([KEPT, *kept]), rest) if p)
    requests = _requests(messages, previous_summary or "", pinned)
    notes = _notes(messages)
    conclusions = [text for text, _ in notes]
    decisions = _decisions(messages, conclusions[-1:])
    if not requests and not conclusions and not decisions:
        return EMPTY_SPAN if count_tokens(EMPTY_SPAN) <= max_tokens else ""
    latest_request = _fit(requests[-1:], int(max_tokens * LATEST_SHARE), count_tokens, tail=False)
    latest_conclusion = _fit(conclusions[-1:], int(max_tokens * LATEST_SHARE), count_tokens, tail=True)
    sections = {
        "requests": _Section(requests[:-1], REQUEST_CLIPS, noun="request"),
        "decisions": _Section(decisions, (DECISION_MAX_CHARS,), noun="decision"),
        "progress": _Section(conclusions[:-1], CONCLUSION_CLIPS, tuple(t for _, t in notes[:-1]), noun="step"),
    }
    base = _compose(latest_request, {}, latest_conclusion)
    if count_tokens(base) > max_tokens:
        return _squeeze(requests[-1:], conclusions[-1:], max_tokens, count_tokens)
    room = max_tokens - count_tokens(base)
    for _ in range(4):  # section counts add up to about the whole; shrink the room when they do not
        chosen = _allot(sections, room, count_tokens)
        text = _compose(latest_request, chosen, latest_conclusion)
        if count_tokens(text) <= max_tokens:
            return text
        room = int(room * 0.8)
    return base


def _allot(sections: dict[str, _Section], room: int, count: Callable[[str], int]) -> dict[str, list[str]]:
    """Each section packed into its share; then, in priority order, the sections still cut take what is left."""
    chosen: dict[str, list[str]] = {}
    used: dict[str, int] = {}
    whole: dict[str, bool] = {}
    for name, share in SHARES:
        chosen[name], used[name], whole[name] = _pack(sections[name], int(room * share), count)
    for name, _ in SHARES:
        spare = room - sum(used.values())
        if spare <= 0:
            break
        if not whole[name]:
            chosen[name], used[name], whole[name] = _pack(sections[name], used[name] + spare, count)
    return chosen


def _pack(section: _Section, room: int, count: Callable[[str], int]) -> tuple[list[str], int, bool]:
    """The section's lines within ``room`` tokens: all items, shortened step by step, then the oldest dropped.

    The flag says whether every item fit at its first length (more room would change nothing). A line costs
    at least a token, so no more than ``room`` lines can fit: the lines of a long span's thousands of items are
    neither written nor counted.
    """
    if not section.items:
        return [], 0, True
    tails = section.tails or (False,) * len(section.items)
    if len(section.items) <= room:
        for step, limit in enumerate(section.clips):
            lines = [f"- {_shorten(item, limit, tail)}" for item, tail in zip(section.items, tails, strict=True)]
            cost = count("\n".join(lines))
            if cost <= room:
                return lines, cost, step == 0
    if room < 1:
        return [], 0, False
    limit = section.clips[-1]
    newest = zip(section.items[-room:], tails[-room:], strict=True)
    lines = [f"- {_shorten(item, limit, tail)}" for item, tail in newest]
    total = len(section.items)
    low, high = -1, min(total - 1, room - 1)  # keep the newest ``k`` at the shortest length and count the others
    best: tuple[list[str], int, bool] = ([], 0, False)
    while low < high:
        keep = (low + high + 1) // 2
        dropped = total - keep
        candidate = [f"- (+{dropped} earlier {section.noun}{'s' if dropped > 1 else ''})", *lines[len(lines) - keep :]]
        cost = count("\n".join(candidate))
        if cost <= room:
            low, best = keep, (candidate, cost, False)
        else:
            high = keep - 1
    return best


def _shorten(text: str, limit: int, tail: bool) -> str:
    return _tail(text, limit) if tail else clip(text, limit)


def _fit(items: list[str], max_tokens: int, count: Callable[[str], int], tail: bool) -> list[str]:
    """The single item whole when it fits ``max_tokens``, else shortened until it does."""
    if not items:
        return []
    text = " ".join(items[0].split())
    limit = len(text)
    while limit >= MIN_CLIP_CHARS:
        shortened = _shorten(text, limit, tail)
        tokens = count(shortened)
        if tokens <= max_tokens:
            return [shortened]
        limit = min(limit - 1, int(limit * max_tokens / max(tokens, 1)))
    return [_shorten(text, MIN_CLIP_CHARS, tail)]


@dataclass(frozen=True)
class _Mention:
    """A kept line and the names (lowercased) it shows."""

    line: str
    names: frozenset[str]


class _Names:
    """The names to keep, found case-insensitively. Lowercased text is searched for the lowercased names (a fast
    literal search); the rare text whose lowercase changes its length (``İ``) is searched with a case-folding
    pattern, so a place found is always a place in the text."""

    def __init__(self, names: Collection[str]) -> None:
        self.wanted = {" ".join(n.split()).lower() for n in names if n.strip()}
        self.first_words = {n.split()[0] for n in self.wanted}
        ordered = sorted(self.wanted, key=len, reverse=True)  # the longest name first where two start alike
        spelled = "|".join(r"[ \t]+".join(map(re.escape, n.split())) for n in ordered)  # any spaces between words
        self._plain = re.compile(spelled)
        self._folded = re.compile(spelled, re.IGNORECASE)

    def searchable(self, text: str, low: str | None = None) -> tuple[str, re.Pattern[str]]:
        """What to search in place of ``text`` (same length, same places), and with which pattern."""
        low = text.lower() if low is None else low
        return (low, self._plain) if len(low) == len(text) else (text, self._folded)


def _kept(messages: list[Message], names: Collection[str]) -> list[_Mention]:
    """Each sentence (or line) of the span that mentions one of ``names`` (case-insensitive), once, shown around
    the names it mentions; linear in the span's size times the (few) names (a sentence is searched for a name only
    once it holds the name's first word)."""
    keep = _Names(names)
    if not keep.wanted:
        return []
    out: dict[str, _Mention] = {}
    seen: set[str] = set()  # sentences already shown (a repeated line is kept once anyway)
    for message in messages:
        for sentence in _SENTENCE_END.split(message_text(message)):
            if sentence in seen:
                continue
            low = sentence.lower()
            if any(word in low for word in keep.first_words):
                haystack, pattern = keep.searchable(sentence, low)
                if pattern.search(haystack):
                    seen.add(sentence)
                    mention = _mention(sentence, keep)
                    out.setdefault(mention.line, mention)
    return list(out.values())


def _mention(sentence: str, keep: _Names) -> _Mention:
    """A sentence as a kept line: on one line, without its own bullet, shown around the names it mentions."""
    flat = _BULLET.sub("", " ".join(sentence.split()))
    haystack, pattern = keep.searchable(flat)
    found: dict[str, tuple[int, int]] = {}  # each name's first place
    for match in pattern.finditer(haystack):
        found.setdefault(" ".join(match.group(0).split()).lower(), match.span())
        if len(found) == len(keep.wanted):
            break
    shown = _around(flat, sorted(found.values()), KEPT_MAX_CHARS) if found else clip(flat, KEPT_MAX_CHARS)
    return _Mention(f"- {shown}", frozenset(found))


def _around(text: str, spans: list[tuple[int, int]], limit: int) -> str:
    """``text`` in about ``limit`` characters with every span in ``spans`` (ordered) whole: the context left is
    shared around them, and what is cut is marked ``…``. A name is never cut away, however long."""
    if len(text) <= limit:
        return text
    context = max(limit - sum(end - start for start, end in spans), 0) // (2 * len(spans))
    windows: list[list[int]] = []
    for start, end in spans:
        low, high = max(start - context, 0), min(end + context, len(text))
        if windows and low <= windows[-1][1]:
            windows[-1][1] = max(windows[-1][1], high)
        else:
            windows.append([low, high])
    pieces = [text[low:high].strip() for low, high in windows]
    return ("…" if windows[0][0] > 0 else "") + " … ".join(pieces) + ("…" if windows[-1][1] < len(text) else "")


def _fit_all(mentions: list[_Mention], room: int, count: Callable[[str], int]) -> list[str]:
    """The lines of ``mentions`` that fit ``room`` tokens together, in order: first the newest mention of each name
    (every name the span mentions is kept when the room allows), then the other mentions, newest first (the latest
    mention is the current one) until one does not fit: the lines counted are each name's newest, those kept and
    one more, however many mention a name."""
    first: list[int] = []
    named: set[str] = set()
    for index in range(len(mentions) - 1, -1, -1):
        if not mentions[index].names <= named:
            first.append(index)
            named |= mentions[index].names
    chosen: set[int] = set()
    used = count(KEPT)
    for index in first:  # at most one per name
        tokens = count(mentions[index].line) + 1
        if used + tokens <= room:
            chosen.add(index)
            used += tokens
    for index in range(len(mentions) - 1, -1, -1):
        if index in chosen or index in first:
            continue
        tokens = count(mentions[index].line) + 1
        if used + tokens > room:
            break
        chosen.add(index)
        used += tokens
    return [mentions[i].line for i in sorted(chosen)]


def _compose(latest_request: list[str], chosen: dict[str, list[str]], latest_conclusion: list[str]) -> str:
    parts = []
    requests = [*chosen.get("requests", []), *(f"- {r}" for r in latest_request)]
    if requests:
        parts.append("\n".join([REQUESTS, *requests]))
    if chosen.get("decisions"):
        parts.append("\n".join([DECISIONS, *chosen["decisions"]]))
    progress = [*chosen.get("progress", []), *(f"- {c}" for c in latest_conclusion)]
    if progress:
        parts.append("\n".join([PROGRESS, *progress]))
    return "\n\n".join(parts)


def _squeeze(requests: list[str], conclusions: list[str], max_tokens: int, count: Callable[[str], int]) -> str:
    """Only the latest request and conclusion, clipped shorter and shorter; "" when nothing fits."""
    limit = max((len(text) for text in [*requests, *conclusions]), default=0) // 2
    while limit >= MIN_CLIP_CHARS:
        text = _compose([clip(r, limit) for r in requests], {}, [_tail(c, limit) for c in conclusions])
        if count(text) <= max_tokens:
            return text
        limit //= 2
    return ""


def _requests(messages: list[Message], previous_summary: str, pinned: Collection[str] = ()) -> list[str]:
    """User asks, oldest first: a repeat keeps its latest place, asks already quoted are left out, and a
    pinned one is named by its opening words. A user message that carries tool results is the tools' turn:
    text beside them (a harness's note, a tool's own text) is not listed as the user's."""
    shown = {" ".join(text.split()) for text in pinned}
    asks = [" ".join(text.split()) for text in (authored_text(m) for m in messages if _asked(m)) if text]
    asks = [_named(a) if a in shown else a for a in asks]
    kept = [a for a in asks if len(a) < QUOTE_MIN_CHARS or _quote(a) not in previous_summary]
    return _dedup_keep_last(kept)


def _asked(message: Message) -> bool:
    """A user turn that carries no tool result: only then are its words a request of the user's."""
    content = message.get("content")
    if not is_user_turn(message):
        return False
    return not (
        isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == RESULT_BLOCK_TYPE for b in content)
    )


def _named(request: str) -> str:
    """A pinned request, by its opening words (whole when it is no longer than the note saying so)."""
    if len(request) <= PINNED_CLIP_CHARS:
        return request
    return clip(request, PINNED_CLIP_CHARS) + PINNED_NOTE


def _quote(text: str) -> str:
    """How a summary quotes a request: at least its opening words, however it was shortened."""
    return clip(text, QUOTE_PREFIX_CHARS).removesuffix("…").rstrip()


def _dedup_keep_last(items: list[str]) -> list[str]:
    return list(reversed(dict.fromkeys(reversed(items))))


def _notes(messages: list[Message]) -> list[tuple[str, bool]]:
    """Each text the assistant wrote, oldest first, and whether it closed a user turn (a repeat keeps its
    latest place)."""
    notes: list[tuple[str, bool]] = []
    for message in messages:
        if is_user_turn(message):
            if notes:
                notes[-1] = (notes[-1][0], True)
        elif message.get("role") == "assistant":
            text = _flat_lines(authored_text(message) or _reasoning(message))
            if text:
                notes.append((text, False))
    if notes:
        notes[-1] = (notes[-1][0], True)
    closing = {text for text, closes in notes if closes}
    latest = notes[-1][0] if notes else ""
    texts = _dedup_keep_last([text for text, _ in notes if text == latest or not is_announcement(text)])
    return [(text, text in closing) for text in texts]


def _reasoning(message: Message) -> str:
    """The reasoning a model returned beside an empty reply: ``reasoning_content`` (DeepSeek-style reasoners
    answer with it and a bare tool call) or thinking blocks; then it is all the assistant said."""
    reasoning = message.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning.strip():
        return reasoning.strip()
    content = message.get("content")
    blocks = (
        [b for b in content if isinstance(b, dict) and b.get("type") == "thinking"] if isinstance(content, list) else []
    )
    return "\n".join(block_text(b) for b in blocks).strip()


def is_announcement(note: str) -> bool:
    """A note that only says which call comes next; the latest note is kept even so (it may be all there is)."""
    return len(note) <= ANNOUNCEMENT_MAX_CHARS and bool(_ANNOUNCEMENT.fullmatch(note.strip()))


def _flat_lines(text: str) -> str:
    return " ".join(" ".join(line.split()) for line in text.splitlines() if line.strip())


def _decisions(messages: list[Message], latest_conclusion: list[str]) -> list[str]:
    """Sentences in which the assistant states a choice, oldest first (code blocks and tables left out)."""
    found: list[str] = []
    shown = latest_conclusion[0] if latest_conclusion else ""
    for message in messages:
        if message.get("role") != "assistant":
            continue
        fenced = False
        for line in authored_text(message).splitlines():
            stripped = line.strip()
            if stripped.startswith("```"):
                fenced = not fenced
                continue
            if fenced or not stripped or stripped.startswith(("|", "#", ">")):
                continue
            for sentence in _SENTENCE_END.split(stripped.lstrip("-*• ").strip()):
                flat = " ".join(sentence.split())
                if len(flat) >= MIN_CLIP_CHARS and is_decision(flat) and flat not in shown:
                    found.append(flat)
    return _dedup_keep_last(found)


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
