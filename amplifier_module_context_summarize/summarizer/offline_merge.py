"""The offline tier merge: consecutive summaries folded into one without re-reading what they stand for.

Re-reading the span of a tier merge costs time in proportion to the whole history behind it, which made a
long session quadratic whenever no LLM wrote the merge. Summaries are Markdown sections of bullet items
(the extractive summarizer writes them that way, and the LLM prompts ask for it), so a merge can fold them
section by section: items of the same heading are joined oldest first, repeats keep their newest place, and
when the result is over its size the oldest items of each section go first. Its cost is the size of the
summaries, which the tier allowance bounds.
"""

from __future__ import annotations

from collections.abc import Callable

PLAIN = "### Earlier summary"
"""Heading for text outside any section (an LLM summary written as prose)."""


def merge_summaries(texts: list[str], max_tokens: int, count_tokens: Callable[[str], int]) -> str:
    """One summary for ``texts`` (oldest first) within ``max_tokens``; "" when not even one item fits."""
    sections: dict[str, list[str]] = {}
    for text in texts:
        for heading, items in _sections(text):
            sections.setdefault(heading, []).extend(items)
    merged = {heading: _dedup_keep_last(items) for heading, items in sections.items()}

    def render(keep: int) -> str:
        return "\n\n".join(
            "\n".join([heading, *items[max(len(items) - keep, 0) :]]) for heading, items in merged.items() if items
        )

    low, high = 0, max((len(items) for items in merged.values()), default=0)
    while low < high:  # the most items per section that still fit
        middle = (low + high + 1) // 2
        if count_tokens(render(middle)) <= max_tokens:
            low = middle
        else:
            high = middle - 1
    return render(low) if low else ""


def _sections(text: str) -> list[tuple[str, list[str]]]:
    """(heading, items) in order; an item is a bullet with its continuation lines, or a paragraph."""
    found: list[tuple[str, list[str]]] = []
    heading, items, open_item = PLAIN, [], False
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


def _dedup_keep_last(items: list[str]) -> list[str]:
    return list(reversed(dict.fromkeys(reversed(items))))
