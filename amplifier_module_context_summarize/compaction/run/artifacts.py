"""What a compaction's newly hidden groups' artifacts became: kept or lost by the text that now stands for them
(``artifacts_kept`` and ``artifacts_lost`` in ``context:post_compact``)."""

from __future__ import annotations

import asyncio

from ...core.messages import Message, message_text
from ...core.state import CompactionState, Shown
from ...working_set.index import Plain, index_of
from ..plan.job import Job
from ..plan.warm import let_loop_run
from ..view.losses import Account, FactsRun, account_of, joined, newly_hidden


async def artifacts_hidden(before: CompactionState, state: CompactionState, shows: Shown, job: Job) -> Account:
    """The newly summarized or masked groups' artifacts, kept or lost by the text that now stands for them.

    O(span): the span's artifacts, tested against the summary (and pins) and the span's masked form. The
    facts of each group shown as stored are those the working set already extracted (``index_of``: the
    compaction has just read them, ``warm.py``), so the account does not extract the span again; a group
    shown otherwise (sanitized) is extracted as stored. The rest runs in a worker thread, so a long span does
    not hold the event loop: it reads only what is gathered here (lists of its own, of frozen facts and of
    stored messages, which nobody changes, and one string). The facts are read in the log's plain form
    (``FactsLog.plain``): a cold resume's 31,000 groups as named tuples, all alive until the account, set off a
    full collection.
    """
    history, masks = job.history, job.masks
    index, irregular = index_of(history), history.shown_as
    spans = newly_hidden(before.boundary, before.tail_start, state.boundary, state.tail_start)
    parts: list[Plain | list[Message]] = []
    run = FactsRun()
    await let_loop_run()
    texts = [message_text(m) for m in shows.messages]
    for start, end in spans:
        for group in range(start, end):
            if group in irregular:
                if not run.empty:
                    parts.append(run.plain())
                    run = FactsRun()
                g = history.groups[group]
                parts.append(history.messages[g.start : g.end])
            else:
                run.add_plain(index.plain(group))
        await let_loop_run()
        if start >= state.boundary and masks is not None:
            texts += [message_text(m) for m in masks.span(start, end)]
            await let_loop_run()
    if not run.empty:
        parts.append(run.plain())
    return await asyncio.to_thread(_account, parts, "\n".join(texts))


def _account(parts: list[Plain | list[Message]], shown_text: str) -> Account:
    return account_of(joined(parts), shown_text)
