"""Property tests: generated histories in the three tool shapes (and mixed) never produce a bad view.

Every generated history is replayed through a fresh manager with requests at random points. On every
view: it is valid (``check_view``), it keeps the history's order, it shows the latest user request,
and it fits the budget whenever a fitting view exists. The stored history is exactly what was added,
and a fresh manager with a fresh cache given the same inputs returns the same views.

The histories hold what found the bugs of issue 13: results carrying stray parts (an unknown id's block,
no or a stray ``tool_call_id``, a second answer, a call answered in its own message) and lone surrogates
(views must carry them as U+FFFD). Hostile values get their own properties: nesting and cycles, provider
limits of any type, and store rows of any shape.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import functools
import itertools
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amplifier_module_context_summarize import SUMMARY_MARKER, create_manager
from amplifier_module_context_summarize.core.invariants import check_view as view_rules
from amplifier_module_context_summarize.core.messages import (
    MAX_NESTING,
    block_text,
    encodable,
    group_messages,
    is_user_turn,
    sanitize,
    scrub_value,
    strip_tool_blocks,
)
from amplifier_module_context_summarize.stores import CachedSummary, MemoryStore
from amplifier_module_context_summarize.testing import FakeProvider, mixed_history, replay, replay_steps

# fmt: off
WORDS = [
    "alpha", "beta", "gamma", "delta", "src/app.py", "tests/test_app.py", "pytest", "failed", "passed", "import",
    "error", "TypeError", "refactor", "the", "function", "returns", "None", "when", "the", "cache", "is", "empty;",
    "retry", "with", "backoff", "https://example.com/api", "git", "diff", "--stat", "commit", "3f2a1b", "ok",
    "lone\ud800surrogate", "\udcffbinary",  # not valid UTF-8: views must carry them as U+FFFD
]
# fmt: on

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="

SUMMARY_SLACK = 100
"""Preamble, separators and message framing around the summary text."""

SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---------------------------------------------------------------------------------------------- generators


@st.composite
def text(draw, max_words: int = 160) -> str:
    n = draw(st.integers(0, max_words))
    seed = draw(st.integers(0, len(WORDS) - 1))
    return " ".join(WORDS[(seed + i * 7) % len(WORDS)] for i in range(n))


def image_block(repeat: int) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG * repeat}}


class Ids:
    """Unique tool-call ids within one history, plus the calls already made (for late, orphan results)."""

    def __init__(self) -> None:
        self.counter = itertools.count()
        self.made: list[str] = []

    def new(self, prefix: str) -> str:
        call_id = f"{prefix}_{next(self.counter)}"
        self.made.append(call_id)
        return call_id


@st.composite
def user_turn(draw, ids: Ids) -> list[dict[str, Any]]:
    form = draw(st.sampled_from(["str", "str", "empty", "none", "blocks", "image"]))
    if form == "str":
        return [{"role": "user", "content": draw(text())}]
    if form in ("empty", "none"):
        return [{"role": "user", "content": "" if form == "empty" else None}]
    blocks: list[Any] = [{"type": "text", "text": draw(text())}]
    if form == "image":
        blocks.append(image_block(draw(st.integers(1, 50))))
    return [{"role": "user", "content": blocks}]


@st.composite
def assistant_text(draw, ids: Ids) -> list[dict[str, Any]]:
    if draw(st.booleans()):
        return [{"role": "assistant", "content": draw(text())}]
    blocks = [{"type": "text", "text": draw(text())}]
    if draw(st.booleans()):
        blocks.insert(0, {"type": "thinking", "thinking": draw(text(40)), "signature": "EqQBCkYIARgCKkB+/sig=="})
    return [{"role": "assistant", "content": blocks}]


@st.composite
def system_message(draw, ids: Ids) -> list[dict[str, Any]]:
    return [{"role": "system", "content": "Reminder: " + draw(text(30))}]


def _answered(draw, calls: list[str]) -> list[str]:
    """Which calls get results (some stay pending), in which order."""
    answered = [c for c in calls if draw(st.sampled_from([True, True, True, False]))]
    return draw(st.permutations(answered))


@st.composite
def openai_tools(draw, ids: Ids) -> list[dict[str, Any]]:
    calls = [ids.new("call") for _ in range(draw(st.integers(1, 3)))]
    content = draw(st.sampled_from([None, "", "Let me look."]))
    messages: list[dict[str, Any]] = [
        {
            "role": "assistant",
            "content": content,
            "tool_calls": [
                {"id": c, "type": "function", "function": {"name": "bash", "arguments": f'{{"command": "cat {c}"}}'}}
                for c in calls
            ],
        }
    ]
    for c in _answered(draw, calls):
        messages.append({"role": "tool", "tool_call_id": c, "content": draw(st.sampled_from(["", draw(text())]))})
    return messages


@st.composite
def anthropic_tools(draw, ids: Ids) -> list[dict[str, Any]]:
    calls = [ids.new("toolu") for _ in range(draw(st.integers(1, 3)))]
    blocks: list[dict[str, Any]] = []
    if draw(st.booleans()):
        blocks.append({"type": "thinking", "thinking": draw(text(40)), "signature": "ErUBCkYIBRgCIkD+sig/=="})
    if draw(st.booleans()):
        blocks.append({"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT"})
    blocks += [{"type": "tool_use", "id": c, "name": "Bash", "input": {"command": f"ls {c}"}} for c in calls]
    messages: list[dict[str, Any]] = [{"role": "assistant", "content": blocks}]
    results = []
    for c in _answered(draw, calls):
        body: Any = draw(text())
        if draw(st.integers(0, 5)) == 0:
            body = [{"type": "text", "text": body}, image_block(draw(st.integers(1, 20)))]
        result = {"type": "tool_result", "tool_use_id": c, "content": body}
        if draw(st.integers(0, 4)) == 0:
            result["is_error"] = True
        results.append(result)
    if results and draw(st.booleans()):  # all results in one user message, maybe with the user's own words
        extra = [{"type": "text", "text": draw(text(40))}] if draw(st.booleans()) else []
        messages.append({"role": "user", "content": results + extra})
    else:  # results split across messages
        messages += [{"role": "user", "content": [r]} for r in results]
    return messages


@st.composite
def amplifier_tools(draw, ids: Ids) -> list[dict[str, Any]]:
    calls = [ids.new("amp") for _ in range(draw(st.integers(1, 3)))]
    blocks: list[dict[str, Any]] = []
    if draw(st.booleans()):
        blocks.append({"type": "text", "text": draw(text(30))})
    blocks += [{"type": "tool_call", "id": c, "name": "grep", "input": {"pattern": "TODO", "path": c}} for c in calls]
    messages: list[dict[str, Any]] = [{"role": "assistant", "content": blocks}]
    for c in _answered(draw, calls):
        result = {"type": "tool_result", "tool_call_id": c, "output": {"matches": draw(text())}}
        if draw(st.booleans()):
            messages.append({"role": "tool", "tool_call_id": c, "content": [result]})
        else:
            messages.append({"role": "user", "content": [result]})
    return messages


@st.composite
def orphan_result(draw, ids: Ids) -> list[dict[str, Any]]:
    """A result whose call is unknown, or that arrives after its group closed."""
    ref = draw(st.sampled_from(ids.made)) if ids.made and draw(st.booleans()) else "ghost_" + str(next(ids.counter))
    form = draw(st.sampled_from(["openai", "anthropic", "amplifier"]))
    if form == "openai":
        return [{"role": "tool", "tool_call_id": ref, "content": draw(text(40))}]
    if form == "anthropic":
        return [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": ref, "content": draw(text(40))}]}]
    return [
        {
            "role": "tool",
            "tool_call_id": ref,
            "content": [{"type": "tool_result", "tool_call_id": ref, "output": draw(text(40))}],
        }
    ]


@st.composite
def stray_results(draw, ids: Ids) -> list[dict[str, Any]]:
    """A call answered by a result that also carries a stray part, or a call answered in its own message."""
    form = draw(st.sampled_from(["no_id", "stray_block", "stray_id", "only_stray", "twice", "self_answer"]))
    call, other = ids.new("stray"), ids.new("stray")
    ghost = "ghost_" + str(next(ids.counter))
    fn = {"name": "bash", "arguments": "{}"}
    calls = [{"id": c, "type": "function", "function": fn} for c in (call, other)]
    opener = {"role": "assistant", "content": None, "tool_calls": calls[:1]}
    answer = {"type": "tool_result", "tool_call_id": call, "output": draw(text(30))}
    stray = {"type": "tool_result", "tool_call_id": ghost, "output": draw(text(10))}
    if form == "no_id":
        return [opener, {"role": "tool", "content": draw(st.permutations([answer, stray]))}]
    if form == "stray_block":
        return [opener, {"role": "tool", "tool_call_id": call, "content": [answer, stray]}]
    if form == "stray_id":
        return [opener, {"role": "tool", "tool_call_id": ghost, "content": [answer]}]
    if form == "only_stray":
        return [opener, {"role": "tool", "tool_call_id": call, "content": [stray]}]
    if form == "twice":
        again = {"type": "tool_result", "tool_use_id": call, "content": draw(text(10))}
        last = {"type": "tool_result", "tool_use_id": other, "content": draw(text(10))}
        return [
            {"role": "assistant", "content": None, "tool_calls": calls},
            {"role": "tool", "tool_call_id": call, "content": draw(text(20))},
            {"role": "user", "content": [again, last]},
        ]
    own = [
        {"type": "text", "text": draw(text(20))},
        {"type": "tool_use", "id": call, "name": "Bash", "input": {"command": "ls"}},
        {"type": "tool_result", "tool_use_id": call, "content": draw(text(10))},
    ]
    messages = [{"role": "assistant", "content": own}]
    if draw(st.booleans()):  # and maybe answered properly too
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": call, "content": "ok"}]})
    return messages


PARTS = {
    "user": user_turn,
    "assistant": assistant_text,
    "system": system_message,
    "openai": openai_tools,
    "anthropic": anthropic_tools,
    "amplifier": amplifier_tools,
    "orphan": orphan_result,
    "stray": stray_results,
}
WEIGHTED = [
    "user",
    "user",
    "assistant",
    "assistant",
    "openai",
    "openai",
    "anthropic",
    "anthropic",
    "amplifier",
    "amplifier",
    "system",
    "orphan",
    "stray",
]


@st.composite
def histories(draw, shape: str | None = None) -> list[dict[str, Any]]:
    """A history in one shape (``shape``) or mixed; it always starts with a system prompt or a user turn."""
    ids = Ids()
    history: list[dict[str, Any]] = []
    if draw(st.booleans()):
        history.append({"role": "system", "content": "You are a careful coding agent."})
    history += draw(user_turn(ids))
    kinds = WEIGHTED if shape is None else ["user", "assistant", shape, shape, shape, "system", "orphan", "stray"]
    for _ in range(draw(st.integers(1, 30))):
        history += draw(PARTS[draw(st.sampled_from(kinds))](ids))
    return history


@st.composite
def scenarios(draw, shape: str | None = None) -> dict[str, Any]:
    history = draw(histories(shape))
    points = sorted(draw(st.sets(st.integers(0, len(history) - 1), min_size=1, max_size=12)) | {len(history) - 1})
    strategy = draw(st.sampled_from(["summarize", "summarize", "summarize", "extractive", "mask", "truncate"]))
    config = {
        "compaction_strategy": strategy,
        "observation_masking": draw(st.booleans()),
        "mask_min_chars": draw(st.sampled_from([100, 400, 1000])),
        "mask_keep_recent": draw(st.integers(0, 4)),
        "summary_max_tokens": draw(st.integers(32, 400)),
        "failure_cooldown_s": 300.0,
        "summarizer": {"max_retries": 0},
    }
    budget = draw(st.one_of(st.integers(300, 4_000), st.integers(300, 1_500), st.integers(4_000, 40_000)))
    return {"history": history, "points": points, "config": config, "budget": budget}


# ---------------------------------------------------------------------------------------------- checks


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in _strings(k) + _strings(v)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings(v)]
    return []


def _clipped_text(view_value: Any, stored: Any) -> bool:
    """``view_value`` is ``stored`` as ``clip.clip_middle`` shortens it in a view that must fit."""
    if not (isinstance(view_value, str) and isinstance(stored, str)):
        return False
    head = view_value.split("\n[... ", 1)[0]
    return "characters clipped; " in view_value and " handle m" in view_value and stored.startswith(head)


def _masked_output(view_value: Any, stored: Any) -> bool:
    """``view_value`` is the masking placeholder of ``stored`` (it states the original's size)."""
    if not (isinstance(view_value, str) and view_value.startswith("[tool output masked: ")):
        return False
    text = stored if isinstance(stored, str) else block_text({"type": "tool_result", "content": stored})
    return f"{len(text):,} chars" in view_value and " handle m" in view_value


def _clipped_argument(view_value: Any, stored: Any) -> bool:
    """``view_value`` is a call argument clipped by masking: its head, then a note with the size and handle."""
    if not (isinstance(view_value, str) and isinstance(stored, str) and "… [clipped: " in view_value):
        return False
    head, note = view_value.split("… [clipped: ", 1)
    return stored.startswith(head) and note.startswith(f"{len(stored):,} chars")


def _json_derived(v: Any, h: Any) -> bool:
    """Arguments sent as a JSON string: derived when the parsed values are."""
    if not (isinstance(v, str) and isinstance(h, str)):
        return False
    try:
        return _value_derived(json.loads(v), json.loads(h))
    except ValueError:
        return False


def _value_derived(v: Any, h: Any) -> bool:
    if v == h or _masked_output(v, h) or _clipped_argument(v, h) or _json_derived(v, h):
        return True
    if isinstance(v, list) and isinstance(h, list):
        return len(v) == len(h) and all(_value_derived(a, b) for a, b in zip(v, h, strict=True))
    if isinstance(v, dict) and isinstance(h, dict):
        return v.keys() == h.keys() and all(_value_derived(v[k], h[k]) for k in v)
    return _clipped_text(v, h)


def _subsequence(small: list[Any], big: list[Any], match) -> bool:
    rest = iter(big)
    return all(any(match(s, b) for b in rest) for s in small)


def derived_from(v: dict[str, Any], h: dict[str, Any]) -> bool:
    """``v`` is ``h`` itself, or a copy with tool traffic stripped (``sanitize``) and/or outputs clipped.

    Stripping a ``tool`` message may take its stray ``tool_call_id`` (its blocks answer), or all its stray
    blocks (its ``tool_call_id`` answers: the content is then empty text).
    """
    if v == h:
        return True
    if v.get("role") != h.get("role"):
        return False
    free = {"content", "tool_calls"}
    if v.get("role") == "tool" and "tool_call_id" not in v:
        free.add("tool_call_id")
    if any(v.get(k) != h.get(k) for k in (v.keys() | h.keys()) - free):
        return False
    if "tool_calls" in v and not _subsequence(v["tool_calls"], h.get("tool_calls") or [], _value_derived):
        return False
    vc, hc = v.get("content"), h.get("content")
    if isinstance(hc, list):
        if vc == "" and v.get("role") == "tool":
            return True
        return isinstance(vc, list) and _subsequence(vc, hc, _value_derived)
    if hc is not None and isinstance(vc, str) and vc.startswith("[tool output masked: "):
        return _masked_output(vc, hc) or _masked_output(vc, block_text({"type": "tool_result", "content": hc}))
    return _value_derived(vc, hc)


def is_summary(message: dict[str, Any]) -> bool:
    content = message.get("content")
    markers = (SUMMARY_MARKER, "[CONTEXT TRUNCATED]")
    return message.get("role") == "user" and isinstance(content, str) and content.startswith(markers)


def latest_user(history: list[dict[str, Any]]) -> int:
    return max((i for i, m in enumerate(history) if is_user_turn(m)), default=-1)


def minimal_view_tokens(manager: Any, history: list[dict[str, Any]], summary: dict[str, Any] | None) -> int:
    """Tokens of the smallest valid view: system, the truncation marker, pinned requests, newest group.

    The newest group is never summarized, so when even this does not fit the budget, only clipping can
    help and fitting is not guaranteed; when it fits, every view must fit, whatever summary the module
    wrote (it must shrink it, or fall back to the marker).
    """
    count = manager.counter.count_messages
    total = count([m for m in history if m["role"] == "system"])
    if summary is not None:
        marker = f"[CONTEXT TRUNCATED] {len(history)} earlier messages were left out to fit the context window."
        total += count([{"role": "user", "content": marker}])
    newest = group_messages(history)[-1]
    members = history[newest.start : newest.end]
    if not (len(members) == 1 and members[0]["role"] == "system"):
        total += count(sanitize(members))
    requests = [i for i, m in enumerate(history) if is_user_turn(m)]
    for user in dict.fromkeys(requests[:1] + requests[-1:]):  # the first and the latest request are pinned
        if user < newest.start:
            pinned = strip_tool_blocks(history[user], keep_calls=set(), keep_results=set())
            total += count([pinned]) if pinned is not None else 0
    return total


def check_view(view: list[dict[str, Any]], history: list[dict[str, Any]], manager: Any, budget: int) -> None:
    """``history`` as stored; the view is judged against it as sent (lone surrogates as U+FFFD)."""
    problems = view_rules(view)
    assert problems == [], problems
    assert all(encodable(s) for s in _strings(view)), "a lone surrogate would be sent"
    history = [scrub_value(m) for m in history]

    # System messages first, verbatim, all of them, in order.
    systems = [m for m in history if m["role"] == "system"]
    assert view[: len(systems)] == systems
    rest = view[len(systems) :]
    assert all(m["role"] != "system" for m in rest)

    # At most one summary, right after the system messages.
    summaries = [i for i, m in enumerate(rest) if is_summary(m)]
    assert summaries in ([], [0])
    summary = rest[0] if summaries else None
    tail = rest[1:] if summaries else rest

    # The rest keeps the history's order (copies may be sanitized or clipped).
    others = [m for m in history if m["role"] != "system"]
    assert _subsequence(tail, others, derived_from), "view is not an in-order selection of the history"

    # Thinking blocks reach the provider byte-for-byte, signature included.
    thinking = [b for m in history for b in m.get("content") or [] if isinstance(b, dict) and "thinking" in b["type"]]
    for m in tail:
        for block in m.get("content") if isinstance(m.get("content"), list) else []:
            if isinstance(block, dict) and "thinking" in str(block.get("type")):
                assert block in thinking

    # The latest user request is shown.
    user = latest_user(history)
    if user >= 0:
        assert any(derived_from(m, history[user]) and is_user_turn(m) for m in tail), "latest user request lost"

    # The summary keeps to its share: one segment's allowance per segment that has not been merged yet, plus
    # the preamble; merging keeps the total near ``summary_budget_ratio`` of the budget (loose bound).
    if summary is not None:
        config = manager.config
        bound = 2 * (config.summary_output_tokens + SUMMARY_SLACK) + config.summary_budget_ratio * budget
        assert manager.counter.count_message(summary) <= bound

    # It fits whenever a fitting view exists. With the summary bounded as above, this a-posteriori condition
    # (the smallest view the module could build around the summary it actually wrote) covers the a-priori one:
    # system + pinned request + newest group + the summary bound <= budget.
    tokens = manager.counter.count_messages(view)
    if minimal_view_tokens(manager, history, summary) <= budget:
        assert tokens <= budget, (tokens, budget)


async def run_scenario(scenario: dict[str, Any], check: bool = True) -> list[list[dict[str, Any]]]:
    manager = create_manager({"max_tokens": 200_000, **scenario["config"]}, store=MemoryStore())
    provider = FakeProvider()
    history, budget = scenario["history"], scenario["budget"]
    points = set(scenario["points"])
    views = []
    async for step in replay_steps(manager, history, provider, budget):
        if step.index in points:  # the scenario's own request points, not only before assistant messages
            view = await step.request()
            if check:
                check_view(view, history[: step.index + 1], manager, budget)
            views.append(copy.deepcopy(view))
    if check:
        assert await manager.get_messages() == history
    return views


# ---------------------------------------------------------------------------------------------- properties


@pytest.mark.slow
@SETTINGS
@given(scenarios())
def test_mixed_histories_give_valid_ordered_fitting_views(scenario):
    original = copy.deepcopy(scenario["history"])
    asyncio.run(run_scenario(scenario))
    assert scenario["history"] == original, "the caller's messages were mutated"


@pytest.mark.slow
@settings(SETTINGS, max_examples=150)
@given(st.sampled_from(["openai", "anthropic", "amplifier"]).flatmap(scenarios))
def test_single_shape_histories_give_valid_ordered_fitting_views(scenario):
    asyncio.run(run_scenario(scenario))


@pytest.mark.slow
@settings(SETTINGS, max_examples=100)
@given(scenarios())
def test_fresh_manager_and_cache_give_identical_views(scenario):
    first = asyncio.run(run_scenario(scenario, check=False))
    second = asyncio.run(run_scenario(scenario, check=False))
    assert first == second


@pytest.mark.slow
@settings(SETTINGS, max_examples=100)
@given(scenarios())
def test_resume_from_cache_matches_and_history_is_kept(scenario):
    asyncio.run(check_resume(scenario))


async def check_resume(scenario: dict[str, Any]) -> None:
    """``set_messages`` on a new manager sharing the cache shows a valid view of the same history."""
    cache = MemoryStore()
    config = {"max_tokens": 200_000, **scenario["config"]}
    first = create_manager(config, store=cache)
    provider = FakeProvider()
    history = scenario["history"]
    async for step in replay_steps(first, history, provider, scenario["budget"]):
        await step.request()  # after every message
    second = create_manager(config, store=cache)
    await second.set_messages(history)
    assert await second.get_messages() == history
    view = await second.get_messages_for_request(token_budget=scenario["budget"], provider=provider)
    check_view(view, history, second, scenario["budget"])


REGRESSIONS = sorted((Path(__file__).parent / "property_regressions").glob("*.json"))


@pytest.mark.parametrize("path", REGRESSIONS, ids=[p.stem for p in REGRESSIONS])
def test_scenarios_that_once_failed_pass(path):
    """Scenarios the properties above once failed on (in CI, on examples a local run had not drawn)."""
    case = json.loads(path.read_text())
    if case["check"] == "resume":
        asyncio.run(check_resume(case["scenario"]))
    else:
        asyncio.run(run_scenario(case["scenario"]))


# ---------------------------------------------------------------------------------------------- hostile values

HOSTILE = settings(SETTINGS, max_examples=60)


@st.composite
def nested_values(draw) -> tuple[Any, int, bool]:
    """(value, its nesting depth, whether it contains itself): lists and dicts, sometimes shared or cyclic."""
    depth = draw(st.integers(1, MAX_NESTING + 30))
    value: Any = draw(st.sampled_from(["leaf", 7, None, 1.5]))
    pairs = 0  # a pair shares its element twice: at most 8 keep the expanded size small (the bound has its own test)
    for _ in range(depth):
        kind = draw(st.sampled_from(["list", "dict", "pair"])) if pairs < 8 else "list"
        pairs += kind == "pair"
        value = [value] if kind == "list" else {"k": value} if kind == "dict" else [value, value]
    cyclic = draw(st.integers(0, 4)) == 0
    if cyclic:
        holder: list[Any] = [value]
        holder.append(holder)
        value = holder
    return value, depth, cyclic


@HOSTILE
@given(nested_values(), st.sampled_from(["content", "metadata", "tool_calls"]))
def test_nesting_is_refused_exactly_past_the_limit_and_nothing_half_stored(nested, field):
    """add_message raises ``ValueError`` naming the field iff the value is cyclic or nested too deeply."""
    value, depth, cyclic = nested

    async def go():
        manager = create_manager({"max_tokens": 8_000})
        await manager.add_message({"role": "user", "content": "go"})
        if field == "content":  # content list, block dict, then the value
            message, total = {"role": "user", "content": [{"type": "text", "text": "x", "data": value}]}, depth + 2
        elif field == "tool_calls":
            message = {"role": "assistant", "content": "x", "tool_calls": [{"id": "c", "arguments": value}]}
            total = depth + 2
        else:
            message, total = {"role": "user", "content": "x", "metadata": value}, depth
        refused = cyclic or total > MAX_NESTING
        try:
            await manager.add_message(message)
        except ValueError as exc:
            assert refused, exc
            assert f"message field '{field}'" in str(exc)
        else:
            assert not refused
        history = manager.history
        assert len(history.messages) == history.groups[-1].end == (1 if refused else 2)
        view = await manager.get_messages_for_request(8_000)
        assert view_rules(view) == []

    asyncio.run(go())


REPORTED = st.one_of(
    st.integers(-(10**30), 10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.booleans(),
    st.none(),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


class _Info:
    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)


@pytest.mark.slow
@HOSTILE
@given(REPORTED, REPORTED, REPORTED, st.booleans())
def test_provider_limits_of_any_type_never_break_a_request(window, output, defaults, as_attributes):
    """Whatever a provider reports, the request returns a valid view within the configured cap."""

    class Provider(FakeProvider):
        def get_info(self) -> Any:
            if as_attributes:
                return _Info(context_window=window, max_output_tokens=output, defaults=defaults)
            return _Info(defaults={"context_window": window, "max_output_tokens": output})

    async def go():
        manager = create_manager({"max_tokens": 5_000})
        views = await replay(manager, mixed_history(8), Provider())
        assert all(view_rules(v) == [] and manager.counter.count_messages(v) <= 5_000 for v in views)

    asyncio.run(go())


_HISTORY = mixed_history(30)
_ROW_BUDGET = 5_000


@functools.cache
def _stored_rows() -> tuple[CachedSummary, ...]:
    """Real summaries of ``_HISTORY`` (made once): the rows the corrupting store hands out changed."""

    async def go():
        store = MemoryStore()
        manager = create_manager({"max_tokens": 200_000}, store=store)
        await replay(manager, _HISTORY, FakeProvider(), budget=_ROW_BUDGET)
        return tuple(await store.starting_at(manager.fingerprint))

    return asyncio.run(go())


ROW_VALUES = st.one_of(
    st.integers(-3, 10**6),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.binary(max_size=8),
    st.booleans(),
    st.none(),
    st.builds(lambda n: "word " * n, st.integers(0, 100_000)),
)


@pytest.mark.slow
@settings(SETTINGS, max_examples=40)
@given(st.dictionaries(st.sampled_from(["start", "end", "text", "tokens", "groups", "tier"]), ROW_VALUES, max_size=3))
def test_store_rows_of_any_shape_never_break_resume_or_a_view(changes):
    """A store handing out rows with any fields changed: resume and requests never raise, views fit."""
    rows = _stored_rows()
    assert rows

    class Corrupting(MemoryStore):
        async def get(self, start: str, end: str) -> Any:
            return next((dataclasses.replace(r, **changes) for r in rows if (r.start, r.end) == (start, end)), None)

        async def starting_at(self, start: str) -> Any:
            return [dataclasses.replace(r, **changes) for r in rows if r.start == start]

    async def go():
        manager = create_manager({"max_tokens": 200_000}, store=Corrupting())
        await manager.set_messages(_HISTORY)
        assert all(
            isinstance(s.text, str) and s.tokens == manager.counter.count_text(s.text) for s in manager.state.segments
        )
        view = await manager.get_messages_for_request(_ROW_BUDGET, FakeProvider())
        assert view_rules(view) == [] and manager.counter.count_messages(view) <= _ROW_BUDGET

    asyncio.run(go())


# ------------------------------------------------------------------------------- issue 23: the classes of round 2
# Example counts (max_examples): deep argument strings 40, pathological text for every content regex 120,
# model-written regexes 200, extreme config values 300, surrogates through every output path 30, unhashable
# fields 200.

ROUND2_BUDGET = 5_000


def _deep_json(depth: int, kind: str) -> str:
    opener, closer = {"list": ("[", "]"), "dict": ('{"a":', "}"), "mixed": ('[{"a":', "}]")}[kind]
    return opener * depth + "1" + closer * depth


@st.composite
def deep_argument_histories(draw) -> list[dict[str, Any]]:
    """Tool calls whose arguments are JSON strings nested past the stack, in every shape that carries a string."""
    history: list[dict[str, Any]] = [{"role": "user", "content": "start"}]
    for i in range(draw(st.integers(6, 12))):
        deep = draw(st.booleans())
        depth = draw(st.integers(900, 4_000)) if deep else 1
        args = _deep_json(depth, draw(st.sampled_from(["list", "dict", "mixed"])))
        shape = draw(st.sampled_from(["openai", "amplifier", "output"]))
        if shape == "openai":
            call = {"id": f"c{i}", "type": "function", "function": {"name": "write_file", "arguments": args}}
        else:
            call = {"id": f"c{i}", "tool": "bash", "arguments": args if shape == "amplifier" else "{}"}
        output = args if shape == "output" else "done\n" + "row\n" * draw(st.integers(50, 400))
        history += [
            {"role": "assistant", "content": f"step {i}", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": output},
            {"role": "user", "content": "go on " * draw(st.integers(10, 200))},
        ]
    return history


@pytest.mark.slow
@settings(SETTINGS, max_examples=40)
@given(deep_argument_histories(), st.sampled_from(["summarize", "mask", "extractive", "truncate"]))
def test_deep_json_strings_in_arguments_never_break_a_session(history, strategy):
    async def go():
        manager = create_manager({"max_tokens": ROUND2_BUDGET, "compaction_strategy": strategy})
        await replay(manager, history, FakeProvider(), budget=ROUND2_BUDGET)
        resumed = create_manager({"max_tokens": ROUND2_BUDGET, "compaction_strategy": strategy})
        await resumed.set_messages(history)
        view = await resumed.get_messages_for_request(ROUND2_BUDGET, FakeProvider())
        assert view_rules(view) == []

    asyncio.run(go())


_PATHOLOGICAL_PIECES = [
    " ", "  ", "\n", "\n\n", "\t", "exit code", "returncode", ":", "=", ">", "[main (", "(", ")", "PR", "#",
    "commit", " as ", "def", "class ", "public ", "static ", "a ", "function", "*", "f()", "{", "const a = ",
    " | head", " -n 5", "2>&1", "ab-", "1a", ".1", "Error", "E   ", "Traceback", "x", "\\", '"', "'", "<a",
    "http://", "CVE-", "ABC-1", "---", "+++ b/", "*** Update File: ", "now ", "let me ", "-", "0",
]  # fmt: skip


@pytest.mark.slow
@settings(SETTINGS, max_examples=120)
@given(
    st.lists(st.tuples(st.sampled_from(_PATHOLOGICAL_PIECES), st.integers(1, 2_000)), min_size=1, max_size=6),
    st.sampled_from(["a.py", "A.java", "a.sh", "a.js", "a.rs", "a.ex", "a.go", "a.c", "a.php", "a.rb"]),
)
def test_every_regex_over_message_content_is_fast_on_pathological_text(pieces, path):
    """Runs of the characters each content regex cares about, repeated up to 2,000 times: < 1 s per pass."""
    import time

    from amplifier_module_context_summarize.summarizer.extractive import extractive_summary
    from amplifier_module_context_summarize.working_set.definitions import names_in
    from amplifier_module_context_summarize.working_set.facts import extract
    from amplifier_module_context_summarize.working_set.outcomes import error_line, looks_failed
    from amplifier_module_context_summarize.working_set.reads import read_form

    text = "".join(piece * count for piece, count in pieces)[:120_000]
    messages = [
        {"role": "user", "content": text},
        {"role": "assistant", "content": text, "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "bash", "arguments": json.dumps({"command": text})}},
            {"id": "w", "type": "function",
             "function": {"name": "write_file", "arguments": json.dumps({"path": path, "content": text})}},
        ]},
        {"role": "tool", "tool_call_id": "c", "content": text},
        {"role": "tool", "tool_call_id": "w", "content": text},
    ]  # fmt: skip
    for run in (
        lambda: extract(messages),
        lambda: names_in(text, path),
        lambda: looks_failed(text),
        lambda: error_line(text),
        lambda: read_form(text),
        lambda: extractive_summary(messages, previous_summary=None, max_tokens=1_000, count_tokens=len),
    ):
        began = time.perf_counter()
        run()
        assert time.perf_counter() - began < 1.0, (pieces, path)


_REGEX_PIECES = [
    "a", "x", ".", "\\d", "\\w", "(?:", "(", ")", "|", "*", "+", "?", "{2}", "{1,100}", "{65535}", "{1000}", "{0,}",
    "(?R)", "(?0)", "(?1)", "(?&n)", "(?P<n>", "(?P>n)", "\\g<1>", "{e<=2}", "[a-z]", "[^)]", "\\", "^", "$",
]  # fmt: skip
_recall_tools: dict[str, Any] = {}


def _recall_tool() -> Any:
    """One compacted session shared by every example: building it is the slow part."""
    from amplifier_module_context_summarize import RecallTool
    from amplifier_module_context_summarize.testing import tool_call, tool_result

    if "tool" not in _recall_tools:

        async def build() -> Any:
            manager = create_manager({"max_tokens": ROUND2_BUDGET})
            history: list[dict[str, Any]] = [{"role": "user", "content": "start"}]
            for t in range(20):
                history.append(tool_call("openai", f"c{t}", "bash", {"command": f"cat f{t}"}, f"Reading \ud83d {t}"))
                history.append(tool_result("openai", f"c{t}", f"x\ud83d a{t}\n" + "aaaa xxxx\n" * 200))
            await replay(manager, history, FakeProvider(), budget=ROUND2_BUDGET)
            return manager

        _recall_tools["tool"] = RecallTool(asyncio.run(build()))
    return _recall_tools["tool"]


@settings(SETTINGS, max_examples=200)
@given(st.lists(st.sampled_from(_REGEX_PIECES), min_size=1, max_size=12))
def test_any_model_written_regex_is_answered_in_time_by_a_serializable_result(pieces):
    import time

    from amplifier_core.models import ToolResult

    tool = _recall_tool()
    query = "".join(pieces)
    began = time.perf_counter()
    result = asyncio.run(tool.execute({"operation": "search", "query": query, "regex": True}))
    assert time.perf_counter() - began < 3.0, query
    assert isinstance(result, ToolResult)
    result.model_dump_json()


def _numeric_keys() -> list[str]:
    from amplifier_module_context_summarize.config import _NUMBERS, _SUMMARIZER_NUMBERS

    return list(_NUMBERS) + [f"summarizer.{k}" for k in _SUMMARIZER_NUMBERS]


EXTREME_NUMBERS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(10**500), 10**500),
    st.sampled_from([math.nan, math.inf, -math.inf, 10**400, 1e308, 10**12, 10**12 + 1, 0, -0.0, 5e-324]),
)


