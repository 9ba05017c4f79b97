"""Turning runs into results: aggregates, ``results.md`` (tables) and ``results.json`` (everything)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from statistics import mean
from typing import Any

from ..cli.output import check_folder, write_file
from ..core.tables import markdown_table
from .cost_report import cost_summary, cost_table
from .loader import PROBE_KINDS
from .retention import BUCKETS, KINDS, MATCH_CHARS, combine
from .runner import ProbeResult, Run, Settings
from .scoring import DIMENSIONS, PUBLISHED

COST_NOTE = (
    "Each agent request's view billed under the provider's prompt cache as provider-anthropic sends it (breakpoints "
    "on the last tool, the system block and the last message; reads of prefixes written before, within 20 blocks "
    "of a breakpoint) or OpenAI's automatic prefix cache (128-token steps from 1,024), plus the summarizer's LLM "
    "input and output at the same model's price; in-eq tok: the bill in tokens of base input. "
    "`bench --cost` compares more policies and budgets."
)


def _mean(values: Iterable[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return mean(kept) if kept else None


REQUEST_FIELDS = (
    "full_tokens",
    "view_tokens",
    "tokens_saved",
    "compactions",
    "provider_calls",
    "cache_hits",
    "summaries",
    "summaries_per_100_turns",
    "summarizer_input_tokens",
    "summarizer_output_tokens",
    "extractive_tokens",
    "summarizer_tokens",
    "summarizer_tokens_per_session",
    "invalid_views",
    "fallbacks",
    "cut_views",
    "views_without_summary",
    "marker_views",
)


def aggregate(runs: list[Run]) -> dict[str, Any]:
    """Totals and means of a set of runs (one strategy, or one strategy on one session)."""
    every = [r for run in runs for r in run.records]
    records = [r for r in every if not r.probe_only]  # what the agent loop itself would have sent
    probes = [p for run in runs for p in run.probes]
    full = sum(r.full_tokens for r in records)
    view = sum(r.view_tokens for r in records)
    linked = [r.extends_previous for r in records if r.extends_previous is not None]
    turns = sum(run.turns for run in runs)
    summaries = sum(r.summaries for r in every)
    spent = sum(r.summarizer_input_tokens + r.summarizer_output_tokens + r.extractive_tokens for r in every)
    graded = [p for p in probes if p.judge_dimensions]
    result = {
        "sessions": len(runs),
        "requests": len(records),
        "probe_requests": len(every) - len(records),
        "probes": len(probes),
        "key_score": _mean(p.key_score for p in probes),
        "judge_score": _mean(p.judge_score for p in probes),
        "judge_errors": sum(1 for p in probes if p.judge_error),
        "judge_dimensions": {d: _mean(p.judge_dimensions.get(d) for p in graded) for d in DIMENSIONS}
        if graded
        else None,
        "judge_graded": len(graded),
        "judge_partial": sum(1 for p in graded if len(p.judge_dimensions) < len(DIMENSIONS)),
        "probe_view_tokens": _mean(p.view_tokens for p in probes),
        "full_tokens": full,
        "view_tokens": view,
        "tokens_saved": full - view,
        "saved_share": (1 - view / full) if full else None,
        "mean_view_tokens": view / len(records) if records else None,
        "max_view_tokens": max((r.view_tokens for r in records), default=None),
        "compactions": sum(r.compacted for r in every),
        "provider_calls": sum(r.provider_calls for r in every),
        "cache_hits": sum(r.cache_hits for r in every),
        "turns": turns,
        "summaries": summaries,
        "summaries_per_100_turns": 100 * summaries / turns if turns else None,
        "summarizer_input_tokens": sum(r.summarizer_input_tokens for r in every),
        "summarizer_output_tokens": sum(r.summarizer_output_tokens for r in every),
        "extractive_tokens": sum(r.extractive_tokens for r in every),
        "summarizer_tokens": spent,
        "summarizer_tokens_per_session": spent / len(runs) if runs else None,
        "retention": combine(run.retention for run in runs),
        "prefix_stability": sum(linked) / len(linked) if linked else None,
        "invalid_views": sum(not r.valid for r in every),
        "mean_wall_ms": _mean(r.wall_ms for r in every),
        "seconds": sum(run.seconds for run in runs),
    }
    result.update(llm_path(runs))
    if not every:  # reference runs make no requests: their request columns are not zero, they are absent
        result.update(dict.fromkeys(REQUEST_FIELDS))
    return result


def llm_path(runs: list[Run]) -> dict[str, Any]:
    """How the summarizer fared: compactions by fallback, failed background summaries, and the views left without
    a summary once the history was first cut.

    ``cut_views``: agent requests from the first whose view stands for cut history (a ``[CONTEXT SUMMARY]`` or
    ``[CONTEXT TRUNCATED]`` message) on; ``views_without_summary``: those of them with no summary in the view
    (``marker_views``: with the truncation marker instead). A compaction that only masked cuts nothing, so the
    hybrid's mask-only views before its first summary are not counted.
    """
    every = [r for run in runs for r in run.records]
    fallbacks: Counter[str] = Counter(f for r in every for f in r.fallbacks)
    failed: Counter[str] = Counter()
    cut = without = marker = 0
    for run in runs:
        failed.update(run.failed)
        records = [r for r in run.records if not r.probe_only]
        first = next((i for i, r in enumerate(records) if r.shows != "none"), None)
        if first is None:
            continue
        after = records[first:]
        cut += len(after)
        without += sum(r.shows != "summary" for r in after)
        marker += sum(r.shows == "marker" for r in after)
    ordered = dict(sorted(fallbacks.items(), key=lambda kv: (kv[0] != "none", -kv[1], kv[0])))
    return {
        "fallbacks": ordered,
        "failed_summaries": dict(sorted(failed.items())),
        "cut_views": cut,
        "views_without_summary": without,
        "marker_views": marker,
    }


def by_kind(runs: list[Run]) -> dict[str, dict[str, float | int | None]]:
    out = {}
    for kind in PROBE_KINDS:
        chosen = [p for run in runs for p in run.probes if p.kind == kind]
        out[kind] = {
            "probes": len(chosen),
            "key_score": _mean(p.key_score for p in chosen),
            "judge_score": _mean(p.judge_score for p in chosen),
        }
    return out


def strategy_names(runs: list[Run]) -> list[str]:
    return list(dict.fromkeys(run.strategy for run in runs))


def summarize_runs(runs: list[Run]) -> dict[str, Any]:
    names = strategy_names(runs)
    sessions = list(dict.fromkeys(run.session for run in runs))
    return {
        "strategies": {s: aggregate([r for r in runs if r.strategy == s]) for s in names},
        "by_kind": {s: by_kind([r for r in runs if r.strategy == s]) for s in names},
        "sessions": {
            name: {
                s: aggregate([r for r in runs if r.session == name and r.strategy == s])
                for s in names
                if any(r.session == name and r.strategy == s for r in runs)
            }
            for name in sessions
        },
        "references": [_reference_summary(run, runs) for run in runs if run.coverage is not None],
        "cost": cost_summary(runs),
    }


def _reference_summary(reference: Run, runs: list[Run]) -> dict[str, Any]:
    """The reference next to every strategy, on the probes the reference can answer (after its boundary)."""
    asked = {p.probe for p in reference.probes}
    scores: dict[str, Any] = {}
    for run in runs:
        if run.session != reference.session:
            continue
        chosen = [p for p in run.probes if p.probe in asked]
        scores[run.strategy] = {
            "probes": len(chosen),
            "key_score": _mean(p.key_score for p in chosen),
            "judge_score": _mean(p.judge_score for p in chosen),
            "probe_view_tokens": _mean(p.view_tokens for p in chosen),
        }
    return {
        "session": reference.session,
        "source": reference.strategy,
        "coverage": reference.coverage,
        "scores": scores,
    }


# ---------------------------------------------------------------- formatting


def _num(value: float | int | None, style: str = "int") -> str:
    if value is None:
        return "—"
    if style == "score":
        return f"{value:.2f}"
    if style == "judge":
        return f"{value:.1f}"
    if style == "pct":
        return f"{value * 100:.1f}%"
    return f"{round(value):,}"


def strategy_table(summary: dict[str, Any]) -> str:
    header = [
        "strategy",
        "probes",
        "key score",
        "judge (0–5)",
        "tokens saved",
        "mean view tok",
        "compactions",
        "summaries /100 turns",
        "summ. tok /session",
        "provider calls",
        "prefix stable",
        "invalid",
        "ms/request",
    ]
    rows = []
    for name, a in summary["strategies"].items():
        rows.append(
            [
                name,
                _num(a["probes"]),
                _num(a["key_score"], "score"),
                _num(a["judge_score"], "judge"),
                _num(a["saved_share"], "pct"),
                _num(a["mean_view_tokens"]),
                _num(a["compactions"]),
                _num(a["summaries_per_100_turns"], "judge"),
                _num(a["summarizer_tokens_per_session"]),
                _num(a["provider_calls"]),
                _num(a["prefix_stability"], "pct"),
                _num(a["invalid_views"]),
                _num(a["mean_wall_ms"], "judge"),
            ]
        )
    return "\n".join(markdown_table(header, rows))


def fallback_cell(fallbacks: dict[str, int] | None) -> str:
    """``none 40 · not_smaller 3``: compactions by what they fell back to."""
    if not fallbacks:
        return "—"
    return " · ".join(f"{name} {count:,}" for name, count in fallbacks.items())


def llm_table(summary: dict[str, Any]) -> str:
    """Per strategy: compactions by fallback, summarizer calls and tokens, views without a summary."""
    header = [
        "strategy",
        "compactions",
        "fallbacks",
        "LLM calls",
        "summ. in tok",
        "summ. out tok",
        "views after 1st cut",
        "without summary",
        "with marker",
    ]
    rows = []
    for name, a in summary["strategies"].items():
        if a["compactions"] is None:
            continue
        rows.append(
            [
                name,
                _num(a["compactions"]),
                fallback_cell(a["fallbacks"]),
                _num(a["provider_calls"]),
                _num(a["summarizer_input_tokens"]),
                _num(a["summarizer_output_tokens"]),
                _num(a["cut_views"]),
                _num(a["views_without_summary"]),
                _num(a["marker_views"]),
            ]
        )
    return "\n".join(markdown_table(header, rows))


LLM_NOTE = (
    "fallbacks: the compactions by the `fallback` of their `context:post_compact` event (none: the configured "
    "summarizer wrote every summary needed; else the first failure category: not_smaller, empty, refusal, "
    "circuit_open, deadline, server_error, marker, …). LLM calls: provider calls, retries included; summ. in/out "
    "tok: what the provider reported. views after 1st cut: agent requests from the first whose view stands for cut "
    "history (a summary or the truncation marker) on; without summary: those with no `[CONTEXT SUMMARY]` message; "
    "with marker: those showing `[CONTEXT TRUNCATED]` instead (for mask and truncation that is every cut view)."
)


BUCKET_LABELS = {"3-4": "3–4", "5-7": "5–7"}


def retention_table(summary: dict[str, Any]) -> str:
    header = [
        "strategy",
        "views",
        "retained",
        *KINDS,
        *(f"after {BUCKET_LABELS.get(b, b)}" for b in BUCKETS),
    ]
    rows = []
    for name, a in summary["strategies"].items():
        kept = a.get("retention")
        if not kept:
            continue
        rows.append(
            [
                name,
                _num(kept["measurements"]),
                _share_cell(kept["overall"]),
                *(_share_cell(kept["kinds"][k]) for k in KINDS),
                *(_share_cell(kept["buckets"][b]) for b in BUCKETS),
            ]
        )
    return "\n".join(markdown_table(header, rows)) if rows else ""


def _share_cell(tally: dict[str, Any]) -> str:
    return "—" if not tally["total"] else f"{_num(tally['share'], 'pct')} (n={tally['total']:,})"


def retention_lines(summary: dict[str, Any]) -> list[str]:
    """One line per strategy for the console: the share retained, overall and after 1, 2, 3–4, 5–7, 8+ compactions."""
    measured = {n: a["retention"] for n, a in summary["strategies"].items() if a.get("retention")}
    if not measured:
        return []
    width = max(len(n) for n in measured)
    buckets = " / ".join(BUCKET_LABELS.get(b, b) for b in BUCKETS)
    lines = [f"artifact retention (named in the view): all | after {buckets} compactions"]
    for name, kept in measured.items():
        after = " / ".join(_num(kept["buckets"][b]["share"], "pct") for b in BUCKETS)
        lines.append(f"  {name:<{width}}  {_num(kept['overall']['share'], 'pct')} | {after}")
    return lines


def judge_table(summary: dict[str, Any]) -> str:
    """Per-dimension means of the judge's rubric; empty when no judge graded on it."""
    graded = {n: a for n, a in summary["strategies"].items() if a.get("judge_dimensions")}
    if not graded:
        return ""
    header = ["strategy", *(d.replace("_", " ") for d in DIMENSIONS), "overall", "graded"]
    rows = [
        [
            name,
            *(_num(a["judge_dimensions"][d], "score") for d in DIMENSIONS),
            _num(a["judge_score"], "score"),
            _num(a["judge_graded"]),
        ]
        for name, a in graded.items()
    ]
    rows.append(
        [
            "Factory.ai (published, best)",
            *(_num(PUBLISHED.get(d), "score") for d in DIMENSIONS),
            _num(PUBLISHED["overall"], "score"),
            "—",
        ]
    )
    return "\n".join(markdown_table(header, rows))


