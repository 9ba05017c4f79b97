"""What a compaction reads from the history, worked out ahead a slice at a time, the event loop let run between.

A compaction plans over three caches of the history's closed groups, each filled the first time a group is
asked for: the working set's facts (``working_set.index``: one extraction per group), the chain hashes (the
store's keys) and the masked forms with their token counts (``masking.Masks``). Filled lazily inside the
strategy, the new groups of a compaction late in a long session (or every group of a resumed one) are worked
out in one synchronous stretch, and nothing else on the loop runs meanwhile. ``Warmer.warm`` fills the same
caches before the strategy runs, a few groups at a time, yielding to the loop whenever a slice has taken
``SLICE_S``. What it fills is what the strategy would have filled (closed groups never change), so the plan
and the view are the same; it stays on the loop's thread, since these caches are not safe to share with another.
"""

from __future__ import annotations

import asyncio
import time
import weakref

from ...core.history import History
from ...core.invariants import last_allowed_cut
from ...core.state import CompactionState
from ...working_set.index import index_of
from ..view.masking import Masks

SLICE_S = 0.005
"""Longest the loop is held between two yields while warming (a few groups may overshoot it a little)."""
STEP = 8
"""Groups worked out between two looks at the clock."""
YIELDS = 3
"""Loop iterations given away at each yield. A task woken by a timer or by I/O runs one iteration after the
callback that wakes it, behind whatever was ready before (this task, after a bare ``sleep(0)``): three let it
run before this task's next stretch."""


async def let_loop_run() -> None:
    """Between two steps of a compaction that each hold the event loop for a while late in a long session
    (writing the working set, counting the summary message: 10-30 ms each at 50,000 messages), let other tasks
    run. The history may grow meanwhile, as it may while a summarizer call is awaited; a plan reads it as it
    goes. No time passes (no timer), so fake and virtual clocks see nothing."""
    for _ in range(YIELDS):
        await asyncio.sleep(0)


class Warmer:
    """Remembers how far one history's facts were worked out, so each compaction warms only its new groups."""

    def __init__(self) -> None:
        self._history: weakref.ref[History] | None = None
        self._facts = 0
        """Groups ``[0, _facts)`` of that history have their facts and chain hashes worked out."""

    async def warm(self, history: History, masks: Masks | None, state: CompactionState) -> None:
        """Work out the facts and chain hashes of ``history``'s closed groups, and the masked forms from
        ``state``'s boundary as far as masking may reach, yielding the loop every ``SLICE_S``."""
        if self._history is None or self._history() is not history:
            self._history, self._facts = weakref.ref(history), 0
        index = index_of(history)
        closed = history.last_cuttable
        # The summary's own render has worked out the groups it stands for, unless it was stored (a resume).
        start = max(self._facts, index.extracted)
        # A whole history to extract (a resume with nothing stored) is extracted here too, on the loop's thread, in
        # the same slices: the library never forks its host (a process with threads, issue 48).
        slice_ends = time.perf_counter() + SLICE_S
        boundary = state.boundary
        mask_end = min(masks.limit(), last_allowed_cut(history)) if masks is not None else boundary
        group = start
        while group < closed:
            step, group = group, min(group + STEP, closed)
            index.extract_to(group)
            self._facts = group
            history.chain_at(group)
            if masks is not None and max(step, boundary) < min(group, mask_end):
                masks.ahead(max(step, boundary), min(group, mask_end))  # one thaw of these groups for all three
            if time.perf_counter() >= slice_ends:
                await let_loop_run()
                slice_ends = time.perf_counter() + SLICE_S
        if masks is not None:
            end = min(masks.limit(), last_allowed_cut(history))
            group = state.boundary
            while group < end:
                group = min(group + STEP, end)
                masks.tokens(state.boundary, group)
                if time.perf_counter() >= slice_ends:
                    await let_loop_run()
                    slice_ends = time.perf_counter() + SLICE_S
        self._facts = max(self._facts, closed)


async def count_waiting(history: History) -> None:
    """Count a resumed history's groups before its boundary (``History.count_waiting``) ``STEP`` groups at a time,
    yielding the loop every ``SLICE_S``: the entries are those the first read would count in one stretch."""
    slice_ends = time.perf_counter() + SLICE_S
    while history.count_waiting(STEP):
        if time.perf_counter() >= slice_ends:
            await let_loop_run()
            slice_ends = time.perf_counter() + SLICE_S


async def fold_ahead(history: History, end: int) -> None:
    """Extract and fold the working set of groups ``[0, end)`` a few groups at a time, yielding the loop every
    ``SLICE_S``: after a resume served the stored text, so the next compaction folds only its new groups. What it
    folds is what that compaction would have folded (a left fold, group after group), so no view changes."""
    index = index_of(history)
    slice_ends = time.perf_counter() + SLICE_S
    group = index.folded
    while group < end:
        group = min(max(group, index.folded) + STEP, end)  # a compaction meanwhile may have folded further
        if index.folded < group:
            index.state(group)
        if time.perf_counter() >= slice_ends:
            await let_loop_run()
            slice_ends = time.perf_counter() + SLICE_S
