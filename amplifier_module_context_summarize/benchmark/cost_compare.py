"""``bench --cost``: what a session costs under prompt caching, policy against policy, on the same sessions.

Each session is replayed (``evaluation.runner.replay_session``: a request before every assistant message, and
at every probe) through each policy; every agent request's view goes through the cache model of each price
table (``prompt_cache``), and each summarizer call is billed at the summarizer model's price. The summarizer
is ``testing.SimulatedLLM`` (summaries of a real model's size, and token counts for its input and output) standing
as the session's own provider and model (``SessionModelLLM``): as with the default ``summarizer.provider:
session``, a summary whose span the last view showed is asked at the end of that view (``summarizer/in_context``)
and billed under the cache (``CacheMeter.summary_request``); the others get the compact prompt, billed uncached.
The rows priced with a cheaper summarizer model bill every summary as a compact prompt (another model shares
none of the session's cache).

Policies:

``summarize``           this module as configured by default (the hybrid: masking, then summaries)
``summarize-only``      the same with ``observation_masking: false``
``mask``                masking, then dropping the oldest groups
``truncation``          the oldest groups dropped
``none-200k``           no compaction, a 200k window (only where the whole session fits in it)
``claude-code-style``   nothing until 95% of the window, then one summary of all but the last turns
``native``              with ``--native``: ``summarize`` with ``summarizer.provider: native``, the provider's own
                        compaction (``testing.native_standins``, Anthropic's, through the real SDK) writing summaries
"""

from __future__ import annotations

import re
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from statistics import mean
from typing import Any

from .. import create_manager
from ..backends.base import Completion
from ..core.messages import scrub_text
from ..core.tables import markdown_table
from ..evaluation.loader import Session
from ..evaluation.models import SIMULATED, SIMULATED_NATIVE, ModelSpec, build_backend, simulated_native
from ..evaluation.prices import CHEAP_SUMMARIZER, PRICES_DATE, SOURCES, PriceTable, table
from ..evaluation.prompt_cache import CacheMeter, CacheUsage, InContextSummaries, bill, key
from ..evaluation.retention import GroupArtifacts
from ..evaluation.runner import replay_session
from ..evaluation.strategies import CompactionTally, make_manager, manager_config
from ..stores import MemoryStore
from ..summarizer.prompts import load_prompts
from .cost_shares import SummaryTokens, render_parts, summary_parts

POLICIES = ("summarize", "summarize-only", "mask", "truncation", "none-200k", "claude-code-style")
BUDGETS = (20_000, 64_000, 200_000)
NONE_WINDOW = 200_000
CLAUDE_CODE = {
    "compact_threshold": 0.95,
    "target_usage": 0.1,
    "preserve_recent_ratio": 0.05,
    "observation_masking": False,
}
"""Claude Code's auto-compact: the whole history until ~95% of the window, then one summary standing for all
of it but the most recent turns (here: the newest 5% of the window), merged into the next one."""
SPEC = ModelSpec(SIMULATED)
NATIVE = "native"
NATIVE_SPEC = ModelSpec(SIMULATED_NATIVE, "claude-sonnet-4-6")


