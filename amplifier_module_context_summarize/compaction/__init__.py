"""Compaction: from a history, a budget and a cache to the state a view is built from.

Four parts, each importing only those before it:

* ``view`` — what a request is shown: the request view, the verbatim tail, the summary message, masking, the last
  rungs of fitting a copy, the account of what a view hides.
* ``plan`` — where a compaction is decided: each strategy's pure ``plan`` over ``PlanFacts``, in the vocabulary
  of ``steps``; one compaction's job and the work a plan reads, done ahead.
* ``cache`` — where summaries come from (the store, else the summarizer behind cooldowns, the breaker and one
  flight per span) and what a plan keeps for a resume.
* ``run`` — when a compaction runs (in band, soft threshold, background, prefetch) and the executor that carries
  plans out.

This package exports the public strategy interface (``Strategy``, the plan's vocabulary, ``PlanFacts``).

May import: ``core``, ``working_set``, ``summarizer``, ``backends``, ``stores``, ``config`` and ``events``.
"""

from .plan.facts import PlanFacts
from .plan.steps import Merge, Phase, Plan, Progress, Summarize, Writer
from .plan.strategies import STRATEGIES, MaskStrategy, Strategy, SummarizeStrategy, TruncateStrategy

__all__ = [
    "STRATEGIES",
    "MaskStrategy",
    "Merge",
    "Phase",
    "Plan",
    "PlanFacts",
    "Progress",
    "Strategy",
    "SummarizeStrategy",
    "Summarize",
    "TruncateStrategy",
    "Writer",
]
