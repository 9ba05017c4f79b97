"""Which providers' non-streaming path is broken on this machine, remembered between processes.

In the ``amplifier`` CLI every turn is a process of its own: without a memory, each one would pay a failed
non-streaming request and print the warning again. What decides the path is the provider's code and the packages
installed beside it, so a provider is remembered under its class and the versions of its distribution and of
every package that distribution requires (``anthropic`` for provider-anthropic): an upgrade or pin of any of them
gives a new key, and a fixed install is tried on the non-streaming path again.

One small JSON file beside the local summary store (a row in the store would travel with a shared Redis store to
machines whose installs differ, and could be evicted with the summaries). It is written atomically (a private
temporary file, then ``os.replace``); a file that cannot be read or parsed is logged and ignored, never fatal.
"""

from __future__ import annotations

import contextlib
import importlib.metadata as metadata
import json
import logging
import os
import re
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

FILE_NAME = "provider-paths.json"
FORMAT = 1
MAX_BYTES = 64 * 1024
"""A larger file is not ours (ignored): the memory holds a few short keys."""
MAX_ENTRIES = 32
"""Keys kept, newest last: each upgrade adds one, and the oldest no install has any more go first."""
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_EXTRA = re.compile(r";.*\bextra\s*==")

Versions = Callable[[Any], Mapping[str, str]]


def installed_versions(provider: Any) -> dict[str, str]:
    """The versions of the provider's distribution and of each package it requires, by name (empty when the
    provider is not an installed package's, e.g. one defined in a script)."""
    top = (type(provider).__module__ or "").partition(".")[0]
    if not top:
        return {}
    dist = _distribution(top)
    if dist is None:
        return {}
    found = {_normal(dist.metadata["Name"] or top): dist.version}
    for requirement in dist.requires or []:
        match = _NAME.match(requirement)
        if match is None or _EXTRA.search(requirement):
            continue  # an optional extra's package decides nothing unless it is installed for that extra
        with contextlib.suppress(metadata.PackageNotFoundError):
            found[_normal(match.group())] = metadata.version(match.group())
    return found


def _distribution(top: str) -> metadata.Distribution | None:
    """The installed distribution that provides the top-level module ``top``."""
    with contextlib.suppress(metadata.PackageNotFoundError):
        return metadata.distribution(top.replace("_", "-"))  # amplifier_module_provider_anthropic and kin
    names = metadata.packages_distributions().get(top) or []
    for name in names:
        with contextlib.suppress(metadata.PackageNotFoundError):
            return metadata.distribution(name)
    return None


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def provider_key(provider: Any, versions: Mapping[str, str]) -> str:
    """``module.Class anthropic==2.14.0 amplifier-module-provider-anthropic==1.2.0 ...`` (sorted by name)."""
    kind = type(provider)
    installed = " ".join(f"{name}=={version}" for name, version in sorted(versions.items()))
    return f"{kind.__module__}.{kind.__qualname__} {installed}".strip()


class ProviderPaths:
    """The providers known to need their streaming path, in ``path`` (read once, lazily; rewritten on change)."""

    def __init__(self, path: Path, versions: Versions = installed_versions) -> None:
        self.path = path
        self.versions = versions
        self._streamed: list[str] | None = None

    def key(self, provider: Any) -> str:
        """The provider's key; its class alone when the installed versions cannot be read."""
        try:
            versions = self.versions(provider)
        except Exception as exc:  # metadata of a broken install: remember under the class alone
            logger.debug("reading the installed versions failed (%s)", type(exc).__name__)
            versions = {}
        return provider_key(provider, versions)

    def streams(self, key: str) -> bool:
        return key in self._load()

    def remember(self, key: str) -> None:
        keys = [k for k in self._load() if k != key] + [key]
        self._write(keys[-MAX_ENTRIES:])

    def forget(self, key: str) -> None:
        keys = self._load()
        if key in keys:
            self._write([k for k in keys if k != key])

    def _load(self) -> list[str]:
        if self._streamed is None:
            self._streamed = self._read()
        return self._streamed

    def _read(self) -> list[str]:
        try:
            with open(self.path, "rb") as file:
                raw = file.read(MAX_BYTES + 1)
        except FileNotFoundError:
            return []
        except OSError as exc:
            logger.info("provider paths file %s could not be read (%s); ignored", self.path, type(exc).__name__)
            return []
        try:
            if len(raw) > MAX_BYTES:
                raise ValueError("too large")
            data = json.loads(raw)
            keys = data["streamed"] if isinstance(data, dict) and data.get("format") == FORMAT else None
            if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
                raise ValueError("not a list of keys")
        except (ValueError, KeyError, TypeError, RecursionError) as exc:
            logger.info("provider paths file %s is not one this module wrote (%s); ignored", self.path, exc)
            return []
        return keys[-MAX_ENTRIES:]

    def _write(self, keys: list[str]) -> None:
        self._streamed = keys
        text = json.dumps({"format": FORMAT, "streamed": keys}, indent=1)
        temporary: str | None = None
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            descriptor, temporary = tempfile.mkstemp(prefix=f".{FILE_NAME}.", dir=self.path.parent)  # mode 0o600
            with os.fdopen(descriptor, "w", encoding="utf-8") as file:
                file.write(text)
            os.replace(temporary, self.path)  # replaces a link itself, never what it points to
            temporary = None
        except OSError as exc:  # a read-only cache: the next process asks as a first one would
            logger.info("provider paths file %s could not be written (%s)", self.path, type(exc).__name__)
        finally:
            if temporary is not None:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)


def beside(store_file: Path) -> Path:
    """Where the provider paths are kept for a local store file."""
    return store_file.parent / FILE_NAME
