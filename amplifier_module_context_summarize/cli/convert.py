"""``convert``: write any agent recording that is read (see ``formats``) as our JSONL, one message a line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .formats import dump_line, formats_read
from .session_io import SessionFileError, load_session


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "convert",
        help="write a recorded session of any format read as our JSONL",
        description="Formats read (auto-detected): " + formats_read(),
    )
    parser.add_argument("session", help="a recorded session: Claude Code, Codex, Gemini CLI, OpenHands, SWE-agent, ...")
    parser.add_argument("-o", "--output", metavar="OUT.jsonl", help="write here (default: standard output)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        loaded = load_session(args.session)
    except SessionFileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    text = "".join(dump_line(m) + "\n" for m in loaded.messages)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8", newline="\n")
    else:
        sys.stdout.write(text)
    calls = sum(len(m.get("tool_calls") or []) for m in loaded.messages)
    print(
        f"{Path(args.session).name}: read as {loaded.format}, {len(loaded.messages)} messages"
        + (f", {calls} OpenAI-shape tool calls" if calls else "")
        + (f" -> {args.output}" if args.output else ""),
        file=sys.stderr,
    )
    return 0
