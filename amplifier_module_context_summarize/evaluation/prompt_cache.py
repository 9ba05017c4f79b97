"""What each request costs under a provider's prompt cache: cache reads, cache writes and uncached input.

The views a context manager returns are replayed through a model of each provider's cache, compared as the
provider sees them:

* **Anthropic** (as provider-anthropic sends them): tools, then the system block (every system message joined
  into one), then the conversation. provider-anthropic puts ``cache_control`` on the last tool, on the system
  block and on the last block of the last message. A request reads the longest prefix, ending at a block
  boundary no more than 20 blocks before one of its breakpoints, that an earlier request wrote at one of its
  breakpoints; it writes (1.25x) from there to its last breakpoint when that prefix is at least the model's
  minimum cacheable length; what follows the last breakpoint is uncached input (nothing, with a breakpoint on
  the last message). Cache entries are assumed not to expire (the 5-minute TTL outlasts an agent's turn).
* **OpenAI** (automatic prefix cache): a request reads the longest prefix it shares with any earlier request,
  in 128-token steps from 1,024 tokens; the rest is input at the base price, with no write premium.

* **Self-compaction** (``CacheMeter.summary_request``): a summary the session's own model is asked for at the end
  of the view the session last sent (``summarizer/in_context.py``; also how the Claude-Code-style policy's own
  summary is asked, its instruction appended to the conversation) is billed like an agent request: its prefix is
  a cache read when the session sent it; the appended instruction is ephemeral, so Anthropic's message breakpoint
  stays on the last message before it (that instruction is uncached input), and OpenAI reads the shared prefix
  in its 128-token steps (provider-openai builds the same input only because the request keeps the session's
  response chaining: turned off, it would re-insert earlier turns' encrypted reasoning). Entries are assumed
  alive: the summary is asked within seconds of the request that wrote its prefix, well inside the 5-minute TTL.
  Tool schemas are the same as the session's (``tools_tokens``).

Prefixes are compared message by message (a message shared only in part counts as not shared), which is
exact for Anthropic's breakpoints and slightly conservative for OpenAI's token-level matching.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from .prices import PriceTable

Message = dict[str, Any]
LOOKBACK_BLOCKS = 20
"""How far before a breakpoint Anthropic looks for an earlier cache entry, in content blocks."""
OPENAI_STEP = 128


@dataclass
class CacheUsage:
    """Input tokens of a run of requests, by how the provider bills them."""

    requests: int = 0
    read: int = 0
    write: int = 0
    uncached: int = 0

    @property
    def total(self) -> int:
        return self.read + self.write + self.uncached

    def add(self, read: int, write: int, uncached: int) -> None:
        self.requests += 1
        self.read += read
        self.write += write
        self.uncached += uncached

    def merge(self, other: CacheUsage) -> None:
        self.requests += other.requests
        self.read += other.read
        self.write += other.write
        self.uncached += other.uncached

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True)
class Unit:
    """One message (or the joined system block, or the tools) as the cache sees it."""

    digest: bytes
    tokens: int
    blocks: int


def _chain(units: Sequence[Unit]) -> tuple[list[bytes], list[int], list[int]]:
    """Hash of each prefix, its tokens and its blocks, ending after each unit."""
    hashes, tokens, blocks = [], [], []
    h, t, b = b"", 0, 0
    for unit in units:
        h = hashlib.blake2b(h + unit.digest, digest_size=16).digest()
        t += unit.tokens
        b += unit.blocks
        hashes.append(h)
        tokens.append(t)
        blocks.append(b)
    return hashes, tokens, blocks


class AnthropicCache:
    """Explicit breakpoints: after the tools, after the system block, after the last message."""

    provider = "anthropic"

    def __init__(self, min_cacheable: int = 1024) -> None:
        self.min_cacheable = min_cacheable
        self.written: set[bytes] = set()

    def request(self, units: Sequence[Unit], breakpoints: Sequence[int]) -> tuple[int, int, int]:
        """``(read, write, uncached)`` of one request; ``breakpoints``: indexes of the units carrying one."""
        if not units:
            return 0, 0, 0
        hashes, tokens, blocks = _chain(units)
        total = tokens[-1]
        read = 0
        for bp in breakpoints:
            j = bp
            while j >= 0 and blocks[bp] - blocks[j] <= LOOKBACK_BLOCKS:
                if hashes[j] in self.written:
                    read = max(read, tokens[j])
                    break
                j -= 1
        write = 0
        last = max(breakpoints) if breakpoints else -1
        if last >= 0 and tokens[last] >= self.min_cacheable:
            if hashes[last] not in self.written:
                write = tokens[last] - read
            for bp in breakpoints:
                if tokens[bp] >= self.min_cacheable:
                    self.written.add(hashes[bp])
        return read, write, total - read - write


class OpenAICache:
    """Automatic: the longest prefix seen before, from 1,024 tokens in 128-token steps; no write premium."""

    provider = "openai"

    def __init__(self, min_cacheable: int = 1024) -> None:
        self.min_cacheable = min_cacheable
        self.seen: set[bytes] = set()

    def request(self, units: Sequence[Unit]) -> tuple[int, int, int]:
        if not units:
            return 0, 0, 0
        hashes, tokens, _ = _chain(units)
        total = tokens[-1]
        shared = 0
        for j in range(len(hashes) - 1, -1, -1):
            if hashes[j] in self.seen:
                shared = tokens[j]
                break
        read = shared // OPENAI_STEP * OPENAI_STEP if shared >= self.min_cacheable else 0
        if total >= self.min_cacheable:
            self.seen.update(hashes)
        return read, 0, total - read


def _blocks(message: Message) -> int:
    content = message.get("content")
    count = len(content) if isinstance(content, list) and content else 1
    calls = message.get("tool_calls")
    return count + (len(calls) if isinstance(calls, list) else 0)


def _digest(value: Any) -> bytes:
    text = json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class CacheMeter:
    """Feeds each request's view to the cache model of every price table, and totals what each bills.

    ``count_message``: the token count of one message (the manager's own counter). ``tools_tokens``: the tool
    definitions sent with every request (the same for every policy; 0 leaves them out).
    """

    def __init__(
        self,
        count_message: Callable[[Message], int],
        tables: Sequence[PriceTable],
        tools_tokens: int = 0,
    ) -> None:
        self._count = count_message
        self._memo: dict[int, tuple[Message, Unit]] = {}
        self._tokens: dict[bytes, int] = {}
        """Token counts by content: a manager may hand back an equal copy of a message it showed before."""
        self.tools_tokens = tools_tokens
        self.anthropic: dict[int, AnthropicCache] = {}
        self.openai: dict[int, OpenAICache] = {}
        self.usage: dict[str, CacheUsage] = {}
        self.summaries: dict[str, CacheUsage] = {}
        """Summary requests asked at the end of a view the session sent (``summary_request``), by price table."""
        self._tables = list(tables)
        for price in self._tables:
            floor = price.agent.min_cacheable
            if price.provider == "anthropic":
                self.anthropic.setdefault(floor, AnthropicCache(floor))
            else:
                self.openai.setdefault(floor, OpenAICache(floor))
            self.usage[key(price)] = CacheUsage()
            self.summaries[key(price)] = CacheUsage()

    def _unit(self, message: Message) -> Unit:
        hit = self._memo.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        digest = _digest(message)
        tokens = self._tokens.get(digest)
        if tokens is None:
            tokens = self._tokens[digest] = self._count(message)
        unit = Unit(digest, tokens, _blocks(message))
        self._memo[id(message)] = (message, unit)
        return unit

    def request(self, view: Sequence[Message]) -> dict[str, tuple[int, int, int]]:
        """Bill one request; returns ``(read, write, uncached)`` by price table."""
        return self._bill(view, self.usage)

    def summary_request(self, messages: Sequence[Message]) -> dict[str, tuple[int, int, int]]:
        """Bill one summary request of the session's own model: a view the session sent, then ephemeral messages
        (the instruction) after Anthropic's last breakpoint. Totalled in ``summaries``, apart from the agent's."""
        return self._bill(messages, self.summaries)

    def _bill(self, view: Sequence[Message], totals: dict[str, CacheUsage]) -> dict[str, tuple[int, int, int]]:
        units = [self._unit(m) for m in view]
        tools = [Unit(b"tools", self.tools_tokens, 1)] if self.tools_tokens else []
        # Anthropic: tools, the system messages joined into one block, then the conversation.
        system = [u for u, m in zip(units, view, strict=True) if m.get("role") == "system"]
        rest = [u for u, m in zip(units, view, strict=True) if m.get("role") != "system"]
        head = list(tools)
        if system:
            joined = hashlib.blake2b(b"".join(u.digest for u in system), digest_size=16).digest()
            head.append(Unit(joined, sum(u.tokens for u in system), 1))
        ordered = head + rest
        # provider-anthropic's message breakpoint: the last message that is not ephemeral.
        conversation = [m for m in view if m.get("role") != "system"]
        trailing = 0
        while trailing < len(conversation) and _ephemeral(conversation[len(conversation) - 1 - trailing]):
            trailing += 1
        last = len(ordered) - 1 - trailing
        marks = sorted({i for i in (len(tools) - 1, len(head) - 1, last) if i >= 0})
        by_anthropic = {floor: cache.request(ordered, marks) for floor, cache in self.anthropic.items()}
        by_openai = {floor: cache.request(tools + units) for floor, cache in self.openai.items()}
        billed = {}
        for price in self._tables:
            floor = price.agent.min_cacheable
            split = by_anthropic[floor] if price.provider == "anthropic" else by_openai[floor]
            billed[key(price)] = split
            totals[key(price)].add(*split)
        return billed


def _ephemeral(message: Message) -> bool:
    metadata = message.get("metadata")
    return isinstance(metadata, dict) and metadata.get("ephemeral") is True


def key(price: PriceTable) -> str:
    return f"{price.provider}:{price.agent.model}"


@dataclass
class Bill:
    """One policy's cost on one run of requests, at one price table."""

    usage: CacheUsage
    summarizer_input: int
    summarizer_output: int
    dollars: float
    input_equivalent: float
    """The same bill in tokens of the agent model's base input."""

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "usage": self.usage.as_dict()}


