"""A simulated agent model reading one tool result: does it read the rest first, or answer as if it saw it all?

``SimulatedLLM`` writes summaries; this is the other side of a spilled output, the session's model meeting its
preview. It models two documented failures, so the preview's wording is tested against them, not only written:

* **Agents skip reading persisted output and carry on as if they had seen it** (claude-code#17407): a result that
  is short, names a file, or says it was "clipped" is taken as the whole, or as the part that matters. Only plain
  words that the rest was *not* seen or shown ("NOT seen", "not shown", "NOT in your context") together with a
  way to read it (a file path, a recall handle) make the model read before answering, and even then it carries
  on with ``skip_rate`` (0.1).
* **The middle of a long text is read least** (Liu et al. 2023, "Lost in the Middle"): only the first and last
  ``attention_chars`` of a result are looked at for such words, so a marker in the middle of a clipped output
  (``[... N characters clipped; …]``) goes unnoticed.

Deterministic from ``seed`` and the text.
"""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass

NOT_SEEN = re.compile(
    r"\b(?:not|never)\s+(?:been\s+)?(?:seen|shown|visible|included|in\s+your\s+context)\b", re.IGNORECASE
)
PATH = re.compile(r"(?:File:|file_path\s*\"?|saved (?:to|at))\s*\"?(/[^\s\"\]]+)")
HANDLE = re.compile(r"\bhandle\s+\"?(m\d{1,9}(?:\.\d{1,6})?-[0-9a-f]{6})")


@dataclass(frozen=True)
class Step:
    """What the model does next: ``read`` (with the path or handle it reads) or ``answer`` from what it saw."""

    kind: str
    path: str | None = None
    handle: str | None = None


class SimulatedReader:
    def __init__(self, seed: int = 0, skip_rate: float = 0.1, attention_chars: int = 600) -> None:
        self.seed = seed
        self.skip_rate = skip_rate
        self.attention_chars = attention_chars

    def next_step(self, result: str) -> Step:
        """The model's next step after ``result``, asked about something the result may not show."""
        n = self.attention_chars
        noticed = result if len(result) <= 2 * n else result[:n] + "\n" + result[-n:]
        if not NOT_SEEN.search(noticed):
            return Step("answer")
        path, handle = PATH.search(noticed), HANDLE.search(noticed)
        if path is None and handle is None:
            return Step("answer")
        digest = hashlib.sha256(f"{self.seed}\0{result}".encode("utf-8", "surrogatepass")).digest()
        if random.Random(digest).random() < self.skip_rate:
            return Step("answer")
        return Step("read", path.group(1) if path else None, handle.group(1) if handle else None)
