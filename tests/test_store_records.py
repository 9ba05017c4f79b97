"""Typed store records: each kind writes the row stores have always held, and reads back rows written before.

The rows below are spelled out literally, in the encoding every store written so far holds (``"cut:"`` + plan tag
+ chain, ``"mask:"`` + plan tag + chain, ``"ws:"`` + chain with ``"<chain> <room>\\n<text>"``, a segment's end with
``"|focus:"``, ``"inject:"`` + plan tag + state key), so a change of encoding fails here rather than orphaning the
stores people have on disk.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amplifier_module_context_summarize import create_manager
from amplifier_module_context_summarize.compaction.cache.keys import focused_end, plan_tag
from amplifier_module_context_summarize.compaction.cache.records import (
    WORKING_SET_MAX_TOKENS,
    PlanRecords,
    working_set_key,
    working_set_tag,
)
from amplifier_module_context_summarize.compaction.cache.resume import walk
from amplifier_module_context_summarize.config import Config
from amplifier_module_context_summarize.core.history import History
from amplifier_module_context_summarize.core.messages import content_hash
from amplifier_module_context_summarize.core.state import CompactionState, Segment
from amplifier_module_context_summarize.core.tokens import TokenCounter
from amplifier_module_context_summarize.stores import CachedSummary, CheckedStore, MemoryStore, SqliteStore
from amplifier_module_context_summarize.stores.records import (
    WORKING_SET_MARK,
    CutKey,
    CutRecord,
    DropKey,
    DropRecord,
    InjectionKey,
    InjectionRecord,
    MaskEndKey,
    MaskEndRecord,
    SegmentKey,
    SegmentRecord,
    WorkingSetKey,
    WorkingSetRecord,
    read,
)
from amplifier_module_context_summarize.testing import mixed_history, replay
from amplifier_module_context_summarize.working_set.index import RENDER_VERSION, index_of

COUNTER = TokenCounter("cl100k_base")
PLAN = "0123456789abcdef:"
"""A plan tag as ``plan_tag`` spells them: 16 hex digits and a colon."""
WIRE = 20_000
TAG = f"v{RENDER_VERSION}:cl100k_base"


def count(text: str) -> int:
    return COUNTER.count_text(text)


def history(turns: int = 8) -> History:
    made = History(COUNTER, "fp")
    for message in mixed_history(turns):
        made.append(message)
    return made


def checked(store: Any, max_tokens: int = 4_000) -> CheckedStore:
    """The store as the manager hands it to compaction."""
    return CheckedStore(store, COUNTER.count_text, max_tokens)


async def rows(store: MemoryStore) -> list[CachedSummary]:
    return sorted(await _all(store), key=lambda row: (row.start, row.end))


async def _all(store: MemoryStore) -> list[CachedSummary]:
    starts = {start for start, _ in store._entries}
    return [row for start in starts for row in await store.starting_at(start)]


# ------------------------------------------------------------------ the codec, on literal rows


WS_TEXT = "### Working set\n- src/app.py: edited"
LITERAL = [
    (
        SegmentRecord("c0", "c3", "summary of three", 4, 3, 0),
        CachedSummary("c0", "c3", "summary of three", 4, 3, 0),
    ),
    (
        SegmentRecord("c3", "c9", "merged", 2, 6, 1, focus="ab12cd34ef56ab78"),
        CachedSummary("c3", "c9|focus:ab12cd34ef56ab78", "merged", 2, 6, 1),
    ),
    (CutRecord(CutKey(PLAN, "c0"), "c3", 3), CachedSummary("cut:0123456789abcdef:c0", "c3", "", 0, 3, 0)),
    (MaskEndRecord(MaskEndKey(PLAN, "c3"), "c5", 2), CachedSummary("mask:0123456789abcdef:c3", "c5", "", 0, 2, 0)),
    (
        CutRecord(CutKey(PLAN, "c3"), "c9", 6, "a fallback", 2, 1),
        CachedSummary("cut:0123456789abcdef:c3", "c9", "a fallback", 2, 6, 1),
    ),
    (DropRecord(DropKey(PLAN, "c3"), "c7", 4), CachedSummary("drop:0123456789abcdef:c3", "c7", "", 0, 4, 0)),
]
IDS = ["segment", "focused-tier", "cut", "mask-end", "cut-with-text", "drop"]


@pytest.mark.parametrize(("record", "row"), LITERAL, ids=IDS)
def test_each_record_writes_the_row_stores_have_always_held(record: Any, row: CachedSummary) -> None:
    assert record.row() == row


def test_a_working_set_writes_its_end_and_room_before_its_text() -> None:
    record = WorkingSetRecord(WorkingSetKey("c1"), TAG, "c3", 120, 3, WS_TEXT)
    text = f"c3 120\n{WS_TEXT}"

    assert record.row(count) == CachedSummary("ws:c1", TAG, text, count(text), 3, 0)


@pytest.mark.parametrize(("record", "row"), LITERAL, ids=IDS)
async def test_rows_written_in_the_encoding_stores_hold_are_read_as_their_records(
    record: Any, row: CachedSummary
) -> None:
    store = MemoryStore()
    await store.put(row)
    key = record.key if hasattr(record, "key") else SegmentKey(record.start)

    assert await read(store, key) == [record]


async def test_an_injection_writes_its_state_key_and_tail_and_reads_back() -> None:
    """What a post_compact hook put back: ``inject:`` + plan tag + the state's key; end the chain at the tail."""
    record = InjectionRecord(InjectionKey(PLAN, "s7"), "c5", 5, "PLAN: 1) migrate")
    row = CachedSummary("inject:0123456789abcdef:s7", "c5", "PLAN: 1) migrate", count("PLAN: 1) migrate"), 5, 0)
    assert record.row(count) == row
    store = MemoryStore()
    await store.put(row)
    assert await read(store, record.key) == [record]
    assert await read(store, InjectionKey(PLAN, "s8")) == [], "another state's key reads nothing"


