#!/usr/bin/env python3
"""Build the bundled evaluation corpus from recorded agent sessions, and check it.

Usage::

    python tools/convert_raw.py \\
        --raw /work/shared/corpus/raw --out amplifier_module_context_summarize/evaluation/corpus
    python tools/convert_raw.py --check
    python tools/convert_raw.py --file ~/.claude/projects/x/session.jsonl --out session.jsonl

The conversion itself is the package's session readers (``amplifier_module_context_summarize.readers``, one
module per format), the same ones ``compact``, ``inspect``, ``eval --corpus`` and ``convert`` use; this tool
picks the sessions, cuts them to size and writes the index. Raw files not listed in ``SESSIONS`` are named,
not skipped silently. Nothing is written into the package unless ``--out`` says so.

Maintainer tooling: it lives in the repository, outside the package, and is not in the wheel. It reuses the
package's message rules and token counter: run as a script, it imports the package of the checkout it sits in.
Conversion is deterministic: the same raw files always give byte-identical output.

What it writes, for every session listed in ``SESSIONS`` below:

``<name>.jsonl``
    One message dict per line, in one of the three shapes the context manager supports:

    * ``openai`` (mini-swe-agent trajectories): ``role``, ``content``, ``reasoning_content`` (only
      when the raw message has it), ``tool_calls`` as ``[{"id", "type": "function", "function":
      {"name", "arguments": <JSON string>}}]`` and ``tool_call_id``. ``extra``,
      ``provider_specific_fields``, ``function_call``, the tool call's ``index`` and the trailing
      ``role: "exit"`` entry are dropped. The final submit call has no result and stays dangling.
    * ``anthropic`` (Claude Code JSONL): ``user``/``assistant`` records become
      ``{"role", "content": [blocks]}`` with ``text``, ``thinking`` (``signature`` kept
      byte-for-byte), ``redacted_thinking``, ``tool_use {id, name, input}``, ``tool_result
      {tool_use_id, content, is_error}`` and ``image`` blocks. A user record whose content is a plain
      string stays a string. Records of other types (``progress``, ``file-history-snapshot``,
      ``queue-operation``, ``system``) are dropped. Claude Code writes one record per content block
      and interleaves the tool results of parallel calls with the remaining blocks of the same API
      message; the records of one API message (same ``message.id``) are merged back into one
      assistant message and the tool-result records that answer it into one user message, which is
      what the Anthropic API received. Whitespace-only text blocks (streaming artefacts the API
      would reject) are dropped. Base64 image data longer than ``IMAGE_DATA_LIMIT`` characters is
      replaced by a short placeholder string. The ``isCompactSummary`` record that follows the
      ``system/compact_boundary`` record is Claude Code's own compaction summary; it is not put in
      the session but written to ``<name>.reference.json``.
    * ``amplifier`` (Gemini CLI ``Content[]``): ``model`` -> ``assistant`` with ``thinking``
      (thought parts), ``text`` and ``{"type": "tool_call", "id", "name", "input"}`` blocks
      (``thoughtSignature`` is dropped); each ``functionResponse`` -> ``{"role": "tool",
      "tool_call_id", "content": [{"type": "tool_result", "tool_call_id", "output"}]}`` where
      ``output`` is ``response["output"]`` when present and the whole ``response`` otherwise (e.g.
      ``{"error": ...}``); user text -> ``{"role": "user", "content": str}``. A
      ``functionResponse`` whose call was never made is dropped.

``<name>.reference.json`` (Claude Code sessions only)
    ``{"source": "claude-code", "summary": <text>, "boundary": <int>}``: the summary stands for
    converted messages ``[0, boundary)``.

``index.json``
    One entry per session: name, source, raw path, shape, message count, byte size, whether it was
    truncated, whether a reference summary exists.

A session whose converted JSONL would exceed ``MAX_SESSION_BYTES`` (or a ``max_messages`` given in
``SESSIONS``) is cut to its first N messages, never between a call and its results; none of the
bundled sessions needed it. Claude Code user messages typed while the agent was busy survive only as
``queue-operation`` records and are dropped with them (see the corpus README).

The probe files ``<name>.probes.json`` are written by hand. ``--check`` validates every session
(roles, content types, call ids, >= 60 messages, >= 25k tokens, size) and every probe file: the
fields, the kind mix (>= 15 probes; >= 5 artifact, 4 recall, 3 continuation, 3 decision), ``at`` in
the last third of the session, 1-4 keys each occurring case-insensitively in a message before
``at`` (in the transcript text of ``messages.message_text``), and at least two thirds of the probes
"early" (every key last seen >= ``EARLY_GAP_TOKENS`` tokens before ``at``, so the fact lies behind any
verbatim recent tail and only a summary can carry it). It prints per-session message counts, token
counts, shape, reference boundary, probes per kind and early probes, and exits 1 on any problem;
``--detail`` also lists each probe's key gaps.

To add a session, append it to ``SESSIONS``, rerun with ``--raw``, write its probes, run ``--check``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
BUNDLED = REPO / "amplifier_module_context_summarize" / "evaluation" / "corpus"
"""The package's corpus: ``--check`` reads it by default; converting writes there only when given as ``--out``."""
if __name__ == "__main__" and (REPO / "amplifier_module_context_summarize").is_dir():
    sys.path.insert(0, str(REPO))  # run as a script from a checkout: use the checkout's package, not an installed one

