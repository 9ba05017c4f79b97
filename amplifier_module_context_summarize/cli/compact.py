"""``compact``: replay a recorded session through the manager and show the request view it ends with."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import create_manager
from ..core.budget import budget_problem
from ..core.extras import installed, key_without_sdk_note
from ..core.messages import Message, message_text, scrub_text
from ..core.state import CompactionState
from ..core.words import plural
from ..events import COMPACTED
from ..manager import SummarizingContextManager
from ..readers import Loaded, format_label, formats_read
from ..readers.session_io import SessionFileError, load_session, skipped_warnings
from ..testing import REPLAY_DEADLINE_S, EventRecorder, replay_steps
from .args import SUMMARIZERS, token_count
from .compact_text import fallback_warning, more_line, render_report, render_result, render_view
from .losses import Loss, ViewAccount, running
from .progress import Progress, make_progress

EXAMPLE_SESSION = Path(__file__).parent.parent / "examples" / "example_session.jsonl"
DEFAULT_BUDGET = 16_000
"""Small enough that the bundled example gets a ``[CONTEXT SUMMARY]``, not only masked tool outputs."""
SESSION_HELP = (
    "a recorded session: our JSON / JSONL, an Amplifier transcript.jsonl, or a Claude Code, Codex, Gemini CLI, "
    "Cline, Aider, OpenHands or SWE-agent recording (see the formats above)"
)
KEY_ENVS = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "compact",
        help="replay a session and print what compaction made of it",
        description="Formats read (auto-detected): " + formats_read(),
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("session", nargs="?", help=SESSION_HELP)
    source.add_argument("--example", action="store_true", help="use the bundled example session")
    parser.add_argument(
        "--budget",
        type=token_count,
        default=DEFAULT_BUDGET,
        help=f"token budget, e.g. 24k (default {DEFAULT_BUDGET:,})",
    )
    parser.add_argument("--summarizer", choices=SUMMARIZERS, help="default: by available key")
    parser.add_argument("--model", help="summarizer model")
    parser.add_argument(
        "--base-url", help="OpenAI-compatible server for --summarizer openai; the provider's API root for native"
    )
    parser.add_argument(
        "--json", action="store_true", help="print the view, the report and one entry per compaction as JSON"
    )
    parser.add_argument(
        "--summary",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="also print the final [CONTEXT SUMMARY] in full (default: no)",
    )
    parser.add_argument("--report", action="store_true", help="also print every figure of the report, one a line")
    parser.add_argument("--view", action="store_true", help="also print the final request view, message by message")
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress bar on stderr (default: when stderr is a terminal and the replay takes over a second)",
    )
    parser.set_defaults(run=run)


def choose_summarizer(
    requested: str | None, environ: Mapping[str, str], sdk_installed: Callable[[str], bool] = installed
) -> tuple[str, str | None]:
    """The summarizer to use, and a note for stderr when we had to fall back to the offline one.

    Unasked, a provider is used when its key is set and its SDK (an extra) is installed: a key alone, as most
    Amplifier users have, must not turn the quick start into an error on the default install."""
    if requested:
        return requested, None
    unusable = []
    for name, env in KEY_ENVS.items():
        if (environ.get(env) or "").strip():
            if sdk_installed(name):
                return name, None
            unusable.append(key_without_sdk_note(name, env, "compact"))
    if unusable:
        return "extractive", unusable[0]
    return "extractive", (
        "no ANTHROPIC_API_KEY or OPENAI_API_KEY in the environment: using the offline extractive summarizer"
    )


@dataclass
class Compacted:
    """A request at which compactions were installed, and the view it sent."""

    at_message: int
    """The stored message after which the request was made."""
    posts: list[dict[str, Any]]
    """The installed compactions' ``context:post_compact`` payloads, in order (almost always one)."""
    before: CompactionState
    after: CompactionState
    view: list[Message]
    loss: Loss | None = None
    """What was lost, as of the view sent (``losses.running``)."""


@dataclass
class Replay:
    """A session replayed as ``compact`` and ``inspect`` both replay it."""

    manager: SummarizingContextManager
    view: list[Message]
    compacted: list[Compacted]
    requests: list[tuple[int, int]] = field(default_factory=list)
    """(message index, tokens sent) per request."""
    seconds: float = 0.0


