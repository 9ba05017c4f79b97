"""A stand-in survives a restart (``compaction/run/stand_in.py``): a session that stops before the LLM's summary of a
stood-in span lands resumes with the stand-in, and writes the LLM's in its place as a live session does.

The cut of a stand-in is marked as one in the store (``StandInRecord``); a fallback's is not, nor is a cut written
before marks existed, so neither is ever rewritten (a resume of those pays for nothing). Each process here is a new
manager over the same store; the old one "exits" with its background compaction cancelled, or never let finish.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from amplifier_module_context_summarize import create_manager
from amplifier_module_context_summarize.backends.base import BackendError, Completion, Fault
from amplifier_module_context_summarize.benchmark.coding import CodingSession
from amplifier_module_context_summarize.benchmark.fake_backend import InstantBackend
from amplifier_module_context_summarize.benchmark.synth import SMALL, TextSource
from amplifier_module_context_summarize.compaction.cache.keys import plan_tag
from amplifier_module_context_summarize.compaction.cache.records import PlanRecords
from amplifier_module_context_summarize.compaction.cache.resume import walked
from amplifier_module_context_summarize.config import Config
from amplifier_module_context_summarize.core.history import History
from amplifier_module_context_summarize.core.state import CompactionState, Segment
from amplifier_module_context_summarize.core.tokens import TokenCounter, text_counter
from amplifier_module_context_summarize.stores import CachedSummary, MemoryStore, SummaryStore
from amplifier_module_context_summarize.stores.records import STAND_IN_MARK, StandInKey, StandInRecord, text_digest
from amplifier_module_context_summarize.testing import EventRecorder, mixed_history

COUNT = text_counter()
TEXT = TextSource()
BUDGET = 12_000
CONFIG: dict[str, Any] = {"max_tokens": BUDGET, "summarizer": {"max_input_tokens": 2_000}}
OFFLINE: dict[str, Any] = {**CONFIG, "summarizer": {"provider": "extractive", "max_input_tokens": 2_000}}
MESSAGES = CodingSession(SMALL, seed=48, text=TEXT).history(1_500)


class GatedBackend(InstantBackend):
    """``InstantBackend`` that answers only once ``gate`` is set (a slow provider: the process may stop first), and
    fails every call with ``fail``."""

    def __init__(self, fail: bool = False) -> None:
        super().__init__(TEXT, COUNT, ratio=0.25, low=60, high=1_500)
        self.gate = asyncio.Event()
        self.gate.set()
        self.fail = fail

    async def complete(
        self, system: str, prompt: str, max_output_tokens: int, provider: Any | None = None
    ) -> Completion:
        await self.gate.wait()
        if self.fail:
            self.calls += 1
            raise BackendError(Fault.AUTH)  # not retried: the test waits for no backoff
        return await super().complete(system, prompt, max_output_tokens, provider)


class Process:
    """One process of the session: a manager over ``where`` (a store shared in memory, or a SQLite file it opens
    itself) with its own backend and event recorder."""

    def __init__(self, where: SummaryStore | str, backend: GatedBackend | None = None, **config: Any) -> None:
        self.backend = GatedBackend() if backend is None else backend
        self.recorder = EventRecorder()
        self.path = where if isinstance(where, str) else None
        store = None if isinstance(where, str) else where
        settings = {**CONFIG, **config, **({"storage_path": where} if isinstance(where, str) else {})}
        self.manager = create_manager(settings, store=store, hooks=self.recorder, backend=self.backend)

    async def request(self) -> list[Any]:
        return await self.manager.get_messages_for_request(token_budget=BUDGET)

    def pre(self) -> int:
        return len(self.recorder.payloads("context:pre_compact"))

    def posts(self) -> list[dict[str, Any]]:
        return self.recorder.payloads("context:post_compact")

    async def landed(self) -> list[Any]:
        """Wait for the background compaction, then the view of the request that installs it."""
        flight = self.manager.compactor.background.flight
        assert flight is not None, "a background compaction is under way"
        await asyncio.wait_for(asyncio.shield(flight.task), 60)
        return await self.request()

    async def exit(self) -> None:
        """The process stops: what runs in the background is cancelled; its own SQLite file is closed, a store
        shared in memory stays open."""
        if self.path is not None:
            await self.manager.close(wait_s=0)
            return
        await self.manager.compactor.flights.cancel("exit")
        self.manager.compactor.stop_folding()

    @property
    def state(self) -> CompactionState:
        return self.manager.state


async def stood_in(store: SummaryStore | str) -> tuple[list[Any], CompactionState]:
    """A process whose cold first request stands in for the LLM's summary and stops before the LLM answers: its view
    and state."""
    backend = GatedBackend()
    backend.gate.clear()
    first = Process(store, backend)
    await first.manager.set_messages(MESSAGES)
    view = await first.request()
    assert first.posts()[0]["fallback"] == "deferred" and first.pre() == 2, "stood in, the rewrite started"
    await first.exit()
    assert backend.calls == 0
    return view, first.state


async def resumed(process: Process) -> list[Any]:
    await process.manager.set_messages(MESSAGES)
    return await process.request()


async def assert_rewritten_on_resume(store: SummaryStore | str, **config: Any) -> None:
    """A resume shows the stand-in, starts the rewrite once (however many requests come before it lands), and a
    request after the landing installs the LLM's summary, with its post; a process after that pays for nothing."""
    view, state = await stood_in(store)
    [stand_in] = state.segments
    second = Process(store, **config)
    second.backend.gate.clear()
    assert await resumed(second) == view, "the resume shows the stand-in at once"
    for _ in range(3):  # single flight: one rewrite, one pre, while it is under way
        await second.request()
    assert second.pre() == 1 and second.posts() == []
    second.backend.gate.set()
    landed = await second.landed()
    [llm] = second.state.segments
    assert (llm.start, llm.end) == (stand_in.start, stand_in.end) and llm.text != stand_in.text
    [post] = second.posts()
    written = second.backend.calls
    assert post["fallback"] is None and post["provider_calls"] == written > 10
    assert TokenCounter().count_messages(landed) <= BUDGET and landed[-1] == MESSAGES[-1]
    third = Process(store, **config)
    assert await resumed(third) == landed
    await third.request()
    assert third.backend.calls == 0 and third.pre() == 0, "the span was paid for once"
    await second.exit()
    await third.exit()