async def test_a_working_set_row_written_before_is_read_as_its_record() -> None:
    store = MemoryStore()
    text = f"c3 120\n{WS_TEXT}"
    await store.put(CachedSummary("ws:c1", TAG, text, count(text), 3))

    assert await read(store, WorkingSetKey("c1")) == [WorkingSetRecord(WorkingSetKey("c1"), TAG, "c3", 120, 3, WS_TEXT)]


def test_the_segment_end_key_is_the_one_summaries_were_stored_under() -> None:
    assert focused_end("c9", None) == "c9"
    assert focused_end("c9", "the parser") == f"c9|focus:{content_hash('the parser')[:16]}"
    assert SegmentKey("c3").decode(CachedSummary("c3", focused_end("c9", "the parser"), "s", 1, 6)) == SegmentRecord(
        "c3", "c9", "s", 1, 6, focus=content_hash("the parser")[:16]
    )


chains = st.text("0123456789abcdef", min_size=1, max_size=64)


@settings(max_examples=300)
@given(
    start=chains,
    end=chains,
    plan=st.text("0123456789abcdef", min_size=16, max_size=16).map(lambda h: h + ":"),
    groups=st.integers(1, 10**6),
    room=st.integers(0, 10**9),
    text=st.text(st.characters(blacklist_categories=("Cs",)), max_size=200),
    focus=st.none() | st.text("0123456789abcdef", min_size=16, max_size=16),
    tier=st.integers(0, 5),
)
def test_every_record_round_trips_through_its_row(
    start: str, end: str, plan: str, groups: int, room: int, text: str, focus: str | None, tier: int
) -> None:
    """Any chain, plan, length, room and text (newlines and spaces in the text included) reads back as written."""
    segment = SegmentRecord(start, end, text, max(count(text), 1), groups, tier, focus)
    cut = CutRecord(CutKey(plan, start), end, groups)
    fallback = CutRecord(CutKey(plan, start), end, groups, text, max(count(text), 1), tier)
    drop = DropRecord(DropKey(plan, start), end, groups)
    mask = MaskEndRecord(MaskEndKey(plan, start), end, groups)
    working_set = WorkingSetRecord(WorkingSetKey(start), TAG, end, room, groups, text)

    assert SegmentKey(start).decode(segment.row()) == segment
    assert cut.key.decode(cut.row()) == cut
    assert fallback.key.decode(fallback.row()) == fallback
    assert drop.key.decode(drop.row()) == drop
    assert mask.key.decode(mask.row()) == mask
    assert working_set.key.decode(working_set.row(count)) == working_set