async def replay(
    messages: list[dict[str, Any]], budget: int, summarizer: dict[str, Any], progress: Any = None
) -> Replay:
    """Feed messages as an orchestrator would: a request before every assistant turn, and one at the end. At each
    request that installs a compaction the account of what was lost is taken, once, from the view it sent."""
    recorder = EventRecorder(only={"context:post_compact"})
    # In band: a replay has no agent time between requests in which a background summary could land.
    # Nobody waits for a replay's requests: a summary gets the time its calls take (``REPLAY_DEADLINE_S``).
    config = {
        "summarizer": {"timeout_s": REPLAY_DEADLINE_S, **summarizer},
        "max_tokens": budget,
        "background_compaction": False,
        "compaction_deadline_s": REPLAY_DEADLINE_S,
    }
    manager = create_manager(config, hooks=recorder)
    started = time.perf_counter()
    found = Replay(manager, [], [])
    accounts, account = [], ViewAccount(manager)
    async for step in replay_steps(manager, messages, budget=budget, at_end=True):
        if step.due:
            before, seen = manager.state, len(recorder.payloads("context:post_compact"))
            found.view = await step.request()
            found.requests.append((step.index, await manager.get_token_count()))
            # Installed: one that could not make the view smaller (``unchanged``) or was cancelled left it as it was.
            posts = [p for p in recorder.payloads("context:post_compact")[seen:] if p["outcome"] == COMPACTED]
            if posts:
                found.compacted.append(Compacted(step.index, posts, before, manager.state, found.view))
                accounts.append(account(found.view))
        if progress is not None:
            progress(step.index + 1, len(messages))
    for compacted, loss in zip(found.compacted, running(accounts), strict=True):
        compacted.loss = loss
    found.seconds = time.perf_counter() - started
    return found


async def replay_session(
    messages: list[dict[str, Any]], budget: int, summarizer: dict[str, Any], progress: Any = None
) -> dict[str, Any]:
    """``replay``, as ``compact`` reports it: the final view, the report and one entry per compaction."""
    found = await replay(messages, budget, summarizer, progress)
    manager, view = found.manager, found.view
    posts = [p for c in found.compacted for p in c.posts]
    compactions = [_compaction(p, c.loss if p is c.posts[-1] else None) for c in found.compacted for p in c.posts]
    report = {
        "messages": len(messages),
        "history_tokens": manager.counter.count_messages(messages),
        "budget": budget,
        "requests": len(found.requests),
        "compactions": len(posts),
        "view_messages": len(view),
        "view_tokens": manager.counter.count_messages(view),
        "tokens_before_last_compaction": posts[-1]["tokens_before"] if posts else None,
        "tokens_after_last_compaction": posts[-1]["token_count"] if posts else None,
        "provider_calls": manager.stats["provider_calls"],
        "cache_hits": manager.stats["cache_hits"],
        "summarizer_input_tokens": manager.stats["summarizer_input_tokens"],
        "summarizer_output_tokens": manager.stats["summarizer_output_tokens"],
        "fallbacks": sorted({str(p["fallback"]) for p in posts if p["fallback"]}),
        "summarizing_compactions": sum(1 for p in posts if p.get("newly_summarized") or p["fallback"]),
        "offline_fallbacks": sum(1 for p in posts if p["fallback"]),
        "clipped_messages": len(manager.view.clipped),
        "artifacts_lost": found.compacted[-1].loss.lost if found.compacted and found.compacted[-1].loss else 0,
        "losses": [c["loss"] for c in compactions if c["loss"] is not None],
        "summarizer": manager.summarizer.name,
        "summarized_messages": posts[-1]["summarized_messages"] if posts else 0,
        **view_parts(manager, view),
        "seconds": round(found.seconds, 3),
    }
    return {"view": view, "report": report, "compactions": compactions}


def view_parts(manager: SummarizingContextManager, view: list[Message]) -> dict[str, int]:
    """How the final view stands for the session past its summary: the messages shown with their tool outputs
    masked, and the newest sent as they were (as ``losses.standing_text`` splits the view)."""
    state, masks = manager.state, manager.masks
    shown = manager.view.shown()
    masked = len(masks.span(state.boundary, state.tail_start)) if masks and state.tail_start > state.boundary else 0
    head = len(manager.view.system_view()) + len(shown.messages) + masked
    return {
        "masked_messages": masked,
        "recent_messages": max(len(view) - head, 0),
    }


def _compaction(post: Mapping[str, Any], loss: Loss | None) -> dict[str, Any]:
    """One compaction's line: its event's figures, and the account of what was lost (None for one whose view was
    not sent: another compaction followed it in the same request)."""
    keys = (
        "tokens_before",
        "token_count",
        "budget",
        "strategy",
        "summarized_messages",
        "newly_summarized",
        "newly_masked",
        "fallback",
    )
    return {**{key: post.get(key) for key in keys}, "loss": loss.as_json() if loss is not None else None}


