"""Build the direct (non-session) summarizer backend named by the config."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ..config import SummarizerConfig
from .base import Backend


def make_direct_backend(
    cfg: SummarizerConfig, *, http_client: Any | None = None, environ: Mapping[str, str] | None = None
) -> Backend:
    """Return an Anthropic or OpenAI(-compatible) backend; raise ``ValueError`` naming what is missing.

    The key is read from the environment variable ``cfg.key_env`` at build time and handed to the SDK
    client only. ``provider: openai`` with a ``base_url`` and no key uses a placeholder key, since local
    OpenAI-compatible servers usually need none.
    """
    env = os.environ if environ is None else environ
    provider = cfg.provider
    if provider not in ("anthropic", "openai"):
        raise ValueError(f"summarizer provider {provider!r} has no direct backend (expected 'anthropic' or 'openai')")
    key_env = cfg.key_env or ""
    api_key = (env.get(key_env) or "").strip() if key_env else ""
    model = cfg.effective_model or ""
    if provider == "anthropic":
        if not api_key:
            raise _missing_key(provider, key_env)
        from .anthropic_backend import AnthropicBackend

        return AnthropicBackend(model, api_key, base_url=cfg.base_url, timeout_s=cfg.timeout_s, http_client=http_client)
    if not api_key and not cfg.base_url:
        raise _missing_key(provider, key_env)
    from .openai_backend import OpenAIBackend

    return OpenAIBackend(
        model, api_key or None, base_url=cfg.base_url, timeout_s=cfg.timeout_s, http_client=http_client
    )


def _missing_key(provider: str, key_env: str) -> ValueError:
    return ValueError(f"summarizer provider {provider!r} needs an API key in environment variable {key_env}")
