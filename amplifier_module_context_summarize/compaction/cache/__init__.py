"""Where summaries come from and what is kept of them: a span is only ever paid for once.

``segments`` serves a segment summary from the store, else asks the summarizer, guarded by the per-span cooldown
and the circuit breaker (``breaker``), one flight per span across a fleet (``flight``); ``keys`` says what a
stored summary is keyed by (the root ``fingerprint``, a focus, a plan tag); ``resume`` walks the stored segments
of a history along its plan's cuts; ``records`` writes and reads what a plan keeps beside its summaries (cuts,
mask ends, the working set).

May import: what ``compaction`` may, and ``compaction.view`` and ``compaction.plan``.
"""
