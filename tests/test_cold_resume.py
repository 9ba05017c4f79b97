"""A cold resume (``set_messages`` with nothing stored) counts exactly only the newest groups; the older ones get
upper bounds that the first plan reads (issue 37). Its first view must be the one exact counts give, and every
count read after the first request must be exact."""

from __future__ import annotations

import os
import re

import pytest

from amplifier_module_context_summarize import create_manager
from amplifier_module_context_summarize.benchmark.coding import CodingSession
from amplifier_module_context_summarize.benchmark.synth import SMALL, TextSource
from amplifier_module_context_summarize.compaction.plan.warm import Warmer
from amplifier_module_context_summarize.compaction.view.masking import Masks, MaskSettings
from amplifier_module_context_summarize.core.history import History
from amplifier_module_context_summarize.core.state import CompactionState
from amplifier_module_context_summarize.core.tokens import TokenCounter
from amplifier_module_context_summarize.stores import MemoryStore
from amplifier_module_context_summarize.testing import EventRecorder
from amplifier_module_context_summarize.working_set.facts import extract
from amplifier_module_context_summarize.working_set.index import index_of

BUDGET = 20_000
COUNTER = TokenCounter()


@pytest.fixture(scope="module")
def session() -> list[dict]:
    return CodingSession(SMALL, seed=37, text=TextSource()).history(3_000)


def _manager(events: EventRecorder | None = None, budget: int = BUDGET):
    config = {"max_tokens": budget, "compaction_strategy": "extractive"}
    return create_manager(config, hooks=events, store=MemoryStore())


class _Exact:
    """Turns the bounds off right after ``set_messages``: the exact path the bounded one must agree with."""

    def __init__(self, manager) -> None:
        self.manager = manager
        set_messages = manager.set_messages

        async def exact(messages):
            await set_messages(messages)
            manager.history.stop_estimating()

        manager.set_messages = exact


def _of(events: EventRecorder, name: str) -> list[dict]:
    return [data for _, data in events.get_events(name)]


def _exact_history(messages: list[dict]) -> History:
    history = History(COUNTER, "f")
    for message in messages:
        history.append(message)
    return history


async def test_the_first_view_after_a_cold_resume_is_the_exact_paths_and_fits(session) -> None:
    bounded, exact = _manager(), _manager()
    _Exact(exact)
    await bounded.set_messages(session)
    assert bounded.history.estimating and bounded.history.bounded > 0  # the older groups hold bounds
    await exact.set_messages(session)
    assert not exact.history.estimating
    view = await bounded.get_messages_for_request(token_budget=BUDGET)
    assert view == await exact.get_messages_for_request(token_budget=BUDGET)
    assert bounded.state == exact.state and bounded.state.boundary >= bounded.history.bounded
    assert COUNTER.count_messages(view) <= BUDGET
    assert await bounded.get_token_count() == await exact.get_token_count()


async def test_a_cold_resume_counts_only_the_newest_groups_with_the_tokenizer(session) -> None:
    texts: list[int] = []

    def counting(manager):
        count = manager.counter.count_text

        def counted(text: str) -> int:
            texts.append(len(text))
            return count(text)

        manager.counter.count_text = counted
        return manager

    bounded, exact = counting(_manager()), None
    await bounded.set_messages(session)
    await bounded.get_messages_for_request(token_budget=BUDGET)
    bounded_chars, texts[:] = sum(texts), []
    exact = counting(_manager())
    _Exact(exact)
    await exact.set_messages(session)
    await exact.get_messages_for_request(token_budget=BUDGET)
    assert bounded_chars < 0.8 * sum(texts)


async def test_the_first_compaction_says_its_before_count_is_an_estimate_and_later_ones_do_not(session) -> None:
    events = EventRecorder()
    manager = _manager(events)
    await manager.set_messages(session)
    await manager.get_messages_for_request(token_budget=BUDGET)
    pre, post = _of(events, "context:pre_compact"), _of(events, "context:post_compact")
    assert [e["estimated"] for e in pre] == [True] and [e["estimated"] for e in post] == [True]
    assert post[0]["token_count"] == await manager.get_token_count()
    for message in CodingSession(SMALL, seed=38, text=TextSource()).history(400):
        await manager.add_message(message)
    await manager.get_messages_for_request(token_budget=BUDGET)
    later = _of(events, "context:post_compact")[1:]
    assert later and not any(e["estimated"] for e in later)


