"""Regression tests for bugs found in review."""

from amplifier_module_context_summarize import SUMMARY_MARKER, create_manager
from amplifier_module_context_summarize.stores import MemoryStore
from amplifier_module_context_summarize.testing import FakeProvider, mixed_history, replay


async def test_parent_resume_is_unchanged_by_a_fork_that_cut_the_shared_prefix_differently():
    """A fork with a larger budget caches longer segments over the shared prefix: the parent's resume must
    still walk its own segments (the walk reaching furthest), not stop after the fork's."""
    cache = MemoryStore()
    history = mixed_history(60)
    # In band: with background compactions, whether a flight stored a summary the parent never installed depends
    # on the machine's load (a resume may then take a cut from the cache that the live parent has not made yet).
    in_band = {"background_compaction": False}
    parent = create_manager({"max_tokens": 12_000, **in_band}, store=cache)
    await replay(parent, history, FakeProvider(), budget=12_000)

    child = create_manager({"max_tokens": 14_000, **in_band}, store=cache)
    fork = [*history[:150], {"role": "user", "content": "child task " * 50}]
    await replay(child, fork, FakeProvider(), budget=14_000)
    assert child.state.segments[0].end != parent.state.segments[0].end  # the fork really cut the prefix differently
    # The parent's view once its background compaction (stored while the fork ran) has landed: what it sends next.
    live = await parent.get_messages_for_request(token_budget=12_000, provider=FakeProvider())

    resumed = create_manager({"max_tokens": 12_000, **in_band}, store=cache)
    await resumed.set_messages(history)
    provider = FakeProvider()
    view = await resumed.get_messages_for_request(token_budget=12_000, provider=provider)
    assert provider.requests == []
    assert view == live


async def test_a_tier_merge_that_was_not_used_is_not_walked_on_resume():
    """A merge that came out no smaller than its parts is discarded; caching it made a resume use it."""
    config = {"summarizer": "extractive", "max_tokens": 2000, "summary_max_tokens": 2000}
    cache = MemoryStore()
    history = mixed_history(60, size=1)
    manager = create_manager(config, store=cache)
    await replay(manager, history, None, budget=2000, check=False)
    live = await manager.get_messages_for_request(token_budget=2000)

    resumed = create_manager(config, store=cache)
    await resumed.set_messages(history)
    assert await resumed.get_messages_for_request(token_budget=2000) == live


async def test_history_of_only_system_messages_over_budget_calls_no_summarizer():
    """Nothing but system messages can be cut: summarizing the empty span cost two provider calls and added
    a summary of nothing to a view that was already over budget."""
    manager = create_manager({"max_tokens": 1000})
    system = [{"role": "system", "content": f"rule {i} " + "x " * 300} for i in range(5)]
    for message in system:
        await manager.add_message(message)
    provider = FakeProvider()
    view = await manager.get_messages_for_request(token_budget=1000, provider=provider)
    assert provider.requests == []
    assert view == system
    assert not any(str(m.get("content")).startswith(SUMMARY_MARKER) for m in view)


def test_clip_middle_never_makes_text_longer():
    from amplifier_module_context_summarize.core.clip import clip_middle

    text = "alpha failed function empty; --stat delta error when backoff ok pytest the is diff gamma import None"
    assert len(clip_middle(text, len(text) - 10)) <= len(text)
    assert clip_middle("x" * 5000, 400).startswith("x" * 200)  # real clipping still happens


WORDS = (
    "alpha failed function empty; --stat delta error when backoff ok pytest the is diff gamma import None with 3f2a1b"
)
OUTPUT = (
    "3f2a1b tests/test_app.py refactor cache git beta passed returns retry commit src/app.py TypeError the "
    "https://example.com/api alpha failed function empty; --stat delta error when backoff ok pytest the is diff "
    "gamma import None with "
)


def _calls(*ids):
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": i, "type": "function", "function": {"name": "bash", "arguments": f'{{"command": "cat {i}"}}'}}
            for i in ids
        ],
    }


HYPOTHESIS_HISTORY = [
    {"role": "system", "content": "You are a careful coding agent."},
    {"role": "user", "content": ""},
    _calls("call_0", "call_1", "call_2"),
    {"role": "tool", "tool_call_id": "call_0", "content": ""},
    {"role": "system", "content": "Reminder: gamma import None with 3f2a1b tests/test_app.py"},
    *[{"role": "user", "content": ""} for _ in range(6)],
    {"role": "user", "content": "TypeError the https://example.com/api alpha"},
    {"role": "user", "content": WORDS},
    _calls("call_3", "call_4"),
    {"role": "tool", "tool_call_id": "call_3", "content": "None with 3f2a1b tests/test_app.py"},
    {"role": "tool", "tool_call_id": "call_4", "content": OUTPUT + OUTPUT.split(" ok pytest")[0]},
]


async def test_pinned_request_clipped_just_over_its_limit_does_not_push_a_fitting_view_over_budget():
    """Found by the property suite: the pin (and a tool output) a few characters over its clip limit came out
    *longer* with the clip marker, so a view that fits (299 tokens) was returned at 310 for a 300 budget."""
    from test_properties import run_scenario

    scenario = {
        "history": HYPOTHESIS_HISTORY,
        "points": [0, 15],
        "config": {
            "compaction_strategy": "summarize",
            "summary_max_tokens": 32,
            "failure_cooldown_s": 300.0,
            "summarizer": {"max_retries": 0},
        },
        "budget": 300,
    }
    await run_scenario(scenario)
