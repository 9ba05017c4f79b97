"""The losses of ``inspect --html``: a table of compactions near the top, and one detail section per compaction.

Each row gives, without expanding anything, what the compaction newly took out of the verbatim view (messages
summarized, truncated or masked) and what it newly lost (artifacts of the hidden messages that the view named
before it and no longer names, by kind), with the running total; its number links to ``#compaction-N``. A detail
section lists the newly lost artifacts in full and keeps the summary and the complete lost list folded.
"""

from __future__ import annotations

import html
from typing import Any

from ..compaction.view.losses import KINDS

CSS = """
div.table-scroll{overflow-x:auto;max-width:100%}
table.compactions{border-collapse:collapse;width:100%;margin:.3em 0 1em;font-size:13px}
table.compactions th,table.compactions td{border-bottom:1px solid #e2e2e2;padding:.22em .5em;text-align:left;
vertical-align:top}table.compactions th{background:#f3f4f8;font-weight:600}table.compactions .n{text-align:right;
white-space:nowrap}td.lost-new{color:#a00}td.lost-none{color:#777}
section.compaction{border:1px solid #e5c07b;border-radius:4px;padding:.2em .8em .6em;margin:.8em 0;background:#fffdf6}
section.compaction h3{margin:.4em 0}section.compaction ul{margin:.2em 0;overflow-wrap:anywhere}a.up{font-size:.85em}
"""

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


def newly_lost(records: list[Any]) -> list[dict[str, list[str]]]:
    """Per compaction, the lost artifacts that the previous compaction's account did not already list as lost."""
    before: dict[str, set[str]] = {kind: set() for kind in KINDS}
    found = []
    for record in records:
        lost = record.lost.lost
        found.append({kind: [i for i in lost.get(kind, []) if i not in before[kind]] for kind in KINDS})
        before = {kind: set(lost.get(kind, [])) for kind in KINDS}
    return found


def _hidden(record: Any) -> str:
    return "; ".join(f"{form} {end - first} (messages {first}–{end - 1})" for form, _, _, first, end in record.newly)


def render_table(records: list[Any]) -> str:
    parts = ['<h2 id="compactions">Compactions: what each one hid and lost</h2>']
    if not records:
        return parts[0] + "<p>None: the session fits the budget.</p>"
    parts.append(
        '<div class="table-scroll"><table class="compactions"><thead><tr><th class="n">#</th>'
        '<th class="n">at message</th>'
        '<th class="n">view tokens</th><th>newly hidden</th><th>newly lost</th><th class="n">lost so far</th>'
        "</tr></thead><tbody>"
    )
    for record, new in zip(records, newly_lost(records), strict=True):
        p, lost = record.payload, record.lost
        count = sum(map(len, new.values()))
        total = lost.lost_count + lost.kept_count
        lost_cell = (
            f'<td class="lost-new">{count}: {_esc(_kinds(new))}</td>' if count else '<td class="lost-none">0</td>'
        )
        parts.append(
            f'<tr id="row-{record.number}"><td class="n"><a href="#compaction-{record.number}">{record.number}</a></td>'
            f'<td class="n">{record.at_message}</td>'
            f'<td class="n">{p["tokens_before"]:,} → {p["token_count"]:,}</td>'
            f"<td>{_esc(_hidden(record) or '—')}</td>{lost_cell}"
            f'<td class="n">{lost.lost_count} of {total}</td></tr>'
        )
    parts.append("</tbody></table></div>")  # scrolls sideways on a phone-width screen, the page does not
    return "".join(parts)


def render_details(records: list[Any]) -> str:
    parts = ["<h2>Compaction details</h2>"]
    if not records:
        return parts[0] + "<p>None: the session fits the budget.</p>"
    for record, new in zip(records, newly_lost(records), strict=True):
        p, lost = record.payload, record.lost
        count = sum(map(len, new.values()))
        parts.append(
            f'<section class="compaction" id="compaction-{record.number}"><h3>Compaction {record.number} at message '
            f"{record.at_message}: {p['tokens_before']:,} → {p['token_count']:,} tokens (budget {p['budget']:,})</h3>"
            f"<p>Newly hidden: {_esc(_hidden(record) or 'nothing')}. Hidden in all (summarized or masked): messages "
            f"0–{record.hidden_messages - 1}; {p['summarized_messages']} summarized in {p['segments']} segment(s)"
            + (f"; fallback <code>{_esc(p['fallback'])}</code>" if p.get("fallback") else "")
            + ".</p>"
        )
        if count:
            kinds = _esc(_kinds(new))
            parts.append(f'<p class="lost">Newly lost ({count}: {kinds}), no longer named in the view:</p><ul>')
            parts += [f"<li>{_esc(kind)}: {_esc(', '.join(items))}</li>" for kind, items in new.items() if items]
            parts.append("</ul>")
        else:
            parts.append("<p>Nothing newly lost.</p>")
        total = lost.lost_count + lost.kept_count
        if lost.lost_count:
            parts.append(
                f"<details><summary>Lost so far: {lost.lost_count} of {total} artifacts of the hidden messages "
                "are no longer named in the view</summary><ul>"
            )
            parts += [f"<li>{_esc(kind)}: {_esc(', '.join(items))}</li>" for kind, items in lost.lost.items() if items]
            parts.append("</ul></details>")
        else:
            parts.append(f"<p>Nothing lost so far: all {total} artifacts of the hidden messages are still named.</p>")
        summary = record.summary or "(no summary message: only masking so far)"
        parts.append(
            f"<details><summary>Summary message ({len(record.summary):,} characters)</summary>"
            f'<pre>{_esc(summary)}</pre></details><a class="up" href="#row-{record.number}">↑ back to the table</a>'
            "</section>"
        )
    return "".join(parts)
