"""Compaction: from a history, a budget and a cache to the state a view is built from.

Where a compaction is decided: each strategy's pure ``plan`` (``strategies``), reading ``PlanFacts`` (``facts``)
and answering in the vocabulary of ``steps``; the executor carries plans out (``execute``) over one job
(``job``); the compactor decides when a compaction runs (in band, soft threshold, background) and installs
and reports what the executor returns (``compactor``). Observation masking (``masking``), summarized segments
and their cache walk (``segments``, ``resume``), what a plan stores beside its summaries for a resume
(``records``), single flight and store claims (``flight``), the circuit breaker (``breaker``), background
compaction and its landing (``background``), prefetch (``prefetch``), the tail view between compactions
(``view``), the last rungs of fitting a request's copy to its budget (``fit``), the account of what a view hides
(``losses``) and the work a compaction reads, done ahead with the event loop let run (``warm``).

May import: ``core``, ``working_set``, ``summarizer``, ``backends``, ``stores``, ``config`` and ``events``.
"""

from .facts import PlanFacts
from .steps import Merge, Phase, Plan, Progress, Summarize, Writer
from .strategies import STRATEGIES, MaskStrategy, Strategy, SummarizeStrategy, TruncateStrategy

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