from amplifier_module_context_summarize import readers as formats  # noqa: E402
from amplifier_module_context_summarize.core.messages import message_text, validate_message  # noqa: E402
from amplifier_module_context_summarize.core.tokens import text_counter  # noqa: E402
from amplifier_module_context_summarize.readers.session_io import load_session as read_session  # noqa: E402
from amplifier_module_context_summarize.readers.session_io import read_text  # noqa: E402

# --------------------------------------------------------------------------------------------------
# The chosen sessions. ``max_messages`` cuts a session to its first N converted messages.
# --------------------------------------------------------------------------------------------------

SESSIONS: list[dict[str, Any]] = [
    {
        "name": "cc-spotter-gqc",
        "source": "claude-code",
        "raw": "marot__spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl",
        "repo": "marot/spotter",
    },
    {
        "name": "cc-spotter-dov",
        "source": "claude-code",
        "raw": "marot__spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl",
        "repo": "marot/spotter",
    },
    {
        "name": "cc-spotter-4te",
        "source": "claude-code",
        "raw": "marot__spotter/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl",
        "repo": "marot/spotter",
    },
    {
        "name": "swe-django-15213",
        "source": "mini-swe-agent",
        "raw": "SWE-agent__mini-swe-agent/deepseek_chat_test_1-100__django__django-15213.traj.json",
        "repo": "SWE-agent/mini-swe-agent",
    },
    {
        "name": "swe-astroid-1333",
        "source": "mini-swe-agent",
        "raw": "SWE-agent__mini-swe-agent/deepseek_chat_dev_rerun__pylint-dev__astroid-1333.traj.json",
        "repo": "SWE-agent/mini-swe-agent",
    },
    {
        "name": "swe-pydicom-1413",
        "source": "mini-swe-agent",
        "raw": "SWE-agent__mini-swe-agent/deepseek_lite_dev_noparallel__pydicom__pydicom-1413.traj.json",
        "repo": "SWE-agent/mini-swe-agent",
    },
    {
        "name": "swe-sqlfluff-1763-reasoner",
        "source": "mini-swe-agent",
        "raw": "SWE-agent__mini-swe-agent/deepseek_reasoner_dev__sqlfluff__sqlfluff-1763.traj.json",
        "repo": "SWE-agent/mini-swe-agent",
    },
    {
        "name": "gemini-cli-agent-teams",
        "source": "gemini-cli",
        "raw": "google-gemini__gemini-cli/trajectory.json",
        "repo": "google-gemini/gemini-cli",
    },
]

SHAPES = {"claude-code": "anthropic", "mini-swe-agent": "openai", "gemini-cli": "amplifier"}
MAX_SESSION_BYTES = 1_500_000
PROBE_KINDS = ("artifact", "recall", "continuation", "decision")
MIN_PROBES_PER_KIND = {"artifact": 5, "recall": 4, "continuation": 3, "decision": 3}
MIN_PROBES = 15
MIN_MESSAGES = 60
MIN_TOKENS = 25_000
# A probe is "early" when each of its keys was last seen at least this many tokens before the probe, so
# the fact must survive compaction rather than sit in the verbatim recent tail of the view.
EARLY_GAP_TOKENS = 15_000
MIN_EARLY_SHARE = 2 / 3

