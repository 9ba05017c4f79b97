"""Where a mounted session keeps its summaries when the config names no ``storage_path``: a per-user SQLite cache.

Summaries are content-addressed (the hash chain of the messages they stand for, under the summarizer's
fingerprint), so one file is safe to share between sessions, sub-agents and processes: a session finds only
summaries of spans it holds itself. ``$AMPLIFIER_CONTEXT_SUMMARIZE_CACHE`` names another file, or turns the
default off (``memory``); else ``$XDG_CACHE_HOME/amplifier-context-summarize/summaries.db``
(``~/.cache/...`` without it).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

ENV = "AMPLIFIER_CONTEXT_SUMMARIZE_CACHE"
MEMORY = "memory"
"""``storage_path: memory`` (or ``null``): summaries live in the process only."""
_OFF = frozenset({MEMORY, "off", "none", ""})


def default_store_path(environ: Mapping[str, str] | None = None) -> Path | None:
    """The default store's file, or None when the environment turns it off."""
    env = os.environ if environ is None else environ
    named = env.get(ENV)
    if named is not None:
        return None if named.strip().lower() in _OFF else Path(named).expanduser()
    base = env.get("XDG_CACHE_HOME") or ""
    root = Path(base) if os.path.isabs(base) else Path("~/.cache").expanduser()  # the spec ignores a relative one
    return root / "amplifier-context-summarize" / "summaries.db"
