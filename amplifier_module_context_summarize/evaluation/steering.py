"""Steering measured (issue 34): facts that live only in a pinned message or in a compaction's focus, after many
compactions, with and without the steering, and the session's own probes beside them.

Each session gets two seeded assistant notes right after its first request: one stating a codename (pinned, with
``metadata.pin``, in the steered run), one naming a ticket (never pinned: only a focus can keep it, from a
``context:pre_compact`` hook returning ``modify`` with ``Always keep <ticket>``). The plain run replays the very
same messages without the pin flag and without the hook. Both replay as ``eval``'s hybrid does (in band, a private
store, the same summarizer) through ``runner.replay_session``, so the session's probes are scored the same way.

``python -m amplifier_module_context_summarize.evaluation.steering [--budget N] [--sessions a,b]`` prints the
table; ``docs/evaluation.md`` quotes it.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from amplifier_core.models import HookResult

from ..core.messages import Message, is_user_turn
from ..core.tables import markdown_table
from .loader import Session, load_corpus
from .models import ModelSpec
from .runner import replay_session
from .scoring import view_text
from .strategies import make_manager

STRATEGY = "summarize"
DEFAULT_BUDGET = 12_000
"""Small enough that the bundled sessions compact 8 times or more (most of them)."""


@dataclass(frozen=True)
class Seeds:
    pin: str
    """Stated only in the seeded user message (pinned in the steered run)."""
    focus: str
    """Stated only in the assistant's seeded reply (named by the focus in the steered run)."""


def seeds_of(session: Session) -> Seeds:
    """Facts no session holds: tokens derived from the session's name."""
    tag = hashlib.sha256(session.name.encode()).hexdigest()[:6].upper()
    return Seeds(pin=f"PIN-{tag}-CODENAME", focus=f"RB-{tag}-TICKET")


def seeded(session: Session, seeds: Seeds, pinned: bool) -> Session:
    """``session`` with two seeded assistant notes right after its first request (its probes moved past them).

    Assistant notes, not user messages: a session with one request (the SWE sessions) would keep a user message
    verbatim as its latest request, pinned or not."""
    at = next((i + 1 for i, m in enumerate(session.messages) if is_user_turn(m)), 0)
    pin: Message = {
        "role": "assistant",
        "content": f"Standing note for this whole task: the release codename is {seeds.pin}.",
    }
    if pinned:
        pin["metadata"] = {"pin": True}
    note: Message = {"role": "assistant", "content": f"For the record, the rollback ticket is {seeds.focus}."}
    messages = [*session.messages[:at], pin, note, *session.messages[at:]]
    probes = [replace(p, at=p.at + 2) if p.at >= at else p for p in session.probes]
    return replace(session, messages=messages, probes=probes)


class FocusHooks:
    """A hook registry answering every ``context:pre_compact`` with ``modify`` and a focus naming the ticket."""

    def __init__(self, focus: str) -> None:
        self.focus = focus

    async def emit(self, event: str, data: dict[str, Any]) -> Any:
        if event == "context:pre_compact":
            return HookResult(action="modify", data={**data, "focus": self.focus})
        return None


@dataclass
class Side:
    compactions: int
    pin_kept: bool
    focus_kept: bool
    views_after_8: int
    """Agent requests after the 8th compaction."""
    pin_after_8: int
    focus_after_8: int
    """Of those, the views still holding the fact."""
    key_score: float
    """Mean key score of the session's own probes."""
    probes: int


@dataclass
class Row:
    session: str
    plain: Side
    steered: Side


