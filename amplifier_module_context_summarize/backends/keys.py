"""API keys for the direct backends: read at build time from the environment variable the config names.

The key goes straight into the SDK client; nothing here keeps, logs or formats it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..core.redact import unset_variable

if TYPE_CHECKING:
    from .registry import SummarizerConfig


def read_api_key(cfg: SummarizerConfig, environ: Mapping[str, str]) -> str:
    """The key in ``cfg.key_env``, stripped; blank counts as missing (``""``)."""
    key_env = cfg.key_env or ""
    return (environ.get(key_env) or "").strip() if key_env else ""


def missing_key(cfg: SummarizerConfig) -> ValueError:
    """The error naming the variable to set (never a value, nor a key pasted where its name belongs)."""
    return unset_variable(
        "summarizer.api_key_env", cfg.key_env, f" (the API key of summarizer provider {cfg.provider!r})"
    )
