"""Counts in words: ``1 message``, ``2 messages``, as every line the package prints says them."""

from __future__ import annotations


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """``1 message``, ``2 messages``: counts in words, never ``message(s)``."""
    return f"{count:,} {noun}" if count == 1 else f"{count:,} {nouns or noun + 's'}"
