"""The losses of ``inspect --html``: a table of compactions near the top, and one detail section per compaction.

Each row gives, without expanding anything, what the compaction newly took out of the verbatim view (messages
summarized, truncated or masked), what it newly lost and what is named again (by kind), and the running total: the
account ``compact`` prints (``losses``), so the total falls exactly by what is named again. Its number links to
``#compaction-N``. A detail section lists the newly lost and the named-again artifacts in full and keeps the summary
and the complete lost list folded.
"""

from __future__ import annotations

import html
from typing import Any

from ..compaction.view.losses import KINDS
from .losses import Loss

CSS = """
div.table-scroll{overflow-x:auto;max-width:100%}
table.compactions{border-collapse:collapse;width:100%;margin:.3em 0 1em;font-size:13px}
table.compactions th,table.compactions td{border-bottom:1px solid #e2e2e2;padding:.22em .5em;text-align:left;
vertical-align:top}table.compactions th{background:#f3f4f8;font-weight:600}table.compactions .n{text-align:right;
white-space:nowrap}td.lost-new{color:#a00}td.lost-none{color:#777}td.named-again{color:#070}
section.compaction{border:1px solid #e5c07b;border-radius:4px;padding:.2em .8em .6em;margin:.8em 0;background:#fffdf6}
section.compaction h3{margin:.4em 0}section.compaction ul{margin:.2em 0;overflow-wrap:anywhere}a.up{font-size:.85em}
@media (max-width:640px){table.compactions thead{display:none}table.compactions tr{display:block;padding:.3em 0;
border-bottom:1px solid #ccc}table.compactions td,table.compactions .n{display:block;border:0;padding:.05em .2em;
text-align:left;white-space:normal;overflow-wrap:anywhere}table.compactions td::before{content:attr(data-label) ": ";
color:#555;font-weight:600}}
"""
"""Below 640 px (a phone) each row becomes a card, one labelled line per column: seven columns side by side would
put the losses off-screen."""

SINGULAR = {"files": "file", "commands": "command", "urls": "URL", "identifiers": "id", "errors": "error"}
PLURAL = {"urls": "URLs", "identifiers": "ids"}


def _esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _kinds(counts: dict[str, list[str]]) -> str:
    """``2 files, 1 error``."""
    return ", ".join(
        f"{len(items)} {SINGULAR[kind] if len(items) == 1 else PLURAL.get(kind, kind)}"
        for kind in KINDS
        if (items := counts.get(kind))
    )


def _hidden(record: Any) -> str:
    return "; ".join(f"{form} {end - first} (messages {first}–{end - 1})" for form, _, _, first, end in record.newly)


def render_table(records: list[Any]) -> str:
    parts = ['<h2 id="compactions">Compactions: what each one hid and lost</h2>']
    if not records:
        return parts[0] + "<p>None: the session fits the budget.</p>"
    parts.append(
        '<div class="table-scroll"><table class="compactions"><thead><tr><th class="n">#</th>'
        '<th class="n">at message</th>'
        '<th class="n">view tokens</th><th>newly hidden</th><th>newly lost</th><th>named again</th>'
        '<th class="n">lost so far</th>'
        "</tr></thead><tbody>"
    )
    for record in records:
        p, loss = record.payload, record.loss
        lost_cell = (
            f'<td class="lost-new" data-label="newly lost">{loss.newly}: {_esc(_kinds(loss.newly_lost))}</td>'
            if loss.newly
            else '<td class="lost-none" data-label="newly lost">0</td>'
        )
        again_cell = (
            f'<td class="named-again" data-label="named again">{loss.regained}: {_esc(_kinds(loss.named_again))}</td>'
            if loss.regained
            else '<td class="lost-none" data-label="named again">0</td>'
        )
        parts.append(
            f'<tr id="row-{record.number}"><td class="n" data-label="compaction">'
            f'<a href="#compaction-{record.number}">{record.number}</a></td>'
            f'<td class="n" data-label="at message">{record.at_message}</td>'
            f'<td class="n" data-label="view tokens">{p["tokens_before"]:,} → {p["token_count"]:,}</td>'
            f'<td data-label="newly hidden">{_esc(_hidden(record) or "—")}</td>{lost_cell}{again_cell}'
            f'<td class="n" data-label="lost so far">{loss.lost} of {loss.total}</td></tr>'
        )
    parts.append("</tbody></table></div>")  # on a phone each row is a card (CSS); the box scrolls only as a last resort
    return "".join(parts)


def _list(by_kind: dict[str, list[str]]) -> str:
    items = "".join(f"<li>{_esc(kind)}: {_esc(', '.join(items))}</li>" for kind, items in by_kind.items() if items)
    return f"<ul>{items}</ul>"


def _changes(loss: Loss) -> list[str]:
    """What this compaction newly lost, and what is named again (why the running total may fall)."""
    parts = []
    if loss.newly:
        parts.append(
            f'<p class="lost">Newly lost ({loss.newly}: {_esc(_kinds(loss.newly_lost))}), no longer named where the '
            f"view stands for them:</p>{_list(loss.newly_lost)}"
        )
    else:
        parts.append("<p>Nothing newly lost.</p>")
    if loss.regained:
        parts.append(
            f"<p>Named again ({loss.regained}: {_esc(_kinds(loss.named_again))}), lost at an earlier compaction and "
            f"named by this view, so the total falls by as many:</p>{_list(loss.named_again)}"
        )
    return parts


def render_details(records: list[Any]) -> str:
    parts = ["<h2>Compaction details</h2>"]
    if not records:
        return parts[0] + "<p>None: the session fits the budget.</p>"
    for record in records:
        p, loss = record.payload, record.loss
        parts.append(
            f'<section class="compaction" id="compaction-{record.number}"><h3>Compaction {record.number} at message '
            f"{record.at_message}: {p['tokens_before']:,} → {p['token_count']:,} tokens (budget {p['budget']:,})</h3>"
            f"<p>Newly hidden: {_esc(_hidden(record) or 'nothing')}. Hidden in all (summarized or masked): messages "
            f"0–{record.hidden_messages - 1}; {p['summarized_messages']} summarized in {p['segments']} segment(s)"
            + (f"; fallback <code>{_esc(p['fallback'])}</code>" if p.get("fallback") else "")
            + ".</p>"
        )
        parts += _changes(loss)
        if loss.lost:
            parts.append(
                f"<details><summary>Lost so far: {loss.lost} of {loss.total} artifacts of the hidden messages are no "
                "longer named where the view stands for them</summary>"
                f"{_list(loss.account.lost)}</details>"
            )
        else:
            parts.append(
                f"<p>Nothing lost so far: all {loss.total} artifacts of the hidden messages are named where the view "
                "stands for them.</p>"
            )
        summary = record.summary or "(no summary message: only masking so far)"
        parts.append(
            f"<details><summary>Summary message ({len(record.summary):,} characters)</summary>"
            f'<pre>{_esc(summary)}</pre></details><a class="up" href="#row-{record.number}">↑ back to the table</a>'
            "</section>"
        )
    return "".join(parts)
