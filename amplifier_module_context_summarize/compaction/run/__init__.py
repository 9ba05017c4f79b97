"""When a compaction runs, and how its plan is carried out.

``compactor`` decides when (in band, at the soft threshold, beside a background flight, in the background),
installs what comes back and reports it; ``execute`` carries a strategy's plan out step by step;
``background`` runs the soft threshold's compaction off the request path and lands it; ``prefetch`` summarizes
the next cut early.

May import: what ``compaction`` may, and every other part of ``compaction``.
"""