# ------------------------------------------------------------------ the plan's records over a history


async def test_the_plan_writes_the_rows_it_always_wrote() -> None:
    """Today's encoding, spelled out: cuts and the mask end under the plan tag, the working set under the line."""
    made, store = history(), MemoryStore()
    config = Config()
    plan = PlanRecords(config, checked(store), "summarize", stores_cuts=True)
    tag = plan_tag("summarize", config, WIRE)
    state = CompactionState(5, (Segment(0, 3, "a", 1), Segment(3, 5, "b", 1)), mask_end=8)
    c = made.chain_at
    summaries = [CachedSummary(c(0), c(3), "a", 1, 3), CachedSummary(c(3), c(5), "b", 1, 2)]
    for summary in summaries:  # the segment source stored them before the install
        await store.put(summary)

    await plan.record_cuts(made, CompactionState(), state, WIRE)
    await plan.record_mask_end(made, CompactionState(), state, WIRE)
    await plan.record_working_set(made, state, 300)

    ws_text = f"{c(5)} 300\n{index_of(made).render(5, 300, count)}"
    assert await rows(store) == sorted(
        [
            *summaries,
            CachedSummary(f"cut:{tag}{c(0)}", c(3), "", 0, 3),
            CachedSummary(f"cut:{tag}{c(3)}", c(5), "", 0, 2),
            CachedSummary(f"mask:{tag}{c(5)}", c(8), "", 0, 3),
            CachedSummary(f"ws:{c(1)}", TAG, ws_text, count(ws_text), 5),
        ],
        key=lambda row: (row.start, row.end),
    )


async def test_a_cut_carries_the_text_of_a_segment_not_stored_and_a_drop_past_it_is_recorded() -> None:
    """A fallback is never stored as the span's summary: its cut carries the text the plan installed, the walk
    shows it, and where truncation put the boundary past it is read back as it was written."""
    made, store = history(), MemoryStore()
    plan = PlanRecords(Config(), checked(store), "summarize", stores_cuts=True)
    tag, c = plan_tag("summarize", Config(), WIRE), made.chain_at
    state = CompactionState(6, (Segment(0, 3, "fallback", 1),))

    await plan.record_cuts(made, CompactionState(), state, WIRE)
    await plan.record_drop(made, CompactionState(), state, WIRE)

    assert await rows(store) == [
        CachedSummary(f"cut:{tag}{c(0)}", c(3), "fallback", 1, 3),
        CachedSummary(f"drop:{tag}{c(3)}", c(6), "", 0, 3),
    ]
    walked = await walk(made, checked(store), made.last_cuttable, tag)
    assert walked == CompactionState(3, state.segments)
    assert await plan.dropped_to(made, 3, tag) == 6
    assert await plan.dropped_to(made, 3, plan_tag("summarize", Config(), WIRE * 2)) == 3, "another plan's drop"


