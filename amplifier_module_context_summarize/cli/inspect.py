"""``inspect``: replay a recorded session and show what each compaction did and what it lost.

Offline: the extractive summarizer writes the summaries, so the account costs no LLM call and is the
same on every run. For each compaction it prints the span it took out of the verbatim view, the full
summary message that then led the view, and the ledger artifacts (files, commands, URLs, ids, error
lines) of the summarized and masked messages that the view no longer names. ``--html`` writes one
self-contained page: the conversation with its summarized, masked and verbatim parts marked, and each
segment summary beside the messages it stands for.
"""

from __future__ import annotations

import argparse
import asyncio
import html
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..compaction.view.losses import KINDS
from ..core.clip import clip_middle
from ..core.messages import Message, message_text, scrub_text
from ..core.state import SUMMARY_MARKER, TRUNCATION_MARKER
from ..core.words import plural
from ..manager import SummarizingContextManager
from ..readers import formats_read
from . import inspect_chart, inspect_table
from .args import SUMMARIZERS, token_count
from .compact import DEFAULT_BUDGET, SESSION_HELP, Compacted, progress_from_args, read_line, replay, session_from_args
from .compact_text import OFFLINE
from .losses import Loss
from .output import OutputError, check_file, emit, json_line_safe, report, write_file

DISPLAY_CHARS = 3_000
"""Longest message text the HTML page shows (head and tail; the history itself is untouched)."""
LOST_ITEMS_SHOWN = 30
"""Lost artifacts listed per kind in the Markdown; the count is always complete."""


@dataclass
class CompactionRecord:
    number: int
    at_message: int
    """The stored message after which the request that compacted was made."""
    newly: list[tuple[str, int, int, int, int]]
    """(form, first group, end group, first message, end message) taken out of the verbatim view."""
    hidden_messages: int
    summary: str
    payload: dict[str, Any]
    loss: Loss
    """What was lost, as ``compact`` reports it (``losses``)."""


@dataclass
class Inspection:
    path: str
    budget: int
    manager: SummarizingContextManager
    view: list[Message]
    compactions: list[CompactionRecord] = field(default_factory=list)
    requests: list[tuple[int, int]] = field(default_factory=list)
    """(message index, tokens sent) per request, for the chart."""

    @property
    def name(self) -> str:
        """The session's file name: what the page and the Markdown are titled."""
        return Path(self.path).name or "session"


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "inspect",
        help="replay a session offline and show each compaction, its summary and what it lost",
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
    parser.add_argument(
        "--summarizer",
        choices=SUMMARIZERS,
        default="extractive",
        help="who writes the summaries (default: extractive, offline, the same on every run)",
    )
    parser.add_argument(
        "--html",
        metavar="OUT.html",
        help="write a self-contained HTML page of the session (then the Markdown is printed only with --markdown)",
    )
    parser.add_argument("--markdown", action="store_true", help="with --html, print the Markdown report too")
    parser.add_argument("--json", action="store_true", help="print every compaction as JSON instead of Markdown")
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress bar on stderr (default: when stderr is a terminal and the replay takes over a second)",
    )
    parser.set_defaults(run=run)


async def inspect_session(
    messages: list[Message], budget: int, path: str = "", progress: Any = None, summarizer: str = "extractive"
) -> Inspection:
    """The session replayed as ``compact`` replays it (the same compactions, the same account of what was lost),
    with the extractive summarizer unless another is asked for."""
    found = await replay(messages, budget, {"provider": summarizer}, progress)
    inspection = Inspection(path, budget, found.manager, found.view, requests=found.requests)
    for number, compacted in enumerate(found.compacted, start=1):
        inspection.compactions.append(_record(found.manager, compacted, number))
    return inspection


def _record(manager: SummarizingContextManager, compacted: Compacted, number: int) -> CompactionRecord:
    groups = manager.history.groups
    before, state = compacted.before, compacted.after
    newly = []
    if state.boundary > before.boundary:
        form = "summarized" if state.segments else "truncated"
        newly.append((form, before.boundary, state.boundary))
    start = max(state.boundary, before.tail_start)
    if state.tail_start > start:
        newly.append(("masked", start, state.tail_start))
    spans = [(form, a, b, groups[a].start, groups[b - 1].end) for form, a, b in newly]
    summary = next((m for m in compacted.view if _leads_as_summary(m)), None)  # as the view showed it
    assert compacted.loss is not None  # ``replay`` accounts for every request that compacted
    return CompactionRecord(
        number=number,
        at_message=compacted.at_message,
        newly=spans,
        hidden_messages=groups[state.tail_start - 1].end if state.tail_start else 0,
        summary=str(summary["content"]) if summary is not None else "",
        payload=compacted.posts[-1],
        loss=compacted.loss,
    )


