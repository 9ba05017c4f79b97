"""Every summarizer backend kind, by the name ``summarizer.provider`` gives it, and how to build it.

Adding a backend: write ``backends/<kind>_backend.py`` with a class implementing ``base.Backend`` (raise
``BackendError`` categories; ``http_errors`` classifies HTTP failures) and a module-level
``build(cfg, coordinator, http_client, environ)``; then add one ``KINDS`` line, with the default model and
key variable if it has them. Config validation and defaults, ``create_manager`` and the evaluation read
this table, and ``retrying.RetryingBackend`` adds retries.

Builders are imported only when their kind is built, so ``config.py`` (which validates against
``NAMES``) and extractive runs never import an SDK.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any, cast

from ..core.redact import env_name, redact_url
from .base import Backend

Builder = Callable[["SummarizerConfig", Any | None, Any | None, Mapping[str, str]], Backend | None]
"""(summarizer config, coordinator or None, injected HTTP client or None, environment) -> backend, or None."""


def _lazy(module: str) -> Builder:
    """The ``build`` function of ``backends/<module>.py``, imported on first use."""

    def build(
        cfg: SummarizerConfig, coordinator: Any | None, http_client: Any | None, environ: Mapping[str, str]
    ) -> Backend | None:
        from ..core.extras import import_for  # a missing SDK: one line naming the extra to install

        real = cast(Builder, import_for(f"{__package__}.{module}", f"summarizer.provider {cfg.provider!r}").build)
        return real(cfg, coordinator, http_client, environ)

    return build


def _no_backend(
    cfg: SummarizerConfig, coordinator: Any | None, http_client: Any | None, environ: Mapping[str, str]
) -> None:
    """``extractive``: no LLM at all; the summarizer writes extractive summaries."""
    return None


@dataclass(frozen=True)
class Kind:
    build: Builder
    default_model: str | None = None
    """The model when ``summarizer.model`` is unset."""
    key_env: str | None = None
    """The variable holding the API key when ``summarizer.api_key_env`` is unset."""


KINDS: dict[str, Kind] = {
    "session": Kind(_lazy("session")),
    "anthropic": Kind(_lazy("anthropic_backend"), "claude-haiku-4-5", "ANTHROPIC_API_KEY"),
    "openai": Kind(_lazy("openai_backend"), "gpt-4o-mini", "OPENAI_API_KEY"),
    "native": Kind(_lazy("native_backend")),
    "extractive": Kind(_no_backend),
}
NAMES: tuple[str, ...] = tuple(KINDS)
DEFAULT_MODELS: dict[str, str] = {name: k.default_model for name, k in KINDS.items() if k.default_model}
DEFAULT_KEY_ENV: dict[str, str] = {name: k.key_env for name, k in KINDS.items() if k.key_env}


def build_backend(
    cfg: SummarizerConfig,
    coordinator: Any | None = None,
    http_client: Any | None = None,
    environ: Mapping[str, str] | None = None,
) -> Backend | None:
    """The backend ``cfg.provider`` names (None for ``extractive``); ``ValueError`` names what is missing.

    ``environ`` defaults to ``os.environ``; direct backends read their key from it here, at build time.
    """
    kind = KINDS.get(cfg.provider)
    if kind is None:
        raise ValueError(f"summarizer provider {cfg.provider!r} is not one of {', '.join(NAMES)}")
    return kind.build(cfg, coordinator, http_client, os.environ if environ is None else environ)


@dataclass(frozen=True)
class SummarizerConfig:
    provider: str = "session"
    """Which backend writes summaries: the session's provider, a direct SDK, a provider's own compaction
    (``native``: the model's provider, Anthropic or OpenAI), or the offline extractor."""
    model: str | None = None
    """Model for the direct backends (and a hint passed to the session provider)."""
    base_url: str | None = None
    """OpenAI-compatible server (vLLM, Ollama, LM Studio) for ``provider: openai``."""
    api_key_env: str | None = None
    """Environment variable holding the key; defaults to ANTHROPIC_API_KEY / OPENAI_API_KEY."""
    session_provider: str | None = None
    """Name of the mounted provider to use when none is passed with the request."""
    timeout_s: float = 120.0
    """Longest single summarizer call."""
    max_retries: int | None = None
    """Module retries per call; unset: 3 for the direct backends, 0 through the session provider (it retries itself)."""
    circuit_failures: int = 3
    """Failed summaries in a row that open the circuit (extractive summaries only, no LLM calls); 0 disables it."""
    circuit_open_s: float = 120.0
    """How long an open circuit stays open before one call probes the summarizer again."""
    max_output_tokens: int | None = None
    """Defaults to the top-level ``summary_max_tokens``."""
    max_input_tokens: int = 100_000
    """Largest transcript sent in one call; longer spans are cut into fragments and folded in order."""
    prompt_cache_ttl_s: float = 300.0
    """How long the session provider keeps a prompt in its cache (Anthropic's default: 5 minutes; 3600 for its
    1-hour cache). A summary asked at the end of a view sent longer ago than this uses the compact prompt: the
    view would be written to the cache again (1.25x its input on Anthropic) only to be replaced by the compacted
    one. 0: never asked at the end of the view."""

    @property
    def key_env(self) -> str | None:
        if self.api_key_env or self.provider != "native":
            return self.api_key_env or DEFAULT_KEY_ENV.get(self.provider)
        from .native_wire import DEFAULT_MODEL, family_of  # the native family's key: the model's provider

        try:
            return DEFAULT_KEY_ENV[family_of(self.model or DEFAULT_MODEL)]
        except ValueError:
            return None

    def __repr__(self) -> str:
        """Fields as the dataclass shows them, but a ``base_url``'s credentials and a key pasted as
        ``api_key_env`` are hidden."""
        shown = {f.name: getattr(self, f.name) for f in fields(self)}
        shown["api_key_env"] = None if self.api_key_env is None else env_name(self.api_key_env)
        shown["base_url"] = redact_url(self.base_url)
        return f"SummarizerConfig({', '.join(f'{k}={v!r}' for k, v in shown.items())})"

    @property
    def effective_model(self) -> str | None:
        if self.provider == "native" and not self.model:
            from .native_wire import DEFAULT_MODEL

            return DEFAULT_MODEL
        return self.model or DEFAULT_MODELS.get(self.provider)