async def test_the_plan_writes_only_what_changed() -> None:
    made, store = history(), MemoryStore()
    plan = PlanRecords(Config(), checked(store), "summarize", stores_cuts=True)
    before = CompactionState(3, (Segment(0, 3, "a", 1),), mask_end=6)
    state = CompactionState(5, (Segment(0, 3, "a", 1), Segment(3, 5, "b", 1)), mask_end=0)

    await plan.record_cuts(made, before, state, WIRE)  # only the new segment
    await plan.record_mask_end(made, before, state, WIRE)  # nothing masked past the boundary
    await plan.record_mask_end(made, before, before, WIRE)  # the same mask end as before
    await plan.record_drop(made, before, state, WIRE)  # the boundary where the summary ends: nothing dropped
    await plan.record_working_set(made, state, 300)
    written = len(store._entries)
    await plan.record_working_set(made, state, 300)  # the same summary installed again: no second put
    await PlanRecords(Config(), checked(store), "naive", stores_cuts=False).record_cuts(
        made, CompactionState(), state, WIRE
    )

    assert [row.start.split(":")[0] for row in await rows(store)] == ["cut", "ws"]
    assert len(store._entries) == written


async def test_a_store_written_before_resumes_its_cuts_mask_end_and_working_set() -> None:
    """Rows as an earlier version wrote them, built literally, are walked, masked to and seeded from."""
    made, store = history(), MemoryStore()
    c, tag = made.chain_at, plan_tag("summarize", Config(), WIRE)
    ws_text = f"{c(5)} 300\n{WS_TEXT}"
    for row in [
        CachedSummary(c(0), c(3), "first", 1, 3),
        CachedSummary(c(3), c(5), "second", 1, 2),
        CachedSummary(f"cut:{tag}{c(0)}", c(3), "", 0, 3),
        CachedSummary(f"cut:{tag}{c(3)}", c(5), "", 0, 2),
        CachedSummary(f"mask:{tag}{c(5)}", c(8), "", 0, 3),
        CachedSummary(f"ws:{c(1)}", TAG, ws_text, count(ws_text), 5),
    ]:
        await store.put(row)
    plan = PlanRecords(Config(), checked(store), "summarize", stores_cuts=True)

    state = await walk(made, checked(store), made.last_cuttable, tag)
    assert state == CompactionState(5, (Segment(0, 3, "first", 1), Segment(3, 5, "second", 1)))
    assert await plan.mask_end(made, 5, tag) == 8
    assert await plan.working_set(made, 5) == [WorkingSetRecord(working_set_key(made), TAG, c(5), 300, 5, WS_TEXT)]
    await plan.seed_working_set(made, 5)
    assert index_of(made).render(5, 300, made.counter.count_text) == WS_TEXT  # as stored, not rendered afresh
    other_budget = plan_tag("summarize", Config(), WIRE * 2)
    assert (await walk(made, checked(store), made.last_cuttable, other_budget)).boundary == 0


async def test_records_of_another_room_end_chain_version_or_plan_are_not_served() -> None:
    made, store = history(), MemoryStore()
    c, tag = made.chain_at, plan_tag("summarize", Config(), WIRE)
    line = f"ws:{c(1)}"

    def ws(end_chain: str, room: int, groups: int, tag: str = TAG, text: str = WS_TEXT) -> CachedSummary:
        body = f"{end_chain} {room}\n{text}"
        return CachedSummary(line, tag, body, count(body), groups)

    for row in [
        ws(c(5), 3, 5),  # the text does not fit the room it names
        ws(c(6), 300, 5),  # names another end's chain
        ws(c(5), 300, 6),  # another end's length
        CachedSummary(line, "v0:cl100k_base", f"{c(5)} 300\n{WS_TEXT}", count(f"{c(5)} 300\n{WS_TEXT}"), 5),
        CachedSummary(f"mask:{tag}{c(5)}", c(7), "", 0, 3),  # chain of another history at the mask end
        CachedSummary(f"mask:{tag}{c(5)}", c(made.last_cuttable + 1), "", 0, made.last_cuttable - 4),  # past it
        CachedSummary(f"mask:fedcba9876543210:{c(5)}", c(8), "", 0, 3),  # another plan
        CachedSummary(c(0), c(3), "first", 1, 3),  # a summary no cut of this plan names
        CachedSummary(f"cut:fedcba9876543210:{c(0)}", c(3), "", 0, 3),
    ]:
        await store.put(row)
    plan = PlanRecords(Config(), checked(store), "summarize", stores_cuts=True)

    assert await plan.working_set(made, 5) == []
    assert await plan.mask_end(made, 5, tag) == 0
    assert await walk(made, checked(store), made.last_cuttable, tag) == CompactionState()