class SessionModelLLM:
    """A simulated summarizer standing as the session's own provider and model: it takes the in-context route
    (``shares_session_cache``), and bills each such request through the meter's cache model.

    The simulated model writes from a transcript, so the span named by the instruction ("conversation messages
    A to B") is rendered as the compact prompt would send it; ``compact_input`` keeps that prompt's tokens (what
    the same summary costs asked with the compact prompt), ``input`` the in-context request's own.
    """

    retries_itself = False

    def __init__(self, inner: Any, count_message: Any = None) -> None:
        self.inner = inner
        self.name = inner.name
        self.model = inner.model
        self.meter: CacheMeter | None = None
        self.count_message = count_message
        self.input = 0
        self.compact_input = 0
        self.merge_input = 0
        self.merge_output = 0
        """Tokens of the merges among the compact-prompt calls (told by the packaged merge prompt's system text)."""

    def fork(self) -> SessionModelLLM:
        fork = getattr(self.inner, "fork", None)
        return SessionModelLLM(fork() if callable(fork) else self.inner, self.count_message)

    async def complete(self, system: str, prompt: str, max_output_tokens: int, provider: Any | None = None) -> Any:
        answer = await self.inner.complete(system, prompt, max_output_tokens, provider)
        if system.strip() == _MERGE_SYSTEM:
            self.merge_input += answer.input_tokens
            self.merge_output += answer.output_tokens
        return answer

    def shares_session_cache(self, provider: Any | None) -> bool:
        return True

    async def complete_in_context(
        self, messages: list[dict[str, Any]], max_output_tokens: int, provider: Any | None = None
    ) -> Completion:
        from ..summarizer.prompts import FENCE_CLOSE, FENCE_OPEN, render_transcript

        if self.meter is not None:
            self.meter.summary_request(messages)
        *prefix, instruction = messages
        text = str(instruction.get("content") or "")
        found = _SPAN.search(text)
        conversation = [m for m in prefix if m.get("role") != "system"]
        first, last = (int(found.group(1)), int(found.group(2))) if found else (1, len(conversation))
        transcript = render_transcript(conversation[first - 1 : last])
        prompt = f"{text}\n\n{FENCE_OPEN}\n{transcript}\n{FENCE_CLOSE}"
        answer = await self.inner.complete("", prompt, max_output_tokens)
        count = self.count_message or (lambda m: 0)
        sent = sum(count(m) for m in messages)
        self.input += sent
        self.compact_input += answer.input_tokens
        return Completion(answer.text, sent, answer.output_tokens, answer.model)


_SPAN = re.compile(r"conversation messages (\d+) to (\d+)")
_MERGE_SYSTEM = load_prompts().system("merge")


def policy_manager(policy: str, budget: int, backend: Any, overrides: dict[str, Any] | None = None) -> Any:
    if policy in ("summarize", "summarize-only", "mask", "truncation"):
        if not overrides:
            return make_manager(policy, budget, SPEC, backend)
        config = {**manager_config(policy, budget, SPEC), **overrides}
    elif policy == "claude-code-style":
        config = {**manager_config("summarize-only", budget, SPEC), **CLAUDE_CODE, **(overrides or {})}
    elif policy == NATIVE:
        config = {**manager_config("summarize", budget, NATIVE_SPEC), **(overrides or {})}
    elif policy == "none-200k":
        none = {"compact_threshold": 0.999, **(overrides or {})}
        config = {**manager_config("summarize-only", NONE_WINDOW, SPEC), **none}
    else:
        raise ValueError(f"unknown policy {policy!r} (expected one of {', '.join(POLICIES)})")
    fork = getattr(backend, "fork", None)
    backend = fork() if callable(fork) else backend
    return create_manager(config, backend=backend, store=MemoryStore(), hooks=CompactionTally())


@dataclass
class SessionCost:
    session: str
    corpus: str
    policy: str
    budget: int
    turns: int
    requests: int
    usage: dict[str, CacheUsage]
    summarizer_input: int
    summarizer_output: int
    key_scores: list[float]
    fits: bool = True
    """False for ``none-200k`` when the session outgrows the window (the run is then left out)."""
    compactions: int = 0
    seconds: float = 0.0
    in_context: dict[str, InContextSummaries] = field(default_factory=dict)
    """Summaries asked at the end of the session's view, by price table."""
    merge_input: int = 0
    merge_output: int = 0


