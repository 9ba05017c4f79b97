"""A compaction that would not make a view that fits any smaller is not installed (issue 41).

With a budget small beside the messages (one tool output of ~11k characters, a 4k-character report per turn, a
4k budget) the view passes the threshold while it still fits, and the plan cannot reach the target: the tail and
the current turn are protected, the summary is already there. What it got — masking an output already small, a
summary of one message longer than the message — made the view no smaller, or bigger, and was installed and
reported ``compacted``: an LLM call paid, the provider's cached prefix broken, for nothing. Such a compaction now
leaves the view exactly as it was and reports ``unchanged``; a view past the budget is still made to fit.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from amplifier_module_context_summarize import create_manager
from amplifier_module_context_summarize.cli.compact import replay_session
from amplifier_module_context_summarize.compaction.run.background import Landed
from amplifier_module_context_summarize.compaction.run.reporter import NOTHING_ACCOUNTED
from amplifier_module_context_summarize.events import PostCompact, Stats
from amplifier_module_context_summarize.testing import EventRecorder, replay_steps
from amplifier_module_context_summarize.testing.providers import FakeProvider

BUDGET = 4000


def report_text(turn: int) -> str:
    steps = " ".join(
        f"Step {s}: the module in src/app_{s}.py was checked and its tests pass." for s in range(turn, turn + 56)
    )
    return f"Turn {turn} done. {steps}"


def session(turns: int = 30) -> list[dict[str, Any]]:
    """The shape of the Amplifier CLI transcript the issue replayed: each turn a short request, one tool call
    whose output is ~11k characters, then a ~4k-character report."""
    output = "\n".join(f"line of output number {n}" for n in range(1, 401))
    messages: list[dict[str, Any]] = []
    for turn in range(1, turns + 1):
        call = f"toolu_{turn:020d}"
        command = "seq 1 400 | sed 's/^/line of output number /'"
        messages += [
            {"role": "user", "content": f"Turn {turn}: inspect the next part of the project and report."},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Let me look."},
                    {"type": "tool_call", "id": call, "name": "bash", "input": {"command": command}},
                ],
                "tool_calls": [{"id": call, "tool": "bash", "arguments": {"command": command}}],
            },
            {"role": "tool", "tool_call_id": call, "content": f'{{"stdout": "{output}", "returncode": 0}}'},
            {"role": "assistant", "content": [{"type": "text", "text": report_text(turn)}]},
        ]
    return messages


CONFIGS = {
    "blocking": {"background_compaction": False},
    "blocking_extractive": {"background_compaction": False, "summarizer": {"provider": "extractive"}},
    "blocking_llm": {"background_compaction": False, "_provider": True},
    "soft_threshold": {},
    "soft_threshold_llm": {"_provider": True},
    "soft_threshold_llm_unmasked": {"observation_masking": False, "_provider": True},
}


async def replayed(config: dict[str, Any]) -> tuple[Any, EventRecorder, list[int]]:
    config = dict(config)
    provider = FakeProvider() if config.pop("_provider", False) else None
    recorder = EventRecorder()
    manager = create_manager({"max_tokens": BUDGET, **config}, hooks=recorder)
    sizes = []
    async for step in replay_steps(manager, session(), provider=provider, budget=BUDGET, at_end=True):
        if step.due:
            view = await step.request()
            sizes.append(manager.counter.count_messages(view))
    await manager.close()
    return manager, recorder, sizes


@pytest.mark.parametrize("mode", sorted(CONFIGS))
async def test_no_compaction_of_a_view_that_fits_makes_it_bigger_or_leaves_it_as_it_was(mode: str) -> None:
    manager, recorder, sizes = await replayed(CONFIGS[mode])
    posts = recorder.payloads("context:post_compact")
    installed = [p for p in posts if p["outcome"] == "compacted"]
    futile = [
        (p["tokens_before"], p["token_count"])
        for p in installed
        if p["tokens_before"] <= p["budget"] and p["token_count"] >= p["tokens_before"]
    ]
    assert installed, "the replay compacts"
    assert not futile, f"installed without making a view that fit smaller: {futile}"
    assert max(sizes) <= BUDGET, "every view still fits the budget"
    # Every pre got exactly one post (or a postponed); stats count each outcome under its own key.
    pres = recorder.payloads("context:pre_compact")
    assert len(pres) == len(posts) + len(recorder.payloads("context:compaction_postponed"))
    unchanged = [p for p in posts if p["outcome"] == "unchanged"]
    assert manager.stats["compactions"] == len(installed)
    assert manager.stats["compactions_unchanged"] == len(unchanged)
    assert len(recorder.payloads("context:compaction")) == len(installed), "the kernel's event: compactions made"
    for p in unchanged:
        assert p["token_count"] == p["tokens_before"] and p["newly_summarized"] == p["newly_masked"] == 0


async def test_an_unchanged_compaction_leaves_the_view_exactly_as_it_was() -> None:
    """Blocking mode: the pre goes out before the plan runs (its hooks steer the summaries); when the plan cannot
    make the fitting view smaller, the request returns the same view, prefix-stable, and the post says so."""
    recorder = EventRecorder()
    manager = create_manager({"max_tokens": BUDGET, "background_compaction": False}, hooks=recorder)
    seen = 0
    previous: list[dict[str, Any]] | None = None
    async for step in replay_steps(manager, session(), budget=BUDGET, at_end=True):
        if not step.due:
            continue
        state = manager.view.state
        view = await step.request()
        posts = recorder.payloads("context:post_compact")
        if len(posts) > seen and posts[-1]["outcome"] == "unchanged":
            assert manager.view.state is state, "nothing was installed"
            assert previous is not None and view[: len(previous)] == previous, "the view only grew at its end"
        seen = len(posts)
        previous = view
    assert manager.stats["compactions_unchanged"] >= 1, "the fixture reaches a compaction that cannot gain"


async def test_a_futile_compaction_is_not_tried_again_until_the_plan_could_reach_further() -> None:
    """After an ``unchanged`` outcome, no compaction is tried for a view that still fits while the plan's reach is
    the same: the same request again sends no pre; a request that does try has a new reach or a view past the
    budget."""
    recorder = EventRecorder()
    manager = create_manager({"max_tokens": BUDGET, "background_compaction": False}, hooks=recorder)
    compactor, stalls, retried = manager.compactor, 0, 0
    async for step in replay_steps(manager, session(), budget=BUDGET, at_end=True):
        if not step.due:
            continue
        stall, reach = compactor.stall, compactor.reach(manager.budget.limits(BUDGET))
        pres = len(recorder.payloads("context:pre_compact"))
        tokens = manager.view.tokens()
        view = await step.request()
        if stall is not None and len(recorder.payloads("context:pre_compact")) > pres:
            assert reach != stall.reach or tokens > BUDGET, "tried again with nothing new within its reach"
            retried += 1
        posts = recorder.payloads("context:post_compact")
        if len(recorder.payloads("context:pre_compact")) > pres and posts[-1]["outcome"] == "unchanged":
            stalls += 1
            assert compactor.stall is not None
            again = await step.request()  # an orchestrator asking again, nothing added
            assert len(recorder.payloads("context:pre_compact")) == pres + 1, "no second try"
            assert again == view
    assert stalls >= 1 and retried >= 1, "the fixture stalls, then the replay goes past the stall"


async def test_a_background_compaction_that_would_not_shrink_the_view_lands_unchanged() -> None:
    """The background path: a flight whose result is no smaller than the view it would replace (here: the plan
    made nothing new, as when the tail and the current turn are all it could reach) is not installed; its pre
    gets its post, ``unchanged``, after ``landed``; the next request with nothing new starts no other flight."""
    recorder = EventRecorder()
    config = {"max_tokens": BUDGET, "observation_masking": False}
    manager = create_manager(config, hooks=recorder)
    compactor = manager.compactor

    async def nothing_gained(job: Any, before: Any) -> Landed:
        return Landed(before, job.facts.shown(before), NOTHING_ACCOUNTED)

    compactor.background._run = nothing_gained
    provider = FakeProvider()
    messages = iter(session())
    for message in messages:
        await manager.add_message(message)
        await manager.get_messages_for_request(BUDGET, provider)
        if manager.background.flight is not None:
            break
    assert manager.background.flight is not None, "a background compaction started"
    await asyncio.wait({manager.background.flight.task}, timeout=5)
    state, view_before = manager.view.state, manager.view.build()
    view = await manager.get_messages_for_request(BUDGET, provider)
    assert manager.view.state is state and manager.counter.count_messages(view) <= BUDGET
    assert manager.view.build() == view_before, "the view is exactly as it was"
    phases = [p["phase"] for p in recorder.payloads("context:background_compaction")]
    [post] = recorder.payloads("context:post_compact")[-1:]
    assert phases[-2:] == ["started", "landed"] and post["outcome"] == "unchanged"
    assert post["token_count"] == post["tokens_before"] and manager.stats["compactions_unchanged"] == 1
    assert len(recorder.payloads("context:pre_compact")) == len(recorder.payloads("context:post_compact"))
    await manager.get_messages_for_request(BUDGET, provider)
    assert manager.background.flight is None, "not tried again: nothing new within its reach"
    await manager.close()


async def test_the_compact_command_lists_only_installed_compactions() -> None:
    result = await replay_session(session(), BUDGET, {"provider": "extractive"})
    compactions = result["compactions"]
    assert compactions and result["report"]["compactions"] == len(compactions)
    futile = [c for c in compactions if c["tokens_before"] <= BUDGET and c["token_count"] >= c["tokens_before"]]
    assert not futile, f"listed compactions that made a view that fit no smaller: {futile}"


def test_unchanged_is_counted_under_its_own_key() -> None:
    stats = Stats()
    base = dict.fromkeys(PostCompact.keys(), 0) | {"strategy": "summarize", "circuit": "closed", "calibration": 1.0}
    base |= {"fallback": None, "focus": None, "clipped": False, "deny_overruled": False, "estimated": False}
    stats.observe(PostCompact(**{**base, "outcome": "unchanged", "provider_calls": 1, "summaries": 1}))
    stats.observe(PostCompact(**{**base, "outcome": "compacted"}))
    assert (stats.compactions, stats.compactions_unchanged, stats.compactions_cancelled) == (1, 1, 0)
    assert stats.provider_calls == 1 and stats.summaries == 1, "what an unchanged compaction paid is counted"


async def test_an_explicit_compact_that_cannot_shrink_the_view_installs_nothing_and_says_so() -> None:
    """``compact()`` is held to the same rule: it returns the tokens it saved, and installing a view no smaller
    would only break the provider's cached prefix. A view of the current turn alone has nothing it may cut."""
    recorder = EventRecorder()
    manager = create_manager({"max_tokens": BUDGET}, hooks=recorder)
    for message in session(1)[:2]:
        await manager.add_message(message)
    state = manager.view.state
    assert await manager.compact() == 0
    [post] = recorder.payloads("context:post_compact")
    assert post["outcome"] == "unchanged" and manager.view.state is state
    assert manager.stats["compactions"] == 0 and manager.stats["compactions_unchanged"] == 1
    assert recorder.payloads("context:compaction") == [], "the kernel's event reports compactions made"