# ---------------------------------------------------------------------------------------------- JSON


def render_json(found: Inspection, format_name: str) -> dict[str, Any]:
    """``--json``: what the Markdown tells, as data: per compaction its request, the spans it newly took out of the
    verbatim view, the summary that then led the view, its event's figures and the account of what was lost."""
    return {
        "session": found.name,
        "format": format_name,
        "messages": len(found.manager.history.messages),
        "history_tokens": session_tokens(found),
        "budget": found.budget,
        "summarizer": found.manager.summarizer.name,
        "requests": len(found.requests),
        "compactions": [
            {
                "number": r.number,
                "at_message": r.at_message,
                "newly": [
                    {"form": form, "groups": [a, b], "messages": [start, end]} for form, a, b, start, end in r.newly
                ],
                "hidden_messages": r.hidden_messages,
                "tokens_before": r.payload["tokens_before"],
                "token_count": r.payload["token_count"],
                "summarized_messages": r.payload["summarized_messages"],
                "fallback": r.payload["fallback"],
                "loss": r.loss.as_json(),
                "summary": r.summary,
            }
            for r in found.compactions
        ],
    }


# ---------------------------------------------------------------------------------------------- Markdown


def _fence(text: str) -> str:
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}text\n{text}\n{ticks}"


def render_markdown(found: Inspection) -> str:
    manager = found.manager
    history = manager.history
    lines = [
        f"# Inspect: {found.name}",
        "",
        f"{len(history.messages)} messages in {len(history.groups)} groups, budget {found.budget:,} tokens, "
        f"{summarizer_words(found)}; {plural(len(found.compactions), 'compaction')}. "
        f"The final view: {len(found.view)} messages, {manager.counter.count_messages(found.view):,} tokens.",
    ]
    if not found.compactions:
        lines += ["", "The session fits the budget: nothing was summarized or masked."]
    for record in found.compactions:
        p = record.payload
        lines += [
            "",
            f"## Compaction {record.number}, at message {record.at_message}",
            "",
            f"- view: {p['tokens_before']:,} → {p['token_count']:,} tokens (budget {p['budget']:,}); "
            f"{p['summarized_messages']} messages summarized in {p['segments']} segment(s)"
            + (f"; fallback `{p['fallback']}`" if p["fallback"] else ""),
        ]
        for form, a, b, first, end in record.newly:
            lines.append(f"- newly {form}: groups {a}–{b - 1} (messages {first}–{end - 1})")
        lines.append(f"- hidden in all (summarized or masked): messages 0–{record.hidden_messages - 1}")
        lines += ["", "### Summary message", ""]
        lines.append(_fence(record.summary) if record.summary else "(no summary message: only masking so far)")
        lines += ["", "### What was lost", "", *_loss_lines(record.loss)]
    return "\n".join(lines) + "\n"


def _loss_lines(loss: Loss) -> list[str]:
    """The account (``losses``): lost so far with what changed, the lost items, and those named again."""
    if not loss.total:
        return ["The hidden messages name no files, commands, URLs, ids or errors."]
    change = f"{loss.newly} newly lost at this compaction" + (f", {loss.regained} named again" if loss.regained else "")
    if not loss.lost:
        lines = [f"Nothing: all {loss.total} artifacts of the hidden messages are named where the view stands for them"]
        lines[0] += f" ({change})." if loss.regained else "."
    else:
        lines = [
            f"{loss.lost} of {loss.total} artifacts of the hidden messages are no longer named where the view stands "
            f"for them (its summary, pinned requests and masked messages); {change}:",
            "",
            *_items(loss.account.lost),
        ]
    if loss.regained:
        lines += ["", f"Named again ({loss.regained}: lost at an earlier compaction, named by this view):", ""]
        lines += _items(loss.named_again)
    return lines


def _items(by_kind: dict[str, list[str]]) -> list[str]:
    lines = []
    for kind in KINDS:
        items = by_kind.get(kind, [])
        if items:
            more = f" (+{len(items) - LOST_ITEMS_SHOWN} more)" if len(items) > LOST_ITEMS_SHOWN else ""
            shown = ", ".join(f"`{_inline(i)}`" for i in items[-LOST_ITEMS_SHOWN:])
            lines.append(f"- {kind}{more}: {shown}")
    return lines