async def replay_cost(
    session: Session,
    corpus: str,
    policy: str,
    budget: int,
    backend: Any,
    tables: Sequence[PriceTable],
    tools_tokens: int = 0,
    artifacts: GroupArtifacts | None = None,
    overrides: dict[str, Any] | None = None,
) -> SessionCost:
    started = time.perf_counter()
    manager = policy_manager(policy, budget, backend, overrides)
    meter = CacheMeter(manager.counter.count_message, tables, tools_tokens)
    session_model = manager.summarizer.backend if isinstance(manager.summarizer.backend, SessionModelLLM) else None
    if session_model is not None:
        session_model.meter, session_model.count_message = meter, manager.counter.count_message
    window = NONE_WINDOW if policy == "none-200k" else budget
    if policy == "none-200k" and manager.counter.count_messages(session.messages) > NONE_WINDOW:
        return SessionCost(session.name, corpus, policy, budget, 0, 0, meter.usage, 0, 0, [], fits=False)
    if not session.probes:  # nothing to score: the views alone (no retention or view checks)
        cost = await _light_replay(session, corpus, policy, budget, manager, window, meter, started)
        return _with_in_context(cost, meter, session_model)
    run = await replay_session(session, policy, manager, window, artifacts=artifacts, on_request=meter.request)
    agent = [r for r in run.records if not r.probe_only]
    fits = policy != "none-200k" or run.stats.get("compactions", 0) == 0
    cost = SessionCost(
        session.name,
        corpus,
        policy,
        budget,
        run.turns,
        len(agent),
        meter.usage,
        sum(r.summarizer_input_tokens for r in run.records),
        sum(r.summarizer_output_tokens for r in run.records),
        [p.key_score for p in run.probes],
        fits,
        run.stats.get("compactions", 0),
        time.perf_counter() - started,
    )
    return _with_in_context(cost, meter, session_model)


def _with_in_context(cost: SessionCost, meter: CacheMeter, session_model: SessionModelLLM | None) -> SessionCost:
    if session_model is not None:
        cost.merge_input, cost.merge_output = session_model.merge_input, session_model.merge_output
        cost.in_context = {
            name: InContextSummaries(usage, session_model.input, session_model.compact_input)
            for name, usage in meter.summaries.items()
        }
    return cost


async def _light_replay(
    session: Session,
    corpus: str,
    policy: str,
    budget: int,
    manager: Any,
    window: int,
    meter: CacheMeter,
    started: float,
) -> SessionCost:
    from ..testing import replay_steps

    requests = turns = 0
    async for step in replay_steps(manager, session.messages, budget=window):
        if not step.due:
            continue
        meter.request(await step.request())
        requests += 1
    turns = sum(1 for m in session.messages if m.get("role") == "assistant")
    stats = manager.stats
    return SessionCost(
        session.name,
        corpus,
        policy,
        budget,
        turns,
        requests,
        meter.usage,
        stats["summarizer_input_tokens"],
        stats["summarizer_output_tokens"],
        [],
        policy != "none-200k" or stats["compactions"] == 0,
        stats["compactions"],
        time.perf_counter() - started,
    )


@dataclass
class Row:
    corpus: str
    budget: int
    policy: str
    table: str
    sessions: int
    skipped: int
    turns: int
    usage: CacheUsage
    summarizer_input: int
    summarizer_output: int
    dollars: float
    input_equivalent: float
    key_score: float | None
    compactions: int
    in_context: InContextSummaries | None = None
    merge_input: int = 0
    merge_output: int = 0

    @property
    def summary_tokens(self) -> SummaryTokens:
        return SummaryTokens(
            self.summarizer_input, self.summarizer_output, self.merge_input, self.merge_output, self.in_context
        )

    @property
    def per_100_turns(self) -> float:
        return self.dollars * 100 / max(self.turns, 1)

    @property
    def equivalent_per_100_turns(self) -> float:
        return self.input_equivalent * 100 / max(self.turns, 1)

    @property
    def per_session(self) -> float:
        return self.dollars / max(self.sessions, 1)

    def as_dict(self) -> dict[str, Any]:
        return {
            "corpus": self.corpus,
            "budget": self.budget,
            "policy": self.policy,
            "table": self.table,
            "sessions": self.sessions,
            "skipped": self.skipped,
            "turns": self.turns,
            "usage": self.usage.as_dict(),
            "summarizer_input": self.summarizer_input,
            "summarizer_output": self.summarizer_output,
            "dollars": self.dollars,
            "dollars_per_session": self.per_session,
            "dollars_per_100_turns": self.per_100_turns,
            "input_equivalent": self.input_equivalent,
            "input_equivalent_per_100_turns": self.equivalent_per_100_turns,
            "key_score": self.key_score,
            "compactions": self.compactions,
            "merge_input": self.merge_input,
            "merge_output": self.merge_output,
            "in_context_summaries": (
                {"usage": self.in_context.usage.as_dict(), "input": self.in_context.input}
                if self.in_context is not None
                else None
            ),
        }


