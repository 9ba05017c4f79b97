"""Event names this module emits or listens to, and the contributor that advertises them."""

from __future__ import annotations

from amplifier_core.events import CONTEXT_COMPACTION, CONTEXT_POST_COMPACT, CONTEXT_PRE_COMPACT, LLM_RESPONSE

PRE_COMPACT = CONTEXT_PRE_COMPACT
POST_COMPACT = CONTEXT_POST_COMPACT
COMPACTION = CONTEXT_COMPACTION
"""The kernel's own compaction event (context-simple emits it; hook modules subscribe to it)."""
SUMMARY_FAILED = "context:summary_failed"
"""A background (prefetch) summary failed; the payload carries only a short category."""

EMITTED = [PRE_COMPACT, POST_COMPACT, COMPACTION, SUMMARY_FAILED]
__all__ = ["COMPACTION", "EMITTED", "LLM_RESPONSE", "POST_COMPACT", "PRE_COMPACT", "SUMMARY_FAILED"]
