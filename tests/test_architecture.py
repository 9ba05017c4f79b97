"""The redesign's promises: named view rules shared by everyone, derived state, stats folded from events,
one fingerprint per summarizer, no reaching into private members, and event tables that match the payloads."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import pytest
from amplifier_core.testing import EventRecorder

from amplifier_module_context_summarize import check_view, create_manager, events
from amplifier_module_context_summarize.config import Config
from amplifier_module_context_summarize.core.invariants import RULES
from amplifier_module_context_summarize.stores import MemoryStore
from amplifier_module_context_summarize.testing import FakeProvider, mixed_history, replay

PACKAGE = Path(__file__).resolve().parent.parent / "amplifier_module_context_summarize"
README = PACKAGE.parent / "README.md"
BUDGET = 8_000


# ------------------------------------------------------------------ view rules


@pytest.mark.parametrize(
    ("rule", "view", "context"),
    [
        (
            "tool_pairing",
            [{"role": "user", "content": "x"}, {"role": "tool", "tool_call_id": "c1", "content": "r"}],
            {},
        ),
        ("system_first", [{"role": "user", "content": "x"}, {"role": "system", "content": "late"}], {}),
        ("opens_with_user", [{"role": "system", "content": "s"}, {"role": "assistant", "content": "hi"}], {}),
        (
            "latest_request_kept",
            [{"role": "user", "content": "old"}],
            {"latest_request": {"role": "user", "content": "new"}},
        ),
        ("within_budget", [{"role": "user", "content": "word " * 500}], {"budget": 100}),
    ],
)
def test_each_rule_names_its_violation(rule, view, context):
    counter = create_manager({"summarizer": "extractive"}).counter
    problems = check_view(view, count=counter.count_messages, **context)
    assert problems and all(p.startswith(f"{rule}: ") for p in problems)


def test_rules_have_distinct_names_and_a_cut_rule():
    assert len({rule.name for rule in RULES}) == len(RULES) == 5
    history = create_manager({"summarizer": "extractive"}).history
    assert all(rule.allows_cut(history, 0) for rule in RULES)


async def test_every_view_the_manager_returns_passes_every_rule():
    manager = create_manager({"max_tokens": BUDGET, "summarizer": "extractive"})
    history = mixed_history(40)
    for i, message in enumerate(history):
        await manager.add_message(message)
        if i + 1 < len(history) and history[i + 1]["role"] == "assistant":
            view = await manager.get_messages_for_request(BUDGET)
            latest = manager.history.messages[manager.history.latest_request]
            problems = check_view(view, budget=BUDGET, count=manager.counter.count_messages, latest_request=latest)
            assert problems == []
    assert manager.state.segments


# ------------------------------------------------------------------ derived state


async def test_state_is_an_immutable_value_and_the_summary_is_derived_from_it():
    manager = create_manager({"max_tokens": BUDGET, "summarizer": "extractive"})
    await replay(manager, mixed_history(40), budget=BUDGET)
    state = manager.state
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.boundary = 0  # type: ignore[misc]
    resumed = create_manager({"max_tokens": BUDGET, "summarizer": "extractive"}, store=manager.store)
    await resumed.set_messages(await manager.get_messages())
    assert resumed.state == state
    assert await resumed.get_messages_for_request(BUDGET) == await manager.get_messages_for_request(BUDGET)


# ------------------------------------------------------------------ measured defects


async def test_stats_are_the_sum_of_what_the_events_reported_on_a_warm_cache():
    cache, history = MemoryStore(), mixed_history(120)
    config = {"max_tokens": BUDGET, "summary_budget_ratio": 0.05, "prefetch": True}
    await replay(create_manager(config, store=cache), history, FakeProvider(), budget=BUDGET)
    recorder = EventRecorder()
    warm = create_manager(config, store=cache, hooks=recorder)
    await replay(warm, history, FakeProvider(), budget=BUDGET)
    post = [d for _, d in recorder.get_events("context:post_compact")]
    background = [d for e, d in recorder.events if e in (events.SUMMARY_PREFETCHED, events.SUMMARY_FAILED)]
    assert sum(d["cache_hits"] for d in post) > 0
    assert warm.stats["cache_hits"] == sum(d["cache_hits"] for d in post)
    assert warm.stats["compactions"] == len(post)
    assert warm.stats["provider_calls"] == sum(d["provider_calls"] for d in post + background)
    prefetched = [d for e, d in recorder.events if e == events.SUMMARY_PREFETCHED]
    assert warm.stats["summaries"] == sum(d["summaries"] for d in post) + len(prefetched)
    served = [d for d in post if d["cache_hits"] and not d["provider_calls"] and d["fallback"] is None]
    assert served and all(d["summaries"] == 0 for d in served)  # a cache hit is not a summary written


async def test_extractive_strategy_and_extractive_summarizer_share_summaries():
    by_strategy = create_manager({"max_tokens": BUDGET, "compaction_strategy": "extractive"})
    by_summarizer = create_manager({"max_tokens": BUDGET, "summarizer": "extractive"})
    assert by_strategy.fingerprint == by_summarizer.fingerprint
    cache, history = MemoryStore(), mixed_history(40)
    first = create_manager({"max_tokens": BUDGET, "compaction_strategy": "extractive"}, store=cache)
    await replay(first, history, budget=BUDGET)
    second = create_manager({"max_tokens": BUDGET, "summarizer": "extractive"}, store=cache)
    await second.set_messages(history)
    assert second.state == first.state and second.state.segments


# ------------------------------------------------------------------ boundaries between the pieces


def _private_reaches(path: Path) -> list[str]:
    """``x._name`` where ``x`` is not ``self``/``cls`` (a module's own helpers are called as bare names)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
        ):
            found.append(f"{path.name}:{node.lineno} .{node.attr}")
    return found


def test_no_module_reaches_into_another_objects_private_members():
    reaches = [r for path in sorted(PACKAGE.rglob("*.py")) for r in _private_reaches(path)]
    assert reaches == []


def test_readme_event_tables_list_exactly_the_payload_keys():
    text = README.read_text()
    for payload in events.PAYLOADS:
        heading = re.escape(f"`{payload.event}`")
        table = re.search(rf"^{heading}[^\n]*\n\n\|[^\n]*\|\n\|[-| ]+\|\n((?:\|[^\n]*\|\n)+)", text, re.MULTILINE)
        assert table, f"README has no table under a line starting with `{payload.event}`"
        documented = set()
        for row in table.group(1).splitlines():
            documented.update(re.findall(r"`([a-z_]+)`", row.split("|")[1]))
        assert documented == set(payload.keys()), payload.event


def _readme_default(value: object) -> str:
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, float) and value.is_integer():
        return f"`{int(value)}`"
    return f"`{value}`"


def test_readme_configuration_table_lists_every_key_with_its_default():
    """Every top-level config key has a row; scalar defaults are the ones ``Config`` has (docs drift otherwise)."""
    text = README.read_text()
    section = text[text.index("## Configuration") :]
    table = section[: section.index("\n\n", section.index("| key |"))]
    documented = dict(re.findall(r"^\| `([a-z_]+)` \| ([^|]+) \|", table, re.M))
    config = Config()
    assert set(documented) == {f.name for f in dataclasses.fields(Config)}
    for name, shown in documented.items():
        value = getattr(config, name)
        if value is None or not isinstance(value, (bool, int, float, str)):
            continue  # "none", "packaged `prompts/`", "{provider: session}": described, not a literal
        assert shown.strip() == _readme_default(value), name

