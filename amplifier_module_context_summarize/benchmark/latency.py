"""What compaction adds to a request's latency: blocking against the soft threshold, with and without prefetch.

A session of realistic turns runs on a virtual-time loop (``virtual_time``): the agent spends 1-5 s on each
step (its own LLM call and tools) between requests, and the summarizer takes 2, 10 or 30 s per call. Each
request's added latency is the module's own CPU time, measured for real, plus any virtual time it spent
waiting for a summary. A summarizer call is wasted when its summary never appears in a view sent.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from .. import create_manager
from ..core.state import SUMMARY_MARKER
from ..core.tokens import TokenCounter
from ..testing import EventRecorder
from ..testing.replay import request_due
from . import virtual_time
from .fake_backend import InstantBackend
from .synth import REALISTIC, SessionGenerator, Sizes, TextSource

DELAYS_S = (2.0, 10.0, 30.0)
TARGET_DELAY_S = 10.0
TARGET_P95_MS = 5.0
TARGET_WASTED = 0.10


@dataclass(frozen=True)
class Mode:
    """One way of running compaction: ``name`` as the table shows it, and the config it sets."""

    name: str
    config: dict[str, Any]


MODES = (
    Mode("blocking", {"background_compaction": False, "prefetch": False}),
    Mode("soft", {"background_compaction": True, "prefetch": False}),
    Mode("soft + prefetch 0.7", {"background_compaction": True, "prefetch": True, "prefetch_threshold": 0.7}),
    Mode("soft + prefetch 0.8", {"background_compaction": True, "prefetch": True, "prefetch_threshold": 0.8}),
    Mode("soft + prefetch 0.85", {"background_compaction": True, "prefetch": True, "prefetch_threshold": 0.85}),
)


@dataclass(frozen=True)
class LatencyPlan:
    turns: int = 200
    budget: int = 100_000
    step_s: tuple[float, float] = (1.0, 5.0)
    """Virtual seconds the agent spends between two requests (its LLM call and tools)."""
    delays_s: tuple[float, ...] = DELAYS_S
    sizes: Sizes = REALISTIC
    seed: int = 15


QUICK_PLAN = LatencyPlan(turns=40, budget=30_000, delays_s=(10.0,))


class DelayedBackend(InstantBackend):
    """The instant backend, answering after ``delay_s`` (virtual) seconds; keeps every summary it wrote."""

    name = "bench-delayed"

    def __init__(self, text: TextSource, count_text: Any, delay_s: float) -> None:
        super().__init__(text, count_text=count_text)
        self.delay_s = delay_s
        self.started = 0
        self.texts: list[str] = []

    async def complete(self, system: str, prompt: str, max_output_tokens: int, provider: Any | None = None) -> Any:
        self.started += 1
        await asyncio.sleep(self.delay_s)
        completion = await super().complete(system, prompt, max_output_tokens, provider)
        self.texts.append(completion.text)
        return completion


@dataclass
class LatencyRun:
    mode: str
    delay_s: float
    requests: int = 0
    p50_ms: float = 0.0
    p95_ms: float = 0.0
    max_ms: float = 0.0
    compactions: int = 0
    waits: int = 0
    """Requests that waited for a summary (virtual time passed inside ``get_messages_for_request``)."""
    waits_not_fitting: int = 0
    """Of those, requests whose view would not have fit the budget without compacting."""
    wait_max_s: float = 0.0
    summarizer_calls: int = 0
    wasted_calls: int = 0
    peak_view_tokens: int = 0
    views_over_budget: int = 0
    budget: int = 0
    background_started: int = 0
    background_cancelled: int = 0
    cpu_max_ms: float = 0.0
    """Largest own CPU time of one request (the rest of ``max_ms`` is waiting)."""
    seconds: float = 0.0

    @property
    def wait_share(self) -> float:
        return self.waits / max(self.compactions, 1)

    @property
    def wasted_share(self) -> float:
        return self.wasted_calls / max(self.summarizer_calls, 1)

    @property
    def peak_share(self) -> float:
        return self.peak_view_tokens / max(self.budget, 1)


@dataclass
class LatencyResult:
    plan: LatencyPlan
    runs: list[LatencyRun] = field(default_factory=list)
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        runs = [
            {**asdict(r), "wait_share": r.wait_share, "wasted_share": r.wasted_share, "peak_share": r.peak_share}
            for r in self.runs
        ]
        plan = asdict(self.plan)
        plan.pop("sizes")
        return {"plan": plan, "runs": runs, "seconds": self.seconds}


async def _session(mode: Mode, delay_s: float, plan: LatencyPlan, text: TextSource, clock: Any) -> LatencyRun:
    started = time.perf_counter()
    counter = TokenCounter()
    backend = DelayedBackend(text, counter.count_text, delay_s)
    recorder = EventRecorder(only={"context:post_compact", "context:background_compaction"})
    manager = create_manager({"max_tokens": plan.budget, **mode.config}, hooks=recorder, backend=backend)
    run = LatencyRun(mode.name, delay_s, budget=plan.budget)
    generator = SessionGenerator(plan.sizes, seed=plan.seed, text=text)
    pace = random.Random(plan.seed)
    latencies: list[float] = []
    summaries_seen: set[str] = set()
    pending = [generator.system()]
    for _ in range(plan.turns):
        pending += generator.turn()
        for i, message in enumerate(pending):
            await manager.add_message(message)
            if not request_due(pending, i):
                continue
            would_not_fit = manager.planned_tokens > plan.budget
            cpu, virtual = time.perf_counter(), clock.now
            view = await manager.get_messages_for_request(plan.budget)
            cpu, virtual = time.perf_counter() - cpu, clock.now - virtual
            latencies.append(cpu + virtual)
            run.cpu_max_ms = max(run.cpu_max_ms, cpu * 1000)
            if virtual > 0:
                run.waits += 1
                run.waits_not_fitting += would_not_fit
                run.wait_max_s = max(run.wait_max_s, virtual)
            tokens = counter.count_messages(view)
            run.peak_view_tokens = max(run.peak_view_tokens, tokens)
            run.views_over_budget += tokens > plan.budget
            if len(view) > 1 and str(view[1].get("content", "")).startswith(SUMMARY_MARKER):
                summaries_seen.add(view[1]["content"])
            await asyncio.sleep(pace.uniform(*plan.step_s))  # the agent's own LLM call and tools
        pending = []
    run.requests = len(latencies)
    ordered = sorted(latencies)
    run.p50_ms = statistics.median(ordered) * 1000
    run.p95_ms = ordered[min(int(len(ordered) * 0.95), len(ordered) - 1)] * 1000
    run.max_ms = ordered[-1] * 1000
    run.compactions = manager.stats["compactions"]
    run.summarizer_calls = backend.started
    run.wasted_calls = backend.started - sum(any(t.strip() in s for s in summaries_seen) for t in backend.texts)
    phases = [data["phase"] for _, data in recorder.get_events("context:background_compaction")]
    run.background_started, run.background_cancelled = phases.count("started"), phases.count("cancelled")
    await manager.clear()
    run.seconds = time.perf_counter() - started
    return run


def run_latency(plan: LatencyPlan, modes: tuple[Mode, ...] = MODES) -> LatencyResult:
    """Every mode against every summarizer delay, each session on a virtual-time loop of its own."""
    started = time.perf_counter()
    text = TextSource()
    text.calibrate(TokenCounter().count_text)
    result = LatencyResult(plan)
    for delay_s in plan.delays_s:
        for mode in modes:
            clock = virtual_time.VirtualClock()
            result.runs.append(virtual_time.run(_session(mode, delay_s, plan, text, clock), clock))
    result.seconds = time.perf_counter() - started
    return result


def render(result: LatencyResult) -> str:
    plan = result.plan
    lines = [
        f"Latency: {plan.turns} turns, budget {plan.budget:,}, {plan.step_s[0]:g}-{plan.step_s[1]:g} s per agent step, "
        f"virtual time ({result.seconds:.1f} s of wall time)",
        "  added = the request's own CPU (measured) + time it waited for a summary (virtual);",
        "  waits = requests that waited / compactions; not fit = of those, views that would not have fit;",
        "  wasted = summarizer calls whose summary never appeared in a view sent",
    ]
    if plan.budget < LatencyPlan.budget:
        lines.append(
            "  indicative only: a budget this small compacts about every 10th request, so compactions made in band "
            "(masking, stored summaries: 10-60 ms of CPU) reach the p95"
        )
    lines.append("")
    header = ["summarizer", "mode", "p50 ms", "p95 ms", "max ms", "cpu max ms", "compactions", "waits", "not fit"]
    header += ["longest wait s", "calls", "wasted", "peak view", "over budget"]
    rows = []
    for r in result.runs:
        rows.append(
            [
                f"{r.delay_s:g} s",
                r.mode,
                f"{r.p50_ms:.2f}",
                f"{r.p95_ms:.2f}",
                f"{r.max_ms:,.1f}",
                f"{r.cpu_max_ms:.1f}",
                str(r.compactions),
                f"{r.waits} ({r.wait_share:.0%})",
                str(r.waits_not_fitting),
                f"{r.wait_max_s:.1f}",
                str(r.summarizer_calls),
                f"{r.wasted_calls} ({r.wasted_share:.0%})",
                f"{r.peak_share:.1%}",
                str(r.views_over_budget),
            ]
        )
    lines += _table(header, rows)
    lines += ["", f"Targets (summarizer {TARGET_DELAY_S:g} s)"]
    for target in latency_targets(result):
        lines.append(f"  {'PASS' if target[2] else 'FAIL'}  {target[0]}: {target[1]}")
    return "\n".join(lines)


def latency_targets(result: LatencyResult) -> list[tuple[str, str, bool]]:
    """(name, figure, passed) for each soft-threshold mode at the target delay."""
    out = []
    for r in result.runs:
        if r.delay_s != TARGET_DELAY_S or not r.mode.startswith("soft"):
            continue
        out += [
            (f"{r.mode}: p95 added latency <= {TARGET_P95_MS:g} ms", f"{r.p95_ms:.2f} ms", r.p95_ms <= TARGET_P95_MS),
            (
                f"{r.mode}: requests wait only when the view would not fit",
                f"{r.waits} waits, {r.waits_not_fitting} of them not fitting",
                r.waits == r.waits_not_fitting,
            ),
            (
                f"{r.mode}: wasted summarizer calls <= {TARGET_WASTED:.0%}",
                f"{r.wasted_calls}/{r.summarizer_calls} ({r.wasted_share:.1%})",
                r.wasted_share <= TARGET_WASTED,
            ),
            (
                f"{r.mode}: views never over budget",
                f"peak {r.peak_share:.1%}, {r.views_over_budget} over",
                r.views_over_budget == 0,
            ),
        ]
    return out


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    """The first two columns left-aligned (names), the rest right-aligned (figures)."""
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(row: list[str]) -> str:
        return "  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True)))

    out = [line(header)]
    out.append("-" * len(out[0]))
    return out + [line(row) for row in rows]
