"""The working set: the section of the summary that keeps files, commands, errors, ids and URLs exactly.

Owns what is recorded per group (``facts``: the artifact ledger, with ``definitions`` and ``reads``), how the
facts fold into a state (``fold``), how that state is laid out in a room (``layout``, ``shelves``,
``ladder_tokens``) and the incremental index over a history (``index``).

May import: ``core`` only.
"""
