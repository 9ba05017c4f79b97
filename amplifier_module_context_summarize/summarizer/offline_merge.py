"""The offline tier merge: consecutive summaries folded into one without re-reading what they stand for.

Re-reading the span of a tier merge costs time in proportion to the whole history behind it, which made a
long session quadratic whenever no LLM wrote the merge. Summaries are Markdown sections of bullet items
(the extractive summarizer writes them that way, and the LLM prompts ask for it), so a merge can fold them
section by section: items of the same heading are joined oldest first, repeats keep their newest place, and
when the result is over its size the oldest items of each section go first. What the user's guidance asked
every summary to keep (the extractive summary's ``KEPT`` section, and any line of another section that names one
of ``keep``: an LLM writes the kept fact into its prose) gives way last: the other sections shrink to nothing
before it loses an item. Its cost is the size of the summaries, which the tier allowance bounds.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from .extractive import KEPT
from .kept import as_kept, names_one, wanted

PLAIN = "### Earlier summary"
"""Heading for text outside any section (an LLM summary written as prose)."""


def merge_summaries(
    texts: list[str], max_tokens: int, count_tokens: Callable[[str], int], keep: Collection[str] = ()
) -> str:
    """One summary for ``texts`` (oldest first) within ``max_tokens``; "" when not even one item fits. ``keep``:
    the names the user's guidance says every summary keeps (``prompts.keep_names``); a line naming one moves to
    the ``KEPT`` section, wherever the summary it came from had it."""
    sections: dict[str, list[str]] = {KEPT: []}
    lowered = wanted(keep)
    for text in texts:
        for heading, items in _sections(text):
            if lowered and heading != KEPT:
                items = _lifted(items, lowered, sections[KEPT])
            sections.setdefault(heading, []).extend(items)
    merged = {heading: _dedup_keep_last(items) for heading, items in sections.items()}

    def render(kept: int, others: int) -> str:
        shown = (
            (heading, items[max(len(items) - (kept if heading == KEPT else others), 0) :])
            for heading, items in merged.items()
        )
        return "\n\n".join("\n".join([heading, *items]) for heading, items in shown if items)

    def most(limit: int, fits: Callable[[int], bool]) -> int:
        """The largest count in ``[0, limit]`` that ``fits`` (it fits fewer whenever it fits more)."""
        low, high = 0, limit
        while low < high:
            middle = (low + high + 1) // 2
            if fits(middle):
                low = middle
            else:
                high = middle - 1
        return low

    kept_items = len(merged.get(KEPT, ()))
    others_items = max((len(items) for heading, items in merged.items() if heading != KEPT), default=0)
    kept = most(kept_items, lambda k: count_tokens(render(k, 0)) <= max_tokens)
    others = most(others_items, lambda k: count_tokens(render(kept, k)) <= max_tokens)
    return render(kept, others) if kept or others else ""


def _sections(text: str) -> list[tuple[str, list[str]]]:
    """(heading, items) in order; an item is a bullet with its continuation lines, or a paragraph."""
    found: list[tuple[str, list[str]]] = []
    items: list[str] = []
    heading, open_item = PLAIN, False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            if items:
                found.append((heading, items))
            heading, items, open_item = stripped, [], False
        elif not stripped:
            open_item = False  # a blank line ends a paragraph
        elif stripped.startswith(("- ", "* ")) or not open_item:
            items.append(line.rstrip())
            open_item = True
        else:
            items[-1] += "\n" + line.rstrip()
    if items:
        found.append((heading, items))
    return found


def _lifted(items: list[str], lowered: list[str], kept: list[str]) -> list[str]:
    """``items`` without their lines that name one of ``lowered`` (``kept.wanted``), which are appended to ``kept``
    as bullets; an item left with no line goes. Linear in the items' size times the (few) names."""
    out: list[str] = []
    for item in items:
        lines = item.split("\n")
        named = [names_one(line, lowered) for line in lines]
        if not any(named):
            out.append(item)
            continue
        kept.extend(as_kept(line) for line, hit in zip(lines, named, strict=True) if hit)
        rest = [line for line, hit in zip(lines, named, strict=True) if not hit]
        if rest:
            out.append("\n".join(rest))
    return out


def _dedup_keep_last(items: list[str]) -> list[str]:
    return list(reversed(dict.fromkeys(reversed(items))))