def kind_table(summary: dict[str, Any]) -> str:
    header = ["strategy", *PROBE_KINDS, "all"]
    rows = []
    for name, kinds in summary["by_kind"].items():
        overall = summary["strategies"][name]
        cells = [_score_cell(k["key_score"], k["judge_score"], k["probes"]) for k in kinds.values()]
        rows.append([name, *cells, _score_cell(overall["key_score"], overall["judge_score"], overall["probes"])])
    return "\n".join(markdown_table(header, rows))


def _score_cell(key: float | None, judge: float | None, count: int) -> str:
    if not count:
        return "—"
    cell = f"{_num(key, 'score')} (n={count})"
    return cell if judge is None else f"{cell}, judge {_num(judge, 'judge')}"


def session_table(summary: dict[str, Any]) -> str:
    header = [
        "session",
        "strategy",
        "requests",
        "probes",
        "key score",
        "judge",
        "tokens saved",
        "compactions",
        "summaries",
        "summ. tok",
        "retained",
        "provider calls",
        "prefix stable",
        "invalid",
    ]
    rows = []
    for session, strategies in summary["sessions"].items():
        for name, a in strategies.items():
            kept = a.get("retention")
            rows.append(
                [
                    session,
                    name,
                    _num(a["requests"]),
                    _num(a["probes"]),
                    _num(a["key_score"], "score"),
                    _num(a["judge_score"], "judge"),
                    _num(a["saved_share"], "pct"),
                    _num(a["compactions"]),
                    _num(a["summaries"]),
                    _num(a["summarizer_tokens"]),
                    _share_cell(kept["overall"]) if kept else "—",
                    _num(a["provider_calls"]),
                    _num(a["prefix_stability"], "pct"),
                    _num(a["invalid_views"]),
                ]
            )
    return "\n".join(markdown_table(header, rows))


