"""Compaction: from a history, a budget and a cache to the state a view is built from.

Owns the job over one history (``job``), the strategies behind one interface (``strategies``), observation
masking (``masking``), summarized segments and their cache walk (``segments``, ``resume``), what a plan stores
beside its summaries for a resume (``records``), single flight and store claims (``flight``), the circuit breaker
(``breaker``), background compaction and its landing (``background``), prefetch (``prefetch``), the tail view
between compactions (``view``), the last rungs of fitting a request's copy to its budget (``fit``), the account of
what a view hides (``losses``) and the work a compaction reads, done ahead with the event loop let run (``warm``).

May import: ``core``, ``working_set``, ``summarizer``, ``backends``, ``stores``, ``config`` and ``events``.
"""
