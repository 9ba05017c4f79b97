"""Replaying sessions through each strategy as an orchestrator would, recording every request.

A request is made before every assistant message (what an agent loop does), and after every message a
probe is asked at, so each probe is scored on the exact view the model would have seen there. The view of
every request that compacted is also measured for artifact retention (``retention``).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from ..backends.base import Backend
from ..compaction.plan.strategies import segment_tokens
from ..compaction.view.splice import summary_message
from ..core.history import History
from ..core.invariants import check_view
from ..core.messages import Message
from ..core.state import SUMMARY_MARKER, CompactionState, Segment
from ..core.tokens import TokenCounter
from ..manager import SummarizingContextManager
from ..recall.tool import RecallTool
from ..testing import extends, replay_steps
from .loader import Probe, Session
from .models import ModelSpec
from .prices import TABLES
from .prompt_cache import CacheMeter
from .reference import coverage, reference_view
from .retention import GroupArtifacts, RetentionTracker
from .scoring import Grade, Judge, key_score, view_text
from .strategies import VARIANTS, CompactionTally, ExtractiveMeter, make_manager

Tick = Callable[[int], None]


@dataclass
class RequestRecord:
    request: int
    message_index: int
    """Index of the last message in the history when the request was made."""
    full_tokens: int
    """What the whole history would cost: the request without any context management."""
    view_tokens: int
    view_messages: int
    compacted: bool
    provider_calls: int
    cache_hits: int
    summaries: int
    """Summaries and tier merges written (LLM or extractive; cache hits are not)."""
    summarizer_input_tokens: int
    summarizer_output_tokens: int
    extractive_tokens: int
    """Tokens the extractive summarizer read (its spans) and wrote (its summaries)."""
    extends_previous: bool | None
    """The view is the previous agent request's view plus new messages (None for the first and probe-only ones)."""
    valid: bool
    wall_ms: float
    probe_only: bool
    """Made only because a probe is asked here (the next message is not an assistant turn)."""
    fallbacks: list[str] = field(default_factory=list)
    """Each compaction made for this request, by what it fell back to (``context:post_compact`` ``fallback``;
    ``none`` when the configured summarizer wrote every summary it needed)."""
    shows: str = "none"
    """What stands in the view for the history before its tail: ``summary`` (a ``[CONTEXT SUMMARY]`` message),
    ``marker`` (only the ``[CONTEXT TRUNCATED]`` marker) or ``none`` (neither: nothing cut, or only masked)."""


@dataclass
class ProbeResult:
    probe: str
    kind: str
    at: int
    view_tokens: int
    key_score: float
    keys_found: list[str]
    judge_score: float | None = None
    """Mean of the judge's dimension scores (or its single score when it gave none)."""
    judge_dimensions: dict[str, float] = field(default_factory=dict)
    answer: str | None = None
    judge_reason: str | None = None
    judge_error: str | None = None


@dataclass
class Run:
    """One session replayed under one strategy (or the reference summary's views)."""

    session: str
    strategy: str
    messages: int
    turns: int = 0
    """Assistant messages replayed."""
    records: list[RequestRecord] = field(default_factory=list)
    probes: list[ProbeResult] = field(default_factory=list)
    stats: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    coverage: dict[str, Any] | None = None
    """Reference runs: file trail and size of the summary over its span."""
    retention: dict[str, Any] | None = None
    """Strategy runs: artifact retention over the views that compacted (``retention.Retention``)."""
    failed: dict[str, int] = field(default_factory=dict)
    """Background summaries that failed (``context:summary_failed``), by fallback category."""
    cache: dict[str, dict[str, int]] | None = None
    """Strategy runs: the agent requests' input by how each price table's prompt cache bills it
    (``evaluation.prompt_cache``: read, write, uncached)."""
    views: dict[str, tuple[Probe, list[Message]]] = field(default_factory=dict, repr=False)
    """Each probe and the view it was scored on, kept until judged (not written out)."""

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("views")
        return data


@dataclass
class Settings:
    budget: int
    strategies: tuple[str, ...]
    summarizer: ModelSpec
    jobs: int = 4


