"""``needle in text`` for thousands of needles, without scanning the text once per needle.

A compaction's account checks every artifact of the hidden span against the text that replaced it; a resumed
session hides tens of thousands of groups at once, and most of their artifacts are not named, so each check
scans the whole text to say no. A needle with a run of ``GRAM`` characters that occurs nowhere in the text
cannot occur in it: once enough needles are asked for, a set of the text's grams answers most of them, and only
the rest are searched. The answers are the plain ``in``'s, and the cost stays linear in the text.
"""

from __future__ import annotations

GRAM = 8
SCANS_BEFORE_INDEX = 256
"""Needles searched plainly before the grams are collected: collecting them costs about as much as this many
plain searches, so an ordinary compaction's account (a few dozen to a few hundred artifacts) never pays for it."""


class Substrings:
    """Answers ``needle in self`` as ``needle in text`` does."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._asked = 0
        self._grams: set[str] | None = None

    def __contains__(self, needle: str) -> bool:
        if self._grams is None:
            self._asked += 1
            if self._asked <= SCANS_BEFORE_INDEX:
                return needle in self.text
            text = self.text
            self._grams = {text[i : i + GRAM] for i in range(len(text) - GRAM + 1)}
        grams = self._grams
        if len(needle) >= GRAM:  # a plain loop: most needles are answered by their first gram or their last
            if needle[-GRAM:] not in grams:
                return False
            for i in range(0, len(needle) - GRAM + 1, GRAM):
                if needle[i : i + GRAM] not in grams:
                    return False
        return needle in self.text