async def test_after_the_first_request_the_bounded_counts_are_exact(session) -> None:
    manager = _manager()
    await manager.set_messages(session)
    bounded = manager.history.bounded
    await manager.get_messages_for_request(token_budget=BUDGET)
    assert not manager.history.estimating
    prefix, exact = manager.history.prefix, _exact_history(session).prefix
    assert [prefix[g] - prefix[0] for g in range(bounded + 2)] == [exact[g] for g in range(bounded + 2)]
    assert manager.history.tokens == exact[-1] - exact[0]


async def test_a_first_request_the_exact_groups_do_not_decide_counts_everything(session) -> None:
    """Resumed under a small budget, asked with one so large the newest groups counted exactly are not enough:
    the bounds are dropped before the plan reads them, and the view is the exact path's."""
    bounded, exact = _manager(budget=5_000), _manager(budget=5_000)
    _Exact(exact)
    await bounded.set_messages(session)
    await exact.set_messages(session)
    assert bounded.history.estimating
    view = await bounded.get_messages_for_request(token_budget=150_000)
    assert view == await exact.get_messages_for_request(token_budget=150_000)


def test_bounds_are_upper_bounds_zero_only_where_counts_are(session) -> None:
    bound = COUNTER.bounding()
    for message in [*session[:1500], {"role": "user", "content": ""}, {"role": "user", "content": "naïve ✓ 𝄞"}]:
        assert bound.count_message(message) >= COUNTER.count_message(message)
    assert bound.count_text("") == COUNTER.count_text("") == 0


def test_floors_are_lower_bounds(session) -> None:
    floor = COUNTER.flooring()
    odd = ["", " ", "a\x1cb\x1dc\x1ed\x1ff", "x\u00a0y\u3000z w", "{}\n\n}", "  lots   of\tspace\n\n", "=" * 700]
    for message in [*session[:1500], *({"role": "tool", "tool_call_id": "c", "content": t} for t in odd)]:
        assert floor.count_message(message) <= COUNTER.count_message(message)
    assert floor.count_text("") == 0 and floor.count_text("one two  three") == 3


