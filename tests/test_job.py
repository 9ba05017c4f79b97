"""``plan/job.py``: one compaction's inputs (the span its summaries read, the last view sent) and its report."""

from __future__ import annotations

from test_plan import facts_of, history_of

from amplifier_module_context_summarize.backends.base import Fault, Skip
from amplifier_module_context_summarize.compaction.plan.job import CompactionReport, Job
from amplifier_module_context_summarize.core.state import CompactionState
from amplifier_module_context_summarize.summarizer.in_context import SentView

BUDGET = 20_000


def test_the_span_is_read_masked_when_masking_is_on_and_as_stored_when_off() -> None:
    history = history_of(12, 400)  # every tool output far over the masking threshold
    masked = Job(facts_of(history, BUDGET, masking=True), CompactionState())
    plain = Job(facts_of(history, BUDGET, masking=False), CompactionState())
    end = len(history.groups) - 1

    assert plain.span(0, end) == history.span(0, end)
    span = masked.span(0, end)
    assert span == masked.masks.span(0, end) and len(span) == len(history.span(0, end))
    masked_outputs = [m["content"] for m in span if m["role"] == "tool"]
    outputs = [m["content"] for m in history.span(0, end) if m["role"] == "tool"]
    assert len(masked_outputs) == len(outputs) and masked_outputs[0] != outputs[0]
    assert len(masked_outputs[0]) < len(outputs[0]) // 4, "the oldest output is a placeholder"
    assert sum(map(history.counter.count_message, span)) < sum(map(history.counter.count_message, plain.span(0, end)))


def sent_view(job: Job) -> SentView:
    """The whole history as a request showed it, unmasked and uncut."""
    history = job.history
    system = [history.messages[i] for i in history.system]
    messages = [*system, *history.span(0, len(history.groups))]
    return SentView(messages, len(messages), history, 0, 0, len(system))


def test_in_context_is_none_without_a_last_view_sent() -> None:
    job = Job(facts_of(history_of(6, 50), BUDGET, masking=False), CompactionState())
    assert job.in_context(0, 4) is None  # no way to read one
    job.last_sent = lambda: None  # a way, but no request has returned a view yet
    assert job.in_context(0, 4) is None

    job.last_sent = lambda: sent_view(job)
    found = job.in_context(0, 4)
    assert found is not None and found.span == job.span(0, 4)


def test_in_context_reads_the_last_view_when_asked_not_when_the_job_was_made() -> None:
    """A background compaction's summaries are asked after the request that started it returned its view."""
    job = Job(facts_of(history_of(6, 50), BUDGET, masking=False), CompactionState())
    views: list[SentView | None] = [None]
    job.last_sent = lambda: views[-1]
    assert job.in_context(0, 4) is None
    views.append(sent_view(job))
    assert job.in_context(0, 4) is not None


def test_the_report_keeps_the_first_fallback() -> None:
    report = CompactionReport()
    report.note_fallback(None)
    assert report.fallback is None
    report.note_fallback(Fault.TIMEOUT)
    report.note_fallback(Fault.ERROR)
    report.note_fallback(None)
    report.note_fallback(Skip.CIRCUIT_OPEN)
    assert report.fallback is Fault.TIMEOUT
