"""Optional dependencies: the SDKs of the direct backends and the Redis client are extras, not requirements.

The default install (``summarizer.provider: session`` or ``extractive``, a memory or SQLite store) needs none
of them. Configuring one whose package is missing fails at mount with one line naming the extra to install.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import re
from types import ModuleType

PROJECT = "amplifier-module-context-summarize"
EXTRAS = {"anthropic": "anthropic", "openai": "openai", "redis": "redis"}
"""Top-level package -> the extra that installs it (``[all]`` installs every one)."""


class MissingExtra(ValueError):
    """A configured feature needs a package that is not installed."""


def install_command(package: str) -> str:
    """A command that installs ``package`` as the ``[extra]`` pins it. The project is installed from a checkout,
    not from a package index, so ``pip install 'PROJECT[extra]'`` would find nothing: the extra's requirement
    (``anthropic>=0.40``) is read from the installed distribution's metadata, or the bare name without it."""
    extra = EXTRAS.get(package, "all")
    try:
        requires = importlib.metadata.requires(PROJECT) or []
    except importlib.metadata.PackageNotFoundError:  # run from a source tree that was never installed
        requires = []
    marker = re.compile(rf"^{re.escape(package)}\b[^;]*;\s*extra\s*==\s*['\"]{re.escape(extra)}['\"]\s*$")
    pinned = next((r.split(";")[0].strip() for r in requires if marker.match(r)), package)
    return f"pip install '{pinned}' (the [{extra}] extra)"


def missing_extra_message(package: str, feature: str) -> str:
    return f"{feature} needs the '{package}' package, which is not installed: {install_command(package)}"


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
    return (
        f"{command}: {env} is set but the '{package}' package is not installed: using the offline extractive "
        f"summarizer; for LLM summaries: {install_command(package)}"
    )