async def test_a_resumed_stand_in_is_rewritten_in_background_mode() -> None:
    await assert_rewritten_on_resume(MemoryStore())


async def test_a_resumed_stand_in_is_rewritten_in_blocking_mode() -> None:
    """Blocking mode never stands in itself, but resumes a store a background session wrote: the view fits, so
    nothing waits for the LLM; the rewrite runs in the background there too."""
    await assert_rewritten_on_resume(MemoryStore(), background_compaction=False)


async def test_a_resumed_stand_in_is_rewritten_with_a_sqlite_store(tmp_path: Path) -> None:
    """Each process opens the file anew (``storage_path``) and closes it when it stops, as a CLI turn does."""
    await assert_rewritten_on_resume(str(tmp_path / "summaries.sqlite"))


async def test_the_llm_summary_stored_before_the_stop_is_installed_by_the_resume_without_a_call() -> None:
    """The old process's background compaction wrote the LLM's summary, and it stopped before a request installed
    it: the resume shows it (the view that process would have installed next), with no call and no compaction."""
    store = MemoryStore()
    first = Process(store)
    await first.manager.set_messages(MESSAGES)
    stood = await first.request()
    flight = first.manager.compactor.background.flight
    assert flight is not None
    await asyncio.wait_for(asyncio.shield(flight.task), 60)  # in the store, not yet installed
    second = Process(store)
    view = await resumed(second)
    await second.request()
    assert view != stood and second.backend.calls == 0 and second.pre() == 0
    assert await first.request() == view, "what the old process installs at its next request"
    await first.exit()
    await second.exit()


async def test_only_a_marked_stand_in_is_rewritten_not_a_fallback_nor_a_cut_written_before_marks() -> None:
    """A store written before stand-ins were marked holds the same cut without its mark: it resumes the same view and
    reads as a fallback (pays for nothing); so does a real fallback (the provider failed in band)."""
    store = MemoryStore()
    view, _ = await stood_in(store)
    old = MemoryStore()  # the same rows but the marks: a store an earlier version wrote
    for row in list(store._entries.values()):
        if not row.start.startswith(STAND_IN_MARK):
            await old.put(row)
    assert len(old._entries) < len(store._entries)
    marked, unmarked = Process(store), Process(old)
    assert await resumed(marked) == view == await resumed(unmarked)
    for _ in range(3):
        await unmarked.request()
    assert marked.pre() == 1 and unmarked.pre() == 0 and unmarked.backend.calls == 0
    assert unmarked.state == marked.state
    await marked.exit()

    fallen = MemoryStore()
    failing = Process(fallen, GatedBackend(fail=True), background_compaction=False)
    await failing.manager.set_messages(MESSAGES)
    fell_back = await failing.request()
    assert failing.posts()[0]["fallback"] not in (None, "deferred") and failing.state.segments
    await failing.exit()
    after = Process(fallen, background_compaction=False)
    assert await resumed(after) == fell_back
    for _ in range(3):
        await after.request()
    assert after.backend.calls == 0 and after.pre() == 0


