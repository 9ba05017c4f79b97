"""Issue 34: steering what survives — standing instructions, a focus per compaction, hooks that deny or put
context back, pinned messages, recent user turns, and the usage signal. Hooks are registered the Amplifier way on
a real hook registry (``MockCoordinator().hooks``) and answer with ``HookResult``s."""

from __future__ import annotations

import os
from typing import Any

import pytest
from amplifier_core.models import HookResult
from amplifier_core.testing import MockCoordinator

from amplifier_module_context_summarize import create_manager
from amplifier_module_context_summarize.config import parse_config
from amplifier_module_context_summarize.core.messages import message_text
from amplifier_module_context_summarize.core.state import SUMMARY_MARKER
from amplifier_module_context_summarize.stores import MemoryStore
from amplifier_module_context_summarize.summarizer.extractive import extractive_summary
from amplifier_module_context_summarize.summarizer.prompts import keep_names
from amplifier_module_context_summarize.testing import FakeProvider

BUDGET = 4_000


def turn(i: int, size: int = 60) -> list[dict[str, Any]]:
    filler = " ".join(f"word{i}_{k}" for k in range(size))
    return [
        {"role": "user", "content": f"Request {i}: please look at part {i}. {filler}"},
        {"role": "assistant", "content": f"Done with part {i}. {filler}"},
    ]


def hooks_with(*handlers: tuple[str, Any]) -> tuple[Any, list[tuple[str, dict[str, Any]]]]:
    hooks = MockCoordinator().hooks
    seen: list[tuple[str, dict[str, Any]]] = []

    async def record(event: str, data: dict[str, Any]) -> HookResult:
        seen.append((event, data))
        return HookResult(action="continue")

    for name in (
        "context:pre_compact",
        "context:post_compact",
        "context:compaction_postponed",
        "context:pins_dropped",
        "context:usage",
    ):
        hooks.register(name, record, priority=0, name=f"record-{name}")
    for i, (event, handler) in enumerate(handlers):
        hooks.register(event, handler, priority=10 + i, name=f"test-{i}")
    return hooks, seen


def of(seen: list[tuple[str, dict[str, Any]]], name: str) -> list[dict[str, Any]]:
    return [d for e, d in seen if e == name]


async def run(manager: Any, messages: list[dict[str, Any]], provider: Any = None, budget: int = BUDGET) -> list:
    views = []
    for message in messages:
        await manager.add_message(message)
        if message["role"] == "user":
            view = await manager.get_messages_for_request(budget, provider)
            assert manager.counter.count_messages(view) <= budget
            views.append(view)
    return views


def prompts_of(provider: FakeProvider) -> str:
    return "\n".join(str(r) for r in provider.requests)


def config(**extra: Any) -> dict[str, Any]:
    return {"max_tokens": BUDGET, "background_compaction": False, "safety_margin": 0, **extra}


# ------------------------------------------------------------------ standing instructions


async def test_standing_instructions_reach_every_summarize_prompt_and_version_the_fingerprint():
    store = MemoryStore()
    provider = FakeProvider(reply="### State\nsummary text")
    hooks, _ = hooks_with()
    steered = create_manager(config(summary_instructions="Always keep ORD-7731"), hooks=hooks, store=store)
    await run(steered, [m for i in range(30) for m in turn(i)], provider)
    assert provider.requests, "the view compacted with the LLM"
    assert prompts_of(provider).count("Always keep ORD-7731") == len(provider.requests)
    plain = create_manager(config(), store=store)
    assert plain.fingerprint != steered.fingerprint
    await plain.set_messages(await steered.get_messages())
    assert plain.state.segments == (), "a summary written with the instructions is not served without them"


async def test_instructions_from_a_file(tmp_path):
    path = tmp_path / "keep.md"
    path.write_text("always keep the deploy window\n", encoding="utf-8")
    assert parse_config({"summary_instructions": f"@{path}"}).summary_instructions == "always keep the deploy window"
    with pytest.raises(ValueError, match="summary_instructions"):
        parse_config({"summary_instructions": f"@{tmp_path / 'missing.md'}"})