Message = dict[str, Any]


# --------------------------------------------------------------------------------------------------
# Converting: the package's own session readers (``amplifier_module_context_summarize.readers``), the same
# ones ``compact``, ``inspect``, ``eval --corpus`` and ``convert`` use.
# --------------------------------------------------------------------------------------------------


def convert_file(path: Path, source: str | None = None) -> tuple[list[Message], dict[str, Any] | None, str]:
    """(messages, reference, format) of one recording; ``source`` names the reader, else it is detected."""
    text = read_text(path)
    if source is None:
        loaded = read_session(path)
        return loaded.messages, loaded.reference, loaded.format
    parsed = formats.parse(text)
    reader = READERS[source]
    messages, reference = reader.convert(parsed.data, parsed.kind)
    return messages, reference, reader.NAME


READERS = {"claude-code": formats.claude_code, "mini-swe-agent": formats.swe_agent, "gemini-cli": formats.gemini}


# --------------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------------


def dump_line(message: Message) -> str:
    return formats.dump_line(message)


def _is_call_message(message: Message) -> bool:
    if message.get("tool_calls"):
        return True
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") in ("tool_use", "tool_call") for b in content
    )


def truncate(messages: list[Message], max_messages: int | None) -> tuple[list[Message], bool]:
    """Cut to ``max_messages`` and, if still too big, to fit ``MAX_SESSION_BYTES``.

    The cut never separates a call from its results: it backs off while the last kept message makes
    tool calls.
    """
    n = len(messages) if max_messages is None else min(max_messages, len(messages))
    size = 0
    for i, m in enumerate(messages[:n]):
        size += len(dump_line(m).encode("utf-8")) + 1
        if size > MAX_SESSION_BYTES:
            n = i
            break
    if n == len(messages):
        return messages, False
    while n > 0 and _is_call_message(messages[n - 1]):
        n -= 1
    return messages[:n], True


def convert(raw_dir: Path, out_dir: Path) -> list[dict[str, Any]]:
    out_dir.mkdir(parents=True, exist_ok=True)
    index = []
    for spec in SESSIONS:
        messages, reference, _ = convert_file(raw_dir / spec["raw"], spec["source"])
        messages, truncated = truncate(messages, spec.get("max_messages"))
        for i, m in enumerate(messages):
            problem = _problem(m)
            if problem:
                raise SystemExit(f"{spec['name']}: message {i}: {problem}")
        text = "".join(dump_line(m) + "\n" for m in messages)
        (out_dir / f"{spec['name']}.jsonl").write_text(text, encoding="utf-8", newline="\n")
        ref_path = out_dir / f"{spec['name']}.reference.json"
        if reference is not None and reference["boundary"] <= len(messages):
            ref_text = json.dumps(reference, ensure_ascii=False, indent=1) + "\n"
            ref_path.write_text(ref_text, encoding="utf-8", newline="\n")
        else:
            reference = None
            ref_path.unlink(missing_ok=True)
        entry = {
            "name": spec["name"],
            "source": spec["source"],
            "repo": spec["repo"],
            "raw": spec["raw"],
            "shape": SHAPES[spec["source"]],
            "messages": len(messages),
            "bytes": len(text.encode("utf-8")),
            "truncated": truncated,
            "reference": reference is not None,
        }
        index.append(entry)
        print(
            f"wrote {spec['name']}.jsonl: {len(messages)} messages, {entry['bytes']} bytes"
            + (" (truncated)" if truncated else "")
            + (", reference" if reference else "")
        )
    (out_dir / "index.json").write_text(json.dumps(index, indent=1) + "\n", encoding="utf-8", newline="\n")
    listed = {spec["raw"] for spec in SESSIONS}
    others = sorted(
        p.relative_to(raw_dir).as_posix()
        for p in raw_dir.rglob("*")
        if p.is_file() and p.suffix in (".json", ".jsonl", ".traj", ".md") and p.name != "SOURCES.md"
    )
    for rel in others:
        if rel not in listed:
            print(f"not in SESSIONS (convert it alone with --file): {rel}")
    return index