async def test_a_provider_that_fails_leaves_the_stand_in_and_is_not_asked_again() -> None:
    """The rewrite fails: the stand-in stays, the compaction is reported, and the process does not try again (one
    rewrite a resume; the span's cooldown and the breaker guard the rest); a later process still owes it."""
    store = MemoryStore()
    view, state = await stood_in(store)
    second = Process(store, GatedBackend(fail=True))
    assert await resumed(second) == view
    flight = second.manager.compactor.background.flight
    assert flight is not None and second.pre() == 1
    await asyncio.wait_for(asyncio.shield(flight.task), 60)
    asked = second.backend.calls
    assert 0 < asked <= 3
    for _ in range(5):
        assert await second.request() == view
    assert second.state == state and second.pre() == 1 and len(second.posts()) == 1
    assert second.backend.calls == asked, "no retry"
    await second.exit()
    third = Process(store)
    await resumed(third)
    assert third.pre() == 1, "still owed: a later process writes it"
    await third.exit()


async def test_the_offline_summarizer_resumes_a_stand_in_and_has_nothing_to_rewrite() -> None:
    """Without a summarizer backend there is no LLM summary to write: the resume shows the marked stand-in, no
    compaction starts, nothing fails."""
    written = MemoryStore()
    offline = create_manager(OFFLINE, store=written)
    await offline.set_messages(MESSAGES)
    await offline.get_messages_for_request(token_budget=BUDGET)
    state, history = offline.state, offline.history
    assert state.segments
    store = MemoryStore()  # its records, but no summary stored for its spans and the cuts marked as stand-ins
    summaries = {history.chain_at(segment.start) for segment in state.segments}
    for row in list(written._entries.values()):
        if row.start not in summaries:
            await store.put(row)
    records = offline.compactor.records
    records.store = store
    stand_ins = {segment: (None, 10_000) for segment in state.segments}
    await records.record_cuts(history, CompactionState(), state, offline.budget.wire, stand_ins)
    await offline.close(wait_s=0)
    tag = records.plan(BUDGET)
    assert (await walked(history, store, history.last_cuttable, tag)).stand_ins, "the resume finds them owed"
    recorder = EventRecorder()
    again = create_manager(OFFLINE, store=store, hooks=recorder)
    assert again.summarizer.backend is None
    await again.set_messages(MESSAGES)
    for _ in range(3):
        await again.get_messages_for_request(token_budget=BUDGET)
    assert again.state.segments == state.segments, "the stand-ins shown, as stored"
    assert recorder.payloads("context:pre_compact") == [], "no compaction: nothing to rewrite"
    assert again.compactor.background.flight is None and again.compactor.resumer.owed == ()
    await again.close(wait_s=0)


async def test_a_stand_in_mark_is_written_beside_its_cut_and_marks_only_that_text() -> None:
    """The cut row is the one stores have always held; the mark beside it names the text's digest, the size asked
    for and the span's tokens. The walk says a marked cut is owed, shows the LLM's summary in its place once the
    store has one, and takes a cut whose text the mark does not name (written again: a fallback) or a malformed mark
    as no stand-in."""
    made = History(TokenCounter("cl100k_base"), "fp")
    for message in mixed_history(8):
        made.append(message)
    store, config, wire = MemoryStore(), Config(), 20_000
    records = PlanRecords(config, store, "summarize", stores_cuts=True)
    tag, c = plan_tag("summarize", config, wire), made.chain_at
    stand_in = Segment(0, 3, "stood in", 2)
    state = CompactionState(3, (stand_in,))
    await records.record_cuts(made, CompactionState(), state, wire, {stand_in: (300, 9_000)})
    digest = text_digest("stood in")
    mark_text = f"{digest} 300 9000"
    assert await store.starting_at(f"cut:{tag}{c(0)}") == [CachedSummary(f"cut:{tag}{c(0)}", c(3), "stood in", 2, 3)]
    assert await store.starting_at(f"standin:{tag}{c(0)}") == [
        CachedSummary(f"standin:{tag}{c(0)}", c(3), mark_text, len(mark_text), 3)
    ]
    found = await walked(made, store, made.last_cuttable, tag)
    assert found.state == state and found.stand_ins == {
        stand_in: StandInRecord(StandInKey(tag, c(0)), c(3), 3, digest, 300, 9_000)
    }

    await store.put(CachedSummary(c(0), c(3), "the LLM's summary", 4, 3))  # landed before the process stopped
    found = await walked(made, store, made.last_cuttable, tag)
    assert found.state == CompactionState(3, (Segment(0, 3, "the LLM's summary", 4),)) and found.stand_ins == {}

    for fallback, mark in ((Segment(0, 3, "a fallback", 2), mark_text), (stand_in, f"{digest} 300"), (stand_in, "x")):
        other = MemoryStore()
        await PlanRecords(config, other, "summarize", stores_cuts=True).record_cuts(
            made, CompactionState(), CompactionState(3, (fallback,)), wire
        )
        await other.put(CachedSummary(f"standin:{tag}{c(0)}", c(3), mark, len(mark), 3))
        found = await walked(made, other, made.last_cuttable, tag)
        assert found.state == CompactionState(3, (fallback,)) and found.stand_ins == {}
