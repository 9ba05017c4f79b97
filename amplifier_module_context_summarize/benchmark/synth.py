"""Synthetic agent sessions: mixed OpenAI / Anthropic-block / Amplifier-block turns of chosen sizes.

Texts are slices of one seeded pseudo-word corpus, so histories are deterministic, cheap to build,
and tokenize like prose mixed with code (not like one repeated sentence, which tiktoken counts
unrealistically fast).
"""

from __future__ import annotations

import itertools
import json
import math
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

Message = dict[str, Any]
Range = tuple[int, int]

_SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "sa", "te", "vo", "xi", "zu", "pra", "gle", "tro", "bin", "dex", "cor")
_CODE = (
    *("def", "return", "self", "import", "None", "True", "False", "==", "->", "()", "[]", "{}", "error:", "line"),
    *("src/app.py", "tests/test_app.py", "TypeError", "pytest", "passed", "failed", "git", "diff", "--stat"),
    *("0x3f2a", "https://example.com/api/v2", "json.loads(data)"),
)


@dataclass(frozen=True)
class Sizes:
    """Token ranges for each kind of message in a turn, and how often tools run."""

    user: Range = (100, 300)
    tool: Range = (200, 3_000)
    """Ordinary tool outputs, drawn log-uniformly (most outputs are short)."""
    large_tool: Range = (8_000, 20_000)
    large_share: float = 0.03
    assistant: Range = (100, 500)
    rounds: Range = (0, 5)
    """Tool rounds per turn; each round is one assistant message calling one or more tools."""
    parallel_share: float = 0.2
    system: int = 400


REALISTIC = Sizes()
"""Sizes seen in coding-agent sessions; used by the cost simulation."""
SMALL = Sizes(user=(20, 60), tool=(40, 400), large_tool=(2_000, 4_000), large_share=0.02, assistant=(20, 100))
"""Short messages for the per-request measurements: they keep the 100k-message case quick to build, and
make the naive recount baseline cheaper (so its ratio is conservative)."""


class TextSource:
    """Slices of a seeded corpus, sized in approximate tokens."""

    def __init__(self, seed: int = 7, chars: int = 1_000_000, chars_per_token: float = 4.0) -> None:
        rng = random.Random(seed)
        words = ["".join(rng.choices(_SYLLABLES, k=rng.randint(1, 4))) for _ in range(3_000)] + list(_CODE) * 20
        pieces = rng.choices(words, k=chars // 5)
        self.corpus = " ".join(w + ("\n" if rng.random() < 0.08 else "") for w in pieces)[:chars]
        self.chars_per_token = chars_per_token

    def calibrate(self, count_text: Callable[[str], int], sample: int = 200_000) -> None:
        """Match ``chars_per_token`` to the counter actually in use."""
        text = self.corpus[:sample]
        self.chars_per_token = len(text) / max(count_text(text), 1)

    def text(self, tokens: int, rng: random.Random) -> str:
        length = min(max(int(tokens * self.chars_per_token), 1), len(self.corpus) // 2)
        start = rng.randrange(0, len(self.corpus) - length)
        return self.corpus[start : start + length]


class SessionGenerator:
    """Turns of a coding-agent session: a user ask, tool rounds, a final reply; the shape varies per turn."""

    def __init__(self, sizes: Sizes = REALISTIC, seed: int = 1, text: TextSource | None = None) -> None:
        self.sizes = sizes
        self.rng = random.Random(seed)
        self.text = text or TextSource()
        self.turns = 0

    def _tokens(self, span: Range) -> int:
        return self.rng.randint(*span)

    def _tool_tokens(self) -> int:
        s = self.sizes
        if self.rng.random() < s.large_share:
            return self._tokens(s.large_tool)
        low, high = s.tool
        return int(math.exp(self.rng.uniform(math.log(low), math.log(high))))

    def _say(self, span: Range) -> str:
        return self.text.text(self._tokens(span), self.rng)

    def system(self) -> Message:
        return {"role": "system", "content": self.text.text(self.sizes.system, self.rng)}

    def turn(self) -> list[Message]:
        """One user ask and everything the agent does until it replies."""
        i = self.turns
        self.turns += 1
        shape = ("openai", "anthropic", "amplifier")[self.rng.randrange(3)]
        ask = self._say(self.sizes.user)
        out: list[Message] = [
            {"role": "user", "content": [{"type": "text", "text": ask}] if shape == "anthropic" else ask}
        ]
        for r in range(self._tokens(self.sizes.rounds)):
            calls = 1 + (self.rng.randint(1, 2) if self.rng.random() < self.sizes.parallel_share else 0)
            ids = [f"{shape[:3]}_{i}_{r}_{k}" for k in range(calls)]
            out += _ROUND[shape](self, ids)
        reply = self._say(self.sizes.assistant)
        out.append({"role": "assistant", "content": [{"type": "text", "text": reply}] if shape != "openai" else reply})
        return out

    def stream(self) -> Iterator[Message]:
        yield self.system()
        while True:
            yield from self.turn()

    def history(self, n: int) -> list[Message]:
        return list(itertools.islice(self.stream(), n))

    # ------------------------------------------------------------------ one tool round per shape

    def _command(self) -> str:
        return f"cat src/pkg/module_{self.rng.randrange(500)}.py | grep -n {self.rng.choice(_CODE)}"

    def _output(self) -> str:
        return self.text.text(self._tool_tokens(), self.rng)

    def openai_round(self, ids: list[str]) -> list[Message]:
        functions = [{"name": "bash", "arguments": json.dumps({"command": self._command()})} for _ in ids]
        calls = [{"id": c, "type": "function", "function": f} for c, f in zip(ids, functions, strict=True)]
        out: list[Message] = [{"role": "assistant", "content": None, "tool_calls": calls}]
        out += [{"role": "tool", "tool_call_id": c, "content": self._output()} for c in ids]
        return out

    def anthropic_round(self, ids: list[str]) -> list[Message]:
        signature = f"sig{self.rng.getrandbits(64):x}=="
        thinking = {"type": "thinking", "thinking": self._say((20, 80)), "signature": signature}
        uses = [{"type": "tool_use", "id": c, "name": "Bash", "input": {"command": self._command()}} for c in ids]
        results = [{"type": "tool_result", "tool_use_id": c, "content": self._output()} for c in ids]
        out: list[Message] = [{"role": "assistant", "content": [thinking, *uses]}]
        if self.rng.random() < 0.7:
            out.append({"role": "user", "content": results})
        else:
            out += [{"role": "user", "content": [block]} for block in results]
        return out

    def amplifier_round(self, ids: list[str]) -> list[Message]:
        calls = [
            {"type": "tool_call", "id": c, "name": "read_file", "input": {"path": f"src/m{self.rng.randrange(500)}.py"}}
            for c in ids
        ]
        out: list[Message] = [{"role": "assistant", "content": [{"type": "text", "text": "Reading."}, *calls]}]
        for c in ids:
            block = {"type": "tool_result", "tool_call_id": c, "output": self._output()}
            out.append({"role": "tool", "tool_call_id": c, "content": [block]})
        return out


_ROUND: dict[str, Callable[[SessionGenerator, list[str]], list[Message]]] = {
    "openai": SessionGenerator.openai_round,
    "anthropic": SessionGenerator.anthropic_round,
    "amplifier": SessionGenerator.amplifier_round,
}
