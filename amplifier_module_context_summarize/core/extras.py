"""Optional dependencies: the SDKs of the direct backends and the Redis client are extras, not requirements.

The default install (``summarizer.provider: session`` or ``extractive``, a memory or SQLite store) needs none
of them. Configuring one whose package is missing fails at mount with one line naming the extra to install.
"""

from __future__ import annotations

import importlib
import importlib.util
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


def installed(package: str) -> bool:
    """Whether the top-level ``package`` can be imported, found without importing it: a command that picks a
    summarizer for the user (a key in the environment) checks this first, so a key without its SDK never stops it."""
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):  # a parent that fails to import, or a module with no spec
        return False


def key_without_sdk_note(package: str, env: str, command: str) -> str:
    """The one line a command prints when ``env`` is set but ``package`` (its SDK) is not installed."""
    extra = EXTRAS.get(package, "all")
    return (
        f"{command}: {env} is set but the '{package}' package is not installed: using the offline extractive "
        f"summarizer (pip install '{PROJECT}[{extra}]' for LLM summaries)"
    )
