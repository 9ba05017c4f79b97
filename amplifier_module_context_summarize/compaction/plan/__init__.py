"""Where a compaction is decided: pure plans over plain facts.

``strategies`` holds each strategy with its facts and its pure ``plan(facts, state, progress) -> Plan``;
``steps`` is a plan's vocabulary (the state reached, the summary or merge it needs next, its progress);
``facts`` answers a plan's questions about one history under one budget; ``job`` is one compaction's inputs
and report; ``warm`` works out what a plan reads ahead of it, the event loop let run.

May import: what ``compaction`` may, and ``compaction.view``.
"""
