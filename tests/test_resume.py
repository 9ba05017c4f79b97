"""``cache/resume.py``: the state a store gives a history is a walk along its stored segments (the furthest chain,
no further than a limit, only along the cuts a plan recorded), and ``fingerprint`` names what shapes a summary."""

from __future__ import annotations

from dataclasses import replace

import pytest
from test_plan import CONFIG, COUNTER, history_of

from amplifier_module_context_summarize.backends.base import Completion
from amplifier_module_context_summarize.compaction.cache.keys import fingerprint
from amplifier_module_context_summarize.compaction.cache.records import PlanRecords
from amplifier_module_context_summarize.compaction.cache.resume import walk
from amplifier_module_context_summarize.compaction.view.masking import MaskSettings
from amplifier_module_context_summarize.config import Config
from amplifier_module_context_summarize.core.history import History
from amplifier_module_context_summarize.core.state import CompactionState, Segment
from amplifier_module_context_summarize.stores import CachedSummary, MemoryStore
from amplifier_module_context_summarize.summarizer.prompts import PromptSet, load_prompts
from amplifier_module_context_summarize.summarizer.span import SpanSummarizer, SummarizerSettings

WIRE = 20_000


async def stored(history: History, *spans: tuple[int, int], tier: int = 0) -> MemoryStore:
    """A store holding a summary of each span ``(start, end)`` of ``history``'s groups."""
    store = MemoryStore()
    for start, end in spans:
        await store.put(text_of(history, start, end, tier))
    return store


def text_of(history: History, start: int, end: int, tier: int = 0) -> CachedSummary:
    text = f"groups {start} to {end}"
    return CachedSummary(history.chain_at(start), history.chain_at(end), text, 5, end - start, tier)


def segment(start: int, end: int) -> Segment:
    return Segment(start, end, f"groups {start} to {end}", 5)


async def test_the_walk_takes_the_furthest_chain_not_the_first_step() -> None:
    history = history_of(10, 20)
    # [0, 4) is the longest first step but leads nowhere; [0, 3) then [3, 5) reaches further.
    store = await stored(history, (0, 4), (0, 3), (3, 5))
    assert await walk(history, store, history.last_cuttable) == CompactionState(5, (segment(0, 3), segment(3, 5)))


async def test_among_walks_as_far_the_one_with_fewest_then_longest_first_segments_wins() -> None:
    history = history_of(10, 20)
    store = await stored(history, (0, 2), (2, 6), (0, 3), (3, 6))
    assert await walk(history, store, history.last_cuttable) == CompactionState(6, (segment(0, 3), segment(3, 6)))
    await store.put(text_of(history, 0, 6, tier=1))  # a merge of them
    state = await walk(history, store, history.last_cuttable)
    assert state == CompactionState(6, (Segment(0, 6, "groups 0 to 6", 5, 1),))


async def test_the_walk_stops_at_its_limit() -> None:
    history = history_of(10, 20)
    store = await stored(history, (0, 3), (3, 5), (0, 4))
    assert (await walk(history, store, 5)).boundary == 5
    assert await walk(history, store, 4) == CompactionState(4, (segment(0, 4),))
    assert await walk(history, store, 3) == CompactionState(3, (segment(0, 3),))
    assert await walk(history, store, 2) == CompactionState()


async def test_a_segment_ending_off_this_history_is_not_a_step() -> None:
    """A fork that shares the first groups stored its own next segment: its end is not on this chain."""
    history, fork = history_of(10, 20), History(COUNTER, "fp")
    for i, message in enumerate(history.messages):  # the same session until its sixth turn, then other outputs
        fork.append({**message, "content": "other output"} if message["role"] == "tool" and i > 20 else message)
    other = 20
    assert history.chain_at(3) == fork.chain_at(3) and history.chain_at(other) != fork.chain_at(other)
    store = await stored(history, (0, 3))
    await store.put(CachedSummary(fork.chain_at(3), fork.chain_at(other), "fork", 5, other - 3))
    assert await walk(history, store, history.last_cuttable) == CompactionState(3, (segment(0, 3),))


