"""Offline evaluation harness: replay recorded sessions through compaction strategies and score the views.

``python -m amplifier_module_context_summarize eval`` is the entry point (``cli.py``). One job per module:
``loader`` reads the corpus; ``strategies`` (with ``naive``) builds the managers compared; ``runner``
replays sessions and records every request; ``scoring`` grades probe views (key facts, optional
answer-and-judge on a six-dimension rubric); ``retention`` measures which artifacts compacted views still
name; ``reference`` scores Claude Code's own summaries; ``models`` picks the backends and
``cassette`` records and replays their calls; ``report`` and ``plot`` present the results (the progress
bar is the command line's, ``cli.progress``); ``prices`` and ``prompt_cache`` bill each request as a
provider's prompt cache would (``cost_report``);
``prompts`` holds the answer and judge templates; ``large_outputs`` grows the corpus's tool outputs
(``--large-outputs``); ``steering`` measures pins and focus.

May import: anything of the package but ``benchmark`` (the session readers of ``cli`` included).
"""