def reference_table(summary: dict[str, Any]) -> str:
    if not summary["references"]:
        return ""
    sources = {ref["source"] for ref in summary["references"]}
    strategies = [s for s in summary["strategies"] if s not in sources]
    header = [
        "session",
        "reference",
        "boundary",
        "summary size",
        "files kept",
        "one-shot files kept",
        "one-shot size",
        "reference view tok",
        "reference key",
        *(f"{s} key" for s in strategies),
    ]
    rows = []
    for ref in summary["references"]:
        cov = ref["coverage"]
        oneshot = cov.get("oneshot") or {}
        scores = ref["scores"]
        files = f"{_num(cov['file_share'], 'pct')} ({len(cov['found'])}/{len(cov['files'])})"
        shot_files = (
            f"{_num(oneshot.get('file_share'), 'pct')} ({len(oneshot['found'])}/{len(oneshot['files'])})"
            if oneshot
            else "—"
        )
        rows.append(
            [
                ref["session"],
                ref["source"],
                _num(cov["boundary"]),
                _num(cov["size_share"], "pct"),
                files,
                shot_files,
                _num(oneshot.get("size_share"), "pct"),
                _num(scores.get(ref["source"], {}).get("probe_view_tokens")),
                *(
                    _score_cell(
                        scores.get(s, {}).get("key_score"),
                        scores.get(s, {}).get("judge_score"),
                        scores.get(s, {}).get("probes", 0),
                    )
                    for s in [ref["source"], *strategies]
                ),
            ]
        )
    return "\n".join(markdown_table(header, rows))


