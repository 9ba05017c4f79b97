"""Issue 43, items 4-6: what a ``context:post_compact`` hook puts back (``inject_context``) holds together with the
rest of the view: counted by the view's own counter whatever its script, shown again by a resume in a new process
(the ``amplifier`` CLI runs every turn in one), and sent clean of lone surrogates whatever the history holds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from amplifier_core.models import HookResult
from amplifier_core.testing import MockCoordinator

from amplifier_module_context_summarize import create_manager
from amplifier_module_context_summarize.core import clip
from amplifier_module_context_summarize.core.messages import message_text
from amplifier_module_context_summarize.core.state import SUMMARY_MARKER
from amplifier_module_context_summarize.core.tokens import TokenCounter
from amplifier_module_context_summarize.stores import MemoryStore, SqliteStore

BUDGET = 6_000
CHINESE_PLAN = "计划：" + "".join(chr(0x4E00 + (i * 37) % 2000) for i in range(3_000))
"""About one token a character (and more): three characters a token gives it three times its room."""
PLAN = "PLAN: 1) port the parser 2) rerun the suite 3) ship the rollback script"
COUNTER = TokenCounter()


def turn(i: int, size: int = 60) -> list[dict[str, Any]]:
    filler = " ".join(f"word{i}_{k}" for k in range(size))
    return [
        {"role": "user", "content": f"Request {i}: please look at part {i}. {filler}"},
        {"role": "assistant", "content": f"Done with part {i}. {filler}"},
    ]


def planning_hooks(text: str) -> tuple[Any, list[dict[str, Any]]]:
    """The real amplifier-core hook registry, a post_compact handler putting ``text`` back after each compaction."""
    hooks = MockCoordinator().hooks
    posts: list[dict[str, Any]] = []

    async def put_back(event: str, data: dict[str, Any]) -> HookResult:
        posts.append(data)
        return HookResult(action="inject_context", context_injection=text)

    hooks.register("context:post_compact", put_back, priority=10, name="plan")
    return hooks, posts


class PlainHooks:
    """Hooks that hand back what the handler answered as it is (a registry in Python, a test double): a lone
    surrogate reaches the manager (amplifier-core's Rust registry refuses such a result as unparseable)."""

    def __init__(self, text: str) -> None:
        self.text = text

    async def emit(self, event: str, data: dict[str, Any]) -> HookResult | None:
        if event == "context:post_compact":
            return HookResult(action="inject_context", context_injection=self.text)
        return None


def config(**extra: Any) -> dict[str, Any]:
    base = {"max_tokens": BUDGET, "background_compaction": False, "safety_margin": 0, "summarizer": "extractive"}
    return {**base, **extra}


async def session(manager: Any, turns: int, start: int = 0, budget: int = BUDGET) -> list[list[dict[str, Any]]]:
    views = []
    for i in range(start, start + turns):
        for message in turn(i):
            await manager.add_message(message)
        views.append(await manager.get_messages_for_request(budget))
    return views


def injected_in(view: list[dict[str, Any]], text: str) -> bool:
    return any(message_text(m) == text for m in view)


# ------------------------------------------------------------------ 4. counted by the view's own counter


def test_injected_text_takes_no_more_tokens_than_the_pins_room_whatever_its_script() -> None:
    from test_request_view import summarized, view_of

    history, state = summarized()
    view = view_of(history, state)
    room = view.pin_room()
    for text in (CHINESE_PLAN, "word " * 50_000, "😀" * 20_000):
        view.inject(text)
        assert view.injection is not None
        assert view.injection.tokens == COUNTER.count_message(view.injection.message) <= room
        assert view.injection.tokens > room // 2, "clipped only as far as the room needs, not to a sliver"


@pytest.mark.parametrize("strategy", ["mask", "summarize"])
@pytest.mark.parametrize("ratio", [0.3, 0.4])
async def test_a_plan_in_chinese_keeps_every_view_within_the_budget_and_the_summary_in_view(
    strategy: str, ratio: float
) -> None:
    """Issue 43 measured 100 of 121 views over 6,000 (mask, 0.4) and the summary giving way to the truncation marker
    in 100 views (0.3): the plan was clipped to three characters a token of its room."""
    hooks, posts = planning_hooks(CHINESE_PLAN)
    manager = create_manager(config(compaction_strategy=strategy, pin_budget_ratio=ratio), hooks=hooks)
    views = await session(manager, 40)
    assert posts, "the view compacted and the hook put its plan back"
    room = int(BUDGET * ratio)
    assert manager.view.injection is not None and manager.view.injection.tokens <= room
    over = [COUNTER.count_messages(v) for v in views if COUNTER.count_messages(v) > BUDGET]
    assert over == []
    if strategy == "summarize":
        truncated = [v for v in views if any(message_text(m).startswith("[CONTEXT TRUNCATED]") for m in v)]
        assert truncated == [], "the summary never gives way to the marker for the plan's sake"


@pytest.mark.parametrize("strategy", ["mask", "summarize"])
async def test_a_plan_that_fills_its_room_does_not_make_every_request_compact(strategy: str) -> None:
    """The plan is put back after every compaction, so each compaction keeps room for it: planned without it, the
    view landed the plan's size above the target and the next request compacted again (60 turns at 0.4: 50 and 46
    compactions; 9 and 10 without a plan)."""
    counts = []
    for text in (CHINESE_PLAN, None):
        hooks, posts = planning_hooks(text or "")
        manager = create_manager(config(compaction_strategy=strategy, pin_budget_ratio=0.4), hooks=hooks)
        await session(manager, 60)
        counts.append(len(posts))
    with_plan, without = counts
    assert without >= 5 and with_plan <= 2 * without


def test_clipping_to_a_token_room_is_linear_in_the_room_not_the_text() -> None:
    """A 6 MB plan: every count reads a copy of at most the room's ``CHARS_PER_TOKEN_CAP`` characters a token."""
    counted: list[int] = []

    def count(message: dict[str, Any]) -> int:
        counted.append(len(message["content"]))
        return COUNTER.count_message(message)

    room = 500
    message = clip.clip_within({"role": "user", "content": CHINESE_PLAN * 2_000}, room, count)
    assert count(message) <= room
    assert max(counted) <= room * clip.CHARS_PER_TOKEN_CAP + 200 and len(counted) <= 16


# ------------------------------------------------------------------ 5. a resume shows the same view


async def test_a_resume_in_a_new_process_shows_the_plan_the_hook_put_back(tmp_path: Path) -> None:
    """Every turn a new manager over the same SQLite file (the ``amplifier`` CLI's new process per turn): its first
    view is the one the running session sends, the hook's plan included (issue 43: 22 -> 21 messages)."""
    path = tmp_path / "summaries.db"
    hooks, posts = planning_hooks(PLAN)
    running = create_manager(config(storage_path=str(path)), hooks=hooks)
    resumed_with_plan = 0
    for i in range(30):
        view = (await session(running, 1, start=i))[0]
        fresh = create_manager(config(), store=SqliteStore(path))
        await fresh.set_messages(await running.get_messages())
        assert await fresh.get_messages_for_request(BUDGET) == view, f"turn {i}"
        resumed_with_plan += injected_in(view, PLAN)
        await fresh.close()
    assert posts and resumed_with_plan >= 10
    await running.close()


async def test_a_resume_before_the_budget_is_known_takes_the_plan_with_the_cuts() -> None:
    """``set_messages`` plans at ``max_tokens``; the first request names another budget, and the resume at that
    budget finds the cuts and the plan the session made at it (a shared memory store: one process, two managers)."""
    store = MemoryStore()
    hooks, _ = planning_hooks(PLAN)
    running = create_manager(config(max_tokens=50_000), hooks=hooks, store=store)
    view = (await session(running, 30))[-1]
    assert any(message_text(m).startswith(SUMMARY_MARKER) for m in view) and injected_in(view, PLAN)
    fresh = create_manager(config(max_tokens=50_000), store=store)
    await fresh.set_messages(await running.get_messages())
    assert await fresh.get_messages_for_request(BUDGET) == view


async def test_a_later_compaction_without_a_plan_is_resumed_without_one() -> None:
    store = MemoryStore()
    hooks = PlainHooks(PLAN)
    running = create_manager(config(), hooks=hooks, store=store)
    views = await session(running, 20)
    assert injected_in(views[-1], PLAN)
    hooks.text = ""  # the hook puts nothing back from here on
    views = await session(running, 20, start=20)
    assert not injected_in(views[-1], PLAN)
    fresh = create_manager(config(), store=store)
    await fresh.set_messages(await running.get_messages())
    assert await fresh.get_messages_for_request(BUDGET) == views[-1]


# ------------------------------------------------------------------ 6. a lone surrogate never goes out


def sendable(view: list[dict[str, Any]]) -> bool:
    try:
        json.dumps(view, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


async def test_a_plan_ending_in_a_cut_emoji_is_sent_as_u_fffd_with_a_clean_history() -> None:
    manager = create_manager(config(), hooks=PlainHooks("PLAN: ship it \ud83d"))
    views = await session(manager, 40)
    shown = [v for v in views if any("PLAN: ship it" in message_text(m) for m in v)]
    assert shown and not manager.history.unencodable
    assert all(sendable(v) for v in views)
    assert all(injected_in(v, "PLAN: ship it \ufffd") for v in shown)


async def test_a_rendered_system_prompt_with_a_lone_surrogate_is_sent_clean() -> None:
    manager = create_manager(config(), hooks=PlainHooks(PLAN))

    async def factory() -> str:
        return "You are a careful agent \udc80 (rendered)."

    await manager.set_system_prompt_factory(factory)
    views = await session(manager, 5)
    assert all(sendable(v) for v in views)
    assert views[-1][0]["content"] == "You are a careful agent \ufffd (rendered)."
