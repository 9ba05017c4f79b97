"""An instant summarizer backend with realistic output sizes, and a provider that only reports limits.

The backend answers without I/O, so benchmark timings are the module's own work; it records the
seconds it spent so they can be subtracted anyway. Summaries are sized like real ones (a few hundred
to ~1,500 tokens) so that summary tiers form as they would in a real session.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

from amplifier_core.models import ProviderInfo

from ..backends.base import Completion
from ..summarizer.prompts import FENCE_OPEN
from .synth import TextSource


class InstantBackend:
    """Implements ``backends.base.Backend``: a summary of ``ratio`` × the transcript, clamped to [low, high]."""

    name = "bench-instant"
    model: str | None = "instant"

    def __init__(
        self,
        text: TextSource,
        count_text: Callable[[str], int] | None = None,
        ratio: float = 0.03,
        low: int = 300,
        high: int = 1_500,
    ) -> None:
        self.text = text
        self.count_text = count_text or (lambda s: len(s) // 4)
        self.ratio, self.low, self.high = ratio, low, high
        self.calls = 0
        self.seconds = 0.0
        self._rng = random.Random(11)

    async def complete(
        self, system: str, prompt: str, max_output_tokens: int, provider: Any | None = None
    ) -> Completion:
        started = time.perf_counter()
        self.calls += 1
        transcript = prompt[prompt.rfind(FENCE_OPEN) :]
        source = self.count_text(transcript)
        # Never as long as the source: the summarizer rejects a summary that is not smaller.
        want = min(max(int(source * self.ratio), self.low), self.high, max_output_tokens, max(source // 3, 8))
        text = self.text.text(want, self._rng)
        completion = Completion(
            text=text,
            input_tokens=self.count_text(system) + self.count_text(prompt),
            output_tokens=self.count_text(text),
        )
        self.seconds += time.perf_counter() - started
        return completion


class LimitsProvider:
    """Just enough of an Amplifier provider for the manager to read the budget from ``get_info()``.

    ``get_info()`` builds a fresh ``ProviderInfo`` per call, as real providers do, so its cost is in the figures.
    """

    name = "bench"

    def __init__(self, context_window: int, max_output_tokens: int) -> None:
        self.context_window = context_window
        self.max_output_tokens = max_output_tokens

    def get_info(self) -> Any:
        defaults = {"context_window": self.context_window, "max_output_tokens": self.max_output_tokens}
        return ProviderInfo(id="bench", display_name="Bench", defaults=defaults)
