"""Plain-text tables of a benchmark result (the JSON form is ``BenchResult.to_json``)."""

from __future__ import annotations

from .cold_llm import COLD_LLM_BUDGET
from .costs import STATES
from .fixtures import BUDGET
from .long_session import LongCosts
from .run import BenchResult
from .targets import COLD_LLM_S, COLD_LLM_SIZE

US, MS, MB = 1e6, 1e3, 1 / 1e6


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = "  ".join(h.rjust(w) if i else h.ljust(w) for i, (h, w) in enumerate(zip(header, widths, strict=True)))
    out = [line, "-" * len(line)]
    for row in rows:
        out.append("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))))
    return out


def _long_session(runs: list[LongCosts]) -> list[str]:
    """Compaction CPU time at each checkpoint of the long session, per kind, and how flat it stays."""
    if not runs:
        return []
    first = runs[0]
    lines = [
        f"Long session: CPU time per compaction ({first.budget:,}-token budget, a coding session whose working set "
        "keeps growing;",
        f"  median / max of the last {max(c.samples for c in first.checkpoints)} compactions before each checkpoint)",
    ]
    checkpoints = [f"{c.messages:,} msgs ms" for c in first.checkpoints]
    header = ["strategy", *checkpoints, "span msgs", "compactions", "fell back", "last/first"]
    rows = []
    for run in runs:
        cells = [f"{c.median_s * MS:.1f} / {c.max_s * MS:.1f}" for c in run.checkpoints]
        span = run.checkpoints[-1].span_messages
        rows.append([run.kind, *cells, f"{span:.0f}", str(run.compactions), str(run.fallbacks), f"{run.flatness:.2f}x"])
    lines += _table(header, rows)
    lines.append("  target: last/first <= 1.5x (a compaction costs its span, not the history behind it)")
    late = first.checkpoints[-2].messages if len(first.checkpoints) > 1 else 0
    lags = ", ".join(
        f"{run.kind} {run.loop_lag_s * MS:.0f} ms (from {late:,} msgs: {run.loop_lag_last_s * MS:.0f} ms)"
        for run in runs
    )
    lines.append(
        f"  event loop blocked at most by the module (heartbeat lag less garbage-collector pauses): {lags}; "
        "target <= 50 ms at the last checkpoint"
    )
    collector = ", ".join(
        f"{run.kind} {run.loop_lag_raw_last_s * MS:.0f} ms (longest collector pause {run.gc_pause_last_s * MS:.0f} ms)"
        for run in runs
    )
    hosts = ", ".join(
        f"{run.kind} {run.host_collection_s * MS:.0f} ms (after other work {run.host_collection_cold_s * MS:.0f} ms)"
        for run in runs
    )
    lines.append(f"  the same from {late:,} msgs with the collector's pauses: {collector}")
    lines.append(f"  target <= 1.25x the host's own full collection (the session's messages held, no manager): {hosts}")
    for run in runs:
        live = run.live_host
        if live is None:
            continue
        listed, ours = live.list_context, live.module
        lines.append(
            f"  a host decoding each message, keeping none ({run.kind}), from {live.window_from:,} msgs, the loop "
            f"blocked at most with the collector's pauses (net of them; full collections): a list-holding context "
            f"{listed.lag_raw_s * MS:.0f} ms ({listed.lag_s * MS:.0f}; {listed.full_collections}), this module "
            f"{ours.lag_raw_s * MS:.0f} ms ({ours.lag_s * MS:.0f}; {ours.full_collections}); one full collection "
            f"with each holding the session {listed.collection_s * MS:.0f} / {ours.collection_s * MS:.0f} ms (target "
            "<= 1.25x the list-holding one)"
        )
    for run in runs:
        r = run.resume
        if r is None:
            continue
        lines.append(
            f"  resume {r.messages:,} msgs ({run.kind}): set_messages + first request, wall (CPU) s: summaries stored "
            f"{r.stored.set_s:.2f} + {r.stored.request_s:.2f} ({r.stored.cpu_s:.2f}); nothing stored "
            f"{r.nothing_stored.set_s:.2f} + {r.nothing_stored.request_s:.2f} ({r.nothing_stored.cpu_s:.2f}, "
            f"{r.nothing_stored.compactions} compaction); same view as before: {'yes' if r.same_view else 'NO'}; "
            f"the collector's pauses within those walls: {r.stored.collector_s:.2f} / "
            f"{r.nothing_stored.collector_s:.2f} ({r.nothing_stored.full_collections} full collections)"
        )
    lines.append("  targets: resume with summaries stored <= 2 s, with nothing stored <= 5 s (wall, at 50,000 msgs)")
    return lines


def render(result: BenchResult) -> str:
    lines = [
        f"context-summarize benchmark{' (quick: indicative only)' if result.quick else ''}",
        f"  {result.environment.get('python')} on {result.environment.get('cpus')} cpus, "
        f"tokens by {result.environment.get('token_counter')}, instant fake summarizer backend",
    ]
    if not result.sizes:  # --compaction-only
        lines += ["", *_long_session(result.long_session), *_targets(result), "", f"total {result.seconds:.1f} s"]
        return "\n".join(lines)
    lines += [
        f"  compacted = {BUDGET:,}-token budget with a summary in force; open = never compacted, view = all history",
        "",
        "Per turn and per request (medians; turn = add_message + get_messages_for_request)",
    ]
    rows = []
    for size in result.sizes:
        for state in STATES:
            s = result.costs[size].states[state]
            rows.append(
                [
                    f"{size:,}",
                    state,
                    f"{s.view_messages:,}",
                    f"{s.turn_s * US:.1f}",
                    f"{s.first_request_s * US:.1f}",
                    f"{s.request_s * US:.1f}",
                    f"{s.request_budget_s * US:.1f}",
                    f"{s.floor_s * US:.2f}",
                    f"{s.request_over_floor:.2f}x",
                ]
            )
    header = ["messages", "state", "view", "turn us", "in turn us", "request us", "no get_info us", "list() us"]
    lines += _table([*header, "req/floor"], rows)
    lines += [
        "  in turn = the request right after add_message; request = get_messages_for_request(provider=...) alone,",
        "  repeated; no get_info = the same given token_budget; list() = copying the view it returns (the floor).",
        "  compacted req/floor: the floor copies a few hundred pointers, so the ratio is the fixed cost per call.",
    ]
    lines += ["", "Compaction (provider call excluded; medians over the compactions observed)"]
    rows = []
    for size in result.sizes:
        c = result.costs[size].compaction
        rows.append(
            [
                f"{size:,}",
                str(c.samples),
                f"{c.span_messages:.0f}",
                f"{c.total_s * MS:.2f}",
                f"{c.planning_s * MS:.2f}",
                f"{c.prompt_s * MS:.2f}",
            ]
        )
    lines += _table(["messages", "samples", "span msgs", "total ms", "planning ms", "prompt-building ms"], rows)
    if result.long_session:
        lines += ["", *_long_session(result.long_session)]
    lines += _cold_llm(result)
    lines += ["", "Memory (tracemalloc; own = manager minus the stored copy of the messages)"]
    rows = []
    for size in result.sizes:
        m = result.memory[size]
        rows.append(
            [
                f"{size:,}",
                f"{m.messages_bytes * MB:.1f}",
                f"{m.stored_bytes * MB:.1f}",
                f"{m.manager_bytes * MB:.1f}",
                f"{m.own_bytes_per_message:.0f}",
                f"{m.peak_bytes_per_10k * MB:.1f}",
            ]
        )
    lines += _table(["messages", "messages MB", "stored MB", "manager MB", "own B/msg", "peak MB per 10k msgs"], rows)
    lines += ["", "Naive baseline: recount every message on every request (same turn)"]
    rows = []
    for size in result.sizes:
        naive = result.costs[size]
        steady = naive.states["compacted"].turn_s
        rows.append(
            [
                f"{size:,}",
                f"{naive.history_tokens:,}",
                f"{naive.naive_turn_s * MS:.1f}",
                f"{naive.naive_turn_s / steady:,.0f}x",
                f"{naive.naive_chars_turn_s * MS:.1f}",
                f"{naive.naive_chars_turn_s / steady:,.0f}x",
            ]
        )
    header = ["messages", "history tokens", "tiktoken ms", "vs module", "chars/4 ms", "vs module"]
    lines += _table(header, rows)
    sim = result.simulation
    if sim is not None:
        lines += [
            "",
            f"Session simulation: {sim.turns:,} turns, {sim.messages:,} messages, {sim.session_tokens:,} tokens, "
            f"budget {sim.budget:,} ({sim.seconds:.1f} s)",
            f"  requests {sim.requests:,}; views extending the previous one {sim.extending_views:,} "
            f"({sim.extension_share:.1%}); breaks {sim.break_causes}",
            f"  compactions {sim.compactions} (allowed {sim.compactions_allowed:.1f}); summarizer calls "
            f"{sim.summarize_calls} + {sim.merge_calls} tier merges",
            f"  summarizer input {sim.summarizer_input_tokens:,} tokens ({sim.input_over_session:.2f}x the session), "
            f"output {sim.summarizer_output_tokens:,}",
            f"  naive re-summarize-the-prefix input {sim.naive_input_tokens:,} tokens "
            f"({sim.naive_over_module:.1f}x the module's)",
            f"  largest view {sim.max_view_tokens:,} tokens; views over budget {sim.views_over_budget}",
        ]
    lines += _targets(result)
    lines += ["", f"total {result.seconds:.1f} s"]
    return "\n".join(lines)


def _cold_llm(result: BenchResult) -> list[str]:
    """The LLM path's cold first request (``cold_llm.py``)."""
    if not result.cold_llm:
        return []
    lines = [
        "",
        f"Cold resume on the LLM path (nothing stored, instant summarizer, budget {COLD_LLM_BUDGET:,}; wall s, "
        "collector running)",
    ]
    rows = [
        [
            f"{c.messages:,}",
            f"{c.set_s:.2f}",
            f"{c.request_s:.2f}",
            f"{c.collector_s:.2f}",
            str(c.provider_calls),
            f"{c.view_messages:,}",
            f"{c.background_s:.2f}",
            str(c.background_calls),
            f"{c.landed_view_messages:,}",
        ]
        for c in result.cold_llm
    ]
    header = ["messages", "set_messages s", "first request s", "collector s", "summarizer calls", "view"]
    lines += _table([*header, "background s", "its calls", "view landed"], rows)
    lines.append(f"  target: first request <= {COLD_LLM_S:g} s at {COLD_LLM_SIZE:,} msgs")
    return lines


def _targets(result: BenchResult) -> list[str]:
    lines = ["", "Targets"]
    for t in result.targets:
        sign = "<=" if t.at_most else ">="
        verdict = "PASS" if t.passed else "FAIL"
        if t.set_at is None:
            lines.append(f"  {verdict}  {t.name}: {t.value:,.2f} (target {sign} {t.limit:g})")
        else:
            where = f"set at {t.set_at:,} msgs: indicative here"
            lines.append(f"  ({verdict.lower()})  {t.name}: {t.value:,.2f} (target {sign} {t.limit:g}, {where})")
    return lines