@settings(SETTINGS, max_examples=300)
@given(st.sampled_from(_numeric_keys()), EXTREME_NUMBERS)
def test_extreme_config_numbers_are_refused_naming_the_key_or_work(key, value):
    from amplifier_module_context_summarize.config import MAX_NUMBER, parse_config

    raw: dict[str, Any] = {"summarizer": {"provider": "extractive"}}
    if key.startswith("summarizer."):
        raw["summarizer"][key.split(".", 1)[1]] = value
    else:
        raw[key] = value
    try:
        config = parse_config(raw)
    except ValueError as exc:
        assert f"config key '{key}'" in str(exc) or "config key '" in str(exc)
        return
    assert math.isfinite(value) and abs(value) <= MAX_NUMBER

    async def go():
        manager = create_manager(config)
        for message in mixed_history(6):
            await manager.add_message(message)
        view = await manager.get_messages_for_request(provider=FakeProvider())
        assert view_rules(view) == []

    asyncio.run(go())


SURROGATES = st.sampled_from(["\ud83d", "\udc00", "\udfff", "\ud800x\udbff"])


@pytest.mark.slow
@settings(SETTINGS, max_examples=30)
@given(st.lists(SURROGATES, min_size=4, max_size=4), st.integers(8, 20))
def test_lone_surrogates_never_reach_any_output(lone, turns):
    """Surrogates in text, arguments, outputs and file names: views, recall results, inspect's Markdown and HTML
    all encode as UTF-8."""
    from amplifier_module_context_summarize import RecallTool
    from amplifier_module_context_summarize.cli.inspect import inspect_session, render_html, render_markdown
    from amplifier_module_context_summarize.core.messages import scrub_text
    from amplifier_module_context_summarize.testing import tool_call, tool_result

    history: list[dict[str, Any]] = [{"role": "user", "content": f"start {lone[0]}"}]
    for t in range(turns):
        history.append(tool_call("anthropic", f"c{t}", "write_file", {"path": f"f{lone[1]}{t}.py", "content": "x"}))
        history.append(tool_result("anthropic", f"c{t}", f"out {lone[2]}\n" + "row\n" * 300))
        history.append({"role": "assistant", "content": f"done {lone[3]}"})

    async def go():
        manager = create_manager({"max_tokens": ROUND2_BUDGET, "summarizer": "extractive"})
        views = await replay(manager, history, FakeProvider(), budget=ROUND2_BUDGET)
        json.dumps(views[-1], ensure_ascii=False).encode("utf-8")
        tool = RecallTool(manager)
        found = await tool.execute({"operation": "search", "query": "out"})
        found.model_dump_json()
        for result in found.output["results"]:
            page = await tool.execute({"operation": "fetch", "handle": result["handle"]})
            page.model_dump_json()
        inspected = await inspect_session(history, ROUND2_BUDGET, f"s{lone[0]}.jsonl")
        scrub_text(render_markdown(inspected)).encode("utf-8")
        scrub_text(render_html(inspected)).encode("utf-8")

    asyncio.run(go())


