"""``compact``: replay a recorded session through the manager and show the request view it ends with."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import create_manager
from ..core.budget import budget_problem
from ..core.clip import clip_middle
from ..core.messages import Message, message_text, scrub_text
from ..testing import EventRecorder, replay_steps
from .session_io import SessionFileError, load_messages

EXAMPLE_SESSION = Path(__file__).parent.parent / "examples" / "example_session.jsonl"
DEFAULT_BUDGET = 24_000
KEY_ENVS = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}


def add_parser(commands: Any) -> None:
    parser = commands.add_parser("compact", help="replay a session and print the compacted request view")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("session", nargs="?", help="JSON array or JSONL of messages, or an Amplifier transcript.jsonl")
    source.add_argument("--example", action="store_true", help="use the bundled example session")
    parser.add_argument("--budget", type=int, default=DEFAULT_BUDGET, help=f"token budget (default {DEFAULT_BUDGET})")
    parser.add_argument("--summarizer", choices=["anthropic", "openai", "extractive"], help="default: by available key")
    parser.add_argument("--model", help="summarizer model")
    parser.add_argument("--base-url", help="OpenAI-compatible server for --summarizer openai")
    parser.add_argument("--json", action="store_true", help="print the view and the report as JSON")
    parser.set_defaults(run=run)


def choose_summarizer(requested: str | None, environ: Mapping[str, str]) -> tuple[str, str | None]:
    """The summarizer to use, and a note for stderr when we had to fall back to the offline one."""
    if requested:
        return requested, None
    for name, env in KEY_ENVS.items():
        if environ.get(env):
            return name, None
    return "extractive", (
        "no ANTHROPIC_API_KEY or OPENAI_API_KEY in the environment: using the offline extractive summarizer"
    )


async def replay_session(messages: list[dict[str, Any]], budget: int, summarizer: dict[str, Any]) -> dict[str, Any]:
    """Feed messages as an orchestrator would: a request before every assistant turn, and one at the end."""
    recorder = EventRecorder(only={"context:post_compact"})
    # In band: a replay has no agent time between requests in which a background summary could land.
    config = {"summarizer": summarizer, "max_tokens": budget, "background_compaction": False}
    manager = create_manager(config, hooks=recorder)
    started = time.perf_counter()
    view: list[dict[str, Any]] = []
    requests = 0
    async for step in replay_steps(manager, messages, budget=budget, at_end=True):
        if step.due:
            view = await step.request()
            requests += 1
    posts = recorder.payloads("context:post_compact")
    history_tokens = manager.counter.count_messages(messages)
    report = {
        "messages": len(messages),
        "history_tokens": history_tokens,
        "budget": budget,
        "requests": requests,
        "compactions": len(posts),
        "view_messages": len(view),
        "view_tokens": manager.counter.count_messages(view),
        "tokens_before_last_compaction": posts[-1]["tokens_before"] if posts else None,
        "tokens_after_last_compaction": posts[-1]["token_count"] if posts else None,
        "provider_calls": manager.stats["provider_calls"],
        "cache_hits": manager.stats["cache_hits"],
        "summarizer_input_tokens": manager.stats["summarizer_input_tokens"],
        "summarizer_output_tokens": manager.stats["summarizer_output_tokens"],
        "fallbacks": sorted({p["fallback"] for p in posts if p["fallback"]}),
        "summarizer": manager.summarizer.name,
        "seconds": round(time.perf_counter() - started, 3),
    }
    return {"view": view, "report": report}


def render_view(view: list[dict[str, Any]], width: int = 400) -> str:
    lines = []
    for i, message in enumerate(view):
        text = clip_middle(message_text(message), width).replace("\n", "\n    ")
        lines.append(f"[{i}] {message.get('role')}: {text}")
    return "\n".join(lines)


def session_from_args(args: argparse.Namespace) -> tuple[Path, list[Message]] | None:
    """The session a subcommand was given (its file, or the bundled example), or None after saying why."""
    path = EXAMPLE_SESSION if args.example else Path(args.session)
    try:
        messages = load_messages(path)
    except SessionFileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return None
    problem = budget_problem(args.budget)
    if problem:
        print(f"error: --budget {problem}", file=sys.stderr)
        return None
    return path, messages


def run(args: argparse.Namespace) -> int:
    loaded = session_from_args(args)
    if loaded is None:
        return 2
    path, messages = loaded
    name, note = choose_summarizer(args.summarizer, os.environ)
    if note:
        print(note, file=sys.stderr)
    summarizer: dict[str, Any] = {"provider": name}
    if args.model:
        summarizer["model"] = args.model
    if args.base_url:
        summarizer["base_url"] = args.base_url
    try:
        result = asyncio.run(replay_session(messages, args.budget, summarizer))
    except ValueError as exc:  # configuration, e.g. a missing API key
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False, default=repr))
        return 0
    print(render_view(result["view"]))
    print()
    print(f"session: {scrub_text(str(path))}")  # a file name need not be valid UTF-8
    for key, value in result["report"].items():
        print(f"  {key}: {value}")
    return 0
