"""The section: the working set rendered within a room, from the folded records to the text.

``render`` brings the records' shelves up to date (``shelves``: only what the newest groups touched is
redone), lays them out (``layout``) and finds the fewest ladder steps that fit on the per-step estimate
(``ladder_tokens``); the text chosen is then counted whole, and shrunk further in the rare case the estimate
was short.
"""

from __future__ import annotations

from collections.abc import Callable
from weakref import WeakKeyDictionary

from .fold import Touched, WorkingSet
from .ladder_tokens import LadderTokens
from .layout import Layout
from .shelves import Shelves

_SHELVES: WeakKeyDictionary[WorkingSet, Shelves] = WeakKeyDictionary()
"""Each working set's shelves (for its current root), kept while it lives so a render redoes only what changed."""


def shelved(ws: WorkingSet) -> Shelves:
    """The shelves for the current root, brought up to date with what was folded since the last look."""
    root = ws.root()
    shelves = _SHELVES.get(ws)
    if shelves is None or shelves.root != root:
        shelves = _SHELVES[ws] = Shelves(ws, root)
    else:
        shelves.refresh(ws, ws.touched)
    ws.touched = Touched()
    return shelves


def render(ws: WorkingSet, max_tokens: int, count_tokens: Callable[[str], int]) -> str:
    """The section within ``max_tokens`` ("" when empty or when not even its counts fit).

    The ladder is searched on an estimate, each distinct line counted once with its newline (within a
    token or two of the whole text's count; ``ladder_tokens.py`` works it out per step without writing the
    lines); the text chosen is then counted whole, and shrunk further in the rare case the estimate was short.
    """
    if max_tokens <= 0:
        return ""
    shelves = shelved(ws)
    return search(Layout(shelves, ws, max_tokens, shelves.measure(count_tokens)), count_tokens)


def search(layout: Layout, count_tokens: Callable[[str], int]) -> str:
    """The text of the fewest ladder steps that fits ``layout.max_tokens`` ("" if none does)."""
    max_tokens = layout.max_tokens
    if layout.empty:
        return ""
    estimate = LadderTokens(layout).at
    hidden, first = layout.hidden_rungs, layout.first_fitting
    low, high = -1, len(layout.ladder) + hidden
    while high - low > 1:  # the fewest ladder steps whose estimate fits (counted on the count cut's ladder)
        middle = (low + high) // 2
        if middle >= first and estimate(middle - hidden) <= max_tokens:
            high = middle
        else:
            low = middle
    for steps in range(high - hidden, len(layout.ladder) + 1):
        text = "\n".join(layout.lines(steps))
        if count_tokens(text) <= max_tokens:
            return text
    return ""
