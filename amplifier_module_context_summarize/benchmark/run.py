"""Runs every measurement in order and gathers the figures into one JSON-ready result."""

from __future__ import annotations

import os
import platform
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from ..core import tokens
from .cold_llm import COLD_LLM_SIZES, QUICK_COLD_LLM_SIZES, ColdLLMTimes, measure_cold_llm
from .costs import Reps, SizeCosts, measure_compactions, measure_naive, measure_requests
from .fixtures import BUDGET, Memory, build
from .long_session import QUICK_LONG, LongCosts, LongPlan, measure_long_sessions
from .simulation import SimPlan, SimResult, simulate
from .synth import TextSource
from .targets import Target, all_passed, evaluate

FULL_SIZES = (1_000, 10_000, 100_000)
QUICK_SIZES = (1_000, 3_000)
QUICK_REPS = Reps(repeat=3, turns=10, requests=50, compactions=2, naive=2, naive_large=1)
QUICK_SIM = SimPlan(turns=150)


@dataclass
class BenchResult:
    quick: bool
    sizes: list[int]
    costs: dict[int, SizeCosts] = field(default_factory=dict)
    memory: dict[int, Memory] = field(default_factory=dict)
    simulation: SimResult | None = None
    long_session: list[LongCosts] = field(default_factory=list)
    cold_llm: list[ColdLLMTimes] = field(default_factory=list)
    """The LLM path's cold first request at each size (``cold_llm.py``)."""
    targets: list[Target] = field(default_factory=list)
    environment: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        sizes: dict[str, Any] = {}
        for size in self.sizes:
            costs, memory = self.costs[size], self.memory[size]
            entry = asdict(costs)
            entry["memory"] = {
                **asdict(memory),
                "own_bytes_per_message": memory.own_bytes_per_message,
                "peak_bytes_per_10k": memory.peak_bytes_per_10k,
            }
            compacted_turn = costs.states["compacted"].turn_s
            entry["naive_over_turn"] = costs.naive_turn_s / compacted_turn
            entry["naive_chars_over_turn"] = costs.naive_chars_turn_s / compacted_turn
            sizes[str(size)] = entry
        sim = None
        if self.simulation is not None:
            sim = {
                **asdict(self.simulation),
                "extension_share": self.simulation.extension_share,
                "input_over_session": self.simulation.input_over_session,
                "naive_over_module": self.simulation.naive_over_module,
            }
        return {
            "quick": self.quick,
            "budget": BUDGET,
            "environment": self.environment,
            "sizes": sizes,
            "simulation": sim,
            "long_session": [{**asdict(costs), "flatness": costs.flatness} for costs in self.long_session],
            "cold_llm": [asdict(times) for times in self.cold_llm],
            "targets": [{**asdict(t), "passed": t.passed} for t in self.targets],
            "all_passed": all_passed(self.targets),
            "seconds": self.seconds,
        }


def _environment() -> dict[str, Any]:
    exact = tokens.counts_exactly()
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "token_counter": "tiktoken cl100k_base" if exact else "character estimate",
    }


async def run_benchmark(
    sizes: list[int] | None = None,
    quick: bool = False,
    sim_turns: int | None = None,
    simulate_session: bool = True,
    compaction_only: bool = False,
) -> BenchResult:
    """Every measurement; with ``compaction_only``, just the long session's compaction costs."""
    started = time.perf_counter()
    chosen = [] if compaction_only else sorted(sizes or (QUICK_SIZES if quick else FULL_SIZES))
    reps = QUICK_REPS if quick else Reps()
    result = BenchResult(quick=quick, sizes=chosen, environment=_environment())
    text = TextSource()
    text.calibrate(tokens.TokenCounter().count_text)
    result.long_session = await measure_long_sessions(QUICK_LONG if quick else LongPlan(), text)
    if compaction_only:
        result.targets = evaluate({}, {}, None, result.long_session)
        result.seconds = time.perf_counter() - started
        return result
    result.cold_llm = await measure_cold_llm(QUICK_COLD_LLM_SIZES if quick else COLD_LLM_SIZES, text)
    fixtures = [await build(size, text) for size in chosen]
    result.memory = {f.size: f.memory for f in fixtures}
    result.costs = await measure_requests(fixtures, reps)
    for fixture in fixtures:
        costs = result.costs[fixture.size]
        costs.compaction = await measure_compactions(fixture, reps.compactions)
        await measure_naive(fixture, reps, costs)
    del fixtures
    if simulate_session:
        plan = QUICK_SIM if quick else SimPlan()
        if sim_turns is not None:
            plan = SimPlan(turns=sim_turns, budget=plan.budget, sizes=plan.sizes)
        result.simulation = await simulate(plan, text)
    result.targets = evaluate(result.costs, result.memory, result.simulation, result.long_session, result.cold_llm)
    result.seconds = time.perf_counter() - started
    return result