def test_the_offline_summary_keeps_the_sentences_naming_what_the_instructions_keep():
    messages = [m for i in range(40) for m in turn(i)]
    messages[7] = {"role": "assistant", "content": "Checked it. The refund id is ORD-7731 and it is pending."}
    count = len
    plain = extractive_summary(messages, previous_summary=None, max_tokens=400, count_tokens=count)
    assert "ORD-7731" not in plain
    names = keep_names("Be terse.\nAlways keep ORD-7731")
    assert names == ("ORD-7731",)
    kept = extractive_summary(messages, previous_summary=None, max_tokens=400, count_tokens=count, keep=names)
    assert "The refund id is ORD-7731 and it is pending." in kept and count(kept) <= 400


CHECKLIST = (
    "Release checklist, pasted from the wiki:\n"
    + "\n".join(f"- [ ] step {k}: check that dashboard {k} is green and note who owns it" for k in range(1, 15))
    + "\n- [ ] freeze the main branch on 2025-03-01 before tagging\n"
    + "\n".join(f"- [ ] step {k}: post the status in the release channel" for k in range(15, 20))
)


def test_the_offline_summary_keeps_the_checklist_line_the_instructions_name():
    # sentences were split only at . ! ?, so the whole checklist was one sentence cut to its head (issue 43 item 13)
    messages = [m for i in range(20) for m in turn(i)]
    messages[4] = {"role": "user", "content": CHECKLIST}
    names = keep_names("Always keep 2025-03-01")
    summary = extractive_summary(messages, previous_summary=None, max_tokens=400, count_tokens=len, keep=names)
    assert "### Kept as the user asked\n- [ ] freeze the main branch on 2025-03-01 before tagging\n" in summary
    assert "dashboard 1 is green" not in summary and len(summary) <= 400


def test_a_kept_mention_deep_in_a_long_line_is_shown_around_the_name():
    line = (
        " ".join(f"item{k}" for k in range(400)) + " then ship on 2025-03-01 " + " ".join("x" * 9 for _ in range(300))
    )
    messages = [*turn(0), {"role": "user", "content": line}, *turn(1)]
    summary = extractive_summary(
        messages, previous_summary=None, max_tokens=2000, count_tokens=len, keep=("2025-03-01", "ITEM399")
    )
    kept = summary.split("\n\n")[0].splitlines()
    assert kept[0] == "### Kept as the user asked" and len(kept) == 2
    assert "then ship on 2025-03-01" in kept[1] and "item399" in kept[1]  # both names whole, matched in any case
    assert kept[1].startswith("- …") and kept[1].endswith("…") and len(kept[1]) <= 320


def test_every_name_keeps_its_newest_mention_before_more_mentions_of_another():
    messages = [*turn(0), {"role": "assistant", "content": "The rollback plan is RB-12: restore the snapshot."}]
    for i in range(1, 30):
        messages += [*turn(i), {"role": "assistant", "content": f"Checked again ({i}): ORD-7731 is still pending."}]
    summary = extractive_summary(
        messages, previous_summary=None, max_tokens=600, count_tokens=len, keep=("ORD-7731", "RB-12")
    )
    kept = summary.split("\n\n")[0]
    assert "- The rollback plan is RB-12: restore the snapshot." in kept  # the older name is not crowded out
    assert "- Checked again (29): ORD-7731 is still pending." in kept and len(summary) <= 600


async def test_the_date_the_instructions_keep_is_in_the_view_after_an_offline_compaction():
    history = [m for i in range(12) for m in turn(i)]
    history[6] = {"role": "user", "content": CHECKLIST}
    manager = create_manager(config(summarizer="extractive", summary_instructions="Always keep 2025-03-01"))
    await run(manager, history)
    await manager.compact()
    summary = message_text(manager.view.shown().summary)
    assert "- [ ] freeze the main branch on 2025-03-01 before tagging" in summary


