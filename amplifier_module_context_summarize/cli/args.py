"""Argument types the command-line tools share."""

from __future__ import annotations

import argparse
import re
from decimal import Decimal
from importlib.metadata import PackageNotFoundError, version

DISTRIBUTION = "amplifier-module-context-summarize"
SUMMARIZERS = ("extractive", "anthropic", "openai", "native")
"""What ``compact`` and ``inspect --summarizer`` offer: the offline summarizer, a direct LLM, or the provider's own
compaction (``native``: its family from ``--model``, Claude by default)."""


class OneLineParser(argparse.ArgumentParser):
    """Bad arguments end in one line and exit 2, as bad input does (``--budget abc`` as ``--budget 0``), not a
    usage block; ``--help`` still shows it. Subcommands' parsers are of the same class (argparse's default)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}; --help lists the options\n")


def package_version() -> str:
    """The installed distribution's version (``--version``); ``unknown`` when run from a bare source tree."""
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "unknown"


_TOKENS = re.compile(r"\s*(\d+(?:\.\d+)?|\.\d+)\s*([kKmM]?)\s*")
_SCALE = {"": 1, "k": 1_000, "m": 1_000_000}


def token_count(text: str) -> int:
    """A token count as people write it: ``24000``, ``24k``, ``200K``, ``1.5m`` (``24_000`` and ``24,000`` too)."""
    match = _TOKENS.fullmatch(text.replace("_", "").replace(",", ""))
    if not match:
        raise argparse.ArgumentTypeError(f"{text!r} is not a token count (write e.g. 24000, 24k, 200k or 1.5m)")
    number, suffix = match.groups()
    if len(number) > 400:  # past any budget; budget_problem says so. Exact arithmetic below stays cheap.
        number = "1" + "0" * 400
    value = Decimal(number) * _SCALE[suffix.lower()]
    if value != value.to_integral_value():
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of tokens")
    return int(value)
