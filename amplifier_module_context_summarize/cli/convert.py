"""``convert``: write any agent recording that is read (see ``formats``) as our JSONL, one message a line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..core.messages import scrub_text
from ..core.words import plural
from ..readers import dump_line, format_label, formats_read
from ..readers.session_io import SessionFileError, load_session, skipped_warnings
from .output import OutputError, check_file, emit, json_line_safe, report, write_bytes


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
        if args.output:
            check_file(args.output)
        loaded = load_session(args.session)
    except SessionFileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OutputError as exc:
        return report(exc)
    # A lone surrogate (a JSON "\ud83d" escape in the recording) is written as that escape: same message, valid UTF-8.
    text = "".join(json_line_safe(dump_line(m)) + "\n" for m in loaded.messages)
    try:
        if args.output:
            write_bytes(args.output, text.encode("utf-8"))
        else:
            emit(text)
    except OutputError as exc:
        return report(exc)
    for line in skipped_warnings(args.session, loaded):
        print(line, file=sys.stderr)
    calls = sum(len(m.get("tool_calls") or []) for m in loaded.messages)
    print(
        scrub_text(
            f"{Path(args.session).name}: read as {format_label(loaded.format)}, {len(loaded.messages)} messages"
            + (f", {calls} OpenAI-shape tool calls" if calls else "")
            + (f", {plural(len(loaded.skipped), 'part')} skipped" if loaded.skipped else "")
            + (f" -> {args.output}" if args.output else "")
        ),
        file=sys.stderr,
    )
    return 0
