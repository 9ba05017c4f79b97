"""Recall: the tool that gives the model back what a view hid (masked outputs, summarized groups).

Owns the tool (``tool``). May import: ``core`` and ``config`` (and the manager's type, for annotations only).
"""
