"""The LLM path's cold first request: ``set_messages`` of a long coding session on a new manager with nothing
stored and a summarizer that answers at once (``InstantBackend``), then its first request at a 60,000-token budget.

That request must summarize the whole history before the tail. Its span is dozens of fragments of the summarizer's
input, too long to wait for: the extractive summary stands in at once and the LLM's is written in the background
(``compaction/run/stand_in.py``), so the request times the module's own work (issue 48: 31 s at 50,000 messages,
in band; held to 5 s, as the extractive cold resume is). Timed in wall seconds with the collector running, as a
restarted process resumes (``resume.py``), its pauses reported beside. The background write that follows (cutting
the span into fragments, each prompt, each answer's grounding check) is timed apart, until the next request lands
it: no request waits for it.
"""

from __future__ import annotations

import asyncio
import gc
import time
from dataclasses import dataclass

from .. import create_manager
from ..stores import MemoryStore
from .coding import CodingSession
from .fake_backend import InstantBackend
from .synth import SMALL, TextSource
from .timing import CollectorTime

COLD_LLM_BUDGET = 60_000
COLD_LLM_SIZES = (20_000, 50_000)
QUICK_COLD_LLM_SIZES = (2_000,)
COLD_LLM_SEED = 50_000


@dataclass
class ColdLLMTimes:
    messages: int
    set_s: float
    request_s: float
    """The first request after ``set_messages``: what the target reads."""
    collector_s: float
    """The collector's pauses within ``set_s + request_s``."""
    provider_calls: int
    """Summarizer calls the first request waited for."""
    view_messages: int
    compactions: int
    background_s: float = 0.0
    """From the first request's return until the LLM's summary written in the background is installed by the next."""
    background_calls: int = 0
    landed_view_messages: int = 0


async def cold_first_request(messages: int, text: TextSource) -> ColdLLMTimes:
    """One cold resume of a ``messages``-long coding session on the LLM path, timed."""
    history = CodingSession(SMALL, seed=COLD_LLM_SEED, text=text).history(messages)
    gc.collect()  # a restarted process holds no garbage of the session before it
    backend = InstantBackend(text)
    manager = create_manager({"max_tokens": COLD_LLM_BUDGET}, backend=backend, store=MemoryStore())
    with CollectorTime() as collector:
        started = time.perf_counter()
        await manager.set_messages(history)
        set_done = time.perf_counter()
        view = await manager.get_messages_for_request(token_budget=COLD_LLM_BUDGET)
        request_done = time.perf_counter()
    calls, compactions = backend.calls, manager.stats["compactions"]
    flight = manager.compactor.background.flight
    if flight is not None:  # the LLM's summary in place of the stand-in, landed by the next request
        await asyncio.wait({flight.task})
    landed = await manager.get_messages_for_request(token_budget=COLD_LLM_BUDGET)
    background_s = time.perf_counter() - request_done
    # The resume folds the working set between requests: stopped, so the next measurement is not charged with it.
    manager.compactor.stop_folding()
    return ColdLLMTimes(
        messages,
        set_done - started,
        request_done - set_done,
        collector.seconds,
        calls,
        len(view),
        compactions,
        background_s,
        backend.calls - calls,
        len(landed),
    )


async def measure_cold_llm(sizes: tuple[int, ...], text: TextSource) -> list[ColdLLMTimes]:
    return [await cold_first_request(size, text) for size in sizes]
