"""Optional dependencies: the SDKs of the direct backends and the Redis client are extras, not requirements.

The default install (``summarizer.provider: session`` or ``extractive``, a memory or SQLite store) needs none
of them. Configuring one whose package is missing fails at mount with one line naming the extra to install.
"""

from __future__ import annotations

import importlib
from types import ModuleType

PROJECT = "amplifier-module-context-summarize"
EXTRAS = {"anthropic": "anthropic", "openai": "openai", "redis": "redis"}
"""Top-level package -> the extra that installs it (``[all]`` installs every one)."""


class MissingExtra(ValueError):
    """A configured feature needs a package that is not installed."""


def missing_extra_message(package: str, feature: str) -> str:
    extra = EXTRAS.get(package, "all")
    return (
        f"{feature} needs the '{package}' package, which is not installed: pip install '{PROJECT}[{extra}]' (or [all])"
    )


def import_for(module: str, feature: str) -> ModuleType:
    """Import ``module``; a missing optional package becomes ``MissingExtra`` naming its extra."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        top = (exc.name or "").split(".")[0]
        if top not in EXTRAS:
            raise
        raise MissingExtra(missing_extra_message(top, feature)) from None
