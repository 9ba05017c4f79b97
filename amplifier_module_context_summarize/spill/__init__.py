"""Large tool outputs kept out of the view from the moment they arrive: stored whole in a file, shown as a preview.

Owns the preview the model reads in the output's place (``preview``: head and tail, its size, the path, the recall
handle, and words saying the rest was not seen), the per-session folder the outputs are written to (``folder``:
owner-only, never through a link, bounded by size and age) and the hook ``core.history.History`` calls to show a
stored message (``spiller``). History is never changed: the preview is how the view shows the message.

May import: ``core``, ``events``, ``stores`` and ``config``.
"""

from __future__ import annotations

from .spiller import Spiller, spiller_for

__all__ = ["Spiller", "spiller_for"]