def markdown(summary: dict[str, Any], settings: dict[str, Any]) -> str:
    parts = [
        "# Context compaction evaluation",
        "",
        _settings_line(settings),
        "",
        "## Strategies",
        "",
        strategy_table(summary),
        "",
        "key score: share of each probe's key facts present in the view at the probe (case-insensitive); "
        "judge: an answering model reads only that view and a judge grades its answer 0–5 (the mean of the six "
        "rubric dimensions below). tokens saved: 1 − Σ view tokens / Σ full-history tokens over all requests. "
        "summaries /100 turns: segment summaries and tier merges written (by the LLM or extractively; cache hits "
        "not counted) per 100 assistant messages replayed. summ. tok /session: summarizer tokens per session: "
        "the input and output tokens the provider reported for LLM calls, plus, for extractive summaries, the "
        "tokens of the span read and of the summary written. prefix stable: share of requests whose view extends "
        "the previous one (the provider's prompt cache stays warm). Reference rows (another tool's own summary, "
        "e.g. claude-code) score only the probes asked after that summary's boundary: compare them in the last "
        "table.",
        "",
        "## Prompt-cache cost",
        "",
        cost_table(summary.get("cost") or {}),
        "",
        COST_NOTE,
        "",
        "## Scores by probe kind",
        "",
        kind_table(summary),
        "",
        "## Summarizer path",
        "",
        llm_table(summary),
        "",
        LLM_NOTE,
    ]
    retention = retention_table(summary)
    if retention:
        parts += [
            "",
            "## Artifact retention",
            "",
            retention,
            "",
            "Measured on the view of every request that compacted. Artifacts: the files, commands and errors the "
            "module's ledger finds in the groups before the view's verbatim tail (summarized, masked or dropped), "
            "leaving out those the tail itself contains; retained: named anywhere in the view's text, spelled as "
            "the working set spells them (paths relative to the project root, or a file's name on a line naming "
            "its folder; a command run there without its `cd <root> &&`; commands and errors on their first "
            f"{MATCH_CHARS} characters, whitespace collapsed). after N: artifacts whose last verbatim occurrence "
            "left the tail N compactions "
            "ago (the compaction that took it out is the first). n counts (artifact, view) pairs: an artifact is "
            "counted again at every later compaction.",
        ]
    judged = judge_table(summary)
    if judged:
        parts += [
            "",
            "## Judge rubric (0–5)",
            "",
            judged,
            "",
            "The six dimensions of Factory.ai's probe evaluation (\"Evaluating Context Compression for AI "
            'Agents", 2025), each graded 0–5 by the judge on the answer given from the view; overall is their '
            "mean. The published row is the best method there (Factory's own summarizer, on its own sessions "
            "and probes): set beside it for scale, not as a like-for-like comparison.",
        ]
    parts += [
        "",
        "## Per session",
        "",
        session_table(summary),
    ]
    reference = reference_table(summary)
    if reference:
        parts += [
            "",
            "## Reference summaries",
            "",
            reference,
            "",
            "summary size: the summary's characters as a share of the summarized span's. files kept: files the "
            "span touched (its working set: one spelling each, relative to the workspace root) that the summary "
            "names, by path or by name on a line naming its folder. one-shot: the summary message the evaluated "
            "summarizer gives the same span in one call, working set included. reference view tok: mean size of the "
            "reference's view at its probes (its summary plus everything after the boundary: not held to the "
            "budget). Key scores are over the probes asked after the boundary, for every strategy alike.",
        ]
    return "\n".join(parts) + "\n"