def rows_of(costs: Iterable[SessionCost], tables: Sequence[PriceTable]) -> list[Row]:
    """One row per corpus, budget, policy and price table (sessions a policy could not hold left out)."""
    groups: dict[tuple[str, int, str], list[SessionCost]] = {}
    for cost in costs:
        groups.setdefault((cost.corpus, cost.budget, cost.policy), []).append(cost)
    rows = []
    for (corpus, budget, policy), members in groups.items():
        kept = [c for c in members if c.fits]
        priced_by = [(policy, price) for price in tables]
        if policy == "summarize":  # the same run, its summaries written by the provider's cheapest model
            priced_by += [
                (
                    f"summarize, summaries by {CHEAP_SUMMARIZER[p.provider]}",
                    p.with_summarizer(CHEAP_SUMMARIZER[p.provider]),
                )
                for p in tables
                if p.summarizer.model != CHEAP_SUMMARIZER[p.provider]
            ]
        for name, price in priced_by:
            usage = CacheUsage()
            for c in kept:
                usage.merge(c.usage[key(price)])
            s_in, s_out = sum(c.summarizer_input for c in kept), sum(c.summarizer_output for c in kept)
            in_context = InContextSummaries(CacheUsage())
            for c in kept:
                part = c.in_context.get(key(price))
                if part is not None:
                    in_context.usage.merge(part.usage)
                    in_context.input += part.input
                    in_context.compact_input += part.compact_input
            priced = bill(usage, s_in, s_out, price, in_context)
            scores = [s for c in kept for s in c.key_scores]
            rows.append(
                Row(
                    corpus,
                    budget,
                    name,
                    price.label,
                    len(kept),
                    len(members) - len(kept),
                    sum(c.turns for c in kept),
                    usage,
                    s_in,
                    s_out,
                    priced.dollars,
                    priced.input_equivalent,
                    mean(scores) if scores else None,
                    sum(c.compactions for c in kept),
                    in_context,
                    sum(c.merge_input for c in kept),
                    sum(c.merge_output for c in kept),
                )
            )
    return rows


@dataclass
class CostResult:
    tables: list[PriceTable]
    rows: list[Row] = field(default_factory=list)
    sessions: dict[str, list[str]] = field(default_factory=dict)
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "prices_date": PRICES_DATE,
            "price_sources": SOURCES,
            "tables": [t.label for t in self.tables],
            "sessions": self.sessions,
            "rows": [r.as_dict() for r in self.rows],
            "seconds": self.seconds,
        }


def default_tables(summarizer_models: dict[str, str] | None = None) -> list[PriceTable]:
    chosen = summarizer_models or {}
    return [table("anthropic", summarizer=chosen.get("anthropic")), table("openai", summarizer=chosen.get("openai"))]


def simulated_session(turns: int, seed: int = 2_000) -> Session:
    """The bench's synthetic coding session (``synth.SessionGenerator``) as a corpus session without probes."""
    from ..core import tokens
    from .synth import REALISTIC, SessionGenerator, TextSource

    text = TextSource()
    text.calibrate(tokens.TokenCounter().count_text)
    generator = SessionGenerator(REALISTIC, seed=seed, text=text)
    messages = [generator.system()]
    for _ in range(turns):
        messages += generator.turn()
    return Session(simulation_name(turns), Path("<simulation>"), messages)


def simulation_name(turns: int) -> str:
    return f"sim-{turns}"


