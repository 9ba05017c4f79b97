"""Event names this module emits, and the contributor that advertises them."""

from __future__ import annotations

from amplifier_core.events import CONTEXT_POST_COMPACT, CONTEXT_PRE_COMPACT

PRE_COMPACT = CONTEXT_PRE_COMPACT
POST_COMPACT = CONTEXT_POST_COMPACT
SUMMARY_FAILED = "context:summary_failed"
"""A background (prefetch) summary failed; the payload carries only a short category."""

EMITTED = [PRE_COMPACT, POST_COMPACT, SUMMARY_FAILED]