async def test_with_a_plan_tag_only_the_cuts_that_plan_recorded_are_followed() -> None:
    history = history_of(10, 20)
    store = await stored(history, (0, 3), (3, 5), (0, 4))  # the furthest chain is not this plan's
    records = PlanRecords(Config(), store, "summarize", stores_cuts=True)
    installed = CompactionState(4, (segment(0, 4),))
    await records.record_cuts(history, CompactionState(), installed, WIRE)

    assert (await walk(history, store, history.last_cuttable)).boundary == 5, "without a plan: any chain"
    assert await walk(history, store, history.last_cuttable, records.plan(WIRE)) == installed
    assert await walk(history, store, history.last_cuttable, records.plan(WIRE * 2)) == CompactionState()
    masker = PlanRecords(Config(), store, "mask", stores_cuts=True)
    assert await walk(history, store, history.last_cuttable, masker.plan(WIRE)) == CompactionState()


class Named:
    name = "named"

    def __init__(self, model: str) -> None:
        self.model = model

    async def complete(self, system: str, prompt: str, max_output_tokens: int, provider=None) -> Completion:
        raise AssertionError("a fingerprint asks nothing")


def summarizer(model: str = "m1", prompts: PromptSet | None = None) -> SpanSummarizer:
    settings = SummarizerSettings(CONFIG.summary_output_tokens, 50_000, timeout_s=5, max_retries=0)
    return SpanSummarizer(Named(model), prompts or load_prompts(), COUNTER.count_text, settings)


def edited_prompts() -> PromptSet:
    templates = dict(load_prompts().templates)
    templates["merge_user"] += "\nKeep every file path."
    return PromptSet(templates)


BASE = fingerprint(summarizer(), Config(), MaskSettings())


@pytest.mark.parametrize(
    ("what", "changed"),
    [
        ("the model", lambda: fingerprint(summarizer("m2"), Config(), MaskSettings())),
        ("one prompt", lambda: fingerprint(summarizer(prompts=edited_prompts()), Config(), MaskSettings())),
        ("the extractive summarizer", lambda: fingerprint(extractive(), Config(), MaskSettings())),
        ("masking off", lambda: fingerprint(summarizer(), Config(), None)),
        ("the mask size", lambda: fingerprint(summarizer(), Config(), MaskSettings(min_chars=900))),
        ("the recall tool", lambda: fingerprint(summarizer(), Config(), MaskSettings(recall_tool="context_recall"))),
        (
            "the summary size",
            lambda: fingerprint(summarizer(), replace(Config(), summary_max_tokens=900), MaskSettings()),
        ),
        (
            "system handling",
            lambda: fingerprint(summarizer(), replace(Config(), preserve_system=False), MaskSettings()),
        ),
        (
            "instructions",
            lambda: fingerprint(summarizer(), replace(Config(), summary_instructions="Keep names."), MaskSettings()),
        ),
    ],
)
def test_the_fingerprint_changes_with_what_shapes_a_summary(what: str, changed) -> None:
    assert changed() != BASE, what


def extractive() -> SpanSummarizer:
    return SpanSummarizer(None, load_prompts(), COUNTER.count_text, summarizer().settings)


@pytest.mark.parametrize(
    ("what", "config", "mask"),
    [
        ("the threshold", replace(Config(), compact_threshold=0.8, target_usage=0.4), MaskSettings()),
        ("the cache size", replace(Config(), cache_max_entries=5), MaskSettings()),
        ("prefetching", replace(Config(), prefetch=True), MaskSettings()),
        ("the budget", replace(Config(), max_tokens=64_000), MaskSettings()),
        ("how many outputs stay verbatim", Config(), MaskSettings(keep_recent=12)),
    ],
)
def test_the_fingerprint_does_not_change_with_what_does_not(what: str, config: Config, mask: MaskSettings) -> None:
    assert fingerprint(summarizer(), config, mask) == BASE, what
    assert fingerprint(summarizer(), config, mask) == fingerprint(summarizer(), config, mask), "a pure function"
