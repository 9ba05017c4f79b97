"""``bench``: measure the module's own per-request, compaction and memory costs, a long session's cost, and what
one compaction costs early and late in a 50,000-message session (``--compaction-only`` runs just that).

The work lives in ``benchmark/``; this is only the command line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any


def _sizes(value: str) -> list[int]:
    try:
        sizes = [int(part.replace("_", "")) for part in value.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--sizes wants comma-separated message counts, got {value!r}") from None
    if not sizes or any(size < 100 for size in sizes):
        raise argparse.ArgumentTypeError("--sizes wants message counts of at least 100")
    return sizes


def _spill_tokens(value: str) -> int:
    try:
        tokens = int(value)
    except ValueError:
        tokens = 0
    if tokens < 1_000:  # the config's own floor (spill_threshold_tokens)
        raise argparse.ArgumentTypeError(f"--spill wants a threshold of at least 1000 tokens, got {value!r}")
    return tokens


def _turns(value: str) -> int:
    try:
        turns = int(value)
    except ValueError:
        turns = 0
    if turns < 1:
        raise argparse.ArgumentTypeError(f"--sim-turns wants a positive number of turns, got {value!r}")
    return turns


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "bench",
        help="benchmark per-request, compaction and memory costs with an instant fake summarizer",
        description="Measure the module's own costs with an instant fake summarizer: the time per request and per "
        "compaction and the memory at several history sizes, a simulated session's waits, and what one compaction "
        "costs early and late in a 50,000-message session (--compaction-only). --check exits 1 when a target "
        "fails; docs/performance.md has the latest figures.",
    )
    parser.add_argument("--quick", action="store_true", help="small sizes and few repetitions (seconds, indicative)")
    parser.add_argument("--sizes", type=_sizes, help="history sizes in messages (default 1000,10000,100000)")
    parser.add_argument("--sim-turns", type=_turns, help="turns in the session simulation (default 2000; quick 150)")
    parser.add_argument("--no-sim", action="store_true", help="skip the session simulation")
    parser.add_argument(
        "--compaction-only",
        action="store_true",
        help="only the long session: CPU time per compaction at 5k-50k messages, extractive and failing summarizer",
    )
    parser.add_argument(
        "--collector",
        action="store_true",
        help="instead: one full garbage collection with the host's messages alone and with a manager holding them "
        "(resumed, then a few turns), and the manager's tracked objects per message (--sizes, default 50000)",
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON instead of tables")
    parser.add_argument("--check", action="store_true", help="exit with status 1 when a target fails")
    parser.add_argument(
        "--fleet",
        action="store_true",
        help="instead: provider calls of N worker processes sharing Redis vs each with its own SQLite "
        "(needs redis-server)",
    )
    parser.add_argument("--workers", type=_turns, default=8, help="worker processes for --fleet (default 8)")
    parser.add_argument(
        "--latency",
        action="store_true",
        help="instead: latency a compaction adds to requests, blocking vs soft threshold, prefetch on/off, with "
        "summarizers taking 2, 10 and 30 s (virtual time; --sim-turns sets the turns, default 200; quick 40)",
    )
    parser.add_argument(
        "--pins",
        action="store_true",
        help="instead: ms a request with pin_patterns ['<system-reminder>'] and without, on a Claude Code-shaped "
        "session at 150 and 500 turns (quick: 60 and 200)",
    )
    parser.add_argument(
        "--cost",
        action="store_true",
        help="instead: what sessions cost under Anthropic's and OpenAI's prompt caches, hybrid vs summarize-only, "
        "mask, truncate, no compaction (200k) and a Claude-Code-style policy (bundled corpus and the simulation; "
        "--sim-turns sets its turns, default 2000; quick: 2 sessions and 300 turns)",
    )
    parser.add_argument("--raw", help="--cost: also the recorded sessions under this folder, in any format read")
    parser.add_argument("--budgets", type=_sizes, help="--cost: budgets in tokens (default 20000,64000,200000)")
    parser.add_argument("--no-bundled", action="store_true", help="--cost: leave out the bundled corpus")
    parser.add_argument(
        "--native",
        action="store_true",
        help="--cost: also the 'native' policy: summaries written by the provider's own compaction (its offline "
        "stand-in, through the real SDK)",
    )
    parser.add_argument(
        "--spill",
        type=_spill_tokens,
        nargs="?",
        const=10_000,
        metavar="TOKENS",
        help="--cost: every policy spills tool outputs over TOKENS (default 10000) to files, showing a preview",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if getattr(args, "cost", False):
        from .cost_compare import run_cost

        try:
            return run_cost(args)
        except ValueError as exc:  # a bad --raw, --budgets: one line, as the other subcommands say it
            print(f"bench: error: {exc}", file=sys.stderr)
            return 2
    if args.fleet:
        return run_fleet(args)
    if args.latency:
        return run_latency(args)
    if getattr(args, "pins", False):
        return run_pins(args)
    if getattr(args, "collector", False):
        return run_collector(args)
    from .report import render
    from .run import run_benchmark
    from .targets import all_passed

    result = asyncio.run(
        run_benchmark(
            args.sizes,
            quick=args.quick,
            sim_turns=args.sim_turns,
            simulate_session=not args.no_sim,
            compaction_only=args.compaction_only,
        )
    )
    print(json.dumps(result.to_json(), indent=2) if args.json else render(result))
    return 1 if args.check and not all_passed(result.targets) else 0


def run_fleet(args: argparse.Namespace) -> int:
    from ..testing import RedisServer
    from .fleet import FleetPlan, render, run_comparison

    if RedisServer.binary() is None:
        print("bench --fleet needs redis-server (Debian: apt-get install redis-server); nothing measured")
        return 2
    plan = FleetPlan(workers=args.workers)
    if args.quick:
        plan = FleetPlan(workers=args.workers, prefix_turns=16, fork_turns=8, budget=5_000, delay_s=0.02)
    runs = run_comparison(plan)
    print(json.dumps([r.to_json() for r in runs], indent=2) if args.json else render(runs))
    return 0


def run_latency(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from .latency import QUICK_PLAN, LatencyPlan, latency_targets, render, run_latency

    plan = QUICK_PLAN if args.quick else LatencyPlan()
    if args.sim_turns is not None:
        plan = replace(plan, turns=args.sim_turns)
    result = run_latency(plan)
    print(json.dumps(result.to_json(), indent=2) if args.json else render(result))
    return 1 if args.check and not all(passed for _, _, passed in latency_targets(result)) else 0


def run_pins(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from .pins import PIN_TURNS, QUICK_TURNS, pins_target, render, run_pins

    timings = run_pins(QUICK_TURNS if args.quick else PIN_TURNS)
    print(json.dumps([asdict(t) for t in timings], indent=2) if args.json else render(timings))
    return 1 if args.check and not pins_target(timings)[1] else 0


def run_collector(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from .collector import measure_collector, render

    async def measure() -> list[Any]:
        return [await measure_collector(size) for size in args.sizes or ([5_000] if args.quick else [50_000])]

    costs = asyncio.run(measure())
    shown = [{**asdict(c), "ratio": c.ratio, "tracked_per_message": c.tracked_per_message} for c in costs]
    print(json.dumps(shown, indent=2) if args.json else render(costs))
    return 0