async def compare(
    corpora: dict[str, list[Session]],
    budgets: Sequence[int] = BUDGETS,
    policies: Sequence[str] = POLICIES,
    tables: Sequence[PriceTable] | None = None,
    tools_tokens: int = 0,
    seed: int = 0,
    progress: Any | None = None,
    native: bool = False,
    overrides: dict[str, Any] | None = None,
) -> CostResult:
    """Every session of every corpus, under every policy at every budget, billed at every price table; ``native`` adds
    the ``native`` policy, ``overrides`` are config keys every policy's manager takes (e.g. spilling)."""
    started = time.perf_counter()
    chosen = list(tables or default_tables())
    backend = SessionModelLLM(build_backend(ModelSpec(SIMULATED, seed=seed)))
    policies = (*policies, NATIVE) if native and NATIVE not in policies else tuple(policies)
    result = CostResult(chosen, sessions={name: [s.name for s in group] for name, group in corpora.items()})
    costs: list[SessionCost] = []
    for corpus, sessions in corpora.items():
        for session in sessions:
            artifacts = GroupArtifacts.of_session(session.messages)
            none_cost: SessionCost | None = None
            for budget in budgets:
                for policy in policies:
                    if policy == "none-200k" and none_cost is not None:  # the same run at every budget
                        costs.append(_at_budget(none_cost, budget))
                        continue
                    summarizer = simulated_native(replace(NATIVE_SPEC, seed=seed)) if policy == NATIVE else backend
                    cost = await replay_cost(
                        session, corpus, policy, budget, summarizer, chosen, tools_tokens, artifacts, overrides
                    )
                    if policy == "none-200k":
                        none_cost = cost
                    costs.append(cost)
                    if progress is not None:
                        progress(f"{corpus}/{session.name} {policy} @ {budget:,}: {cost.seconds:.1f} s")
    result.rows = rows_of(costs, chosen)
    result.seconds = time.perf_counter() - started
    return result


def _at_budget(cost: SessionCost, budget: int) -> SessionCost:
    return SessionCost(**{**cost.__dict__, "budget": budget})


def render(result: CostResult) -> str:
    """Per corpus and budget: each policy's bill per session and per 100 turns, and its key score."""
    lines = [
        f"prompt-cache cost, prices of {PRICES_DATE} (USD per million tokens; sources: "
        + "; ".join(SOURCES.values())
        + ")",
        "tables: " + " | ".join(t.label for t in result.tables),
        "agent input billed under each provider's prompt cache; a summary asked at the end of the session's view"
        " (the session's own model) billed under the same cache, a compact-prompt one as uncached input, output at"
        " the summarizer's price; the agent's own output (the same for every policy) left out",
        "",
    ]
    by_group: dict[tuple[str, int], list[Row]] = {}
    for row in result.rows:
        by_group.setdefault((row.corpus, row.budget), []).append(row)
    for (corpus, budget), rows in by_group.items():
        names = ", ".join(result.sessions.get(corpus, []))
        lines.append(f"{corpus} ({names}) at budget {budget:,}")
        header = [
            "policy",
            "provider",
            "key",
            "$/session",
            "$/100 turns",
            "in-eq tok/100 turns",
            "read",
            "write",
            "uncached",
            "summ $",
            "vs cc-style",
        ]
        body = []
        for row in rows:
            provider = row.table.split(" ", 1)[0]
            provider_rows = [r for r in rows if r.table.split(" ", 1)[0] == provider]
            cc = next((r for r in provider_rows if r.policy == "claude-code-style"), None)
            ratio = f"{row.per_100_turns / cc.per_100_turns:.2f}x" if cc and cc.per_100_turns and row.sessions else "—"
            total = max(row.usage.total, 1)
            share = summaries_share(result, row)
            body.append(
                [
                    row.policy + (f" ({row.skipped} too long)" if row.skipped else ""),
                    provider,
                    f"{row.key_score:.2f}" if row.key_score is not None else "—",
                    f"{row.per_session:.3f}" if row.sessions else "—",
                    f"{row.per_100_turns:.3f}" if row.sessions else "—",
                    f"{row.equivalent_per_100_turns:,.0f}" if row.sessions else "—",
                    f"{row.usage.read / total:.0%}",
                    f"{row.usage.write / total:.0%}",
                    f"{row.usage.uncached / total:.0%}",
                    f"{share:.0%}" if share is not None else "—",
                    ratio,
                ]
            )
        lines += markdown_table(header, body) + [""]
    lines += summaries_breakdown(result)
    lines.append(f"{result.seconds:.0f} s")
    return "\n".join(lines) + "\n"


