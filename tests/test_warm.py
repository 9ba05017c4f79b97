"""``plan/warm.py``: what a plan reads is worked out ahead, only for groups not worked out before, with the event
loop let run between slices; ``fold_ahead`` folds the working set to an end. No real time passes: ``SLICE_S`` 0
makes every slice end at once, and the other task runs in the loop turns given away."""

from __future__ import annotations

import asyncio

import pytest
from test_plan import history_of

from amplifier_module_context_summarize.compaction.plan import warm
from amplifier_module_context_summarize.compaction.plan.warm import Warmer, fold_ahead
from amplifier_module_context_summarize.compaction.view.masking import Masks, MaskSettings
from amplifier_module_context_summarize.core.history import History
from amplifier_module_context_summarize.core.state import CompactionState
from amplifier_module_context_summarize.working_set import index as index_module
from amplifier_module_context_summarize.working_set.index import index_of


def grow(history: History, turns: int) -> None:
    for message in history_of(turns, 20).messages[1:]:
        history.append(message)


def counting(monkeypatch: pytest.MonkeyPatch, history: History) -> list[int]:
    """The groups whose chain hash the warmer asks for (a hash is cheap once known, but asked for only once)."""
    asked: list[int] = []
    chain_at = history.chain_at

    def counted(group: int) -> str:
        asked.append(group)
        return chain_at(group)

    monkeypatch.setattr(history, "chain_at", counted)
    return asked


async def test_a_second_warm_works_out_only_the_new_groups(monkeypatch: pytest.MonkeyPatch) -> None:
    extracted: list[object] = []
    extract = index_module.extract
    monkeypatch.setattr(index_module, "extract", lambda group: extracted.append(group) or extract(group))
    history = history_of(10, 20)
    asked = counting(monkeypatch, history)
    warmer = Warmer()

    await warmer.warm(history, None, CompactionState())
    first = history.last_cuttable
    assert index_of(history).extracted == first and len(extracted) == first
    assert asked and max(asked) == first

    asked.clear(), extracted.clear()
    await warmer.warm(history, None, CompactionState())
    assert asked == [] and extracted == [], "nothing new: nothing worked out again"

    grow(history, 4)
    await warmer.warm(history, None, CompactionState())
    assert index_of(history).extracted == history.last_cuttable > first
    assert len(extracted) == history.last_cuttable - first
    assert asked and min(asked) > first, "only the new groups' hashes are asked for"


async def test_another_history_is_warmed_from_its_start() -> None:
    warmer = Warmer()
    await warmer.warm(history_of(12, 20), None, CompactionState())
    other = history_of(4, 30)
    await warmer.warm(other, None, CompactionState())
    assert index_of(other).extracted == other.last_cuttable > 0


async def test_warming_masks_from_the_boundary_as_far_as_masking_reaches() -> None:
    history = history_of(12, 400)
    masks = Masks(history, MaskSettings())
    await Warmer().warm(history, masks, CompactionState(3))
    worked_out = sizes(masks)
    masks.tokens(3, masks.limit())  # what a plan asks: already known, so nothing is added
    assert sizes(masks) == worked_out and masks.limit() > 3


def sizes(masks: Masks) -> dict[str, object]:
    """How much the masks have worked out (the length of each of their caches)."""
    return {k: len(v) if isinstance(v, list | dict | set) else v for k, v in vars(masks).items()}


async def loop_turns_seen(work, progress) -> list[int]:
    """Run ``work`` beside a task that notes ``progress()`` at every loop turn it gets."""
    seen: list[int] = []
    done = False

    async def watch() -> None:
        while not done:
            seen.append(progress())
            await asyncio.sleep(0)

    watcher = asyncio.create_task(watch())
    await asyncio.sleep(0)  # the watcher starts
    await work
    done = True
    await watcher
    return seen


async def test_warming_lets_another_task_run_between_slices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(warm, "SLICE_S", 0.0)
    history = history_of(30, 20)
    index = index_of(history)
    seen = await loop_turns_seen(Warmer().warm(history, None, CompactionState()), lambda: index.extracted)
    between = [n for n in seen if 0 < n < history.last_cuttable]
    assert len(set(between)) >= 3, f"the other task ran only at {sorted(set(seen))}"


async def test_fold_ahead_folds_to_the_end_and_lets_the_loop_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(warm, "SLICE_S", 0.0)
    history = history_of(30, 20)
    index = index_of(history)
    end = history.last_cuttable
    seen = await loop_turns_seen(fold_ahead(history, end), lambda: index.folded)
    assert index.folded == end
    assert len({n for n in seen if 0 < n < end}) >= 3
    assert index.state(end) is index.state(end), "the state at the end is the kept one: nothing left to fold"


async def test_fold_ahead_after_a_further_fold_folds_nothing_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """A compaction (or a fold of its own) already folded further: nothing is folded again."""
    history = history_of(10, 20)
    index = index_of(history)
    index.state(history.last_cuttable)
    folds: list[int] = []
    state = index.state
    monkeypatch.setattr(index, "state", lambda end: folds.append(end) or state(end))
    await fold_ahead(history, history.last_cuttable - 1)
    assert folds == [] and index.folded == history.last_cuttable


async def test_warming_reads_each_message_once_for_its_facts_chain_hash_and_masked_form(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Masked forms are worked out in the same slices as the facts, while the messages are in the thaw cache: a
    pass of their own thawed the whole history again (and reaching back from where the first plan had masked
    from, on a cold resume, did it in one stretch that never let the loop run)."""
    from amplifier_module_context_summarize.core import frozen

    history = history_of(200, 200)
    masks = Masks(history, MaskSettings(min_chars=100, keep_recent=2))
    masks.tokens(history.last_cuttable - 20, history.last_cuttable - 10)  # the first plan's look at the newest
    reference = Masks(history, MaskSettings(min_chars=100, keep_recent=2))
    thaws: list[object] = []
    thaw = frozen.thaw
    monkeypatch.setattr(frozen, "thaw", lambda form: thaws.append(form) or thaw(form))
    await Warmer().warm(history, masks, CompactionState())
    assert len(thaws) <= 1.1 * len(history.messages)
    end = min(masks.limit(), history.last_cuttable)
    assert end > 100
    assert [masks.tokens(0, g) for g in range(end + 1)] == [reference.tokens(0, g) for g in range(end + 1)]
    assert all(masks.group(g) == reference.group(g) for g in range(end))