def test_an_unchanged_compaction_shows_nothing_on_the_screen() -> None:
    from amplifier_module_context_summarize.notify import compaction_line

    post = {"outcome": "unchanged", "tokens_before": 3868, "token_count": 3868, "budget": BUDGET}
    assert compaction_line(post) is None
    assert compaction_line({**post, "outcome": "compacted", "token_count": 2000}) is not None


async def test_a_stall_ends_when_the_grown_tail_would_make_the_plan_cut_past_the_protected_tail(tmp_path) -> None:
    """The feature matrix (explore mode, resume): every request pinned by a ``<system-reminder>`` pattern, a
    1,500-token budget, offline summaries. A compaction could not gain and stalled; the tail then grew until, beside
    the summary and the room a new one is planned with, it no longer fit the budget, so the plan would cut past the
    protected tail. The stall's reach (the protected tail alone) had not moved: the live session kept skipping
    while a resumed one, with no stall, compacted, and the resumed view was not the live one."""
    from test_feature_matrix import Scenario, config, session

    s = Scenario(
        strategy="summarize", background=False, summarizer="offline", instructions=False, focus_by=None,
        deny=False, pins=frozenset(), reminders=True, inject=None, budget=1500, summary_ratio=0.3,
        summary_max_tokens=600, pin_ratio=0.4, turns=10, large={}, shape_seed=0, stall=None, stall_every=1,
        compact_at=1,
    )  # fmt: skip
    history, _ = session(s)
    cfg = config(s, tmp_path / "summaries.db")
    recorder = EventRecorder()
    live = create_manager(cfg, hooks=recorder)
    async for step in replay_steps(live, history, budget=s.budget, at_end=True):
        if step.due:
            await step.request()
    unchanged = [p for p in recorder.payloads("context:post_compact") if p["outcome"] == "unchanged"]
    assert unchanged, "the session stalls on the way"
    view = await live.get_messages_for_request(token_budget=s.budget)
    await live.close()

    resumed = create_manager(cfg)
    await resumed.set_messages(history)
    try:
        assert await resumed.get_messages_for_request(token_budget=s.budget) == view
    finally:
        await resumed.close()


