"""What the user's guidance keeps, gathered into the summary's ``KEPT`` section wherever a summary put it.

The offline summary writes the sentences naming a ``keep`` (``prompts.keep_names``) first, under ``KEPT``; an LLM
writes them where its prose has them. A request whose newest messages fill the budget clips the narrative and
keeps the ``KEPT`` lines (``compaction/view/splice.shortened``), but it knows only the standing instructions'
names, not the focus a past compaction was steered by. So a summary's own text says what its guidance kept: the
LLM's lines naming one move into ``KEPT`` as it is written, as an offline merge's do. Linear in the text's size
times the (few) names.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from .extractive import KEPT

_BULLET = re.compile(r"^(?:[-*]\s+)+")


def wanted(names: Collection[str]) -> list[str]:
    """The names as searched: lowercased, runs of spaces as one."""
    return [" ".join(name.split()).lower() for name in names if name.strip()]


def names_one(line: str, lowered: list[str]) -> bool:
    flat = " ".join(line.lower().split())
    return any(name in flat for name in lowered)


def as_kept(line: str) -> str:
    """A line as a ``KEPT`` item: one bullet."""
    return "- " + _BULLET.sub("", line.strip())


def gathered(text: str, names: Collection[str]) -> str:
    """``text`` with its lines naming one of ``names`` outside a ``KEPT`` section moved into one (its first, or a
    new one at the top); ``text`` itself when none does. Headings stay where they are."""
    lowered = wanted(names)
    if not lowered:
        return text
    rest: list[str] = []
    lifted: list[str] = []
    in_kept = False
    for line in text.split("\n"):
        stripped = line.strip()
        heading = stripped.startswith("#")
        if heading:
            in_kept = stripped == KEPT
        if not heading and not in_kept and stripped and names_one(line, lowered):
            lifted.append(as_kept(line))
        else:
            rest.append(line)
    if not lifted:
        return text
    if KEPT not in (line.strip() for line in rest):
        return "\n".join([KEPT, *dict.fromkeys(lifted), "", *rest]).rstrip("\n")
    at = next(i for i, line in enumerate(rest) if line.strip() == KEPT) + 1
    while at < len(rest) and rest[at].strip() and not rest[at].strip().startswith("#"):
        at += 1
    present = set(rest)
    new = [line for line in dict.fromkeys(lifted) if line not in present]
    return "\n".join([*rest[:at], *new, *rest[at:]])