async def replay(session: Session, seeds: Seeds, steered: bool, budget: int, summarizer: ModelSpec) -> Side:
    hooks = FocusHooks(f"Always keep {seeds.focus}") if steered else None
    manager = make_manager(STRATEGY, budget, summarizer, None, hooks=hooks)
    after_8 = {"views": 0, "pin": 0, "focus": 0}
    last: list[list[Message]] = [[]]

    def seen(view: list[Message]) -> None:
        last[0] = view
        if manager.stats["compactions"] >= 8:
            text = view_text(view)
            after_8["views"] += 1
            after_8["pin"] += seeds.pin.lower() in text
            after_8["focus"] += seeds.focus.lower() in text

    run = await replay_session(seeded(session, seeds, steered), STRATEGY, manager, budget, on_request=seen)
    text = view_text(last[0])
    scores = [p.key_score for p in run.probes]
    return Side(
        compactions=run.stats["compactions"],
        pin_kept=seeds.pin.lower() in text,
        focus_kept=seeds.focus.lower() in text,
        views_after_8=after_8["views"],
        pin_after_8=after_8["pin"],
        focus_after_8=after_8["focus"],
        key_score=sum(scores) / len(scores) if scores else 0.0,
        probes=len(scores),
    )


async def measure(sessions: list[Session], budget: int, summarizer: ModelSpec | None = None) -> list[Row]:
    spec = summarizer or ModelSpec("extractive")
    rows = []
    for session in sessions:
        seeds = seeds_of(session)
        plain = await replay(session, seeds, False, budget, spec)
        steered = await replay(session, seeds, True, budget, spec)
        rows.append(Row(session.name, plain, steered))
    return rows


def table(rows: list[Row]) -> str:
    """Markdown: per session, plain → steered."""

    def kept(side: Side, what: str) -> str:
        n = side.pin_after_8 if what == "pin" else side.focus_after_8
        final = side.pin_kept if what == "pin" else side.focus_kept
        return f"{'yes' if final else 'no'} ({n}/{side.views_after_8})"

    header = [
        "session",
        "compactions",
        "pinned fact at the end (views after the 8th compaction holding it)",
        "focus fact at the end (idem)",
        "key score of the session's probes",
    ]
    lines = markdown_table(
        header,
        [
            [
                r.session,
                f"{r.plain.compactions} / {r.steered.compactions}",
                f"{kept(r.plain, 'pin')} → {kept(r.steered, 'pin')}",
                f"{kept(r.plain, 'focus')} → {kept(r.steered, 'focus')}",
                f"{r.plain.key_score:.3f} → {r.steered.key_score:.3f} ({r.plain.probes})",
            ]
            for r in rows
        ],
    )
    eight = [r for r in rows if min(r.plain.compactions, r.steered.compactions) >= 8]
    if eight:
        plain = sum(r.plain.pin_kept + r.plain.focus_kept for r in eight)
        steered = sum(r.steered.pin_kept + r.steered.focus_kept for r in eight)
        lines.append(
            f"\nSessions with 8+ compactions: {len(eight)}; seeded facts in the last view: plain {plain} of "
            f"{2 * len(eight)}, steered {steered} of {2 * len(eight)}."
        )
    probes = sum(r.plain.probes for r in rows)
    if probes:
        plain_mean = sum(r.plain.key_score * r.plain.probes for r in rows) / probes
        steered_mean = sum(r.steered.key_score * r.steered.probes for r in rows) / probes
        lines.append(f"Key score of the other {probes} probes: plain {plain_mean:.3f}, steered {steered_mean:.3f}.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m amplifier_module_context_summarize.evaluation.steering")
    parser.add_argument("--corpus", type=Path, default=Path(__file__).resolve().parent / "corpus")
    parser.add_argument("--budget", type=int, default=DEFAULT_BUDGET)
    parser.add_argument("--sessions", help="comma-separated session names (default: all)")
    args = parser.parse_args(argv)
    if args.budget < 1_000:
        parser.error(f"--budget must be at least 1000 tokens, got {args.budget}")
    select = [s for s in args.sessions.split(",") if s] if args.sessions else None
    sessions = load_corpus(args.corpus, select)
    print(table(asyncio.run(measure(sessions, args.budget))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