def test_masks_reaching_back_keep_the_groups_worked_out(session) -> None:
    history = _exact_history(session[:600])
    settings = MaskSettings(min_chars=300)
    masks, fresh = Masks(history, settings), Masks(history, settings)
    end = history.last_cuttable
    masks.tokens(end // 2, end)
    assert masks.tokens(0, end) == fresh.tokens(0, end)
    assert masks.tokens(3, end // 2 + 5) == fresh.tokens(3, end // 2 + 5)


def test_masking_decides_on_the_replaced_messages_as_whole_counts_would_bounded_or_not(session) -> None:
    """Masking counts only the messages it replaces: each group is shown masked exactly when whole exact counts say
    it is smaller, and planned at its exact masked count; on a cold resume's bounded groups the same forms are chosen
    (none counted afresh whole) and the count planned stays an upper bound."""
    exact = _exact_history(session[:900])
    bounded = History(COUNTER, "f", counting=False)
    for message in session[:900]:
        bounded.append(message)
    bounded.count_from(0, 3_000)
    assert bounded.estimating and bounded.bounded > 0
    settings = MaskSettings(min_chars=300)
    on_exact, on_bounded = Masks(exact, settings), Masks(bounded, settings)
    closed = exact.last_cuttable
    changed = 0
    for g in range(closed):
        shown = exact.shown(g)
        form, tokens = on_exact._decide(g)
        whole = COUNTER.count_messages(on_exact._masked(g, shown)[0])
        smaller = whole < COUNTER.count_messages(shown)
        changed += smaller
        assert (form != shown) == smaller and tokens == (whole if smaller else COUNTER.count_messages(shown))
        bounded_form, bounded_tokens = on_bounded._decide(g)
        assert bounded_form == form and bounded_tokens >= tokens
    assert changed > 10


def _facts_of(index, count: int) -> list:
    return [index.facts(g) for g in range(count)]


async def test_a_whole_history_is_extracted_in_this_process_without_forking_it(session, monkeypatch) -> None:
    """The host may run threads (amplifier-core's engine, an HTTP pool): the library never forks it (issue 48)."""

    def no_fork() -> int:
        raise AssertionError("os.fork called")

    monkeypatch.setattr(os, "fork", no_fork)
    history, alone = _exact_history(session[:1200]), _exact_history(session[:1200])
    await Warmer().warm(history, None, CompactionState())
    closed = history.last_cuttable
    assert index_of(history).extracted == closed
    assert _facts_of(index_of(history), closed) == [extract(alone.shown(g)) for g in range(closed)]
    assert history.chained == closed and history.chain_at(closed) == alone.chain_at(closed)


async def test_a_cold_resume_never_forks_and_its_first_view_carries_the_working_set(session, monkeypatch) -> None:
    def no_fork() -> int:
        raise AssertionError("os.fork called")

    monkeypatch.setattr(os, "fork", no_fork)
    manager = _manager()
    await manager.set_messages(session)
    view = await manager.get_messages_for_request(token_budget=BUDGET)
    summary = next(m for m in view if isinstance(m.get("content"), str) and "[CONTEXT SUMMARY]" in m["content"])
    assert "### Working set" in summary["content"]
    assert index_of(manager.history).extracted >= manager.state.summarized_end


async def test_before_the_first_request_the_token_count_is_exact(session) -> None:
    bounded, exact = _manager(), _manager()
    _Exact(exact)
    await bounded.set_messages(session)
    await exact.set_messages(session)
    assert await bounded.get_token_count() == await exact.get_token_count()
    assert bounded.planned_tokens == exact.planned_tokens


def _masked_groups(monkeypatch) -> list[int]:
    """The groups ``Masks`` works out a masked form for, from now on."""
    seen: list[int] = []
    masked = Masks._masked

    def recording(self, index, shown):
        seen.append(index)
        return masked(self, index, shown)

    monkeypatch.setattr(Masks, "_masked", recording)
    return seen


async def test_a_cold_resume_masks_no_bounded_group_for_a_summary_of_authored_text(session, monkeypatch) -> None:
    """The extractive summary with no names to keep reads only what the user and the assistant wrote, which masking
    leaves alone: the first plan compares the bounded groups' bounds (masking only lowers a count) and the summary
    reads them as shown, so none of them is masked, and the view is the exact path's."""
    bounded, exact = _manager(), _manager()
    _Exact(exact)
    await exact.set_messages(session)
    expected = await exact.get_messages_for_request(token_budget=BUDGET)
    await bounded.set_messages(session)
    end = bounded.history.bounded
    masked = _masked_groups(monkeypatch)
    assert await bounded.get_messages_for_request(token_budget=BUDGET) == expected
    assert end > 100 and masked and min(masked) >= end


async def test_a_cold_resume_masks_the_span_a_summary_keeping_names_reads(session, monkeypatch) -> None:
    """Names to keep are searched in every message's text, tool outputs included, so that summary reads the bounded
    groups masked, as the exact path does (a name deep in a long output is not kept once the output is masked)."""

    def keeping(name: str):
        config = {"max_tokens": BUDGET, "compaction_strategy": "extractive", "summary_instructions": f"keep {name}"}
        return create_manager(config, store=MemoryStore())

    probe = _manager()
    await probe.set_messages(session)
    end, history = probe.history.bounded, probe.history
    outputs = [m["content"] for m in session[: history.groups[end].start] if m["role"] == "tool"]
    deep = [o.split("\n", 1)[1] for o in outputs if len(o) > 600 and "\n" in o]
    name = re.findall(r"\bmod_\d+_fn\d+\b", " ".join(deep))[0]  # in a long output, past the line masking keeps
    bounded, exact = keeping(name), keeping(name)
    _Exact(exact)
    await exact.set_messages(session)
    expected = await exact.get_messages_for_request(token_budget=BUDGET)
    await bounded.set_messages(session)
    masked = _masked_groups(monkeypatch)
    assert await bounded.get_messages_for_request(token_budget=BUDGET) == expected
    assert any(g < end for g in masked)