def _inline(item: str) -> str:
    flat = " ".join(item.split()).replace("`", "'")
    return flat if len(flat) <= 120 else flat[:119] + "…"


# ---------------------------------------------------------------------------------------------- HTML

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1200px;padding:1em;color:#222}
h1,h2{font-weight:600}.legend span{display:inline-block;padding:.15em .6em;margin-right:.5em;border-radius:3px}
.system{background:#eef}.summarized{background:#fde9c8}.truncated{background:#f4cccc}
.masked{background:#e3f0e3}.verbatim{background:#fff;border:1px solid #ccc}
.span{display:grid;grid-template-columns:3fr 2fr;gap:1em;margin:.8em 0;padding:.5em;border-radius:4px}
.span.single{grid-template-columns:1fr}.msg{margin:.3em 0;padding:.3em .5em;background:rgba(255,255,255,.6)}
.role{font-weight:600;margin-right:.5em}.idx{color:#777;font-size:.85em}
pre{white-space:pre-wrap;word-break:break-word;margin:.2em 0;font:12px/1.4 ui-monospace,monospace}
details{background:#fffdf6;border:1px solid #e5c07b;border-radius:4px;padding:.3em .6em}
summary{cursor:pointer;font-weight:600}.lost{color:#a00}h1{overflow-wrap:anywhere}
.span>details{position:sticky;top:0;align-self:start;max-height:100vh;overflow:auto}
@media (max-width:640px){body{padding:.6em}h1{font-size:1.4em}.span{grid-template-columns:1fr}
.span>details{position:static;max-height:none}.legend span{margin:.15em .3em .15em 0}}
"""
"""Below 640 px (a phone) a segment's summary goes under its messages: two columns there are too narrow to read."""


def _esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _message_html(index: int | None, message: Message, note: str = "") -> str:
    text = clip_middle(message_text(message), DISPLAY_CHARS)
    where = f'<span class="idx">#{index}</span> ' if index is not None else ""
    return (
        f'<div class="msg">{where}<span class="role">{_esc(message.get("role"))}</span>{_esc(note)}'
        f"<pre>{_esc(text)}</pre></div>"
    )


def render_html(found: Inspection) -> str:
    manager = found.manager
    history, state = manager.history, manager.state
    groups = history.groups
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        # without it a phone lays the page out 980 px wide and shrinks it to fit: every text unreadably small
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_esc(found.name)}</title>",
        f"<style>{CSS}{inspect_chart.CSS}{inspect_table.CSS}</style></head><body>",
        f"<h1>{_esc(found.name)}</h1>",
        f"<p>{len(history.messages)} messages in {len(groups)} groups, budget {found.budget:,} tokens, "
        f"{plural(len(found.compactions), 'compaction')}, {_esc(summarizer_words(found))}. The stored history reached "
        f"{session_tokens(found):,} tokens (system messages included, as compact and --json count it); the last "
        f"request sent {_last_sent(found):,}.</p>",
        _chart(found),
        inspect_table.render_table(found.compactions),
        "<h2>The conversation as the last request saw it</h2>",
        '<p class="legend">'
        '<span class="system">system: always shown</span>'
        '<span class="summarized">summarized: shown as its segment summary</span>'
        '<span class="truncated">truncated: left out with a marker</span>'
        '<span class="masked">masked: shown with old tool outputs as placeholders</span>'
        '<span class="verbatim">verbatim: shown as stored</span></p>',
    ]
    system = list(history.system)
    if system:
        parts.append('<section class="span single system" id="system">')
        parts += [_message_html(i, history.messages[i]) for i in system]
        parts.append("</section>")
    system_set = set(system)

    def stored(a: int, b: int) -> list[str]:
        if a >= b:
            return []
        start, end = groups[a].start, groups[b - 1].end
        return [_message_html(i, history.messages[i]) for i in range(start, end) if i not in system_set]

    for n, segment in enumerate(state.segments):
        start, end = groups[segment.start].start, groups[segment.end - 1].end
        parts.append(f'<section class="span summarized" id="segment-{n}" data-groups="{segment.start}-{segment.end}">')
        parts.append(f"<div>{''.join(stored(segment.start, segment.end))}</div>")
        count = sum(1 for i in range(start, end) if i not in system_set)
        parts.append(
            f'<details class="segment-summary" open><summary>Summary of {count} messages ({start}–{end - 1}'
            f"{', system messages kept' if count < end - start else ''}; groups {segment.start}–{segment.end - 1}, "
            f"tier {segment.tier})</summary>"
            f"<pre>{_esc(segment.text)}</pre></details>"
        )
        parts.append("</section>")
    if state.boundary > state.summarized_end:
        parts.append('<section class="span single truncated" id="truncated">')
        parts += stored(state.summarized_end, state.boundary)
        parts.append("</section>")
    if state.tail_start > state.boundary and manager.masks is not None:
        parts.append('<section class="span masked" id="masked"><div>')
        parts += stored(state.boundary, state.tail_start)
        parts.append("</div><details><summary>As the view shows them (masked)</summary>")
        parts += [_message_html(None, m) for m in manager.masks.span(state.boundary, state.tail_start)]
        parts.append("</details></section>")
    parts.append('<section class="span single verbatim" id="verbatim">')
    parts += stored(state.tail_start, len(groups))
    parts.append("</section>")

    parts.append(inspect_table.render_details(found.compactions))
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def summarizer_words(found: Inspection) -> str:
    """Who wrote the summaries: ``extractive summarizer (offline)``, or the LLM's name and, when some of its
    summaries fell back offline, at how many compactions and why."""
    name = found.manager.summarizer.name
    if name == OFFLINE:
        return f"{OFFLINE} summarizer (offline)"
    faults = [str(r.payload["fallback"]) for r in found.compactions if r.payload.get("fallback")]
    if not faults:
        return f"{name} summarizer"
    why = ", ".join(sorted(set(faults)))
    return f"{name} summarizer, which failed ({why}) at {plural(len(faults), 'compaction')}: those fell back offline"


def session_tokens(found: Inspection) -> int:
    """Tokens of the whole recorded session, counted as ``compact`` reports ``history_tokens``."""
    return found.manager.counter.count_messages(found.manager.history.messages)


def _last_sent(found: Inspection) -> int:
    return found.requests[-1][1] if found.requests else 0


def _chart(found: Inspection) -> str:
    marks = [
        inspect_chart.Mark(r.number, r.at_message, r.payload["tokens_before"], r.payload["token_count"])
        for r in found.compactions
    ]
    return inspect_chart.chart_section(found.requests, marks, found.budget, len(found.manager.history.messages))


def run(args: argparse.Namespace) -> int:
    try:
        if args.html:
            check_file(args.html)  # before the replay: a path that cannot be written is said at once
        loaded = session_from_args(args)
        if loaded is None:
            return 2
        path, session = loaded
        messages = session.messages
        bar = progress_from_args(args, messages)
        try:
            found = asyncio.run(inspect_session(messages, args.budget, str(path), bar, args.summarizer))
        finally:
            bar.close()
        # Stored text may hold lone surrogates (a cut emoji) and a file name need not be UTF-8: what is printed or
        # written is scrubbed as a view sent to a provider is, and rendered in full before the file is opened.
        if args.html:
            write_file(args.html, render_html(found))
        if args.json:
            emit(json_line_safe(json.dumps(render_json(found, session.format), indent=2, default=str)) + "\n")
        elif args.html and not args.markdown:
            emit(read_line(path, session) + "\n" + headline(found) + "\n")
        else:
            emit(read_line(path, session) + "\n\n" + render_markdown(found))
    except OutputError as exc:
        return report(exc)
    except ValueError as exc:  # configuration, e.g. --summarizer anthropic without its API key
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.html:
        print(f"HTML written to {scrub_text(args.html)}", file=sys.stderr)
    return 0


def headline(found: Inspection) -> str:
    """What ``inspect --html`` prints instead of the whole Markdown (``--markdown`` adds it): the session's figures
    in one line."""
    sent = found.manager.counter.count_messages(found.view)
    return (
        f"{len(found.compactions)} compaction(s) at a budget of {found.budget:,} tokens; the stored history reached "
        f"{session_tokens(found):,} tokens, the final view is {len(found.view)} messages, {sent:,} tokens"
    )


SUMMARY_OPENINGS = (SUMMARY_MARKER, TRUNCATION_MARKER.split("{", 1)[0])


def _leads_as_summary(message: Message) -> bool:
    content = message.get("content")
    return message.get("role") == "user" and isinstance(content, str) and content.startswith(SUMMARY_OPENINGS)