def session_from_args(args: argparse.Namespace) -> tuple[Path, Loaded] | None:
    """The session a subcommand was given (its file, or the bundled example), or None after saying why; what of
    the file was skipped is said on stderr, one warning a line."""
    path = EXAMPLE_SESSION if args.example else Path(args.session)
    try:
        loaded = load_session(path)
    except SessionFileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return None
    problem = budget_problem(args.budget)
    if problem:
        print(f"error: --budget {problem}", file=sys.stderr)
        return None
    for line in skipped_warnings(path, loaded):
        print(line, file=sys.stderr)
    return path, loaded


def skipped_json(loaded: Loaded) -> list[dict[str, Any]]:
    """What of the file was not read, for ``--json``: each part's line (None for a converted message) and why."""
    return [{"line": line, "reason": why} for line, why in loaded.skipped]


def run(args: argparse.Namespace) -> int:
    loaded = session_from_args(args)
    if loaded is None:
        return 2
    path, session = loaded
    messages = session.messages
    name, note = choose_summarizer(args.summarizer, os.environ)
    if note:
        print(note, file=sys.stderr)
    summarizer: dict[str, Any] = {"provider": name}
    if args.model:
        summarizer["model"] = args.model
    if args.base_url:
        summarizer["base_url"] = args.base_url
    bar = progress_from_args(args, messages)
    try:
        result = asyncio.run(replay_session(messages, args.budget, summarizer, bar))
    except ValueError as exc:  # configuration, e.g. a missing API key
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        bar.close()
    result["report"]["format"] = session.format
    result["report"]["skipped"] = skipped_json(session)
    warnings = [fallback_warning(result["report"]), *fit_warnings(result["report"])]
    for line in filter(None, warnings):
        print(line, file=sys.stderr)
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False, default=str))
        return 0
    print(read_line(path, session))
    print(render_result(result))
    summary = final_summary(result["view"])
    more = more_line(summary, {"summary": args.summary, "view": args.view, "report": args.report})
    if more:
        print(more)
    if args.report:
        print()
        print(render_report(result["report"]))
    if summary and args.summary:
        print()
        print(f"--- the final [CONTEXT SUMMARY] in full ({len(summary):,} characters) ---")
        print(summary)
    if args.view:
        print()
        print(f"--- the final request view, {len(result['view'])} messages (long ones shortened for display) ---")
        print(render_view(result["view"]))
    return 0


def read_line(path: Path, loaded: Loaded) -> str:
    """``read: FILE as FORMAT, N messages`` and, when parts of the file were not read, which lines."""
    line = f"read: {scrub_text(str(path))} as {format_label(loaded.format)}, {plural(len(loaded.messages), 'message')}"
    if loaded.skipped:
        numbers = [str(n) for n, _ in loaded.skipped if n is not None]
        where = f" (line {', '.join(numbers[:10])}{', ...' if len(numbers) > 10 else ''})" if numbers else ""
        line += f"; {plural(len(loaded.skipped), 'part')} of the file skipped{where}, see the warnings"
    return line


def fit_warnings(report: Mapping[str, Any]) -> list[str]:
    """What the caller must know about the final view: messages too large for the budget shown clipped, or a view
    that does not fit at all (the system messages alone are over the budget)."""
    lines = []
    clipped = report.get("clipped_messages") or 0
    if clipped:
        lines.append(
            f"warning: {plural(clipped, 'message')} could not fit the budget of {report['budget']:,} tokens whole: "
            "the final view shows them clipped head and tail, each clip naming the handle that recalls the original"
        )
    if report["view_tokens"] > report["budget"]:
        lines.append(
            f"warning: the final view is {report['view_tokens']:,} tokens, over the budget of {report['budget']:,}: "
            "what cannot be cut or clipped (the system messages) is larger than the budget"
        )
    return lines


def progress_from_args(args: argparse.Namespace, messages: list[Message]) -> Progress:
    """The replay's bar: ``--progress`` / ``--no-progress``, else on a terminal once the replay has run a second."""
    return make_progress(len(messages), "replaying", force=args.progress, unit="messages")


def final_summary(view: list[dict[str, Any]]) -> str:
    """The text of the ``[CONTEXT SUMMARY]`` message of a view, or ''."""
    for message in view:
        text = message_text(message)
        if text.startswith("[CONTEXT SUMMARY]"):
            return text
    return ""