async def test_a_stall_ends_when_a_closing_group_makes_the_first_span_worth_a_summary(tmp_path) -> None:
    """The feature matrix (explore mode, resume; ``KNOWN_RESUME_SEAM``): an LLM summarizer, a 1,500-token budget.
    A compaction's first cut took one group, a span too small for an LLM summary as far as a cut could then go, so
    the plan masked it, gained nothing and stalled. The next user message closed a group: the span to the new last
    allowed cut was worth a summary (boundary 50 -> 54), with the first cut and the protected tail unmoved, so the
    stall's reach had not moved and the live session kept skipping, while a resumed one, with no stall, compacted:
    the resumed view was not the live one. The request after that message must compact."""
    from test_feature_matrix import KNOWN_RESUME_SEAM as s
    from test_feature_matrix import Manager, guided_model, session

    from amplifier_module_context_summarize.testing.replay import request_due

    history, _ = session(s)
    store = tmp_path / "summaries.db"
    live = Manager(s, store, guided_model(s))
    outcomes: list[tuple[int, list[str]]] = []
    for index, message in enumerate(history):
        await live.manager.add_message(message)
        if request_due(history, index, at_end=True):
            posts = len(live.recorder.payloads("context:post_compact"))
            view = await live.request(s.budget)
            outcomes.append((index, [p["outcome"] for p in live.recorder.payloads("context:post_compact")[posts:]]))
    await live.manager.close()
    stalled_before_last = [at for at, out in outcomes[:-1] if "unchanged" in out]
    assert stalled_before_last and stalled_before_last[-1] == outcomes[-2][0], "the request before the last stalls"
    assert outcomes[-1][1] == ["compacted"], "the closing group makes the span worth a summary: the stall ends"

    resumed = Manager(s, store, guided_model(s))
    try:
        await resumed.manager.set_messages(history)
        assert await resumed.request(s.budget) == view
    finally:
        await resumed.manager.close()
