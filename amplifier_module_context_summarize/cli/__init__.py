"""The command line (``python -m amplifier_module_context_summarize <subcommand>``) for users' own sessions.

Owns ``compact``, ``inspect`` and ``convert`` (the session files they read are read by ``readers``), and where every
command writes (``output``: one line and exit 2 for a path that cannot be written). ``inspect`` draws its chart
(``inspect_chart``) and its table of losses (``inspect_table``); ``losses`` is the one account of what was lost that
``compact`` and ``inspect`` both tell; ``compact_text`` is what ``compact`` prints (result first, the rest behind
flags); ``args`` holds the argument types and the parser the commands share; ``progress`` is the bar every long
replay shows on a terminal (``eval``'s too). The ``eval`` and ``bench`` subcommands live with their harnesses
(``evaluation.cli``, ``benchmark.cli``).

May import: the package's public API (``create_manager``, the manager), ``core``, ``readers``, ``compaction`` (its
account of losses), ``summarizer`` (clipping for display), ``events`` (the outcomes a post reports) and ``testing``.
"""
