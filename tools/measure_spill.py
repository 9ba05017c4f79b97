#!/usr/bin/env python3
"""What spilling large outputs to files changes on recorded sessions: views fitted in band, tokens sent per turn.

Usage::

    python tools/measure_spill.py [--budgets 16000,64000] [--threshold 10000] [SESSION ...]
    # default: the bundled corpus (evaluation/corpus/*.jsonl) and, held out, ../shared/corpus/raw/*/* beside the
    # checkout when present

Each session is read by the module's own readers and replayed as ``compact`` replays it (in band, extractive
summarizer, a request before every assistant turn and one at the end), once with spilling off and once with it on
(``spill_threshold_tokens``, a throwaway folder). Per session and budget it prints the views sent, the views the
request had to fit in band (the planned view over the budget: the fit ladder clipped outputs or let the summary
give way), the outputs spilled, the compactions and the mean tokens sent per view. Maintainer tooling: not in the
wheel.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if __name__ == "__main__":
    sys.path.insert(0, str(REPO))

from amplifier_module_context_summarize import create_manager  # noqa: E402
from amplifier_module_context_summarize.readers.session_io import load_session  # noqa: E402
from amplifier_module_context_summarize.testing import REPLAY_DEADLINE_S, replay_steps  # noqa: E402

RAW = REPO.parent / "shared" / "corpus" / "raw"  # the shared raw recordings, beside the checkout


@dataclass
class Tally:
    views: int = 0
    fitted: int = 0
    """Views whose planned form was over the budget, so the request fitted its copy (the fit ladder ran)."""
    spilled: int = 0
    compactions: int = 0
    tokens: int = 0
    """Tokens of every view sent, summed."""

    def add(self, other: Tally) -> None:
        for name in ("views", "fitted", "spilled", "compactions", "tokens"):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    @property
    def per_view(self) -> float:
        return self.tokens / self.views if self.views else 0.0


async def measure(messages: list[dict[str, Any]], budget: int, threshold: int | None, folder: str) -> Tally:
    config: dict[str, Any] = {
        "summarizer": {"provider": "extractive", "timeout_s": REPLAY_DEADLINE_S},
        "max_tokens": budget,
        "background_compaction": False,
        "compaction_deadline_s": REPLAY_DEADLINE_S,
        "spill_path": folder if threshold is not None else "off",
    }
    if threshold is not None:
        config["spill_threshold_tokens"] = threshold
    manager = create_manager(config)
    tally = Tally()
    async for step in replay_steps(manager, messages, budget=budget, at_end=True):
        if not step.due:
            continue
        view = await step.request()
        tally.views += 1
        tally.fitted += manager.planned_tokens > budget
        tally.tokens += manager.counter.count_messages(view)
    tally.spilled = len(manager.history.spilled)
    tally.compactions = manager.stats.get("compactions", 0)
    await manager.close()
    return tally


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budgets", default="16000,64000")
    parser.add_argument("--threshold", type=int, default=10_000)
    parser.add_argument("sessions", nargs="*", type=Path)
    args = parser.parse_args(argv)
    budgets = [int(b) for b in args.budgets.split(",")]
    bundled = REPO / "amplifier_module_context_summarize" / "evaluation" / "corpus"
    paths = args.sessions or sorted(bundled.glob("*.jsonl")) + sorted(
        p for p in RAW.glob("*/*") if p.is_file() and p.name != "SOURCES.md"
    )
    head = f"{'views':>5} {'fitted':>6} {'spilled':>7} {'compact':>7} {'tok/view':>8}"
    print(f"{'session':<44} {'budget':>6} | off: {head} | on: {head}")
    totals = {(b, on): Tally() for b in budgets for on in (False, True)}
    with tempfile.TemporaryDirectory() as folder:
        for path in paths:
            try:
                messages = load_session(path).messages
            except Exception as exc:  # a recording no reader takes: named, skipped
                print(f"{path.name[:44]:<44} skipped ({type(exc).__name__})", flush=True)
                continue
            for budget in budgets:
                row = []
                for on in (False, True):
                    tally = asyncio.run(measure(messages, budget, args.threshold if on else None, folder))
                    totals[(budget, on)].add(tally)
                    row.append(
                        f"{tally.views:>5} {tally.fitted:>6} {tally.spilled:>7} {tally.compactions:>7} "
                        f"{tally.per_view:>8,.0f}"
                    )
                print(f"{path.name[:44]:<44} {budget:>6} | off: {row[0]} | on: {row[1]}", flush=True)
    for budget in budgets:
        off, on = totals[(budget, False)], totals[(budget, True)]
        print(
            f"budget {budget:,}: views {off.views}; fitted in band {off.fitted} -> {on.fitted}; outputs spilled "
            f"{on.spilled}; compactions {off.compactions} -> {on.compactions}; tokens per view "
            f"{off.per_view:,.0f} -> {on.per_view:,.0f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
