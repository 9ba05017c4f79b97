"""Benchmark of the module's own costs (per request, per compaction, memory) and a session cost simulation.

Run it with ``python -m amplifier_module_context_summarize bench``. Everything here drives the manager
from outside, with an instant fake summarizer backend, so only the module's own work is timed.

May import: anything of the package (it sits on top: ``bench --cost`` replays the evaluation's corpus
through its runner and bills it with its prompt-cache model).
"""
