"""The LLM path's cold first request: ``set_messages`` of a long coding session on a new manager with nothing
stored and a summarizer that answers at once (``InstantBackend``), then its first request at a 60,000-token budget.

That request summarizes the whole history before the tail in band, so it times the module's own work on the LLM
path: cutting each span into fragments that fit the summarizer's input (``summarizer/fragments.py``), building each
prompt, reading each answer's source for the grounding check, and the planning around them (issue 48: 31 s at
50,000 messages; held to 5 s, as the extractive cold resume is). Timed in wall seconds with the collector running,
as a restarted process resumes (``resume.py``), its pauses reported beside.
"""

from __future__ import annotations

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
    view_messages: int
    compactions: int


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
    # The resume folds the working set between requests: stopped, so the next measurement is not charged with it.
    manager.compactor.stop_folding()
    return ColdLLMTimes(
        messages,
        set_done - started,
        request_done - set_done,
        collector.seconds,
        backend.calls,
        len(view),
        manager.stats["compactions"],
    )


async def measure_cold_llm(sizes: tuple[int, ...], text: TextSource) -> list[ColdLLMTimes]:
    return [await cold_first_request(size, text) for size in sizes]
