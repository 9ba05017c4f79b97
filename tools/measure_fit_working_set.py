#!/usr/bin/env python3
"""How often a fitted view loses the working set its summary lists: recorded sessions replayed offline.

Usage::

    python tools/measure_fit_working_set.py [--budgets 16000,8000] [SESSION ...]
    # default: tests/fixtures/sessions/* and, when present, ../shared/corpus/raw/*/* beside the checkout

Each session is read by the module's own readers and replayed as ``compact`` replays it (in band, extractive
summarizer, a request before every assistant turn and one at the end). For every view sent while the state
shows a summary with a working-set section, it counts the views whose summary message lost the section
(``lost``), those that show it shorter than the state does (``cut``: items dropped for this request),
those where the truncation marker stood in for the whole summary (``marker``) and those whose narrative (the
segment summaries) was clipped or left out (``narr.``); and any view over its budget (``over``). Maintainer
tooling: not in the wheel.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if __name__ == "__main__":
    sys.path.insert(0, str(REPO))

from amplifier_module_context_summarize import create_manager  # noqa: E402
from amplifier_module_context_summarize.core.messages import message_text  # noqa: E402
from amplifier_module_context_summarize.core.state import SUMMARY_MARKER  # noqa: E402
from amplifier_module_context_summarize.readers.session_io import load_session  # noqa: E402
from amplifier_module_context_summarize.testing import REPLAY_DEADLINE_S, replay_steps  # noqa: E402
from amplifier_module_context_summarize.working_set.fold import HEADING  # noqa: E402

RAW = REPO.parent / "shared" / "corpus" / "raw"  # the shared raw recordings, beside the checkout


@dataclass
class Tally:
    views: int = 0
    """Views sent while the state shows a summary with a working-set section."""
    lost: int = 0
    cut: int = 0
    marker: int = 0
    narrative: int = 0
    """Views whose summary shows its narrative (the segment summaries) shorter than the state does."""
    over: int = 0
    """Views over the budget (none should be)."""

    def add(self, other: Tally) -> None:
        for name in ("views", "lost", "cut", "marker", "narrative", "over"):
            setattr(self, name, getattr(self, name) + getattr(other, name))


def _split(message: dict[str, Any] | None) -> tuple[str, str | None]:
    """A summary message's text before its working-set section, and the section (None: it has none)."""
    text = message_text(message) if message is not None else ""
    at = text.find(HEADING)
    return (text[:at].rstrip(), text[at:]) if at >= 0 else (text.rstrip(), None)


async def measure(messages: list[dict[str, Any]], budget: int) -> Tally:
    config = {
        "summarizer": {"provider": "extractive", "timeout_s": REPLAY_DEADLINE_S},
        "max_tokens": budget,
        "background_compaction": False,
        "compaction_deadline_s": REPLAY_DEADLINE_S,
    }
    manager = create_manager(config)
    tally = Tally()
    async for step in replay_steps(manager, messages, budget=budget, at_end=True):
        if not step.due:
            continue
        view = await step.request()
        tally.over += manager.counter.count_messages(view) > budget
        story, full = _split(manager.view.shown().summary)
        if full is None:
            continue
        tally.views += 1
        summaries = [m for m in view if message_text(m).startswith(SUMMARY_MARKER)]
        if not summaries:
            tally.marker += 1
            continue
        told, sent = _split(summaries[0])
        tally.narrative += len(told) < len(story)
        if sent is None:
            tally.lost += 1
        elif len(sent) < len(full):
            tally.cut += 1
    return tally


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budgets", default="16000,8000")
    parser.add_argument("sessions", nargs="*", type=Path)
    args = parser.parse_args(argv)
    budgets = [int(b) for b in args.budgets.split(",")]
    paths = args.sessions or sorted((REPO / "tests" / "fixtures" / "sessions").iterdir()) + sorted(
        p for p in RAW.glob("*/*") if p.is_file()
    )
    print(f"{'session':<46} {'budget':>6} {'views':>6} {'lost':>5} {'cut':>5} {'marker':>6} {'narr.':>5} {'over':>4}")
    total = Tally()
    for path in paths:
        messages = load_session(path).messages
        for budget in budgets:
            tally = asyncio.run(measure(messages, budget))
            total.add(tally)
            if tally.views:
                row = f"{tally.views:>6} {tally.lost:>5} {tally.cut:>5} {tally.marker:>6} {tally.narrative:>5}"
                print(f"{path.name[:46]:<46} {budget:>6} {row} {tally.over:>4}", flush=True)
    print(
        f"views with a working set in the summary: {total.views}; section lost: {total.lost}; "
        f"section cut: {total.cut}; marker instead of the summary: {total.marker}; "
        f"narrative shortened: {total.narrative}; views over the budget: {total.over}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
