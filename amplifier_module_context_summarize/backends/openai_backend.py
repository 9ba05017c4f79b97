"""Summaries from OpenAI Chat Completions, or any server that speaks it (vLLM, Ollama, LM Studio)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import openai

from ..core.redact import redact_url
from .base import BackendError, Completion, Fault
from .http_errors import error_for_status, mentions_input_too_long
from .keys import missing_key, read_api_key

if TYPE_CHECKING:
    from .registry import SummarizerConfig

NO_KEY_PLACEHOLDER = "not-needed"
"""Sent as the bearer token to a ``base_url`` server that was given no key; local servers ignore it."""

_TOO_LONG_CODES = frozenset({"context_length_exceeded", "string_above_max_length"})


def to_backend_error(exc: Exception) -> BackendError:
    """Map an SDK exception to a category; the message and body are read, never kept."""
    if isinstance(exc, openai.APITimeoutError):  # subclass of APIConnectionError: test first
        return BackendError(Fault.TIMEOUT)
    if isinstance(exc, openai.APIConnectionError):
        return BackendError(Fault.CONNECTION)
    if isinstance(exc, openai.APIStatusError):
        code = getattr(exc, "code", None)
        if exc.status_code == 429 and code == "insufficient_quota":
            return BackendError(Fault.ERROR)  # billing, not load: waiting will not help
        # openai 3.x leaves a non-JSON body out of ``message`` (older releases put it in): read both
        text_body = exc.body if isinstance(exc.body, str) else ""
        too_long = code in _TOO_LONG_CODES or mentions_input_too_long(f"{exc.message} {text_body}")
        return error_for_status(exc.status_code, exc.response.headers, too_long=too_long)
    return BackendError(Fault.ERROR)


def _default_http_client(timeout_s: float) -> Any:
    """The SDK's own default client, built here instead of inside ``AsyncOpenAI``.

    openai 1.40-1.55.2 builds its default client with ``proxies=``, which httpx >= 0.28 rejects
    (``TypeError`` at construction); ``DefaultAsyncHttpxClient`` has the same defaults (pool limits,
    redirects) without that argument, in every supported release, whether httpx- or httpx2-based.
    The backend owns it, and ``aclose`` closes it.
    """
    return openai.DefaultAsyncHttpxClient(timeout=timeout_s)


class OpenAIBackend:
    """One Chat Completions call per ``complete``; the SDK never retries (``retrying.py`` owns that).

    Key policy: a key is required for the real OpenAI API. When ``base_url`` points at another server
    and no key is given, ``NO_KEY_PLACEHOLDER`` is sent instead, because the SDK insists on some
    bearer token and local servers (Ollama, LM Studio, vLLM without ``--api-key``) accept any.
    The key lives only inside the SDK client, so neither ``repr`` nor any error can show it.
    """

    name = "openai"

    def __init__(
        self,
        model: str,
        api_key: str | None,
        *,
        base_url: str | None = None,
        timeout_s: float = 120,
        http_client: Any | None = None,
    ) -> None:
        if not api_key:
            if not base_url:
                raise ValueError("OpenAIBackend needs an api_key unless base_url names a keyless server")
            api_key = NO_KEY_PLACEHOLDER
        self.model: str | None = model
        self.base_url = base_url
        self._owns_client = http_client is None
        self._client = openai.AsyncOpenAI(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout_s,
            max_retries=0,
            http_client=http_client if http_client is not None else _default_http_client(timeout_s),
        )

    def __repr__(self) -> str:
        return f"OpenAIBackend(model={self.model!r}, base_url={redact_url(self.base_url)!r})"

    async def complete(
        self, system: str, prompt: str, max_output_tokens: int, provider: Any | None = None
    ) -> Completion:
        try:
            response = await self._client.chat.completions.create(
                model=self.model or "",
                max_tokens=max_output_tokens,
                messages=[
                    {"role": "system", "content": system},
                    {"role": "user", "content": prompt},
                ],
            )
        except openai.OpenAIError as exc:
            raise to_backend_error(exc) from None
        usage = response.usage
        choice = response.choices[0] if response.choices else None
        text = (choice.message.content or "") if choice is not None else ""
        if choice is not None and (
            getattr(choice.message, "refusal", None) or (choice.finish_reason == "content_filter" and not text)
        ):
            raise BackendError(Fault.REFUSAL)
        return Completion(
            text=text,
            input_tokens=getattr(usage, "prompt_tokens", 0) or 0,
            output_tokens=getattr(usage, "completion_tokens", 0) or 0,
        )

    async def aclose(self) -> None:
        """Release the SDK's connection pool; an injected ``http_client`` belongs to the caller and stays open."""
        if self._owns_client:
            await self._client.close()


def build(
    cfg: SummarizerConfig, coordinator: Any | None, http_client: Any | None, environ: Mapping[str, str]
) -> OpenAIBackend:
    """Registry builder: a key is required unless ``base_url`` names another server (see ``OpenAIBackend``)."""
    api_key = read_api_key(cfg, environ)
    if not api_key and not cfg.base_url:
        raise missing_key(cfg)
    return OpenAIBackend(
        cfg.effective_model or "",
        api_key or None,
        base_url=cfg.base_url,
        timeout_s=cfg.timeout_s,
        http_client=http_client,
    )