# ------------------------------------------------------------------ a focus per compaction


async def test_compact_with_a_focus_steers_its_summaries_and_keys_them_by_it():
    hooks, seen = hooks_with()
    manager = create_manager(config(summarizer="extractive"), hooks=hooks)
    history = [m for i in range(12) for m in turn(i)]
    for i in range(3, 24, 2):
        history[i] = {"role": "assistant", "content": f"Checked part {i}. The refund id is ORD-7731 and it is pending."}
    await run(manager, history)
    await manager.compact(focus="keep ORD-7731")
    summary = message_text(manager.view.shown().summary)
    assert "### Kept as the user asked\n- The refund id is ORD-7731 and it is pending." in summary
    assert of(seen, "context:post_compact")[-1]["focus"] == "keep ORD-7731"
    unfocused = create_manager(config(summarizer="extractive"))
    await run(unfocused, history)
    await unfocused.compact()
    assert "Kept as the user asked" not in message_text(unfocused.view.shown().summary)
    segments, h = manager.segments, manager.history
    assert segments.key(h, 0, 2, "x") != segments.key(h, 0, 2) != segments.key(h, 0, 2, "y")
    assert segments.key(h, 0, 2, "x")[0] == segments.key(h, 0, 2)[0]


async def test_a_pre_compact_hook_returning_modify_sets_the_focus():
    async def focus(event: str, data: dict[str, Any]) -> HookResult:
        return HookResult(action="modify", data={**data, "focus": "keep the migration plan"})

    provider = FakeProvider(reply="### State\nsummary text")
    hooks, seen = hooks_with(("context:pre_compact", focus))
    manager = create_manager(config(), hooks=hooks)
    await run(manager, [m for i in range(30) for m in turn(i)], provider)
    assert provider.requests and all("keep the migration plan" in str(r) for r in provider.requests)
    assert all(p["focus"] == "keep the migration plan" for p in of(seen, "context:post_compact"))


async def test_deny_postpones_while_the_view_fits_and_never_when_it_does_not():
    async def deny(event: str, data: dict[str, Any]) -> HookResult:
        return HookResult(action="deny", reason="checkpoint first")

    hooks, seen = hooks_with(("context:pre_compact", deny))
    manager = create_manager(config(summarizer="extractive"), hooks=hooks)
    views = await run(manager, [m for i in range(40) for m in turn(i)])
    postponed = of(seen, "context:compaction_postponed")
    assert postponed and all(p["reason"] == "checkpoint first" and p["token_count"] <= BUDGET for p in postponed)
    posts = of(seen, "context:post_compact")
    assert posts, "once the view no longer fits, the compaction goes ahead"
    assert all(p["deny_overruled"] for p in posts)
    assert all(manager.counter.count_messages(v) <= BUDGET for v in views)


# ------------------------------------------------------------------ pins


async def test_pinned_messages_stay_verbatim_after_many_compactions():
    pinned = {"role": "user", "content": "The deploy password rotates on Tuesdays.", "metadata": {"pin": True}}
    reminder = {"role": "user", "content": "<system-reminder>Use tabs in Makefiles.</system-reminder>"}
    hooks, seen = hooks_with()
    manager = create_manager(config(summarizer="extractive", pin_patterns=["<system-reminder>"]), hooks=hooks)
    history = [*turn(0), pinned, {"role": "assistant", "content": "Noted."}, reminder]
    history += [{"role": "assistant", "content": "Ok."}] + [m for i in range(1, 60) for m in turn(i)]
    views = await run(manager, history)
    assert len(of(seen, "context:post_compact")) >= 8
    for view in views[-20:]:
        texts = [message_text(m) for m in view]
        assert pinned["content"] in texts and reminder["content"] in texts
    assert not of(seen, "context:pins_dropped")


