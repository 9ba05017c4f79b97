"""What ``compact`` prints: the result first, then what was kept and what was lost, one line per compaction.

The final summary, the final view and the raw report are behind flags (``--summary``, ``--view``, ``--report``):
a newcomer's first screen is the answer, not a dump. A summarizer that failed is said once, with why, on the
headline and in one ``warning:`` line, so summaries written offline never pass for the LLM's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..core.messages import Message, message_text
from ..core.words import plural

OFFLINE = "extractive"
"""The offline summarizer every failed LLM summary falls back to."""


def fallback_words(report: Mapping[str, Any]) -> str | None:
    """``anthropic failed (connection) at 1 of 1 compactions that summarized``, or None when every summary came
    from the summarizer asked for (or the offline one was asked for)."""
    fell_back = report.get("offline_fallbacks") or 0
    if not fell_back or report.get("summarizer") == OFFLINE:
        return None
    why = ", ".join(report.get("fallbacks") or []) or "unknown"
    asked = report.get("summarizing_compactions") or fell_back
    return f"{report['summarizer']} failed ({why}) at {fell_back} of {plural(asked, 'compaction')} that summarized"


def fallback_warning(report: Mapping[str, Any]) -> str | None:
    """The one stderr line for summaries that fell back offline, or None."""
    words = fallback_words(report)
    if words is None:
        return None
    return f"warning: summaries fell back to the offline {OFFLINE} summarizer: {words}"


def headline(report: Mapping[str, Any]) -> str:
    """``tokens: A in the session -> B in the final view (N% saved), budget C; …``, or that the session fits."""
    before, after, budget = report["history_tokens"], report["view_tokens"], report["budget"]
    requests = plural(report["requests"], "request")
    if not report["compactions"]:
        fits = "fits" if after <= budget else "does not fit"
        return f"tokens: {before:,} in the session, {fits} the budget of {budget:,}: nothing to compact ({requests})"
    saved = 100 * (before - after) / before if before else 0.0
    line = (
        f"tokens: {before:,} in the session -> {after:,} in the final view ({saved:.0f}% saved), budget {budget:,}; "
        f"{plural(report['compactions'], 'compaction')} in {requests}"
    )
    if report.get("summarizing_compactions"):
        words = fallback_words(report)
        who = f"{OFFLINE}, offline: {words}" if words else str(report.get("summarizer"))
        line += f"; summaries: {who}"
    return line


def kept_line(report: Mapping[str, Any]) -> str | None:
    """What the final view keeps of the session, or None when nothing was compacted (or a report without the
    view's figures)."""
    if not report["compactions"] or "view_messages" not in report:
        return None
    parts = []
    if report.get("summarized_messages"):
        parts.append(f"a [CONTEXT SUMMARY] for the oldest {plural(report['summarized_messages'], 'message')}")
    if report.get("masked_messages"):
        parts.append(f"{plural(report['masked_messages'], 'message')} with tool outputs masked")
    if report.get("recent_messages") is not None:
        parts.append(f"the newest {plural(report['recent_messages'], 'message')} as they were")
    return f"kept: {plural(report['view_messages'], 'message')} in the final view: " + ", ".join(parts)


def lost_line(report: Mapping[str, Any]) -> str | None:
    """How many artifacts of the hidden messages the final view no longer names, or None when nothing was hidden."""
    losses = report.get("losses") or []
    if not losses:
        return None
    last = losses[-1]
    return (
        f"lost: {last['lost_so_far']:,} of {plural(last['hidden_artifacts'], 'artifact')} (files, commands, ids, "
        "errors) of the hidden messages are no longer named in the final view; `inspect` lists them"
    )


def compaction_label(compaction: Mapping[str, Any]) -> str:
    """What this compaction did, true to it: the messages it newly summarized (and how many the summary now holds),
    or that it only masked tool outputs; the strategy's name when the event does not say."""
    newly, total = compaction.get("newly_summarized"), compaction.get("summarized_messages") or 0
    if newly:
        return f"{plural(newly, 'message')} summarized, {total:,} in the summary now"
    if compaction.get("newly_masked"):
        return "masked tool outputs only" + (f", {total:,} in the summary" if total else "")
    if newly is None and compaction.get("strategy") == "summarize" and not total:
        return "masked tool outputs only"  # an event from before the ``newly_*`` fields
    return str(compaction.get("strategy"))


def change(before: int, after: int) -> str:
    """``-48%``, or ``+1%`` for a view that grew (a compaction over the budget may only hide a large output)."""
    if not before:
        return "-0%"
    cut = 100 * (before - after) / before
    return f"-{cut:.0f}%" if cut >= 0 else f"+{-cut:.0f}%"


def loss_words(loss: Mapping[str, Any] | None) -> str:
    """``; artifacts: 8 newly lost, 12 named again (4 of 56 lost so far)``; nothing when nothing changed."""
    if not loss or not (loss["newly_lost"] or loss["named_again"]):
        return ""
    parts = [f"{loss['newly_lost']} newly lost"] if loss["newly_lost"] else []
    parts += [f"{loss['named_again']} named again"] if loss["named_again"] else []
    return f"; artifacts: {', '.join(parts)} ({loss['lost_so_far']} of {loss['hidden_artifacts']} lost so far)"


def compaction_line(number: int, compaction: Mapping[str, Any]) -> str:
    before, after = compaction["tokens_before"], compaction["token_count"]
    return (
        f"  compaction {number}: {before:,} -> {after:,} tokens ({change(before, after)}), "
        f"{compaction_label(compaction)}{loss_words(compaction.get('loss'))}"
    )


def render_result(result: Mapping[str, Any]) -> str:
    """The headline, what was kept and lost, then one line per compaction."""
    report = result["report"]
    lines = [headline(report)]
    lines += [line for line in (kept_line(report), lost_line(report)) if line]
    compactions = result.get("compactions") or []
    if compactions:
        lines += [compaction_line(i, c) for i, c in enumerate(compactions, start=1)]
    return "\n".join(lines)


def more_line(summary: str, shown: Mapping[str, bool]) -> str | None:
    """What the flags not given would add, in one line (None when every one was given)."""
    offers = []
    if summary and not shown.get("summary"):
        offers.append(f"--summary the final [CONTEXT SUMMARY] ({len(summary):,} characters)")
    if not shown.get("view"):
        offers.append("--view every message of the final view")
    if not shown.get("report"):
        offers.append("--report every figure")
    offers.append("--json all of it")
    return "more: " + ", ".join(offers) if len(offers) > 1 else None


def render_report(report: Mapping[str, Any]) -> str:
    """``--report``: every figure of the report, one a line (what the lines above tell, told once more in full)."""
    lines = ["report:"]
    for key, value in report.items():
        if key == "losses":
            continue  # told per compaction above
        if isinstance(value, list):
            value = ", ".join(str(v) for v in value) or "none"
        lines.append(f"  {key}: {'none' if value is None else value}")
    return "\n".join(lines)


MARKER = re.compile(
    r"\[clipped: [^\]\n]{0,400}\]"
    r"|\[\.\.\. [\d,]+ characters clipped[^\]\n]{0,400}\]"
    r"|\[tool output masked: [^\]\n]{0,400}\]"
)
"""The markers the view itself carries (``core.clip``, ``compaction.view.masking``): printed whatever the display
leaves out, since each names the handle that recalls what it stands for."""


def _not_printed(count: int) -> str:
    return f" <display: {count:,} characters not printed> " if count else ""


def display_cut(text: str, width: int) -> str:
    """``text`` shortened for the terminal to about ``width`` characters, its middle replaced by a note unlike any
    marker the view sends (``<display: N characters not printed>``); a real marker the cut reaches is printed whole.
    Linear in the text."""
    if len(text) <= width:
        return text
    half = width // 2
    pos, end = half, len(text) - half
    parts = [text[:half]]
    for marker in MARKER.finditer(text):
        if marker.end() <= pos:
            continue
        if marker.start() >= end:
            break
        parts += [_not_printed(max(marker.start() - pos, 0)), text[max(marker.start(), pos) : marker.end()]]
        pos = marker.end()
    parts += [_not_printed(max(end - pos, 0)), text[max(end, pos) :]]
    return "".join(parts)


def render_view(view: list[Message], width: int = 400) -> str:
    """``--view``: the final request view, message by message, each shortened for the terminal."""
    lines = []
    for i, message in enumerate(view):
        text = display_cut(message_text(message), width).replace("\n", "\n    ")
        lines.append(f"[{i}] {message.get('role')}: {text}")
    return "\n".join(lines)
