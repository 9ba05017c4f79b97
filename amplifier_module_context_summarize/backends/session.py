"""Summaries through the session's own Amplifier provider (no extra key, same billing)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from amplifier_core import llm_errors
from amplifier_core.message_models import ChatRequest, Message

from .base import (
    AUTH,
    BAD_REQUEST,
    CONNECTION,
    ERROR,
    INPUT_TOO_LONG,
    NO_PROVIDER,
    RATE_LIMITED,
    REFUSAL,
    SERVER_ERROR,
    TIMEOUT,
    BackendError,
    Completion,
)

if TYPE_CHECKING:
    from .registry import SummarizerConfig

# Most specific first: several of these subclass each other.
_CATEGORIES: tuple[tuple[type[BaseException], str], ...] = (
    (llm_errors.ContextLengthError, INPUT_TOO_LONG),
    (llm_errors.QuotaExceededError, AUTH),
    (llm_errors.RateLimitError, RATE_LIMITED),
    (llm_errors.AuthenticationError, AUTH),
    (llm_errors.ContentFilterError, REFUSAL),
    (llm_errors.NetworkError, CONNECTION),
    (llm_errors.StreamError, CONNECTION),  # a response cut off mid-stream: transient (retryable in the taxonomy)
    (llm_errors.LLMTimeoutError, TIMEOUT),
    (llm_errors.ProviderUnavailableError, SERVER_ERROR),
    (llm_errors.InvalidRequestError, BAD_REQUEST),
    (llm_errors.NotFoundError, BAD_REQUEST),
    (asyncio.TimeoutError, TIMEOUT),
    (TimeoutError, TIMEOUT),
    (ConnectionError, CONNECTION),
)


def classify(exc: BaseException) -> BackendError:
    for kind, category in _CATEGORIES:
        if isinstance(exc, kind):
            return BackendError(category, retry_after=getattr(exc, "retry_after", None))
    return BackendError(ERROR)


def response_text(response: Any) -> str:
    """Join the text blocks of a ChatResponse (typed blocks or plain dicts)."""
    parts = []
    for block in getattr(response, "content", None) or []:
        kind = getattr(block, "type", None) or (block.get("type") if isinstance(block, dict) else None)
        if kind == "text":
            parts.append(getattr(block, "text", None) or (block.get("text", "") if isinstance(block, dict) else ""))
    return "".join(parts).strip()


BACKGROUND_METADATA = {"stream": False, "source": "context-summarize"}
"""How the real orchestrators mark their own background calls: the providers then skip ``llm:stream_*``."""
BACKGROUND_KWARGS = {"extended_thinking": False, "enable_response_chaining": False, "store": False}
"""No thinking, and no OpenAI response chain: a summary is one self-contained call."""


class SessionBackend:
    """Calls ``provider.complete(ChatRequest, **kwargs)`` on the provider of the request, else a mounted one.

    The real providers take the model from ``kwargs["model"]`` (``ChatRequest.model`` is ignored), retry
    on their own, and stream unless the request's metadata says ``stream: False``.
    """

    name = "session"
    retries_itself = True

    def __init__(self, coordinator: Any | None, provider_name: str | None = None, model: str | None = None) -> None:
        self._coordinator = coordinator
        self.provider_name = provider_name
        self.configured_model = model
        self.default_model: str | None = None
        """The session provider's own default, learned from it when no model is configured."""

    @property
    def model(self) -> str | None:
        """The model that answers: the configured one (passed as ``kwargs["model"]``), else the provider's default."""
        return self.configured_model or self.default_model

    def learn_default_model(self, provider: Any | None) -> bool:
        """Note the provider's default model; True when it changed (so must the summaries' key)."""
        if self.configured_model or provider is None:
            return False
        try:
            found = getattr(provider, "default_model", None)
        except Exception:
            found = None
        if not isinstance(found, str) or not found or found == self.default_model:
            return False
        self.default_model = found
        return True

    def __repr__(self) -> str:
        return f"SessionBackend(provider_name={self.provider_name!r}, model={self.model!r})"

    def mounted_provider(self) -> Any | None:
        if self._coordinator is None:
            return None
        try:
            providers = self._coordinator.get("providers") or {}
        except Exception:
            return None
        if self.provider_name:
            return providers.get(self.provider_name)
        return next(iter(providers.values()), None)

    async def complete(
        self, system: str, prompt: str, max_output_tokens: int, provider: Any | None = None
    ) -> Completion:
        provider = provider if provider is not None and hasattr(provider, "complete") else self.mounted_provider()
        if provider is None:
            raise BackendError(NO_PROVIDER)
        model = self.configured_model
        request = ChatRequest(
            messages=[Message(role="system", content=system), Message(role="user", content=prompt)],
            max_output_tokens=max_output_tokens,
            model=model,
            metadata=dict(BACKGROUND_METADATA),
        )
        kwargs: dict[str, Any] = dict(BACKGROUND_KWARGS)
        if model:
            kwargs["model"] = model
        try:
            response = await provider.complete(request, **kwargs)
        except BackendError:
            raise
        except Exception as exc:
            raise classify(exc) from None
        usage = getattr(response, "usage", None)
        return Completion(
            text=response_text(response),
            input_tokens=getattr(usage, "input_tokens", 0) or 0,
            output_tokens=getattr(usage, "output_tokens", 0) or 0,
            model=answering_model(response),
        )


def build(
    cfg: SummarizerConfig, coordinator: Any | None, http_client: Any | None, environ: Mapping[str, str]
) -> SessionBackend:
    """Registry builder: no key and no HTTP client, the session's provider does the talking."""
    return SessionBackend(coordinator, cfg.session_provider, cfg.model)


def answering_model(response: Any) -> str | None:
    """The model a response says answered (``model``, or ``metadata["model"]``); the real providers say none."""
    found = getattr(response, "model", None)
    if not isinstance(found, str):
        metadata = getattr(response, "metadata", None)
        found = metadata.get("model") if isinstance(metadata, dict) else None
    return found if isinstance(found, str) and found else None