UNHASHABLE = st.one_of(st.lists(st.text(max_size=3), max_size=2), st.dictionaries(st.text(max_size=2), st.integers()))


@st.composite
def unhashable_messages(draw) -> tuple[dict[str, Any], str]:
    bad = draw(UNHASHABLE)
    where = draw(st.sampled_from(["role", "block", "result", "result_output", "thinking", "deep_result"]))
    if where == "role":
        return {"role": bad, "content": "x"}, "'role'"
    if where == "block":
        return {"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": bad}]}, "'content[1].type'"
    if where == "thinking":
        return {"role": "assistant", "content": "x", "thinking_block": {"type": bad}}, "'thinking_block.type'"
    inner = [{"type": "text", "text": "ok"}, {"type": bad, "text": "x"}]
    key = "output" if where == "result_output" else "content"
    if where == "deep_result":
        inner = [{"type": "tool_result", "tool_use_id": "b", "content": inner}]
        field = "'content[0].content[0].content[1].type'"
    else:
        field = f"'content[0].{key}[1].type'"
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", key: inner}]}, field


@settings(SETTINGS, max_examples=200)
@given(unhashable_messages(), st.integers(0, 5))
def test_unhashable_fields_are_refused_naming_field_and_index(case, before):
    message, field = case

    async def go():
        manager = create_manager({})
        for i in range(before):
            await manager.add_message({"role": "user", "content": f"m{i}"})
        with pytest.raises(ValueError) as refused:
            await manager.add_message(message)
        assert f"messages[{before}]" in str(refused.value) and field in str(refused.value)
        assert len(manager.history.messages) == before

    asyncio.run(go())