async def test_pins_past_their_share_give_way_oldest_first_with_an_event_and_the_view_fits():
    hooks, seen = hooks_with()
    manager = create_manager(config(summarizer="extractive", pin_budget_ratio=0.01), hooks=hooks)
    history = []
    for i in range(40):
        history += turn(i)
        if i < 10:
            history.append({"role": "user", "content": f"FACT-{i}: value {i * 7}", "metadata": {"pin": True}})
            history.append({"role": "assistant", "content": "Noted."})
    views = await run(manager, history)
    dropped = of(seen, "context:pins_dropped")
    assert dropped and dropped[-1]["pin_tokens"] <= dropped[-1]["pin_room"]
    last = [message_text(m) for m in views[-1]]
    kept = [i for i in range(10) if f"FACT-{i}: value {i * 7}" in last]
    assert kept and kept == list(range(10 - len(kept), 10)), "the newest pins are the ones kept"
    assert 0 not in kept


async def test_recent_user_turns_are_kept_verbatim():
    manager = create_manager(config(summarizer="extractive", preserve_recent_user_turns=4))
    history = [m for i in range(40) for m in turn(i, size=20)]
    history += [{"role": "assistant", "content": "x " * 1500}, {"role": "user", "content": "Request 99: the last."}]
    views = await run(manager, history)
    texts = [message_text(m) for m in views[-1]]
    assert any(t.startswith(SUMMARY_MARKER) for t in texts)
    for i in (37, 38, 39):
        assert any(t.startswith(f"Request {i}:") for t in texts), i
    assert texts[-1] == "Request 99: the last."


# ------------------------------------------------------------------ post_compact puts context back


async def test_post_compact_inject_context_shows_right_after_the_summary_counted_in_the_budget():
    calls = []

    async def plan(event: str, data: dict[str, Any]) -> HookResult:
        calls.append(data)
        return HookResult(action="inject_context", context_injection="PLAN: 1) migrate 2) test")

    hooks, _ = hooks_with(("context:post_compact", plan))
    manager = create_manager(config(summarizer="extractive"), hooks=hooks)
    views = await run(manager, [m for i in range(40) for m in turn(i)])
    compacted = [v for v in views if any(message_text(m).startswith(SUMMARY_MARKER) for m in v)]
    assert compacted and calls
    for view in compacted:
        texts = [message_text(m) for m in view]
        at = next(i for i, t in enumerate(texts) if t.startswith(SUMMARY_MARKER))
        assert texts[at + 1] == "PLAN: 1) migrate 2) test"
        assert texts.count("PLAN: 1) migrate 2) test") == 1
    assert manager.planned_tokens == manager.view.tokens()
    assert manager.view.shown().injected is not None


# ------------------------------------------------------------------ usage signal


async def test_usage_fires_once_per_upward_crossing():
    hooks, seen = hooks_with()
    manager = create_manager(
        config(summarizer="extractive", usage_fractions=[0.5, 0.8], usage_threshold_fractions=[0.9]), hooks=hooks
    )
    await run(manager, [m for i in range(40) for m in turn(i)])
    usage = of(seen, "context:usage")
    compactions = len(of(seen, "context:post_compact"))
    assert usage and compactions >= 2
    for u in usage:
        base = u["budget"] if u["of"] == "budget" else u["compact_at"]
        assert u["tokens"] >= u["fraction"] * base
        assert u["tokens_to_compaction"] == max(u["compact_at"] - u["tokens"], 0)
    halves = [u for u in usage if u["of"] == "budget" and u["fraction"] == 0.5]
    assert 1 < len(halves) <= compactions + 1, "once per crossing: again only after a compaction fell below"


