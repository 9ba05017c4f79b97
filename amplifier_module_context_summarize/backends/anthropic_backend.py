"""Summaries straight from the Anthropic Messages API, independent of the session's provider."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import anthropic

from ..core.redact import redact_url
from .base import BackendError, Completion, Fault
from .http_errors import error_for_status, mentions_input_too_long
from .keys import missing_key, read_api_key

if TYPE_CHECKING:
    from .registry import SummarizerConfig


def to_backend_error(exc: Exception) -> BackendError:
    """Map an SDK exception to a category; the message and body are read, never kept."""
    if isinstance(exc, anthropic.APITimeoutError):  # subclass of APIConnectionError: test first
        return BackendError(Fault.TIMEOUT)
    if isinstance(exc, anthropic.APIConnectionError):
        return BackendError(Fault.CONNECTION)
    if isinstance(exc, anthropic.APIStatusError):
        # ``api_message`` exists from anthropic 2.0; ``message`` carries the whole body in every release
        detail = f"{getattr(exc, 'api_message', None) or ''} {exc.message}"
        return error_for_status(exc.status_code, exc.response.headers, too_long=mentions_input_too_long(detail))
    return BackendError(Fault.ERROR)


class AnthropicBackend:
    """One Messages call per ``complete``; the SDK never retries (``retrying.py`` owns that).

    The key lives only inside the SDK client, so neither ``repr`` nor any error can show it.
    """

    name = "anthropic"

    def __init__(
        self,
        model: str,
        api_key: str,
        *,
        base_url: str | None = None,
        timeout_s: float = 120,
        http_client: Any | None = None,
    ) -> None:
        if not api_key:
            raise ValueError("AnthropicBackend needs a non-empty api_key")
        self.model: str | None = model
        self.base_url = base_url
        self._owns_client = http_client is None
        self._client = anthropic.AsyncAnthropic(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout_s,
            max_retries=0,
            http_client=http_client,
        )

    def __repr__(self) -> str:
        return f"AnthropicBackend(model={self.model!r}, base_url={redact_url(self.base_url)!r})"

    async def complete(
        self, system: str, prompt: str, max_output_tokens: int, provider: Any | None = None
    ) -> Completion:
        try:
            response = await self._client.messages.create(
                model=self.model or "",
                max_tokens=max_output_tokens,
                system=system,
                messages=[{"role": "user", "content": prompt}],
            )
        except anthropic.AnthropicError as exc:
            raise to_backend_error(exc) from None
        if response.stop_reason == "refusal":  # not in early 0.x type hints; the SDK keeps the value
            raise BackendError(Fault.REFUSAL)
        text = "".join(block.text for block in response.content if block.type == "text")
        usage = response.usage
        return Completion(
            text=text,
            input_tokens=getattr(usage, "input_tokens", 0) or 0,
            output_tokens=getattr(usage, "output_tokens", 0) or 0,
        )

    async def aclose(self) -> None:
        """Release the SDK's connection pool; an injected ``http_client`` belongs to the caller and stays open."""
        if self._owns_client:
            await self._client.close()


def build(
    cfg: SummarizerConfig, coordinator: Any | None, http_client: Any | None, environ: Mapping[str, str]
) -> AnthropicBackend:
    """Registry builder: the key in ``cfg.key_env`` is required."""
    api_key = read_api_key(cfg, environ)
    if not api_key:
        raise missing_key(cfg)
    return AnthropicBackend(
        cfg.effective_model or "", api_key, base_url=cfg.base_url, timeout_s=cfg.timeout_s, http_client=http_client
    )