def summaries_share(result: CostResult, row: Row) -> float | None:
    """The summaries' share of the row's bill: the bill less the same agent requests billed without them."""
    if not row.dollars:
        return None
    return (row.dollars - bill(row.usage, 0, 0, _table_of(result, row.table)).dollars) / row.dollars


def summaries_breakdown(result: CostResult) -> list[str]:
    """Where each policy's summaries' share of its bill goes (``cost_shares``), for the rows that have one."""
    lines = []
    for row in result.rows:
        parts = summary_parts(row.summary_tokens, _table_of(result, row.table))
        if row.dollars and parts.total > 0:
            label = f"{row.corpus} at {row.budget:,}, {row.policy}, {row.table.split(' ', 1)[0]}"
            lines.append(render_parts(label, parts, row.dollars))
    if not lines:
        return []
    title = "Summaries' share of the bill, by part (prefix reads, writes, instruction: asked at the end of the view)"
    return [title, *lines, ""]


def _table_of(result: CostResult, label: str) -> PriceTable:
    chosen = next((t for t in result.tables if t.label == label), None)
    if chosen is not None:
        return chosen
    return next(t.with_summarizer(CHEAP_SUMMARIZER[t.provider]) for t in result.tables if label.startswith(t.provider))


def load_raw(folder: str | Path) -> list[Session]:
    """Every recorded session under ``folder``, in any format ``compact`` reads (files of no such format, a
    README for one, are passed over)."""
    from ..readers.session_io import SessionFileError, load_session

    if not Path(folder).is_dir():
        raise ValueError(f"--raw: {scrub_text(str(folder))} is not a folder")
    sessions = []
    for path in sorted(p for p in Path(folder).rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl")):
        try:
            loaded = load_session(path)
        except SessionFileError:
            continue
        sessions.append(Session(f"{loaded.format}:{path.name[:24]}", path, loaded.messages))
    if not sessions:
        raise ValueError(f"--raw: no recorded sessions under {scrub_text(str(folder))}")
    return sessions


def run_cost(args: Any) -> int:
    """``bench --cost``."""
    import asyncio
    import json
    import sys

    from ..evaluation.cli import DEFAULT_CORPUS
    from ..evaluation.loader import load_corpus

    bundled = load_corpus(DEFAULT_CORPUS)
    turns = args.sim_turns or (300 if args.quick else 2_000)
    if args.quick:
        bundled = sorted(bundled, key=lambda s: len(s.messages))[:2]
    corpora: dict[str, list[Session]] = {} if getattr(args, "no_bundled", False) else {"bundled": bundled}
    if getattr(args, "raw", None):
        corpora["raw"] = load_raw(args.raw)
    if not args.no_sim:
        corpora["simulation"] = [simulated_session(turns)]
    budgets = tuple(args.budgets or BUDGETS)
    quiet = args.json
    progress = None if quiet else lambda line: print(line, file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory() as folder:  # --spill: every policy spills large outputs to a throwaway folder
        threshold = getattr(args, "spill", None)
        overrides = {"spill_path": folder, "spill_threshold_tokens": threshold} if threshold is not None else None
        native = getattr(args, "native", False)
        result = asyncio.run(compare(corpora, budgets, progress=progress, native=native, overrides=overrides))
    print(json.dumps(result.to_json(), indent=2) if args.json else render(result))
    return 0