def convert_one(path: Path, out: Path | None) -> int:
    """Convert one recording of any format read to our JSONL: to ``out``, or to stdout."""
    try:
        messages, reference, fmt = convert_file(path)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    text = "".join(dump_line(m) + "\n" for m in messages)
    if out is None:
        sys.stdout.write(text)
    else:
        out.write_text(text, encoding="utf-8", newline="\n")
    print(
        f"{path.name}: {fmt}, {len(messages)} messages" + (", has a reference summary" if reference else ""),
        file=sys.stderr,
    )
    return 0


# --------------------------------------------------------------------------------------------------
# Checking
# --------------------------------------------------------------------------------------------------


def _problem(message: Any) -> str | None:
    try:
        validate_message(message)
    except ValueError as exc:
        return str(exc)
    return None


def _leaves(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            if k in ("signature", "data"):
                continue
            if k == "arguments" and isinstance(v, str):
                with contextlib.suppress(ValueError):
                    _leaves(json.loads(v), out)
            _leaves(v, out)
    elif isinstance(value, list):
        for v in value:
            _leaves(v, out)


def searchable_text(message: Message) -> str:
    """Every string in a message (tool-call arguments decoded), lower-cased, for probe keys."""
    leaves: list[str] = []
    _leaves(message, leaves)
    return "\n".join(leaves).lower()


def load_session(path: Path) -> list[Message]:
    # Split on "\n" only: str.splitlines() would also split inside strings at U+2028 and friends,
    # which json.dumps(ensure_ascii=False) leaves unescaped.
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").split("\n") if line.strip()]


def key_gaps(messages: list[Message], at: int, keys: list[str], token_counts: list[int]) -> list[int | None]:
    """Per key: tokens in ``messages[last + 1 : at + 1]`` where ``last`` is its last occurrence before ``at``."""
    shown = [message_text(m).lower() for m in messages[:at]]
    gaps: list[int | None] = []
    for key in keys:
        k = key.lower()
        last = next((j for j in range(at - 1, -1, -1) if k in shown[j]), None)
        gaps.append(None if last is None else sum(token_counts[last + 1 : at + 1]))
    return gaps


def probe_gap(messages: list[Message], probe: dict[str, Any], token_counts: list[int]) -> int | None:
    """The smallest key gap of a probe (None when a key is missing)."""
    gaps = key_gaps(messages, probe["at"], probe["keys"], token_counts)
    return None if any(g is None for g in gaps) else min(gaps)


def check_probes(name: str, messages: list[Message], probes: Any, token_counts: list[int] | None = None) -> list[str]:
    """Problems with a probe file; with ``token_counts`` (one per message) also the early-probe share."""
    problems: list[str] = []
    if not isinstance(probes, list):
        return [f"{name}: probes file is not a list"]
    n = len(messages)
    search = [searchable_text(m) for m in messages]
    shown = [message_text(m).lower() for m in messages]
    seen_ids: set[str] = set()
    counts = {k: 0 for k in PROBE_KINDS}
    for i, p in enumerate(probes):
        where = f"{name}: probe {i} ({p.get('id') if isinstance(p, dict) else '?'})"
        if not isinstance(p, dict):
            problems.append(f"{where}: not an object")
            continue
        missing = {"id", "at", "kind", "question", "answer", "keys"} - set(p)
        extra = set(p) - {"id", "at", "kind", "question", "answer", "keys"}
        if missing:
            problems.append(f"{where}: missing fields {sorted(missing)}")
            continue
        if extra:
            problems.append(f"{where}: unknown fields {sorted(extra)}")
        if not isinstance(p["id"], str) or not p["id"]:
            problems.append(f"{where}: id must be a non-empty string")
        elif p["id"] in seen_ids:
            problems.append(f"{where}: duplicate id")
        seen_ids.add(p["id"])
        if p["kind"] not in PROBE_KINDS:
            problems.append(f"{where}: kind {p['kind']!r} not in {PROBE_KINDS}")
        else:
            counts[p["kind"]] += 1
        for field in ("question", "answer"):
            if not isinstance(p[field], str) or not p[field].strip():
                problems.append(f"{where}: {field} must be a non-empty string")
        at = p["at"]
        if not isinstance(at, int) or isinstance(at, bool) or not 0 <= at < n:
            problems.append(f"{where}: at={at!r} outside [0, {n})")
            continue
        if at < (2 * n) // 3:
            problems.append(f"{where}: at={at} is not in the last third (>= {(2 * n) // 3})")
        keys = p["keys"]
        if not isinstance(keys, list) or not 1 <= len(keys) <= 4 or not all(isinstance(k, str) and k for k in keys):
            problems.append(f"{where}: keys must be a list of 1-4 non-empty strings")
            continue
        for key in keys:
            k = key.lower()
            first = next((j for j in range(at) if k in search[j]), None)
            if first is None:
                problems.append(f"{where}: key {key!r} does not occur before message {at}")
            elif not any(k in shown[j] for j in range(at)):
                problems.append(f"{where}: key {key!r} occurs before {at} only in a form transcripts escape")
    if token_counts is not None and not problems:
        early = sum(1 for p in probes if (probe_gap(messages, p, token_counts) or 0) >= EARLY_GAP_TOKENS)
        if early < MIN_EARLY_SHARE * len(probes):
            problems.append(
                f"{name}: only {early}/{len(probes)} probes have all keys >= {EARLY_GAP_TOKENS} tokens before 'at'"
                f" (need >= {MIN_EARLY_SHARE:.0%})"
            )
    for kind, minimum in MIN_PROBES_PER_KIND.items():
        if counts[kind] < minimum:
            problems.append(f"{name}: {counts[kind]} {kind} probes, need >= {minimum}")
    if len(probes) < MIN_PROBES:
        problems.append(f"{name}: {len(probes)} probes, need >= {MIN_PROBES}")
    return problems


def check(out_dir: Path, detail: bool = False) -> int:
    index_path = out_dir / "index.json"
    names = (
        [e["name"] for e in json.loads(index_path.read_text(encoding="utf-8"))]
        if index_path.exists()
        else sorted(p.name[: -len(".jsonl")] for p in out_dir.glob("*.jsonl"))
    )
    sources = {s["name"]: s["source"] for s in SESSIONS}
    unit, count_tokens = "cl100k", text_counter("cl100k_base")
    problems: list[str] = []
    rows = []
    details: list[str] = []
    shapes_seen = set()
    total_bytes = 0
    for name in names:
        path = out_dir / f"{name}.jsonl"
        if not path.exists():
            problems.append(f"{name}: {path.name} missing")
            continue
        total_bytes += path.stat().st_size
        messages = load_session(path)
        for i, m in enumerate(messages):
            problem = _problem(m)
            if problem:
                problems.append(f"{name}: message {i}: {problem}")
        token_counts = [count_tokens(message_text(m)) for m in messages]
        tokens = sum(token_counts)
        shape = SHAPES.get(sources.get(name, ""), "?")
        shapes_seen.add(shape)
        if len(messages) < MIN_MESSAGES:
            problems.append(f"{name}: {len(messages)} messages, need >= {MIN_MESSAGES}")
        if tokens < MIN_TOKENS:
            problems.append(f"{name}: {tokens} tokens, need >= {MIN_TOKENS}")
        if path.stat().st_size > MAX_SESSION_BYTES:
            problems.append(f"{name}: {path.stat().st_size} bytes, limit {MAX_SESSION_BYTES}")
        ref_path = out_dir / f"{name}.reference.json"
        ref = ""
        if ref_path.exists():
            reference = json.loads(ref_path.read_text(encoding="utf-8"))
            if set(reference) != {"source", "summary", "boundary"} or not 0 < reference["boundary"] <= len(messages):
                problems.append(f"{name}: malformed reference.json")
            ref = str(reference.get("boundary"))
        probe_path = out_dir / f"{name}.probes.json"
        kinds = {k: 0 for k in PROBE_KINDS}
        early = 0
        if probe_path.exists():
            probes = json.loads(probe_path.read_text(encoding="utf-8"))
            session_problems = check_probes(name, messages, probes, token_counts)
            problems.extend(session_problems)
            if isinstance(probes, list):
                for p in probes:
                    if isinstance(p, dict) and p.get("kind") in kinds:
                        kinds[p["kind"]] += 1
                if not any("does not occur" in q or "outside" in q or "missing" in q for q in session_problems):
                    for p in probes:
                        gaps = key_gaps(messages, p["at"], p["keys"], token_counts)
                        gap = min(g for g in gaps if g is not None) if all(g is not None for g in gaps) else 0
                        early += gap >= EARLY_GAP_TOKENS
                        if detail:
                            keys = ", ".join(f"{k!r}:{g}" for k, g in zip(p["keys"], gaps, strict=True))
                            mark = " " if gap >= EARLY_GAP_TOKENS else "*"
                            details.append(f"{mark} {name:<27} {p['id']:<14} {p['kind']:<12} at={p['at']:<4} {keys}")
        else:
            problems.append(f"{name}: {probe_path.name} missing")
        rows.append((name, shape, len(messages), tokens, path.stat().st_size, ref, kinds, early))
    if len(rows) < 8:
        problems.append(f"only {len(rows)} sessions, need >= 8")
    if len(shapes_seen) < 2:
        problems.append("tool calls occur in only one shape")

    header = (
        f"{'session':<28} {'shape':<10} {'msgs':>5} {'tokens':>7} {'KiB':>6} {'ref@':>5} "
        f"{'probes':>6} {'art':>4} {'rec':>4} {'cont':>4} {'dec':>4} {'early':>6}"
    )
    print(header)
    print("-" * len(header))
    for name, shape, n, tokens, size, ref, kinds, early in rows:
        print(
            f"{name:<28} {shape:<10} {n:>5} {tokens:>7} {size // 1024:>6} {ref or '-':>5} "
            f"{sum(kinds.values()):>6} {kinds['artifact']:>4} {kinds['recall']:>4} "
            f"{kinds['continuation']:>4} {kinds['decision']:>4} {early:>6}"
        )
    print("-" * len(header))
    print(
        f"{len(rows)} sessions, {sum(r[2] for r in rows)} messages, {sum(r[3] for r in rows)} tokens ({unit}), "
        f"{total_bytes / 1_048_576:.1f} MiB, {sum(sum(r[6].values()) for r in rows)} probes, "
        f"{sum(r[7] for r in rows)} early"
    )
    print(
        f"early = probes whose keys were all last seen >= {EARLY_GAP_TOKENS} tokens before 'at' "
        f"(must be >= {MIN_EARLY_SHARE:.0%} per session)"
    )
    if detail:
        print("\nper probe (key: tokens between its last occurrence and 'at'; * = not early):")
        for line in details:
            print(line)
    if problems:
        print(f"\n{len(problems)} problem(s):")
        for problem in problems:
            print(f"  - {problem}")
        return 1
    print("OK")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--raw", type=Path, help="directory holding the raw sessions (see SOURCES.md)")
    parser.add_argument(
        "--out", type=Path, help="output directory (with --file: a file, default stdout); --check: the bundled corpus"
    )
    parser.add_argument("--file", type=Path, help="convert this one recording (any format read) instead of SESSIONS")
    parser.add_argument("--check", action="store_true", help="validate the corpus and its probes")
    parser.add_argument("--detail", action="store_true", help="with --check: list every probe's key gaps")
    args = parser.parse_args(argv)
    if args.file is not None:
        return convert_one(args.file, args.out)
    if args.raw is None and not args.check:
        parser.error("give --raw with --out to convert, --file to convert one recording, --check to validate")
    if args.raw is not None and args.out is None:
        parser.error(f"--raw needs --out (to rebuild the bundled corpus: --out {BUNDLED.relative_to(REPO)})")
    status = 0
    if args.raw is not None:
        convert(args.raw, args.out)
    if args.check:
        status = check(args.out or BUNDLED, detail=args.detail)
    return status


if __name__ == "__main__":
    sys.exit(main())
