"""``python -m amplifier_module_context_summarize eval``: run the evaluation and write its results."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..cli.args import token_count
from ..cli.compact import DEFAULT_BUDGET as COMPACT_BUDGET
from ..cli.output import OutputError, check_folder, report
from ..cli.progress import make_progress
from ..core.budget import MAX_REPORTED_TOKENS, budget_problem
from ..core.redact import describe
from .cassette import Cassette, CassetteMiss
from .large_outputs import enlarge_session
from .loader import PROBE_KINDS, CorpusError, Probe, Session, load_corpus
from .models import (
    SIMULATED,
    SIMULATED_NATIVE,
    SUMMARIZER_CHOICES,
    ModelSpec,
    build_backend,
    choose_summarizer,
    parse_model,
)
from .plot import plot_view_tokens
from .prompts import load_eval_prompts
from .report import console_summary, write_results
from .runner import Settings, evaluate
from .scoring import Judge
from .strategies import STRATEGIES

DEFAULT_CORPUS = Path(__file__).resolve().parent / "corpus"
DEFAULT_BUDGET = 20_000
"""Small enough that every bundled session (44k–167k tokens) compacts 4–15 times."""
QUICK_SESSIONS = 2
QUICK_PROBES = 5
REPLAYED = ("budget", "summarizer", "model", "judge", "answerer", "sessions", "quick", "strategies")
"""Settings a replay takes from its cassette unless given again on the command line."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="corpus folder (default: the bundled one)")
    parser.add_argument("--out", type=Path, default=Path("eval-out"), help="results folder (default: ./eval-out)")
    parser.add_argument(
        "--budget",
        type=token_count,
        help=f"token budget of every request, e.g. 24k (default {DEFAULT_BUDGET:,}, the budget of the published "
        f"figures in docs/evaluation.md; compact and inspect default to {COMPACT_BUDGET:,})",
    )
    parser.add_argument(
        "--summarizer",
        choices=SUMMARIZER_CHOICES,
        help="summarizer for every strategy (default session: the direct backend whose API key is set, "
        "else extractive)",
    )
    parser.add_argument("--model", help="summarizer model (default: the backend's default)")
    parser.add_argument(
        "--base-url",
        help="an OpenAI-compatible server (llama.cpp, vLLM, Ollama, LM Studio) to summarize with, as compact's "
        "(implies --summarizer openai; no key needed)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="--summarizer simulated / simulated-native: the seed its answers derive from (default 0)",
    )
    parser.add_argument(
        "--latency-ms",
        type=float,
        default=0.0,
        help="--summarizer simulated: mean answer time in ms, really slept (default 0)",
    )
    parser.add_argument(
        "--large-outputs",
        action="store_true",
        help="grow every tool output of 2,000+ characters to 20-30k characters (original text first, then "
        "file-like filler naming nothing of the session)",
    )
    parser.add_argument(
        "--judge", metavar="MODEL", help="grade answers with MODEL (claude-*, gpt-*, or provider:model)"
    )
    parser.add_argument("--answerer", metavar="MODEL", help="model answering the probes (default: the judge model)")
    tape = parser.add_mutually_exclusive_group()
    tape.add_argument("--record", metavar="CASSETTE", type=Path, help="record every model call into this file")
    tape.add_argument("--replay", metavar="CASSETTE", type=Path, help="serve every model call from this file")
    parser.add_argument("--sessions", help="the first N sessions, or a comma-separated list of session names")
    parser.add_argument(
        "--quick",
        action="store_true",
        default=None,
        help=f"the {QUICK_SESSIONS} smallest sessions, {QUICK_PROBES} probes each (every kind)",
    )
    parser.add_argument("--strategies", help=f"comma-separated subset of {','.join(STRATEGIES)} (default: all)")
    parser.add_argument("--jobs", type=int, default=4, help="session replays (and judge calls) run at once")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def add_parser(commands: Any) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        "eval",
        help="score compaction strategies on a corpus of recorded sessions",
        description="Replay recorded sessions through summarize / summarize-only / mask / naive / truncation at one "
        "budget, score the request views on the corpus probes, measure summarizer work and artifact retention, and "
        "write results.md, results.json and view_tokens.png.",
    )
    add_arguments(parser)
    parser.set_defaults(run=run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m amplifier_module_context_summarize eval")
    add_arguments(parser)
    return run(parser.parse_args(argv))


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except (CorpusError, ValueError, CassetteMiss) as exc:
        print(f"eval: error: {exc}", file=sys.stderr)
        return 2
    except OutputError as exc:
        return report(exc, "eval: error")


def _run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    check_folder(args.out)  # before the replays: a wrong --out is said at once, not after minutes of work
    cassette = _open_cassette(args)
    budget = args.budget if args.budget is not None else DEFAULT_BUDGET
    if budget < 1000 or budget_problem(budget):
        raise ValueError(f"--budget must be from 1000 to {MAX_REPORTED_TOKENS:,} tokens, got {describe(budget)}")
    strategies = _strategies(args.strategies)
    sessions = _sessions(args)
    grown = sum(enlarge_session(s) for s in sessions) if getattr(args, "large_outputs", False) else 0
    summarizer, note = choose_summarizer(args.summarizer, args.model, base_url=getattr(args, "base_url", None))
    if summarizer.provider in (SIMULATED, SIMULATED_NATIVE):
        summarizer = replace(summarizer, seed=getattr(args, "seed", 0) or 0)
    if note and not (cassette and cassette.mode == "replay"):
        print(note, file=sys.stderr)
    backend = build_backend(summarizer, cassette, latency_ms=getattr(args, "latency_ms", 0.0) or 0.0)
    judge, judge_spec, answer_spec = _judge(args, cassette)
    if judge is None:
        print("eval: no --judge: deterministic scoring only (key facts found in the view)", file=sys.stderr)
    if cassette is not None and cassette.mode == "record":
        cassette.meta = _meta(budget, summarizer, judge_spec, answer_spec, args, strategies)
    settings = Settings(budget=budget, strategies=strategies, summarizer=summarizer, jobs=max(args.jobs, 1))

    messages = sum(len(s.messages) for s in sessions) * len(strategies)
    probes = sum(len(s.probes) for s in sessions) * len(strategies) + sum(
        1 for s in sessions if s.reference for p in s.probes if p.at >= s.reference.boundary
    )
    replaying = make_progress(messages, "replaying", args.quiet)
    judging = make_progress(probes if judge else 0, "judging", args.quiet)
    try:
        runs = asyncio.run(evaluate(sessions, settings, backend, judge, replaying.update, judging.update))
    finally:
        replaying.close()
        judging.close()
        if cassette is not None:
            cassette.save()
    seconds = time.perf_counter() - started
    extra = {
        "judge": judge_spec.label if judge_spec else None,
        "answerer": answer_spec.label if answer_spec else None,
        "sessions": len(sessions),
        "session_names": [s.name for s in sessions],
        "corpus": str(args.corpus),
        "cassette": str(args.record or args.replay) if cassette else None,
        "large_outputs": grown if getattr(args, "large_outputs", False) else None,
        "seconds": seconds,
    }
    summary = write_results(args.out, runs, settings, extra)
    try:
        plotted = plot_view_tokens(runs, budget, args.out / "view_tokens.png")
    except OSError as exc:
        raise OutputError(
            f"cannot write {args.out / 'view_tokens.png'} ({exc.strerror or type(exc).__name__})"
        ) from None
    if plotted is None:
        print("eval: matplotlib is not installed: no view_tokens.png", file=sys.stderr)
    print(console_summary(summary, {"budget": budget, "summarizer": summarizer.label, **extra}), end="")
    print(f"\nwrote {args.out / 'results.md'}, results.json{', view_tokens.png' if plotted else ''} in {seconds:.1f} s")
    return 0


def _open_cassette(args: argparse.Namespace) -> Cassette | None:
    if args.replay:
        cassette = Cassette.open(args.replay, "replay")
        for name in REPLAYED:  # the recorded run's settings, unless overridden
            if getattr(args, name) is None and cassette.meta.get(name) is not None:
                setattr(args, name, cassette.meta[name])
        return cassette
    if args.record:
        return Cassette.open(args.record, "record")
    return None


def _meta(
    budget: int,
    summarizer: ModelSpec,
    judge: ModelSpec | None,
    answerer: ModelSpec | None,
    args: argparse.Namespace,
    strategies: tuple[str, ...],
) -> dict[str, Any]:
    return {
        "budget": budget,
        "summarizer": summarizer.provider,
        "model": summarizer.model,
        "judge": judge.label if judge else None,
        "answerer": answerer.label if answerer else None,
        "sessions": args.sessions,
        "quick": args.quick,
        "strategies": ",".join(strategies),
    }


def _strategies(value: str | None) -> tuple[str, ...]:
    if not value:
        return STRATEGIES
    chosen = tuple(dict.fromkeys(v.strip() for v in value.split(",") if v.strip()))
    unknown = [s for s in chosen if s not in STRATEGIES]
    if unknown or not chosen:
        raise ValueError(f"--strategies: unknown {', '.join(unknown) or '(none)'} (expected {', '.join(STRATEGIES)})")
    return chosen


def _sessions(args: argparse.Namespace) -> list[Session]:
    value = str(args.sessions).strip() if args.sessions is not None else ""
    if value.isdigit():
        sessions = load_corpus(args.corpus, limit=int(value))
    else:
        sessions = load_corpus(args.corpus, select=[v.strip() for v in value.split(",") if v.strip()] or None)
    if args.quick:
        sessions = sorted(sessions, key=lambda s: len(s.messages))[:QUICK_SESSIONS]
        for session in sessions:
            session.probes = _spread(session.probes, QUICK_PROBES)
    return sessions


def _spread(probes: list[Probe], count: int) -> list[Probe]:
    """Up to ``count`` probes taken in turn from each kind, so a quick run still covers every kind."""
    queues = {kind: [p for p in probes if p.kind == kind] for kind in PROBE_KINDS}
    chosen: list[Probe] = []
    while len(chosen) < min(count, len(probes)):
        for queue in queues.values():
            if queue and len(chosen) < count:
                chosen.append(queue.pop(0))
    return sorted(chosen, key=probes.index)


def _judge(
    args: argparse.Namespace, cassette: Cassette | None
) -> tuple[Judge | None, ModelSpec | None, ModelSpec | None]:
    if not args.judge:
        return None, None, None
    judge_spec = parse_model(args.judge)
    answer_spec = parse_model(args.answerer) if args.answerer else judge_spec
    try:
        judge_backend = build_backend(judge_spec, cassette)
        answer_backend = judge_backend if answer_spec == judge_spec else build_backend(answer_spec, cassette)
    except ValueError as exc:
        raise ValueError(f"--judge/--answerer: {exc}") from None
    assert judge_backend is not None and answer_backend is not None
    return Judge(answer_backend, judge_backend, load_eval_prompts()), judge_spec, answer_spec


if __name__ == "__main__":
    sys.exit(main())