class Lying(MemoryStore):
    """An unchecked store answering with whatever its rows hold: other keys, other types, broken fields."""

    def __init__(self, answer: list[Any]) -> None:
        super().__init__()
        self.answer = answer

    async def starting_at(self, start: str) -> list[CachedSummary]:
        return list(self.answer)


@pytest.mark.parametrize(
    "text",
    [
        "c5 300",  # no newline before the text
        "c5 3x0\ntext",
        "c5 -1\ntext",
        "c5 ²\ntext",  # a digit to ``str.isdigit`` that ``int`` refuses
        "c5 " + "9" * 5_000 + "\ntext",  # past int()'s digit limit
        " 300\ntext",  # no chain
        "c5  300\ntext",
    ],
    ids=["no-newline", "letter", "negative", "superscript", "5000-digits", "no-chain", "two-spaces"],
)
async def test_a_malformed_working_set_row_is_ignored(text: str) -> None:
    row = CachedSummary("ws:c1", TAG, text, count(text), 5)
    for store in (checked(MemoryStore(), WORKING_SET_MAX_TOKENS), Lying([row])):
        await store.put(row)
        assert await read(store.within(WORKING_SET_MAX_TOKENS), WorkingSetKey("c1")) == []


async def test_an_unchecked_store_answering_with_anything_reads_as_no_records() -> None:
    made = history()
    c, tag = made.chain_at, plan_tag("summarize", Config(), WIRE)
    answer = [
        CachedSummary("another start", c(8), "", 0, 3),
        {"start": f"mask:{tag}{c(5)}", "end": c(8), "groups": 3},
        CachedSummary(f"mask:{tag}{c(5)}", c(8), "", 0, "3"),  # type: ignore[arg-type]
        CachedSummary(f"mask:{tag}{c(5)}", c(8), "", 0, 0),
        None,
    ]
    store = Lying(answer)
    plan = PlanRecords(Config(), store, "summarize", stores_cuts=True)

    assert await plan.mask_end(made, 5, tag) == 0
    assert await plan.working_set(made, 5) == []
    assert await walk(made, store, made.last_cuttable, tag) == CompactionState()


class Failing(MemoryStore):
    async def starting_at(self, start: str) -> list[CachedSummary]:
        raise ConnectionError("gone")

    async def put(self, entry: CachedSummary) -> None:
        raise ConnectionError("gone")


async def test_a_faulty_store_reads_as_no_records_and_writes_nothing() -> None:
    made = history()
    plan = PlanRecords(Config(), checked(Failing()), "summarize", stores_cuts=True)
    state = CompactionState(5, (Segment(0, 3, "a", 1), Segment(3, 5, "b", 1)), mask_end=8)

    await plan.record_cuts(made, CompactionState(), state, WIRE)
    await plan.record_mask_end(made, CompactionState(), state, WIRE)
    await plan.record_working_set(made, state, 300)

    assert await plan.mask_end(made, 5, plan.plan(WIRE)) == 0
    assert await plan.working_set(made, 5) == []
    assert await walk(made, plan.store, made.last_cuttable, plan.plan(WIRE)) == CompactionState()


# ------------------------------------------------------------------ within


