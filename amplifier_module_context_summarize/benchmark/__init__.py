"""Benchmark of the module's own costs (per request, per compaction, memory) and a session cost simulation.

Run it with ``python -m amplifier_module_context_summarize bench``. Everything here drives the manager
from outside, with an instant fake summarizer backend, so only the module's own work is timed.

``cli`` parses ``bench`` and ``run`` gathers every measurement into one result; ``report`` prints it and ``targets``
checks it (PASS / FAIL). The sessions: ``synth`` (mixed synthetic turns), ``coding`` (a coding agent's growing
working set), ``fixtures`` (one history size, built once). The measurements: ``costs`` (per request, compaction and
memory, against ``recount_baseline``, which recounts everything), ``long_session`` (a compaction early and late),
``live_host`` (the same session's event loop in a host that decodes each message, against a list-holding context),
``resume`` (a cold and a warm resume), ``cold_llm`` (the LLM path's cold first request), ``latency`` (what
compaction adds to a request), ``pins`` (``bench --pins``: what ``pin_patterns`` cost a request as the history
grows), ``heartbeat`` (how long the event loop stays blocked), ``collector`` (``bench --collector``: a full garbage
collection with the host's messages alone and with a manager holding them), ``simulation`` (summarizer tokens and
cache breaks of a long session), ``fleet`` (provider calls of workers sharing Redis), ``cost_compare`` and
``cost_shares`` (``bench --cost``: session cost under prompt caching, and where the summaries' share goes). Helpers:
``timing`` (batches with the collector paused), ``fake_backend`` (an instant summarizer), ``virtual_time`` (a
virtual-time loop for slow summarizers).

May import: anything of the package (it sits on top: ``bench --cost`` replays the evaluation's corpus
through its runner and bills it with its prompt-cache model).
"""
