"""A span rendered once, so cutting it into fragments that fit the summarizer's input is linear in its size.

``SpanSummarizer`` halves a span whose transcript is longer than ``max_input_tokens`` until each half fits. Done
by rendering and counting each half, a span of n messages is rendered and counted about log2(n / fragment) times
over (5 s of tokenizer time at 20,000 messages). Here each message's entries are rendered and counted once; a
range's count is the sum of its messages' counts, good to within a few tokens per entry (numbers renumbered from
1 in a fragment, the blank line between entries merging with a body's trailing whitespace or punctuation in the
tokenizer). A range is cut without rendering only when even the least its count could be (``least_tokens``) is
over the limit; otherwise its transcript is rendered and counted exactly, as before. So the fragments, their
order and every transcript sent are the ones halving with exact counts gives; only the work is less.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import chain

from ..core.messages import Message
from .prompts import join_entries, transcript_entries

ENTRY_SLACK_TOKENS = 4
"""How far a range's summed count may be above its rendered count, per entry: a renumbered header is at most 2
tokens shorter (numbers under 10**9 take at most 3 tokens, a renumbered one at least 1), a blank line between
entries at most 2 (it can merge with the body before it). Measured on random ranges of the bench session and the
13 recordings: 0 to 1.35 per entry (``tests/test_fragments.py`` holds the bound)."""


class SpanText:
    """The transcript entries of a span's messages, each rendered and counted once; ranges are ``[lo, hi)``."""

    def __init__(self, messages: list[Message], count_text: Callable[[str], int]) -> None:
        self.messages = messages
        self.entries = [transcript_entries(message) for message in messages]
        self._tokens = [0]
        self._entry_ends = [0]
        for entries in self.entries:
            first = self._entry_ends[-1] + 1
            self._tokens.append(self._tokens[-1] + count_text(join_entries(entries, first)))
            self._entry_ends.append(self._entry_ends[-1] + len(entries))
        self._blank_line = count_text("\n\n")

    def least_tokens(self, lo: int, hi: int) -> int:
        """A lower bound of the token count of ``transcript(lo, hi)``."""
        summed = self._tokens[hi] - self._tokens[lo] + max(hi - lo - 1, 0) * self._blank_line
        return summed - ENTRY_SLACK_TOKENS * (self._entry_ends[hi] - self._entry_ends[lo])

    def transcript(self, lo: int, hi: int) -> str:
        """``render_transcript(messages[lo:hi])``, from the entries rendered once."""
        return join_entries(chain.from_iterable(self.entries[lo:hi]))
