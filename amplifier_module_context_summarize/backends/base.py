"""The one protocol every summarizer backend implements, and the faults it may raise.

A backend only turns (system prompt, user prompt) into text, once. Retries live in
``retrying.py``; prompting, validation, splitting and fallbacks in ``summarizer/span.py``; the kinds in
``registry.py``. So each backend stays a thin adapter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

# Short failure categories: the only thing about a fault that reaches events and logs.
RATE_LIMITED = "rate_limited"
SERVER_ERROR = "server_error"
TIMEOUT = "timeout"
CONNECTION = "connection"
AUTH = "auth"
BAD_REQUEST = "bad_request"
INPUT_TOO_LONG = "input_too_long"
NO_PROVIDER = "no_provider"
EMPTY = "empty"
REFUSAL = "refusal"
NOT_SMALLER = "not_smaller"
UNGROUNDED = "ungrounded"
"""The answer named files, identifiers or commands that its span and the previous summary never name."""
DEGENERATE = "degenerate"
"""The answer looped (one sentence over and over) or forged the module's own markup."""
TOOL_CALL = "tool_call"
"""A summary asked at the end of the session's view (its tools in the request) was answered with a tool call."""
ERROR = "error"
DEADLINE = "deadline"
"""The compaction's deadline passed before the summarizer answered."""
CIRCUIT_OPEN = "circuit_open"
"""Recent summaries kept failing, so the LLM is not asked for a while."""
COOLDOWN = "cooldown"

RETRYABLE = frozenset({RATE_LIMITED, SERVER_ERROR, TIMEOUT, CONNECTION})
PROVIDER_FAULTS = RETRYABLE | {DEADLINE, AUTH, NO_PROVIDER, ERROR}
"""Faults of the summarizer's provider: only these count toward opening the circuit breaker."""
CONTENT_REJECTIONS = frozenset({EMPTY, REFUSAL, NOT_SMALLER, UNGROUNDED, DEGENERATE, TOOL_CALL})
"""The provider answered, but the answer was not a usable summary: reported, never held against its health."""


class BackendError(Exception):
    """A classified summarizer fault. ``str()`` is the category only, never a response body or key."""

    def __init__(self, category: str, retry_after: float | None = None) -> None:
        super().__init__(category)
        self.category = category
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        return self.category in RETRYABLE


@dataclass(frozen=True)
class Completion:
    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    model: str | None = None
    """The model the response says answered, when it says."""
    tool_calls: int = 0
    """Tool calls in the answer (only a request that carries tools can get any): such an answer is no summary."""


class Backend(Protocol):
    """Something that can answer one summarization prompt."""

    name: str
    model: str | None

    async def complete(
        self, system: str, prompt: str, max_output_tokens: int, provider: Any | None = None
    ) -> Completion:
        """Answer once, without retrying. Raise ``BackendError`` for faults it can classify.

        ``provider`` is the session provider offered for this request; only the session backend uses it.
        """
        ...


# What a backend may also do. Each ability is declared once here and found with ``isinstance``, so a backend that
# lacks it (an extractive run's None, a test's fake) simply does without.


@runtime_checkable
class SelfRetrying(Protocol):
    """A backend that may retry on its own (the session provider does)."""

    retries_itself: bool
    """True: the module adds no retries on top unless ``summarizer.max_retries`` is set (``retrying.retries_for``);
    stacked retries multiply the waits."""


@runtime_checkable
class Closable(Protocol):
    """A backend holding resources of its own (an SDK client's connection pool, or a wrapped backend that does)."""

    async def aclose(self) -> None:
        """Release them; the manager's ``close`` (a mounted session's cleanup) calls it once."""
        ...


@runtime_checkable
class LearnsDefaultModel(Protocol):
    """A backend writing with the session provider's default model when none is configured."""

    def learn_default_model(self, provider: Any | None) -> bool:
        """Note ``provider``'s default model; True when it changed (so must the summaries' key). Asked on every
        request: the usual answer must cost next to nothing."""
        ...


@runtime_checkable
class SessionCacheSharing(Protocol):
    """A backend that can ask for a summary at the end of the session's own last request (``summarizer.in_context``)."""

    def shares_session_cache(self, provider: Any | None) -> bool:
        """True when a request of ``provider`` is answered by that provider with the session's own model."""
        ...

    async def complete_in_context(
        self, messages: list[dict[str, Any]], max_output_tokens: int, provider: Any | None = None
    ) -> Completion:
        """Answer ``messages`` (the session's view, then the instruction) as the session would send them."""
        ...


@runtime_checkable
class AcceptsMessages(Protocol):
    """A ``SessionCacheSharing`` backend that can tell which views it can send as they are."""

    def accepts(self, messages: list[dict[str, Any]]) -> bool:
        """Whether ``messages`` can be sent in context (else the summary takes the compact prompt)."""
        ...
