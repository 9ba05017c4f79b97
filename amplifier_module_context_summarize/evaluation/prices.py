"""What providers charge for input, cached input and output: the one table the cost model prices with.

To update: change the figures and ``PRICES_DATE`` (and ``SOURCES`` if the pages moved). Every report that
prices a session prints the table's name and date (``PriceTable.label``), so an old figure is never
mistaken for a current one.

Prices are US dollars per million tokens. ``cache_write`` is Anthropic's 5-minute-TTL write (1.25x base
input); ``cache_read`` is the cache hit (Anthropic 0.1x; OpenAI "cached input", 0.1x-0.5x by model, with no
write premium: a first read of a prefix is billed as ordinary input).
"""

from __future__ import annotations

from dataclasses import dataclass

PRICES_DATE = "2026-11-26"
"""When the figures below were read (from public copies of the providers' pricing pages)."""
SOURCES = {
    "anthropic": "https://docs.anthropic.com/en/docs/about-claude/pricing (prompt caching: 5m write 1.25x, read 0.1x)",
    "openai": "https://platform.openai.com/docs/pricing (cached input; no write premium)",
}


@dataclass(frozen=True)
class ModelPrice:
    model: str
    input: float
    """Base input, $ per million tokens."""
    output: float
    cache_read: float
    cache_write: float
    """Equal to ``input`` where the provider charges nothing extra to write a cache entry (OpenAI)."""
    min_cacheable: int = 1024
    """Shortest prefix the provider caches, in tokens."""

    def dollars(self, read: int, write: int, uncached: int, output: int = 0) -> float:
        return (read * self.cache_read + write * self.cache_write + uncached * self.input + output * self.output) / 1e6

    def input_equivalent(self, read: int, write: int, uncached: int, output: int = 0) -> float:
        """The same bill in tokens of base (uncached) input."""
        return self.dollars(read, write, uncached, output) * 1e6 / self.input


@dataclass(frozen=True)
class PriceTable:
    provider: str
    """``anthropic`` (explicit breakpoints, write premium) or ``openai`` (automatic prefix cache)."""
    agent: ModelPrice
    """The model the agent's requests go to."""
    summarizer: ModelPrice
    """The model that writes summaries (the session's own model unless ``summarizer.model`` picks another)."""
    date: str = PRICES_DATE

    @property
    def label(self) -> str:
        same = self.summarizer.model == self.agent.model
        summarizing = "" if same else f", summaries by {self.summarizer.model}"
        return f"{self.provider} prices of {self.date}: {self.agent.model}{summarizing}"

    def with_summarizer(self, model: str) -> PriceTable:
        return PriceTable(self.provider, self.agent, MODELS[self.provider][model], self.date)


_A = 1.25
"""Anthropic's 5-minute cache write, as a multiple of base input."""

MODELS: dict[str, dict[str, ModelPrice]] = {
    "anthropic": {
        "claude-sonnet-4-5": ModelPrice("claude-sonnet-4-5", 3.00, 15.00, 0.30, 3.00 * _A, 1024),
        "claude-opus-4-5": ModelPrice("claude-opus-4-5", 5.00, 25.00, 0.50, 5.00 * _A, 4096),
        "claude-haiku-4-5": ModelPrice("claude-haiku-4-5", 1.00, 5.00, 0.10, 1.00 * _A, 4096),
    },
    "openai": {
        "gpt-5": ModelPrice("gpt-5", 1.25, 10.00, 0.125, 1.25, 1024),
        "gpt-5-mini": ModelPrice("gpt-5-mini", 0.25, 2.00, 0.025, 0.25, 1024),
        "gpt-4.1": ModelPrice("gpt-4.1", 2.00, 8.00, 0.50, 2.00, 1024),
        "gpt-4o": ModelPrice("gpt-4o", 2.50, 10.00, 1.25, 2.50, 1024),
    },
}

DEFAULT_AGENT = {"anthropic": "claude-sonnet-4-5", "openai": "gpt-5"}
CHEAP_SUMMARIZER = {"anthropic": "claude-haiku-4-5", "openai": "gpt-5-mini"}


def table(provider: str, agent: str | None = None, summarizer: str | None = None) -> PriceTable:
    """The price table of ``provider`` for ``agent`` (its default model) with summaries by ``summarizer``."""
    models = MODELS[provider]
    chosen = models[agent or DEFAULT_AGENT[provider]]
    return PriceTable(provider, chosen, models[summarizer] if summarizer else chosen)


TABLES = {name: table(name) for name in MODELS}