# ---------------------------------------------------------------------------------------------- the view fits (#32)
# Example counts (max_examples): pins and request sizes against the budget 150 (every strategy, both content shapes,
# a pasted request, a huge first request, a newest tool output, each from nothing to several budgets).

CLIP_HANDLE = re.compile(
    r"characters clipped; (?:recall with context_recall, )?handle (m\d+(?:\.\d+)?-[0-9a-f]{6}) \.\.\.\]"
)


def _sized_text(seed: int, tokens: int) -> str:
    """About ``tokens`` tokens of varied words (sizes are drawn against the budget)."""
    plain = [w for w in WORDS if encodable(w)]
    return " ".join(plain[(seed + i * 7) % len(plain)] for i in range(tokens))


@st.composite
def pin_scenarios(draw) -> dict[str, Any]:
    budget = draw(st.integers(300, 8_000))
    share = st.sampled_from([0, 0.05, 0.3, 0.6, 0.9, 1.0, 1.5, 3.0])
    first, latest, output = (int(budget * draw(share)) + 1 for _ in range(3))
    blocks = draw(st.booleans())

    def user(text: str) -> dict[str, Any]:
        return {"role": "user", "content": [{"type": "text", "text": text}] if blocks else text}

    history: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    history.append(user("Task: " + _sized_text(draw(st.integers(0, 30)), first)))
    for i in range(draw(st.integers(0, 12))):
        history += [{"role": "assistant", "content": f"step {i} " + "x " * draw(st.integers(1, 300))}, user(f"ok {i}")]
    history.append(user("Latest: " + _sized_text(draw(st.integers(0, 30)), latest)))
    if draw(st.booleans()):  # the newest group also holds a tool output of any size
        call = {"id": "c_new", "type": "function", "function": {"name": "cat", "arguments": "{}"}}
        history.append({"role": "assistant", "content": None, "tool_calls": [call]})
        history.append({"role": "tool", "tool_call_id": "c_new", "content": _sized_text(7, output)})
    strategy = draw(st.sampled_from(["summarize", "extractive", "mask", "truncate"]))
    return {"history": history, "budget": budget, "strategy": strategy}


