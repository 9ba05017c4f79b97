"""A span too long to summarize while a request waits: the extractive summary stands in now, the LLM's lands later.

A cold resume of a long session (``set_messages`` with nothing stored) must summarize the whole history before
its tail in its first request. With a real provider that is dozens of sequential calls (a 10M-token history cut
into ~64 fragments of ``summarizer.max_input_tokens``): minutes, so the compaction deadline cut it, the extractive
summary answered, and the LLM's summary was never written (the span was already summarized, extractively). Now a
request's in-band compaction whose summary step reads more than ``STAND_IN_FRAGMENTS`` fragments' worth of tokens
writes it extractively at once (``Writer.STAND_IN``, reported with fallback ``deferred``; decided on the span's
size, never on the clock), and the compactor starts a background compaction that writes the LLM's summary of the
same span and puts it in the stand-in's place (``rewrite``). It is a compaction of its own: its
``context:pre_compact`` goes out when it starts, its ``context:post_compact`` when a request installs it. The
stand-in is not stored as the span's summary (its cut carries its text, so a resume shows it), the LLM's takes
the span's key when written: each span is paid for once.

A session that stops before the LLM's summary lands writes it when resumed: the cut's mark (``StandInRecord``) says
its text stands in (a fallback's has none, nor does a cut written before marks: neither is ever rewritten), the
resume shows the LLM's summary at once when the store already has it (no call), else the stand-in, and the first
request that can starts the same background rewrite (``owed.rewrite_owed``), once a resume; its span is read
in slices (``read_span``). Not rewritten: a stand-in a later compaction folded into a higher tier (the merge is
stored as the merged span's summary; writing it again would pay for that span twice).
"""

from __future__ import annotations

import time

from ...core.messages import Message
from ...core.state import CompactionState, Segment
from ..cache.segments import SegmentSource
from ..plan.job import Job
from ..plan.warm import SLICE_S, STEP, count_waiting, let_loop_run

STAND_IN_FRAGMENTS = 4
"""A summary step reading more than this many times ``summarizer.max_input_tokens`` is stood in for while a request
waits: one to four fragments are one to a few sequential calls, the wait of any compaction; beyond, the calls of
one summary add up past what a request should wait for (the 30 s deadline at 20-60 s a call)."""


def stand_in_above(max_input_tokens: int) -> int:
    """Span tokens past which a request's in-band summary is stood in for (``PlanFacts.stand_in_above``)."""
    return STAND_IN_FRAGMENTS * max_input_tokens


async def rewrite(job: Job, before: CompactionState, segments: SegmentSource) -> CompactionState:
    """``before`` with the LLM's summary in place of each of ``job.rewrites`` it still shows; a stand-in whose LLM
    summary fell back stays (the fallback would be another extractive summary, at another call's cost)."""
    shown = list(before.segments)
    for stand_in in job.rewrites:
        if stand_in.segment not in shown:
            continue
        at = shown.index(stand_in.segment)
        old = stand_in.segment
        previous = CompactionState(0, tuple(shown[:at])).summary_text
        span = stand_in.span if stand_in.span is not None else await read_span(job, old.start, old.end)
        written = await segments.summary(job, old.start, old.end, previous, stand_in.max_tokens, span)
        if written is None or job.report.fallback is not None:
            break
        shown[at] = Segment(old.start, old.end, written.text, written.tokens, old.tier)
    state = before.with_segments(shown, before.boundary) if shown != list(before.segments) else before
    await job.facts.settle(state)  # what its summary message reads, worked out with the loop let run
    await job.facts.settle_working_set(state)
    return state


async def read_span(job: Job, start: int, end: int) -> list[Message]:
    """Groups ``[start, end)`` as the summarizer reads them (``Job.span``: masked), a few at a time with the loop let
    run between (``warm.SLICE_S``): a resumed stand-in's span was not read in this process, and at 50,000 messages
    masking it is seconds of work."""
    await count_waiting(job.history)  # masking reads the counts of groups before the resumed boundary
    span: list[Message] = []
    slice_ends = time.perf_counter() + SLICE_S
    group = start
    while group < end:
        step, group = group, min(group + STEP, end)
        span.extend(job.span(step, group))
        if time.perf_counter() >= slice_ends:
            await let_loop_run()
            slice_ends = time.perf_counter() + SLICE_S
    return span
