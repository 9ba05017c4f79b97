"""Property tests: generated histories in the three tool shapes (and mixed) never produce a bad view.

Every generated history is replayed through a fresh manager with requests at random points. On every
view: it is valid (``check_view``), it keeps the history's order, it shows the latest user request,
and it fits the budget whenever a fitting view exists. The stored history is exactly what was added,
and a fresh manager with a fresh cache given the same inputs returns the same views.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amplifier_module_context_summarize import SUMMARY_MARKER, create_manager
from amplifier_module_context_summarize.invariants import check_view as view_rules
from amplifier_module_context_summarize.messages import (
    block_text,
    group_messages,
    is_user_turn,
    sanitize,
    strip_tool_blocks,
)
from amplifier_module_context_summarize.stores import MemoryStore
from amplifier_module_context_summarize.testing import FakeProvider, replay_steps

# fmt: off
WORDS = [
    "alpha", "beta", "gamma", "delta", "src/app.py", "tests/test_app.py", "pytest", "failed", "passed", "import",
    "error", "TypeError", "refactor", "the", "function", "returns", "None", "when", "the", "cache", "is", "empty;",
    "retry", "with", "backoff", "https://example.com/api", "git", "diff", "--stat", "commit", "3f2a1b", "ok",
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


PARTS = {
    "user": user_turn,
    "assistant": assistant_text,
    "system": system_message,
    "openai": openai_tools,
    "anthropic": anthropic_tools,
    "amplifier": amplifier_tools,
    "orphan": orphan_result,
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
]


@st.composite
def histories(draw, shape: str | None = None) -> list[dict[str, Any]]:
    """A history in one shape (``shape``) or mixed; it always starts with a system prompt or a user turn."""
    ids = Ids()
    history: list[dict[str, Any]] = []
    if draw(st.booleans()):
        history.append({"role": "system", "content": "You are a careful coding agent."})
    history += draw(user_turn(ids))
    kinds = WEIGHTED if shape is None else ["user", "assistant", shape, shape, shape, "system", "orphan"]
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


def _clipped_text(view_value: Any, stored: Any) -> bool:
    """``view_value`` is ``stored`` as ``clip.clip_middle`` shortens it in a view that must fit."""
    if not (isinstance(view_value, str) and isinstance(stored, str)):
        return False
    head = view_value.split("\n[... ", 1)[0]
    return "characters clipped ...]" in view_value and stored.startswith(head)


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
    """``v`` is ``h`` itself, or a copy with tool traffic stripped (``sanitize``) and/or outputs clipped."""
    if v == h:
        return True
    if v.get("role") != h.get("role"):
        return False
    if any(v.get(k) != h.get(k) for k in (v.keys() | h.keys()) - {"content", "tool_calls"}):
        return False
    if "tool_calls" in v and not _subsequence(v["tool_calls"], h.get("tool_calls") or [], _value_derived):
        return False
    vc, hc = v.get("content"), h.get("content")
    if isinstance(hc, list):
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
    problems = view_rules(view)
    assert problems == [], problems

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


@SETTINGS
@given(scenarios())
def test_mixed_histories_give_valid_ordered_fitting_views(scenario):
    original = copy.deepcopy(scenario["history"])
    asyncio.run(run_scenario(scenario))
    assert scenario["history"] == original, "the caller's messages were mutated"


@settings(SETTINGS, max_examples=150)
@given(st.sampled_from(["openai", "anthropic", "amplifier"]).flatmap(scenarios))
def test_single_shape_histories_give_valid_ordered_fitting_views(scenario):
    asyncio.run(run_scenario(scenario))


@settings(SETTINGS, max_examples=100)
@given(scenarios())
def test_fresh_manager_and_cache_give_identical_views(scenario):
    first = asyncio.run(run_scenario(scenario, check=False))
    second = asyncio.run(run_scenario(scenario, check=False))
    assert first == second


@settings(SETTINGS, max_examples=100)
@given(scenarios())
def test_resume_from_cache_matches_and_history_is_kept(scenario):
    """``set_messages`` on a new manager sharing the cache shows a valid view of the same history."""

    async def go():
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

    asyncio.run(go())