def _settings_line(settings: dict[str, Any]) -> str:
    judge = settings.get("judge") or "none (deterministic scoring only)"
    large = settings.get("large_outputs")
    grown = f" · {large:,} tool outputs grown to 20–30k characters" if large else ""
    return (
        f"Budget {settings['budget']:,} tokens · summarizer {settings['summarizer']} · judge {judge} · "
        f"{settings['sessions']} sessions{grown} · {settings['seconds']:.1f} s"
    )


def console_summary(summary: dict[str, Any], settings: dict[str, Any]) -> str:
    parts = [_settings_line(settings), "", strategy_table(summary), "", kind_table(summary), "", llm_table(summary)]
    costs = cost_table(summary.get("cost") or {})
    if costs:
        parts += ["", costs]
    retention = retention_lines(summary)
    if retention:
        parts += ["", *retention]
    judged = judge_table(summary)
    if judged:
        parts += ["", "judge rubric (0–5; the dimensions of Factory.ai's probe evaluation):", judged]
    return "\n".join(parts) + "\n"


def write_results(out: Path, runs: list[Run], settings: Settings, extra: dict[str, Any]) -> dict[str, Any]:
    """Write results.md and results.json into ``out``; return the summary."""
    check_folder(out)
    summary = summarize_runs(runs)
    described = {
        "budget": settings.budget,
        "strategies": list(settings.strategies),
        "summarizer": settings.summarizer.label,
        **extra,
    }
    write_file(out / "results.md", markdown(summary, described))
    data = {"settings": described, "summary": summary, "runs": [run.as_dict() for run in runs]}
    write_file(out / "results.json", json.dumps(data, ensure_ascii=False, indent=1) + "\n")
    return summary


def probe_scores(runs: list[Run]) -> dict[tuple[str, str, str], tuple[float, float | None]]:
    """(session, strategy, probe) → (key score, judge score): what a replay must reproduce exactly."""
    return {(run.session, run.strategy, p.probe): _pair(p) for run in runs for p in run.probes}


def _pair(p: ProbeResult) -> tuple[float, float | None]:
    return p.key_score, p.judge_score