async def test_every_store_has_within_and_only_a_checked_store_bounds_by_it(tmp_path: Any) -> None:
    memory, sqlite = MemoryStore(), SqliteStore(tmp_path / "s.db")
    assert memory.within(10) is memory and sqlite.within(10) is sqlite
    await sqlite.close()

    store = checked(memory, max_tokens=5)
    text = "c5 300\n" + "word " * 50
    row = CachedSummary("ws:c1", TAG, text, count(text), 5)
    await store.put(row)
    assert memory._entries == {}  # larger than a summary may be: refused
    await store.within(row.tokens).put(row)
    assert await store.starting_at("ws:c1") == []  # nor served at a summary's size
    assert await store.within(WORKING_SET_MAX_TOKENS).starting_at("ws:c1") == [row]


def test_the_working_set_tag_names_the_render_version_and_the_counter() -> None:
    assert working_set_tag(history()) == TAG
    assert working_set_key(history()) == WorkingSetKey(history().chain_at(1))


# ------------------------------------------------------------------ a session's resume


@pytest.mark.parametrize("room", ["²", "9" * 5_000], ids=["superscript", "5000-digits"])
async def test_a_resume_over_a_working_set_row_with_a_broken_room_renders_instead_of_crashing(room: str) -> None:
    """Such a room passed ``str.isdigit`` and then made ``int`` raise inside ``set_messages``."""
    store, budget = MemoryStore(), 8_000
    config = {"max_tokens": budget, "compaction_strategy": "extractive"}
    messages = mixed_history(40)
    live = create_manager(config, store=store)
    await replay(live, messages, budget=budget)
    view = await live.get_messages_for_request(token_budget=budget)
    written = [row for row in await _all(store) if row.start.startswith(WORKING_SET_MARK)]
    assert written
    for row in written:
        head, _, text = row.text.partition("\n")
        broken = f"{head.split(' ')[0]} {room}\n{text}"
        await store.put(replace(row, text=broken, tokens=count(broken)))

    resumed = create_manager(config, store=store)
    await resumed.set_messages(messages)

    assert resumed.state == live.state
    assert await resumed.get_messages_for_request(token_budget=budget) == view


async def test_many_large_rows_under_one_start_are_checked_off_the_loop_and_served_the_same() -> None:
    """The rows under the first group's chain grow with every merge; checking them (a scrub and a count each) runs in
    a worker thread past ``OFF_LOOP_CHARS``, and serves what the inline check serves (issue 48)."""
    import threading

    from amplifier_module_context_summarize.stores.base import OFF_LOOP_CHARS

    texts = [(f"e{i}", f"summary {i} " + "word " * 600) for i in range(12)]
    texts.append(("lone", "a \ud800 b " + "word " * 600))  # another writer's: scrubbed
    rows = [CachedSummary("s", end, text, 700, 1) for end, text in texts]

    class Rows(MemoryStore):  # a store that answers with what it holds, unchecked (a shared file, a third party)
        async def starting_at(self, start: str) -> list[CachedSummary]:
            return [row for row in rows if row.start == start]

        async def get(self, start: str, end: str) -> CachedSummary | None:
            return next((row for row in rows if (row.start, row.end) == (start, end)), None)

    inner = Rows()
    assert sum(len(row.text) for row in rows) > OFF_LOOP_CHARS
    threads: list[bool] = []

    def count(text: str) -> int:
        threads.append(threading.current_thread() is threading.main_thread())
        return COUNTER.count_text(text)

    served = await CheckedStore(inner, count, 4_000).starting_at("s")
    assert threads and not any(threads)
    inline = CheckedStore(inner, COUNTER.count_text, 4_000)
    assert served == [inline.accept(row, "s", None) for row in await inner.starting_at("s")]
    assert len(served) == len(rows) and "\ufffd" in served[-1].text
    threads.clear()
    await CheckedStore(inner, count, 4_000).get("s", "e0")
    assert threads == [True]  # one row: checked inline
