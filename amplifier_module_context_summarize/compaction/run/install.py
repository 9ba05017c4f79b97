"""The one place a compaction's state enters the view (``Installer.install``), and what the install writes.

Every path installs here: a compaction made in band, the masking the soft threshold installs now, a background
compaction a request lands. ``place`` is the other door, for a state no compaction made (a resume, the manager's
``state`` setter): it writes nothing to the store and reports nothing.
"""

from __future__ import annotations

from ...config import Config
from ...core.state import CompactionState, Shown, pins_for
from ..cache.records import PlanRecords
from ..plan.warm import let_loop_run
from ..view.request import RequestView
from .reporter import CompactionRun


class Installer:
    """Installs a compaction's state into the request view and records what a resume needs to show it again."""

    def __init__(self, config: Config, view: RequestView, records: PlanRecords) -> None:
        self.config, self.view, self.records = config, view, records

    async def install(
        self,
        run: CompactionRun,
        state: CompactionState,
        shows: Shown,
        before: CompactionState,
        request: int | None,
        settle: bool,
    ) -> None:
        """Put ``state`` (its summary message ``shows``, pinned for ``request``: None to re-derive) in the view in
        place of ``before``; ``run`` happened from here on. ``settle``: let the loop run before the records are
        written (an in-band compaction, which has held it)."""
        view = self.view
        view.state = state
        run.installed = True
        view.remember_shown(state, shows, request)
        if settle:
            await let_loop_run()
        history, wire = view.history, view.budget.wire
        stand_ins = {s.segment: (s.max_tokens, s.tokens) for s in run.report.stand_ins}  # marked: the LLM's owed
        await self.records.record_cuts(history, before, state, wire, stand_ins)
        await self.records.record_drop(history, before, state, wire)
        if view.masks is not None:
            view.masks.forget_before(state.boundary)
            await self.records.record_mask_end(history, before, state, wire)
        await self.records.record_working_set(history, state, view.working_set_room())

    def place(self, state: CompactionState) -> None:
        """Show ``state`` without a compaction (a resume's, a caller's): nothing recorded, nothing reported."""
        self.view.state = state

    def tokens_of(self, state: CompactionState, shows: Shown) -> int:
        """Tokens of the view ``state`` would show, its summary message ``shows`` with the pins re-derived for the
        latest request (as the next request shows it), without installing it: ``RequestView.tokens``'s sum, with the
        room a hook's text takes again once it lands (as the plan counted it)."""
        view, history = self.view, self.view.history
        shows = shows.pinning(pins_for(history, state.boundary, view.counter, self.config.summary_output_tokens))
        prefix, tail = history.prefix, state.tail_start
        masked = view.masks.tokens(state.boundary, tail) if view.masks is not None else 0
        return view.system_view_tokens() + view.injected_tokens + shows.tokens + masked + prefix[-1] - prefix[tail]
