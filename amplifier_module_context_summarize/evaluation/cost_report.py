"""The prompt-cache cost of each strategy in an evaluation: a column of ``results.md`` and the console summary.

Every agent request's view was billed by each price table's cache model (``Run.cache``, from
``evaluation.prompt_cache``); the summarizer's LLM input and output are added at the table's summarizer price
(extractive summaries cost no provider tokens).
"""

from __future__ import annotations

from typing import Any

from ..core.tables import markdown_table
from .prices import PRICES_DATE, TABLES
from .prompt_cache import CacheUsage, bill
from .runner import Run


def cost_summary(runs: list[Run]) -> dict[str, Any]:
    """Per strategy and price table: dollars and base-input tokens' worth per session and per 100 turns."""
    result: dict[str, Any] = {"prices_date": PRICES_DATE, "tables": {}}
    strategies = list(dict.fromkeys(run.strategy for run in runs if run.cache is not None))
    for name, price in TABLES.items():
        table: dict[str, Any] = {"label": price.label, "strategies": {}}
        for strategy in strategies:
            chosen = [run for run in runs if run.strategy == strategy and run.cache is not None]
            usage = CacheUsage()
            for run in chosen:
                assert run.cache is not None
                usage.merge(CacheUsage(**run.cache[f"{price.provider}:{price.agent.model}"]))
            s_in = sum(r.summarizer_input_tokens for run in chosen for r in run.records)
            s_out = sum(r.summarizer_output_tokens for run in chosen for r in run.records)
            priced = bill(usage, s_in, s_out, price)
            turns = max(sum(run.turns for run in chosen), 1)
            table["strategies"][strategy] = {
                **priced.as_dict(),
                "dollars_per_session": priced.dollars / max(len(chosen), 1),
                "dollars_per_100_turns": priced.dollars * 100 / turns,
                "input_equivalent_per_100_turns": priced.input_equivalent * 100 / turns,
                "read_share": usage.read / usage.total if usage.total else None,
            }
        result["tables"][name] = table
    return result


def cost_table(cost: dict[str, Any]) -> str:
    """One row per strategy: $/100 turns and base-input tokens' worth per 100 turns under each price table."""
    tables = cost.get("tables") or {}
    strategies = list(dict.fromkeys(s for t in tables.values() for s in t["strategies"]))
    if not strategies:
        return ""
    header = ["strategy"]
    for name in tables:
        header += [f"{name} $/100 turns", f"{name} in-eq tok/100 turns", f"{name} cache read"]
    rows = []
    for strategy in strategies:
        row = [strategy]
        for table in tables.values():
            entry = table["strategies"].get(strategy)
            if entry is None:
                row += ["—", "—", "—"]
                continue
            share = entry["read_share"]
            row += [
                f"{entry['dollars_per_100_turns']:.3f}",
                f"{entry['input_equivalent_per_100_turns']:,.0f}",
                f"{share:.0%}" if share is not None else "—",
            ]
        rows.append(row)
    lines = markdown_table(header, rows)
    labels = "; ".join(t["label"] for t in tables.values())
    return "\n".join(lines) + f"\n\nprompt-cache cost at {labels}"