@dataclass
class InContextSummaries:
    """Summary calls asked at the end of the session's view: billed under the cache (``usage``) when the summarizer
    is the agent's model; priced at another model, each is billed as the compact prompt it would have been."""

    usage: CacheUsage
    input: int = 0
    """Their input tokens (included in the summarizer input the run counted)."""
    compact_input: int = 0
    """What the same summaries cost as compact prompts (system, instruction, the span as a transcript)."""


def bill(
    usage: CacheUsage,
    summarizer_input: int,
    summarizer_output: int,
    price: PriceTable,
    in_context: InContextSummaries | None = None,
) -> Bill:
    """The agent's input under the cache, plus the summarizer's input and output at its model's price.

    A compact-prompt summary call is billed as uncached input: it sends a span the agent's cache does not hold
    in that form. A call asked at the end of the session's view (``in_context``) is billed under the cache when
    the summarizer is the agent's own model (the only case the module asks one), else as the compact prompt it
    would then be. The agent's own output is left out: it is the same whatever the context policy.
    """
    agent = price.agent.dollars(usage.read, usage.write, usage.uncached)
    uncached = summarizer_input
    cached = 0.0
    if in_context is not None and in_context.input:
        uncached -= in_context.input
        if price.summarizer.model == price.agent.model:
            cached = price.agent.dollars(in_context.usage.read, in_context.usage.write, in_context.usage.uncached)
        else:
            uncached += in_context.compact_input
    summarizing = cached + price.summarizer.dollars(0, 0, uncached, summarizer_output)
    dollars = agent + summarizing
    return Bill(usage, summarizer_input, summarizer_output, dollars, dollars * 1e6 / price.agent.input)
