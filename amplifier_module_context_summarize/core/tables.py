"""One Markdown table writer, so every report (eval results, cost comparisons, steering) prints the same shape.

Pure text: it lives in ``core`` so evaluation, benchmark and cli may all import it.
"""

from __future__ import annotations

from collections.abc import Sequence


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """The lines of a Markdown table: the header, a ``| --- |`` rule, one line per row (cells used as given)."""
    return [
        "| " + " | ".join(header) + " |",
        "| " + " | ".join("---" for _ in header) + " |",
        *("| " + " | ".join(row) + " |" for row in rows),
    ]
