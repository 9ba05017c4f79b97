"""Configuration keys of the peer context modules, met when a bundle swaps this module in for them.

amplifier-foundation composes bundles by deep-merging ``session.context.config``: a behavior that replaces
``context-simple`` with ``context-summarize`` inherits foundation's context-simple keys. Those we share
(``max_tokens``, ``compact_threshold``, ``target_usage``) keep their meaning; the others are ignored with one
warning naming them, so the composed mount plan mounts. A key of no known module is still an error.

The warning is given once per process for a set of keys: amplifier-core mounts a module twice when a source
resolver loads it (``ContextValidator`` mounts it on a ``MockCoordinator`` first, as amplifier-foundation's
``PreparedBundle.create_session`` does), and foundation spawns agent sessions with the same config.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

logger = logging.getLogger(__name__)

PEER_KEYS = frozenset(
    {
        "auto_compact",  # context-simple: ours always compacts on demand
        "protected_recent",
        "protected_tool_results",
        "truncate_chars",
        "truncate_boundary",
        "summarize_tool_results",
        "min_protected_tokens",
        "persist",  # context-persistent
        "session_dir",
    }
)
"""Keys context-simple and context-persistent take that this module has no use for."""

_warned: set[frozenset[str]] = set()
"""Key sets already warned about in this process (tests clear it)."""
_lock = threading.Lock()


def without_peer_keys(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    """``raw`` without the peer modules' keys, warning once (one line) when there were any."""
    found = sorted(key for key in raw if key in PEER_KEYS)
    if not found:
        return raw
    with _lock:
        first = frozenset(found) not in _warned
        _warned.add(frozenset(found))
    (logger.warning if first else logger.debug)(
        "context-summarize: ignoring config keys of other context modules (%s); see docs/configuration.md",
        ", ".join(found),
    )
    kept = {key: value for key, value in raw.items() if key not in PEER_KEYS}
    threshold = kept.get("compact_threshold")
    if isinstance(threshold, int | float) and "prefetch_threshold" not in kept and 0.1 < threshold <= 0.85:
        kept["prefetch_threshold"] = round(threshold - 0.05, 4)  # our default (0.8) must stay below it
    return kept