# ------------------------------------------------------------------ bad config


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("summary_instructions", ""),
        ("summary_instructions", 5),
        ("pin_patterns", "<system-reminder>"),
        ("pin_patterns", [""]),
        ("pin_budget_ratio", 0.9),
        ("preserve_recent_user_turns", -1),
        ("usage_fractions", [1.5]),
        ("usage_threshold_fractions", "0.5"),
    ],
)
def test_bad_steering_config_names_the_key(key, value):
    with pytest.raises(ValueError, match=key):
        parse_config({key: value})


# ------------------------------------------------------------------ steering in the background (the default mode)


async def run_landing(manager: Any, messages: list[dict[str, Any]], provider: Any = None) -> list:
    """``run``, letting each background compaction finish before the next message (the agent's own model call
    gives it the loop meanwhile): loop turns, no sleeps."""
    views = []
    for message in messages:
        await manager.add_message(message)
        if message["role"] == "user":
            view = await manager.get_messages_for_request(BUDGET, provider)
            assert manager.counter.count_messages(view) <= BUDGET
            views.append(view)
            flight = manager.background.flight
            if flight is not None:
                await flight.task
    return views


async def test_a_pre_compact_focus_steers_background_compactions():
    """The hooks are asked when a background compaction starts, so their focus reaches the summaries it writes;
    it reports one pre (when it starts) and one post (when a request installs it)."""
    asked = []

    async def focus(event: str, data: dict[str, Any]) -> HookResult:
        asked.append(data["fits"])
        return HookResult(action="modify", data={**data, "focus": "keep the migration plan"})

    provider = FakeProvider(reply="### State\nsummary text")
    hooks, seen = hooks_with(("context:pre_compact", focus))
    for name in ("context:background_compaction",):
        hooks.register(name, lambda e, d: _record(seen, e, d), priority=0, name="record-bg")
    manager = create_manager({"max_tokens": BUDGET, "safety_margin": 0}, hooks=hooks)
    assert manager.config.background_compaction, "the default mode"
    await run_landing(manager, [m for i in range(40) for m in turn(i)], provider)
    phases = [d["phase"] for d in of(seen, "context:background_compaction")]
    assert phases.count("landed") >= 2 and "failed" not in phases
    assert provider.requests and all("keep the migration plan" in str(r) for r in provider.requests)
    posts = of(seen, "context:post_compact")
    assert posts and all(p["focus"] == "keep the migration plan" and p["outcome"] == "compacted" for p in posts)
    assert sum(p["provider_calls"] for p in posts) == len(provider.requests) or manager.background.flight
    flight = manager.background.flight
    assert len(of(seen, "context:pre_compact")) == len(posts) + int(flight is not None and flight.owes)
    assert all(asked), "asked while the view still fits: before the summarizer works, not when it lands"


async def _record(seen: list[tuple[str, dict[str, Any]]], event: str, data: dict[str, Any]) -> HookResult:
    seen.append((event, data))
    return HookResult(action="continue")


async def test_deny_spares_the_background_summarizer_while_the_view_fits():
    async def deny(event: str, data: dict[str, Any]) -> HookResult:
        return HookResult(action="deny", reason="checkpoint first")

    provider = FakeProvider(reply="### State\nsummary text")
    hooks, seen = hooks_with(("context:pre_compact", deny))
    hooks.register("context:background_compaction", lambda e, d: _record(seen, e, d), priority=0, name="bg")
    manager = create_manager({"max_tokens": BUDGET, "safety_margin": 0, "observation_masking": False}, hooks=hooks)
    history = [m for i in range(40) for m in turn(i)]
    first_over = None
    for message in history:
        await manager.add_message(message)
        if message["role"] != "user":
            continue
        over = manager.planned_tokens > BUDGET
        view = await manager.get_messages_for_request(BUDGET, provider)
        assert manager.counter.count_messages(view) <= BUDGET
        if over and first_over is None:
            first_over = len(provider.requests)
        if first_over is None:
            assert provider.requests == [], "no summary is written for a compaction postponed while the view fits"
    postponed = of(seen, "context:compaction_postponed")
    assert postponed and all(p["token_count"] <= BUDGET for p in postponed)
    assert not of(seen, "context:background_compaction"), "a denied compaction never started in the background"
    posts = of(seen, "context:post_compact")
    assert posts and all(p["deny_overruled"] for p in posts), "past the budget the compaction went ahead in band"
    assert len(of(seen, "context:pre_compact")) == len(posts) + len(postponed)


