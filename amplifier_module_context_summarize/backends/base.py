"""The one protocol every summarizer backend implements, and the faults it may raise.

A backend only turns (system prompt, user prompt) into text, once. Retries live in
``retrying.py``; prompting, validation, splitting and fallbacks in ``summarizer/span.py``; the kinds in
``registry.py``. So each backend stays a thin adapter.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, NamedTuple, Protocol, runtime_checkable


class Fault(StrEnum):
    """Why a summary the LLM was asked for did not come from it: the only thing about a fault that reaches events,
    logs, stats and stored data. A ``StrEnum``: each member is its short string (``Fault.TIMEOUT == "timeout"``,
    JSON and f-strings give ``timeout``), so what is written stays as it was when these were plain strings.

    What each one means for retrying and for the circuit breaker is in ``_TRAITS`` (one row a member)."""

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
    """Anything not classified more closely (an unknown exception, a provider's broken code)."""
    DEADLINE = "deadline"
    """The compaction's deadline passed before the summarizer answered."""

    @classmethod
    def named(cls, category: object) -> Fault | None:
        """The fault ``category`` names (a member, or its string read back from an event or stored data), else
        None (no fault: a ``Skip``, None, or a string of no known fault)."""
        if not isinstance(category, str):
            return None
        try:
            return cls(category)
        except ValueError:
            return None

    @property
    def retryable(self) -> bool:
        """Worth asking again after a wait (the provider busy or the network slow)."""
        return _TRAITS[self].retryable

    @property
    def counts_against_breaker(self) -> bool:
        """A fault of the summarizer's provider: only these count toward opening the circuit breaker."""
        return _TRAITS[self].counts_against_breaker

    @property
    def rejected_answer(self) -> bool:
        """The provider answered, but the answer was not a usable summary: reported, never held against its
        health."""
        return _TRAITS[self].rejected_answer

    @property
    def transient(self) -> bool:
        """A fault of the moment (the provider busy or slow, or the deadline): logged at INFO and shown as such."""
        return self.retryable or self is Fault.DEADLINE


class _Traits(NamedTuple):
    retryable: bool
    counts_against_breaker: bool
    rejected_answer: bool


_TRAITS: dict[Fault, _Traits] = {
    #                                  retryable  breaker  rejected answer
    Fault.RATE_LIMITED: _Traits(True, True, False),
    Fault.SERVER_ERROR: _Traits(True, True, False),
    Fault.TIMEOUT: _Traits(True, True, False),
    Fault.CONNECTION: _Traits(True, True, False),
    Fault.DEADLINE: _Traits(False, True, False),
    Fault.AUTH: _Traits(False, True, False),
    Fault.NO_PROVIDER: _Traits(False, True, False),
    Fault.ERROR: _Traits(False, True, False),
    # The request did not suit the model (the span is split, or the compact prompt is sent): not its health.
    Fault.BAD_REQUEST: _Traits(False, False, False),
    Fault.INPUT_TOO_LONG: _Traits(False, False, False),
    Fault.EMPTY: _Traits(False, False, True),
    Fault.REFUSAL: _Traits(False, False, True),
    Fault.NOT_SMALLER: _Traits(False, False, True),
    Fault.UNGROUNDED: _Traits(False, False, True),
    Fault.DEGENERATE: _Traits(False, False, True),
    Fault.TOOL_CALL: _Traits(False, False, True),
}


class Skip(StrEnum):
    """Why the LLM was not asked at all for a summary (the extractive one stands in): not a fault, so never held
    against the provider and never a cause to cool a span down again."""

    COOLDOWN = "cooldown"
    """This span's summary failed recently: it is not sent again until its cooldown ends."""
    CIRCUIT_OPEN = "circuit_open"
    """Recent summaries kept failing, so the LLM is not asked for a while."""
    DEFERRED = "deferred"
    """A span too long to summarize while a request waits (a cold resume's): the extractive summary stands in, and
    the LLM's is written in the background and lands on a later request (``Writer.STAND_IN``)."""

    @property
    def counts_against_breaker(self) -> bool:
        return False


class BackendError(Exception):
    """A classified summarizer fault. ``str()`` is the fault's category only, never a response body or key."""

    def __init__(self, fault: Fault | str, retry_after: float | None = None) -> None:
        """``fault``: a ``Fault``, or the category string of one (read back from stored data, or raised by a
        backend written against the strings); any other string is a ``ValueError`` naming it."""
        known = Fault.named(fault)
        if known is None:
            raise ValueError(f"{fault!r} is not a fault category (one of: {', '.join(Fault)})")
        super().__init__(known.value)  # args, str() and repr() as they were with the plain strings
        self.fault = known
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        return self.fault.retryable


def fault_of(exc: BaseException) -> Fault:
    """The fault an exception stands for at a catch site: a ``BackendError``'s own, anything else ``ERROR``
    (unclassified; its class name goes to the log, never its message)."""
    return exc.fault if isinstance(exc, BackendError) else Fault.ERROR


@dataclass(frozen=True)
class Completion:
    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    model: str | None = None
    """The model the response says answered, when it says."""
    tool_calls: int = 0
    """Tool calls in the answer (only a request that carries tools can get any): such an answer is no summary."""
    artefact: str | None = None
    """A provider's native compaction artefact for the span (its signed block or encrypted item, as JSON), kept
    verbatim beside the summary so a provider module that can carry it may send it back (``native_backend.py``)."""


class Backend(Protocol):
    """Something that can answer one summarization prompt."""

    @property
    def name(self) -> str:
        """The backend's name (``anthropic``, ``openai``, ``session``): part of the store fingerprint."""
        ...

    @property
    def model(self) -> str | None:
        """The model it asks (None: the provider's default)."""
        ...

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
class SendsGuidance(Protocol):
    """A backend that sends the user's guidance apart from the prompt too (a provider's native compaction takes it as
    its own ``instructions``, ``native_backend.py``)."""

    async def complete_guided(
        self, system: str, prompt: str, max_output_tokens: int, guidance: str, provider: Any | None = None
    ) -> Completion:
        """``complete`` with ``guidance``: the guidance section of this prompt ('' without guidance), passed with the
        call (not read from anything ambient), so concurrent summaries each send their own."""
        ...


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
