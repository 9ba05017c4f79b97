"""When a compaction runs, how its plan is carried out, where its state enters the view, and what it reports.

Read in this order:

* ``decide`` — the decision, on plain data: which path a request past the threshold takes (skip, in band, wait for
  the flight, plan offline with the summary in the background, mask now) and the filters a planned state passes
  (``gains``, the low landing, ``masks_further``, ``Stall``, the hooks' postponement), tested in
  ``tests/test_decide.py``.
* ``compactor`` — carries that answer out for a request: warms and measures (``attempt``), has ``execute`` carry
  the strategy's plan out step by step, installs and reports.
* ``install`` — **the one place a compaction's state enters the view** (``Installer.install``: every path, in band,
  soft threshold, landed), with the records a resume reads; ``place`` shows a state no compaction made.
* ``reporter`` — every ``context:pre_compact`` gets one ``context:post_compact``: a ``CompactionRun`` is an async
  context manager that sends the post however the compaction ends, and a background flight holds it as a typed
  value; ``payloads`` builds every payload as a pure function of what it reports (``Outcome``, ``FlightPhase``);
  ``steer`` reads what the hooks answered; ``artifacts`` accounts for the newly hidden groups' artifacts.
* ``background`` runs the soft threshold's compaction off the request path; ``flights`` lands, drops, settles and
  cancels it from the requests' side; ``prefetch`` summarizes the next cut early; ``stand_in`` writes the LLM's
  summary of a span too long to wait for in the background, in place of the extractive one that stood in (after a
  resume too: its cut is marked as a stand-in, and ``owed`` starts the rewrite the resume owes).
* ``resume`` rebuilds a state from the store and folds its working set ahead; ``horizon`` decides whether a cold
  resume's bounded counts may serve its first plan; ``keys`` keeps the session's summary key as the summarizer's
  model is learned; ``reports`` sends the request's other events (usage, pins, prefetch outcomes, the slow watch);
  ``closing`` ends a session's background work and closes the store and backend.

May import: what ``compaction`` may, and every other part of ``compaction``.
"""
