"""The user's guidance for the summary being asked, for a backend that sends it apart from the prompt.

The summarizer writes the standing instructions and the compaction's focus into every prompt; a provider's native
compaction also takes them as its own ``instructions`` field (``backends/native_backend.py``). A context variable,
set around each summarizer call, so concurrent compactions (a background one, a prefetch) each send their own.
"""

from __future__ import annotations

from contextvars import ContextVar

SUMMARY_GUIDANCE: ContextVar[str] = ContextVar("context_summarize_guidance", default="")
"""The guidance section of the prompt being sent ('' without guidance)."""
