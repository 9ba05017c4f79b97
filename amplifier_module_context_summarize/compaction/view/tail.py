"""The verbatim tail of the request view, kept between requests so a request copies it instead of rebuilding it.

Closed groups never change, so the tail of closed groups only grows as groups close and is rebuilt when
the boundary moves; the newest (open) group is re-derived only when it changes.
"""

from __future__ import annotations

from bisect import bisect_left

from ...core.history import History
from ...core.messages import Message


class TailView:
    def __init__(self) -> None:
        self._history: History | None = None
        self._settled: list[Message] = []  # closed groups [_from, _upto) as shown
        self._from = self._upto = 0
        self._open: tuple[int, int, list[Message]] | None = None

    def extend(self, view: list[Message], history: History, boundary: int) -> None:
        """Append groups ``[boundary, end)`` as shown to ``view``."""
        groups = history.groups
        if not groups or boundary >= len(groups):
            return
        view += self._settled_from(history, boundary)
        view += self._open_group(history)

    def _settled_from(self, history: History, boundary: int) -> list[Message]:
        groups, closed = history.groups, len(history.groups) - 1
        if self._history is not history or self._from != boundary:
            self._history, self._settled, self._from, self._upto = history, [], boundary, boundary
        if self._upto < closed:
            settled, position, stop = self._settled, groups[self._upto].start, groups[closed].start
            for g in history.irregular[bisect_left(history.irregular, self._upto) :]:
                if g >= closed:
                    break
                settled += history.messages[position : groups[g].start]
                settled += history.shown_as[g]
                position = groups[g].end
            settled += history.messages[position:stop]
            self._upto = closed
        return self._settled

    def _open_group(self, history: History) -> list[Message]:
        group = history.groups[-1]
        known = self._open
        if known is None or known[0] != group.start or known[1] != group.end or self._history is not history:
            known = self._open = (group.start, group.end, history.shown(len(history.groups) - 1))
        return known[2]