async def check_pin_scenario(scenario: dict[str, Any]) -> None:
    from amplifier_module_context_summarize.recall.tool import RecallTool

    strategy, budget, history = scenario["strategy"], scenario["budget"], scenario["history"]
    summarizer = {"provider": "extractive"} if strategy != "summarize" else {"max_retries": 0}
    manager = create_manager(
        {"max_tokens": 200_000, "compaction_strategy": strategy, "summarizer": summarizer}, store=MemoryStore()
    )
    for message in history:
        await manager.add_message(message)
    for _ in range(2):  # the same history gives the same fitting view on every request
        view = await manager.get_messages_for_request(token_budget=budget, provider=FakeProvider())
        tokens = manager.counter.count_messages(copy.deepcopy(view))  # counted afresh, not as the manager planned
        assert tokens <= budget, (tokens, budget)
        latest = history[latest_user(history)]
        assert view_rules(view, latest_request=latest) == []
        dumped = json.dumps(view, ensure_ascii=False)
        handles = CLIP_HANDLE.findall(dumped)
        assert dumped.count("characters clipped") == len(handles), "a clip without a handle"
        tool = RecallTool(manager)
        for handle in set(handles):
            fetched = await tool.execute({"operation": "fetch", "handle": handle})
            assert fetched.success, fetched


@pytest.mark.slow
@settings(SETTINGS, max_examples=150)
@given(pin_scenarios())
def test_pins_and_requests_of_any_size_give_a_view_within_the_budget(scenario):
    asyncio.run(check_pin_scenario(scenario))