async def test_a_background_compaction_dropped_before_it_lands_reports_its_post_as_cancelled():
    hooks, seen = hooks_with()
    provider = FakeProvider(reply="### State\nsummary text", delay=1000.0)
    manager = create_manager({"max_tokens": BUDGET, "safety_margin": 0}, hooks=hooks)
    for message in [m for i in range(40) for m in turn(i)]:
        await manager.add_message(message)
        await manager.get_messages_for_request(BUDGET, provider)
        if manager.background.running:
            break
    assert len(of(seen, "context:pre_compact")) == 1 and not of(seen, "context:post_compact")
    await manager.close(wait_s=0)
    [post] = of(seen, "context:post_compact")
    assert post["outcome"] == "cancelled" and manager.stats["compactions_cancelled"] == 1


@pytest.mark.parametrize("special", ["fifo", "/dev/zero", "/dev/null", "directory", "large"])
def test_instructions_from_a_file_that_is_not_a_small_regular_file_are_refused_at_mount(tmp_path, special):
    # a named pipe blocked mount waiting for a writer; /dev/zero ended in MemoryError (issue 43 item 19)
    path = {"fifo": tmp_path / "keep.fifo", "directory": tmp_path, "large": tmp_path / "big.md"}.get(special, special)
    if special == "fifo":
        os.mkfifo(path)
    if special == "large":
        path.write_text("keep ORD-7731\n" * 10_000, encoding="utf-8")  # 140,000 bytes
    with pytest.raises(ValueError, match="config key 'summary_instructions'") as caught:
        parse_config({"summary_instructions": f"@{path}"})
    assert str(path) not in str(caught.value)  # the value is described, never echoed
    expected = {"fifo": "a named pipe", "/dev/zero": "a device", "directory": "a directory", "large": "larger than"}
    assert expected.get(special, "not a regular file") in str(caught.value)


async def test_instructions_file_line_ends_read_as_text(tmp_path):
    path = tmp_path / "keep.md"
    path.write_bytes(b"Always keep ORD-7731\r\nand the 2025-03-01 window\r\n")
    assert parse_config({"summary_instructions": f"@{path}"}).summary_instructions == (
        "Always keep ORD-7731\nand the 2025-03-01 window"
    )


@pytest.mark.parametrize(
    "mode",
    [{"summarizer": "extractive"}, {"compaction_strategy": "extractive"}, {"summarizer": "extractive", "bg": False}],
    ids=["extractive-summarizer", "extractive-strategy", "extractive-blocking"],
)
async def test_a_pre_compact_focus_steers_the_offline_summaries_in_every_mode(mode: dict[str, Any]):
    """Issue 43: with the offline summarizer in background mode the summaries were written before the hooks were
    asked, so the focus the post reported was in none of them. The hooks are asked before any summary is written,
    whichever summarizer writes it: every summary shown keeps what the focus names."""

    async def focus(event: str, data: dict[str, Any]) -> HookResult:
        return HookResult(action="modify", data={**data, "focus": "keep ORD-7731"})

    hooks, seen = hooks_with(("context:pre_compact", focus))
    config = {"max_tokens": BUDGET, "safety_margin": 0, "background_compaction": mode.pop("bg", True), **mode}
    manager = create_manager(config, hooks=hooks)
    history = [m for i in range(40) for m in turn(i)]
    for i in range(3, len(history), 4):
        history[i] = {"role": "assistant", "content": f"Checked part {i}. The refund id is ORD-7731 and it is pending."}
    views = await run_landing(manager, history, FakeProvider(reply="### State\nsummary text"))
    summaries = [message_text(m) for v in views for m in v if message_text(m).startswith(SUMMARY_MARKER)]
    posts = [p for p in of(seen, "context:post_compact") if p["summarized_messages"]]
    assert len(posts) >= 2 and all(p["focus"] == "keep ORD-7731" for p in posts)
    assert summaries and all("The refund id is ORD-7731 and it is pending." in s for s in summaries)


