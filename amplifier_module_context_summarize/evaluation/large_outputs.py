"""``eval --large-outputs``: the corpus sessions with their substantial tool outputs grown to 20–30k characters.

Issue 22's failures appear when single tool outputs take a large part of the budget (``read_file`` results of
20–30k characters at a 16k cap). The recorded sessions rarely have such outputs, so this makes them: every tool
result of at least ``MIN_CHARS`` characters (file reads, listings, test runs — not one-line acknowledgements)
keeps its original text first and is continued with file-like filler up to a length drawn from 20–30k
characters. What the agent said, called and asked stays as recorded, and so do the probes: their keys are in the
original text, which is never cut. The filler is synthetic Python source (numbered lines, as file-read tools
print them) built from a fixed vocabulary that names no path, command or error of any session, so it can never
supply a probe key that the view would otherwise lack. Deterministic: the length and text derive from the session
name and the message's index.
"""

from __future__ import annotations

import copy
import hashlib
import random
from typing import Any

from ..core.messages import Message
from .loader import Session

MIN_CHARS = 2_000
LOW, HIGH = 20_000, 30_000

_NOUNS = (
    *("buffer", "record", "handler", "payload", "cursor", "segment", "ledger", "window", "bucket", "token"),
    *("frame", "schema", "policy", "channel", "vector", "index", "entry", "queue", "shard", "lease"),
)
_VERBS = ("load", "parse", "merge", "flush", "resolve", "encode", "decode", "split", "apply", "check", "build")
_TYPES = ("int", "str", "bytes", "float", "bool", "dict[str, int]", "list[str]", "None")


def _name(rng: random.Random) -> str:
    return f"{rng.choice(_VERBS)}_{rng.choice(_NOUNS)}{rng.randrange(2, 99)}"


def _function(rng: random.Random) -> list[str]:
    noun, other = rng.choice(_NOUNS), rng.choice(_NOUNS)
    name = _name(rng)
    args = ", ".join(f"{rng.choice(_NOUNS)}_{i}: {rng.choice(_TYPES)}" for i in range(rng.randrange(1, 4)))
    lines = [
        f"    def {name}(self, {args}) -> {rng.choice(_TYPES)}:",
        f'        """{name.replace("_", " ").capitalize()} from the {noun} and keep the {other} in step."""',
    ]
    for _ in range(rng.randrange(3, 12)):
        pick = rng.random()
        a, b = rng.choice(_NOUNS), rng.choice(_NOUNS)
        if pick < 0.25:
            lines.append(f"        if self._{a} is None or len(self._{a}) > {rng.randrange(8, 4096)}:")
            lines.append(f"            self._{a} = self._{b}.{rng.choice(_VERBS)}({a}_0)")
        elif pick < 0.45:
            lines.append(f"        for {a} in self._{b}s:")
            lines.append(f"            total += {a}.{rng.choice(_VERBS)}(offset={rng.randrange(0, 512)})")
        elif pick < 0.6:
            lines.append(f"        # keep the {a} ordered by {b} so a retry never reorders them")
        else:
            lines.append(f"        {a} = self._{rng.choice(_VERBS)}_{b}({a}_0, limit={rng.randrange(1, 64)})")
    lines.append(f"        return {rng.choice(_NOUNS)}")
    return [*lines, ""]


def filler(chars: int, rng: random.Random, first_line: int = 1) -> str:
    """About ``chars`` characters of numbered, file-like Python source."""
    lines: list[str] = []
    size = 0
    number = first_line
    while size < chars:
        block = [f"class {rng.choice(_NOUNS).capitalize()}{rng.choice(_NOUNS).capitalize()}:"]
        block += ["    __slots__ = (" + ", ".join(f'"_{rng.choice(_NOUNS)}"' for _ in range(3)) + ")", ""]
        for _ in range(rng.randrange(2, 6)):
            block += _function(rng)
        for line in block:
            numbered = f"{number:>6}\t{line}"
            lines.append(numbered)
            size += len(numbered) + 1
            number += 1
            if size >= chars:
                break
    return "\n".join(lines)


def _grow(text: str, rng: random.Random) -> str:
    target = rng.randrange(LOW, HIGH + 1)
    if len(text) >= target:
        return text
    return f"{text}\n{filler(target - len(text) - 1, rng, text.count(chr(10)) + 2)}"[:target]


def _rng(session: str, index: int, part: int) -> random.Random:
    return random.Random(hashlib.sha256(f"{session}:{index}:{part}".encode()).hexdigest())


def _enlarge_content(content: Any, rng: random.Random) -> tuple[Any, bool]:
    """The content of a tool result grown (a string, or a list of blocks whose last text block grows)."""
    if isinstance(content, str):
        if len(content) < MIN_CHARS:
            return content, False
        return _grow(content, rng), True
    if isinstance(content, list):
        texts = [b for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)]
        total = sum(len(b["text"]) for b in texts)
        if not texts or total < MIN_CHARS:
            return content, False
        target = rng.randrange(LOW, HIGH + 1)
        if total >= target:
            return content, False
        texts[-1]["text"] += "\n" + filler(target - total - 1, rng)
        return content, True
    return content, False


def enlarge_message(message: Message, session: str, index: int) -> tuple[Message, int]:
    """A copy of ``message`` with its substantial tool results grown; and how many were."""
    grown = 0
    if message.get("role") == "tool":
        copied = copy.deepcopy(message)
        copied["content"], changed = _enlarge_content(copied.get("content"), _rng(session, index, 0))
        return copied, int(changed)
    content = message.get("content")
    if not isinstance(content, list) or not any(
        isinstance(b, dict) and b.get("type") in ("tool_result", "function_call_output") for b in content
    ):
        return message, 0
    copied = copy.deepcopy(message)
    for part, block in enumerate(copied["content"]):
        if not isinstance(block, dict) or block.get("type") not in ("tool_result", "function_call_output"):
            continue
        key = "content" if "content" in block else "output"
        block[key], changed = _enlarge_content(block.get(key), _rng(session, index, part))
        grown += int(changed)
    return copied, grown


def enlarge_session(session: Session) -> int:
    """Grow ``session``'s substantial tool outputs in place; returns how many were grown."""
    total = 0
    for index, message in enumerate(session.messages):
        session.messages[index], grown = enlarge_message(message, session.name, index)
        total += grown
    return total
