"""Where the summaries' share of a session's bill goes: ``bench --cost``'s breakdown of it by part.

A summary asked at the end of the session's view (the session's own model) pays a cache read of that view
(``prefix reads``), a cache write of what the provider had not stored (``prefix writes``) and its instruction
as uncached input (``instruction``); priced at another model it is the compact prompt it would be
(``in-context as compact``). A compact-prompt summary pays its prompt as input (``compact input``). Every
summary pays its output; a merge of several summaries pays its own input and output. The parts add up to the
summaries' share of the bill (``cost_compare.summaries_share``).
"""

from __future__ import annotations

from dataclasses import astuple, dataclass, fields

from ..evaluation.prices import PriceTable
from ..evaluation.prompt_cache import InContextSummaries


@dataclass(frozen=True)
class SummaryTokens:
    """A run's summarizer tokens, as ``bench --cost`` counts them (the merges' among them)."""

    input: int
    output: int
    merge_input: int = 0
    merge_output: int = 0
    in_context: InContextSummaries | None = None


@dataclass(frozen=True)
class SummaryParts:
    """Dollars of each part of the summaries' bill."""

    prefix_reads: float = 0.0
    prefix_writes: float = 0.0
    instruction: float = 0.0
    in_context_as_compact: float = 0.0
    compact_input: float = 0.0
    summary_output: float = 0.0
    merge_input: float = 0.0
    merge_output: float = 0.0

    @property
    def total(self) -> float:
        return sum(astuple(self))

    def shares(self, bill_dollars: float) -> dict[str, float]:
        """Each part's share of the whole bill (the parts with none left out)."""
        if bill_dollars <= 0:
            return {}
        named = {f.name.replace("_", " "): getattr(self, f.name) / bill_dollars for f in fields(self)}
        return {name: share for name, share in named.items() if share > 0}


def summary_parts(tokens: SummaryTokens, price: PriceTable) -> SummaryParts:
    """What each part of the summaries cost at ``price`` (``prompt_cache.bill``'s summarizing dollars, split)."""
    agent, summarizer = price.agent, price.summarizer
    in_context = tokens.in_context
    asked = in_context.input if in_context is not None else 0
    compact = tokens.input - asked - tokens.merge_input
    reads = writes = instruction = as_compact = 0.0
    if in_context is not None and asked:
        if summarizer.model == agent.model:
            usage = in_context.usage
            reads, writes = agent.dollars(usage.read, 0, 0), agent.dollars(0, usage.write, 0)
            instruction = agent.dollars(0, 0, usage.uncached)
        else:
            as_compact = summarizer.dollars(0, 0, in_context.compact_input)
    return SummaryParts(
        prefix_reads=reads,
        prefix_writes=writes,
        instruction=instruction,
        in_context_as_compact=as_compact,
        compact_input=summarizer.dollars(0, 0, compact),
        summary_output=summarizer.dollars(0, 0, 0, tokens.output - tokens.merge_output),
        merge_input=summarizer.dollars(0, 0, tokens.merge_input),
        merge_output=summarizer.dollars(0, 0, 0, tokens.merge_output),
    )


def render_parts(label: str, parts: SummaryParts, bill_dollars: float) -> str:
    """One line: the summaries' share of the bill, then each part's."""
    shares = parts.shares(bill_dollars)
    whole = parts.total / bill_dollars if bill_dollars > 0 else 0.0
    detail = ", ".join(f"{name} {share:.1%}" for name, share in shares.items())
    return f"  {label}: {whole:.1%}" + (f" = {detail}" if detail else "")
