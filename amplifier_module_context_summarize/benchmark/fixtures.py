"""One history size, built once and kept for every measurement: the messages, the managers, and memory.

Two managers hold the same history, because they bound what a request can cost:

* ``open``: the budget is so large that nothing is ever compacted; the view is the whole history,
  and copying it is an O(n) floor no manager can beat;
* ``compacted``: a 100k-token budget, the history grown turn by turn with compactions served by the
  instant backend, so a summary is in force (boundary > 0) and the view is bounded by the budget.

Memory is measured with tracemalloc while the compacted manager grows: the messages alone, a deep copy
as the manager stores them, then the manager; what the manager holds beyond that copy is its own.
"""

from __future__ import annotations

import copy
import gc
import itertools
import tracemalloc
from collections.abc import Iterator
from dataclasses import dataclass, field

from .. import create_manager
from ..manager import SummarizingContextManager
from ..testing import replay_steps
from .fake_backend import InstantBackend, LimitsProvider
from .synth import SMALL, Message, SessionGenerator, TextSource

BUDGET = 100_000
MAX_OUTPUT = 27_000
SAFETY_MARGIN = 1_000
"""The config default; context window - output - margin = ``BUDGET``."""
OPEN_WINDOW = 10**10


@dataclass
class Memory:
    messages: int = 0
    messages_bytes: int = 0
    stored_bytes: int = 0
    manager_bytes: int = 0
    peak_bytes: int = 0

    @property
    def own_bytes_per_message(self) -> float:
        return (self.manager_bytes - self.stored_bytes) / max(self.messages, 1)

    @property
    def peak_bytes_per_10k(self) -> float:
        return self.peak_bytes / max(self.messages, 1) * 10_000


@dataclass
class Fixture:
    size: int
    history: list[Message]
    stream: Iterator[Message]
    """More messages of the same session, for turns after the history."""
    compacted: SummarizingContextManager
    backend: InstantBackend
    open: SummarizingContextManager
    compacted_provider: LimitsProvider = field(
        default_factory=lambda: LimitsProvider(BUDGET + MAX_OUTPUT + SAFETY_MARGIN, MAX_OUTPUT)
    )
    open_provider: LimitsProvider = field(default_factory=lambda: LimitsProvider(OPEN_WINDOW, MAX_OUTPUT))
    memory: Memory = field(default_factory=Memory)

    def provider(self, state: str) -> LimitsProvider:
        return self.compacted_provider if state == "compacted" else self.open_provider

    def budget(self, state: str) -> int:
        provider = self.provider(state)
        return provider.context_window - provider.max_output_tokens - SAFETY_MARGIN

    def manager(self, state: str) -> SummarizingContextManager:
        return self.compacted if state == "compacted" else self.open


def new_manager(text: TextSource) -> tuple[SummarizingContextManager, InstantBackend]:
    backend = InstantBackend(text)
    # No ``max_tokens``: it would cap the budget; each state's provider reports the window that sets it.
    # In band: these figures are the module's own work per request and per compaction (``bench --latency`` measures
    # what the soft threshold changes about waiting).
    config = {"safety_margin": SAFETY_MARGIN, "background_compaction": False}
    return create_manager(config, backend=backend), backend


async def grow(manager: SummarizingContextManager, provider: LimitsProvider, messages: list[Message]) -> None:
    """Add messages the way an orchestrator does: a request before each assistant message."""
    async for step in replay_steps(manager, messages, provider, at_end=True):
        if step.due:
            await step.request()


async def turn_until_compaction(
    manager: SummarizingContextManager, provider: LimitsProvider, stream: Iterator[Message]
) -> int:
    """Turn until a compaction lands, leaving the whole hysteresis band ahead; returns the turns taken."""
    done, turns = manager.stats["compactions"], 0
    while manager.stats["compactions"] == done:
        await manager.add_message(next(stream))
        await manager.get_messages_for_request(provider=provider)
        turns += 1
    return turns


def _traced() -> int:
    gc.collect()  # count live objects only, not garbage a collection would free
    return tracemalloc.get_traced_memory()[0]


async def build(size: int, text: TextSource) -> Fixture:
    stream = SessionGenerator(SMALL, seed=size, text=text).stream()
    memory = Memory(messages=size)
    tracemalloc.start()
    try:
        before = _traced()
        history = list(itertools.islice(stream, size))
        memory.messages_bytes = _traced() - before
        before = _traced()
        stored = copy.deepcopy(history)
        memory.stored_bytes = _traced() - before
        del stored
        compacted, backend = new_manager(text)
        before = _traced()
        tracemalloc.reset_peak()
        fixture = Fixture(size, history, stream, compacted, backend, compacted)
        await grow(compacted, fixture.compacted_provider, history)
        memory.manager_bytes = _traced() - before
        memory.peak_bytes = tracemalloc.get_traced_memory()[1]  # messages + manager + transients
    finally:
        tracemalloc.stop()
    fixture.memory = memory
    fixture.open, _ = new_manager(text)
    for message in history:
        await fixture.open.add_message(message)
    return fixture