class CountingView:
    """Token counts of view messages, remembered by identity: views repeat the same message objects."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self._memo: dict[int, tuple[Message, int]] = {}

    def __call__(self, view: list[Message]) -> int:
        total = 0
        for message in view:
            hit = self._memo.get(id(message))
            if hit is None or hit[0] is not message:
                hit = (message, self.counter.count_message(message))
                self._memo[id(message)] = hit
            total += hit[1]
        return total


TRUNCATED = "[CONTEXT TRUNCATED]"


def view_shows(view: list[Message]) -> str:
    """``summary``, ``marker`` or ``none``: what the view shows in place of the history it left out."""
    shows = "none"
    for message in view:
        content = message.get("content")
        if isinstance(content, list):
            content = "".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content[:1])
        if not isinstance(content, str):
            continue
        if content.startswith(SUMMARY_MARKER):
            return "summary"
        if content.startswith(TRUNCATED):
            shows = "marker"
    return shows


def probes_by_message(probes: list[Probe]) -> dict[int, list[Probe]]:
    points: dict[int, list[Probe]] = {}
    for probe in probes:
        points.setdefault(probe.at, []).append(probe)
    return points


def score_view(view: list[Message], probe: Probe, tokens: int) -> ProbeResult:
    score, found = key_score(view_text(view), probe.keys)
    return ProbeResult(probe.id, probe.kind, probe.at, tokens, score, found)


def score_with_recall(
    view: list[Message], probe: Probe, tokens: int, tool: RecallTool, counter: TokenCounter
) -> ProbeResult:
    """The probe answered from the view plus what ``context_recall`` finds for each key the view lacks.

    An oracle: it searches for exactly the probe's keys, so it shows how much of what the view lost the
    agent can get back, and at what token cost (the tool's output is added to the probe's tokens).
    """
    text = view_text(view)
    _, found = key_score(text, probe.keys)
    recalled: list[str] = []
    for key in probe.keys:
        if key in found:
            continue
        output = tool.search({"operation": "search", "query": key, "max_results": 3})
        if output.get("results"):
            recalled.append(json.dumps(output, ensure_ascii=False))
    extra = sum(counter.count_text(r) for r in recalled)
    score, found = key_score("\n".join([text, *recalled]).lower(), probe.keys)  # view_text is lower-cased
    return ProbeResult(probe.id, probe.kind, probe.at, tokens + extra, score, found)


def assistant_turns(messages: list[Message]) -> int:
    return sum(1 for m in messages if m.get("role") == "assistant")


async def replay_session(
    session: Session,
    strategy: str,
    manager: SummarizingContextManager,
    budget: int,
    tick: Tick | None = None,
    artifacts: GroupArtifacts | None = None,
    on_request: Callable[[list[Message]], Any] | None = None,
) -> Run:
    """Feed the session to ``manager`` message by message, requesting a view where an agent would.

    ``artifacts``: the session's artifacts by group, for retention (shared by the strategies replaying it).
    ``on_request``: called with the view of every request the agent loop itself makes (not probe-only ones),
    e.g. ``evaluation.prompt_cache.CacheMeter.request``.
    """
    tally = manager.hooks
    if not isinstance(tally, CompactionTally):
        raise ValueError("replay_session needs a manager from evaluation.strategies.make_manager (its hooks tally)")
    meter = ExtractiveMeter(manager.counter.count_messages, manager.summarizer.count_text)
    manager.summarizer.on_extractive.append(meter)
    try:
        return await _replay(session, strategy, manager, budget, tick, artifacts, on_request, tally, meter)
    finally:
        manager.summarizer.on_extractive.remove(meter)


async def _replay(
    session: Session,
    strategy: str,
    manager: SummarizingContextManager,
    budget: int,
    tick: Tick | None,
    artifacts: GroupArtifacts | None,
    on_request: Callable[[list[Message]], Any] | None,
    tally: CompactionTally,
    meter: ExtractiveMeter,
) -> Run:
    started = time.perf_counter()
    run = Run(session.name, strategy, len(session.messages), assistant_turns(session.messages))
    chosen = VARIANTS.get(strategy)
    oracle_recall = chosen is not None and chosen.oracle_recall
    count_view = CountingView(manager.counter)
    retention = RetentionTracker(artifacts or GroupArtifacts.of_session(session.messages))
    points = probes_by_message(session.probes)
    messages = session.messages
    full = 0
    previous: list[Message] | None = None
    async for step in replay_steps(manager, messages, budget=budget):
        i, message, before_assistant = step.index, step.message, step.due
        full += manager.counter.count_message(message)
        if tick:
            tick(1)
        if not before_assistant and i not in points:
            continue
        before, extractive, noted = dict(manager.stats), meter.tokens, len(tally.fallbacks)
        clock = time.perf_counter()
        view = await step.request()
        wall_ms = (time.perf_counter() - clock) * 1000
        after = manager.stats
        tokens = count_view(view)
        compacted = after["compactions"] > before["compactions"]
        if compacted:
            retention.measure(manager.history, manager.state.tail_start, after["compactions"], view)
        run.records.append(
            RequestRecord(
                request=len(run.records),
                message_index=i,
                full_tokens=full,
                view_tokens=tokens,
                view_messages=len(view),
                compacted=compacted,
                provider_calls=after["provider_calls"] - before["provider_calls"],
                cache_hits=after["cache_hits"] - before["cache_hits"],
                summaries=after["summaries"] - before["summaries"],
                summarizer_input_tokens=after["summarizer_input_tokens"] - before["summarizer_input_tokens"],
                summarizer_output_tokens=after["summarizer_output_tokens"] - before["summarizer_output_tokens"],
                extractive_tokens=meter.tokens - extractive,
                extends_previous=None if previous is None or not before_assistant else extends(previous, view),
                valid=not check_view(view),
                wall_ms=round(wall_ms, 3),
                probe_only=not before_assistant,
                fallbacks=tally.fallbacks[noted:],
                shows=view_shows(view),
            )
        )
        if before_assistant:  # a probe-only request may cut a turn mid-way: keep it out of the chain
            previous = view
            if on_request is not None:
                on_request(view)
        for probe in points.get(i, []):
            if oracle_recall and probe.kind == "artifact":
                run.probes.append(score_with_recall(view, probe, tokens, RecallTool(manager), manager.counter))
            else:
                run.probes.append(score_view(view, probe, tokens))
            run.views[probe.id] = (probe, view)
    run.stats = dict(manager.stats)
    run.failed = dict(tally.failed)
    run.retention = retention.result.as_dict()
    run.seconds = time.perf_counter() - started
    return run


async def reference_run(session: Session, counter: TokenCounter, oneshot: SummarizingContextManager | None) -> Run:
    """The reference summary's views at the probes after its boundary, and its coverage of the span.

    With ``oneshot``, the same span is also summarized in one call by that manager's summarizer, asked for the
    size a compaction at its budget asks a new segment for (``strategies.segment_tokens``), so coverage and
    size can be compared on identical input (``coverage['oneshot']``). They are measured on the summary
    message the manager would show for it (with its working set), not on the summarizer's text alone.
    """
    reference = session.reference
    assert reference is not None
    started = time.perf_counter()
    run = Run(session.name, reference.source, len(session.messages), assistant_turns(session.messages))
    # the row is named after its tool
    count_view = CountingView(counter)
    for probe in session.probes:
        if probe.at < reference.boundary:
            continue
        view = reference_view(session.messages, reference, probe.at)
        run.probes.append(score_view(view, probe, count_view(view)))
        run.views[probe.id] = (probe, view)
    span = session.messages[: reference.boundary]
    run.coverage = {"boundary": reference.boundary, "source": reference.source}
    run.coverage.update(coverage(reference.summary, span).as_dict())
    if oneshot is not None:
        summarizer, config = oneshot.summarizer, oneshot.config
        budget = config.budget_fallback
        size = segment_tokens(
            budget, config.summary_budget_ratio, config.working_set_tokens(budget), config.summary_output_tokens
        )
        outcome = await summarizer.summarize(span, None, max_tokens=size)
        run.coverage["oneshot"] = {
            "summarizer": summarizer.name,
            "fallback": outcome.fallback,
            "provider_calls": outcome.provider_calls,
            "input_tokens": outcome.input_tokens,
            "output_tokens": outcome.output_tokens,
            **coverage(oneshot_summary(oneshot, span, outcome.text), span).as_dict(),
        }
    run.seconds = time.perf_counter() - started
    return run


def oneshot_summary(manager: SummarizingContextManager, span: list[Message], text: str) -> str:
    """The summary message ``manager`` would show with ``text`` standing for all of ``span``."""
    history = History(manager.counter, manager.fingerprint, manager.config.preserve_system)
    for message in span:
        history.append(message)
    end = len(history.groups)
    state = CompactionState(end, (Segment(0, end, text, manager.counter.count_text(text)),))
    config = manager.config
    budget = config.budget_fallback
    shown = summary_message(state, history, config.working_set_tokens(budget), summary_room=config.summary_room(budget))
    return str(shown["content"]) if shown is not None else text


async def judge_runs(runs: list[Run], judge: Judge, jobs: int, tick: Tick | None = None) -> None:
    """Grade every probe view of every run, ``jobs`` at a time; the views are dropped afterwards."""
    gate = asyncio.Semaphore(max(jobs, 1))

    async def one(run: Run, result: ProbeResult) -> None:
        async with gate:
            probe, view = run.views[result.probe]
            grade: Grade = await judge.grade(view, probe)
        result.judge_score, result.answer, result.judge_dimensions = grade.score, grade.answer, grade.dimensions
        result.judge_reason, result.judge_error = grade.reason, grade.error
        if tick:
            tick(1)

    await asyncio.gather(*(one(run, result) for run in runs for result in run.probes))


async def evaluate(
    sessions: list[Session],
    settings: Settings,
    backend: Backend | None,
    judge: Judge | None = None,
    tick: Tick | None = None,
    judge_tick: Tick | None = None,
) -> list[Run]:
    """Every session under every strategy (``jobs`` replays at once), the references, then the judge."""
    gate = asyncio.Semaphore(max(settings.jobs, 1))
    artifacts = {session.name: GroupArtifacts.of_session(session.messages) for session in sessions}

    async def one(session: Session, strategy: str) -> Run:
        async with gate:
            manager = make_manager(strategy, settings.budget, settings.summarizer, backend)
            meter = CacheMeter(manager.counter.count_message, tuple(TABLES.values()))
            run = await replay_session(
                session, strategy, manager, settings.budget, tick, artifacts[session.name], meter.request
            )
            run.cache = {name: usage.as_dict() for name, usage in meter.usage.items()}
            return run

    units = [one(s, strategy) for s in sessions for strategy in settings.strategies]
    runs = list(await asyncio.gather(*units))
    oneshot = make_manager("summarize", settings.budget, settings.summarizer, backend)
    for session in sessions:
        if session.reference is not None:
            runs.append(await reference_run(session, oneshot.counter, oneshot))
    if judge is not None:
        await judge_runs(runs, judge, settings.jobs, judge_tick)
    for run in runs:
        run.views.clear()
    return runs
