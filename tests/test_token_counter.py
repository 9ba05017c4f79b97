"""``TokenCounter``'s text count: tiktoken's ordinary encoding, special tokens' text counted as plain text.

The counter calls ``encode_ordinary`` (it skips ``encode``'s search for special tokens, a quarter of its time on
prose; a resume counts every message). The count must stay what ``encode(text, disallowed_special=())`` gives: a
message holding ``<|endoftext|>`` is text to the provider, never one special token, and never an error.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amplifier_module_context_summarize.core.tokens import _load_encoding, counts_exactly, text_counter

pytestmark = pytest.mark.skipif(not counts_exactly(), reason="tiktoken's cl100k_base is not available offline")

SPECIAL = ("<|endoftext|>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|endofprompt|>")
COUNT = text_counter("cl100k_base")


def encode_count(text: str) -> int:
    return len(_load_encoding("cl100k_base").encode(text, disallowed_special=()))


def test_special_tokens_text_counts_as_plain_text() -> None:
    for special in SPECIAL:
        text = f"before {special} after"
        assert COUNT(text) == encode_count(text)
        assert COUNT(special) > 1  # as text: several tokens, not the one special token


def test_a_lone_surrogate_is_counted_not_raised() -> None:
    text = "a \ud800 b"
    assert COUNT(text) == encode_count(text) > 0


pieces = st.one_of(st.text(max_size=40), st.sampled_from(SPECIAL), st.sampled_from(("\n", "  ", "def f():", "日本")))


@settings(max_examples=300, deadline=None)
@given(st.lists(pieces, max_size=12))
def test_the_count_is_encode_with_no_special_tokens(parts: list[str]) -> None:
    text = "".join(parts)
    assert COUNT(text) == encode_count(text)