@pytest.mark.parametrize("background", [True, False])
async def test_a_pre_compact_focus_steers_prefetched_summaries_and_they_are_used(background: bool):
    """Prefetch writes no summary before the hooks are asked: it waits until they have been, then writes with the
    focus they gave, keyed by it, so the compaction the hooks steer next finds it (never paid for twice)."""

    async def focus(event: str, data: dict[str, Any]) -> HookResult:
        return HookResult(action="modify", data={**data, "focus": "keep the migration plan"})

    provider = FakeProvider(reply="### State\nsummary text")
    hooks, seen = hooks_with(("context:pre_compact", focus))
    prefetched: list[dict[str, Any]] = []
    hooks.register("context:summary_prefetched", lambda e, d: _record(prefetched, e, d), priority=0, name="pf")
    cfg = {"max_tokens": BUDGET, "safety_margin": 0, "prefetch": True, "background_compaction": background}
    manager = create_manager(cfg, hooks=hooks)
    for message in [m for i in range(60) for m in turn(i)]:
        await manager.add_message(message)
        if message["role"] == "user":
            view = await manager.get_messages_for_request(BUDGET, provider)
            assert manager.counter.count_messages(view) <= BUDGET
            await manager.prefetcher.drain()  # the agent's own model call gives background work the loop
            if manager.background.flight is not None:
                await manager.background.flight.task
    assert prefetched, "prefetch ran"
    assert provider.requests and all("keep the migration plan" in str(r) for r in provider.requests)
    posts = of(seen, "context:post_compact")
    assert sum(p["cache_hits"] for p in posts) >= 1, "a prefetched summary served a compaction"


async def test_what_a_focus_keeps_in_an_llm_summary_is_gathered_where_a_clipped_view_keeps_it():
    """The feature matrix (explore mode, kept): a hook's focus ("keep MIG-4410") had the LLM write the fact into its
    prose; a later request whose newest messages filled the budget clipped the narrative, keeping only the lines
    naming the instructions' names (it does not know a past compaction's focus), and the fact went with the middle.
    The LLM's lines naming what the guidance keeps now move into the ``Kept as the user asked`` section, which a
    clipped narrative keeps whatever guidance wrote it."""
    from amplifier_module_context_summarize.compaction.view.splice import shortened

    async def focus(event: str, data: dict[str, Any]) -> HookResult:
        return HookResult(action="modify", data={**data, "focus": "keep MIG-4410"})

    fact = "The migration window is MIG-4410 on Friday."
    reply = f"### Progress\nRequest 0: please look at part 0.\n{fact}\nDone with part 1."
    hooks, _ = hooks_with(("context:pre_compact", focus))
    manager = create_manager(config(), hooks=hooks)
    history = [m for i in range(30) for m in turn(i)]
    history[3] = {"role": "assistant", "content": f"Done with part 1. {fact}"}
    await run(manager, history, FakeProvider(reply=reply))
    narrative = manager.state.summary_text or ""
    assert narrative.startswith(f"### Kept as the user asked\n- {fact}\n") and narrative.count("MIG-4410") == 1
    assert "### Progress\nRequest 0: please look at part 0.\nDone with part 1." in narrative
    clipped = shortened(narrative + "\n" + "\n".join(f"- step {i}: more words" for i in range(60)), 300)
    assert fact in clipped
