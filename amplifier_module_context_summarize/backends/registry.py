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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from .base import Backend

if TYPE_CHECKING:
    from ..config import SummarizerConfig

Builder = Callable[["SummarizerConfig", Any | None, Any | None, Mapping[str, str]], Backend | None]
"""(summarizer config, coordinator or None, injected HTTP client or None, environment) -> backend, or None."""


def _lazy(module: str) -> Builder:
    """The ``build`` function of ``backends/<module>.py``, imported on first use."""

    def build(
        cfg: SummarizerConfig, coordinator: Any | None, http_client: Any | None, environ: Mapping[str, str]
    ) -> Backend | None:
        from ..extras import import_for  # a missing SDK: one line naming the extra to install

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
