"""The ``context_recall`` tool: mounted in a real session, search and fetch in every tool shape, resume, paging,
refused handles, regex limits, and views that stay valid and within budget with the tool on."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import regex
from amplifier_core import AmplifierSession
from amplifier_core.models import ToolResult
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_amplifier_session import install_test_modules

from amplifier_module_context_summarize import SUMMARY_MARKER, RecallTool, create_manager
from amplifier_module_context_summarize.core.messages import REPLACEMENT
from amplifier_module_context_summarize.core.state import RECALL_LINE
from amplifier_module_context_summarize.recall.tool import (
    MAX_PATTERN_COST,
    MAX_REPEAT,
    PAGE_CHARS,
    SEARCH_FLAGS,
    SEARCH_OUTPUT_CHARS,
    pattern_problem,
)
from amplifier_module_context_summarize.testing import (
    FakeProvider,
    mixed_history,
    replay,
    tool_call,
    tool_result,
)

BUDGET = 12_000
LOG_LINE = "collected item {i}: tests/test_module_{i}.py::test_case PASSED in 0.{i}s\n"
HANDLE = re.compile(r"handle (m\d+(?:\.\d+)?-[0-9a-f]{6})")


def tool_session(shape: str, turns: int, output_lines: int = 60) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    for t in range(turns):
        if t % 6 == 0:
            history.append({"role": "user", "content": f"Task {t}: make tests/test_{t}.py pass."})
        call_id = f"call_{t}"
        history.append(tool_call(shape, call_id, "bash", {"command": f"pytest tests/test_{t}.py -q"}, f"Running {t}."))
        output = f"SECRET-TOKEN-{t}\n" + "".join(LOG_LINE.format(i=t * 100 + i) for i in range(output_lines))
        history.append(tool_result(shape, call_id, output))
        history.append({"role": "assistant", "content": f"Turn {t}: tests/test_{t}.py passes now."})
    return history


async def compacted(shape: str, config: dict[str, Any] | None = None, turns: int = 30):
    manager = create_manager({"max_tokens": BUDGET, **(config or {})})
    history = tool_session(shape, turns)
    views = await replay(manager, history, FakeProvider(), budget=BUDGET)
    return manager, views[-1]


def placeholders(view: list[dict[str, Any]]) -> list[str]:
    return HANDLE.findall(json.dumps(view, ensure_ascii=False))


async def test_mounted_in_a_real_session_with_name_description_and_schema(monkeypatch, tmp_path):
    install_test_modules(monkeypatch)
    plan = {
        "session": {
            "orchestrator": "test-loop",
            "context": {"module": "context-summarize", "config": {"storage_path": str(tmp_path / "s.sqlite")}},
        },
        "providers": [{"module": "test-provider"}],
    }
    session = AmplifierSession(plan)
    await session.initialize()
    try:
        tools = session.coordinator.get("tools")
        tool = tools["context_recall"]
        assert isinstance(tool, RecallTool) and tool.name == "context_recall"
        assert tool.manager is session.coordinator.get("context")
        assert "summar" in tool.description and "handle" in tool.description
        schema = tool.input_schema
        assert schema["type"] == "object" and schema["required"] == ["operation"]
        assert schema["properties"]["operation"]["enum"] == ["search", "fetch"]
        assert {"query", "regex", "max_results", "handle", "offset"} <= set(schema["properties"])
        result = await tool.execute({"operation": "search", "query": "anything"})
        assert isinstance(result, ToolResult) and result.success and result.output["results"] == []
    finally:
        await session.cleanup()

    off = AmplifierSession(
        {
            **plan,
            "session": {
                **plan["session"],
                "context": {"module": "context-summarize", "config": {"recall_tool": False}},
            },
        }
    )
    await off.initialize()
    try:
        assert "context_recall" not in (off.coordinator.get("tools") or {})
    finally:
        await off.cleanup()


@pytest.mark.parametrize("shape", ["openai", "anthropic", "amplifier"])
async def test_search_and_fetch_in_every_tool_shape(shape):
    manager, view = await compacted(shape)
    state = manager.state
    assert state.tail_start > 0
    handles = placeholders(view)
    assert handles and all("recall with context_recall, handle" in json.dumps(view) for _ in [0])
    tool = RecallTool(manager)

    # A masked output comes back whole through its placeholder's handle.
    result = await tool.execute({"operation": "fetch", "handle": handles[0]})
    assert result.success, result.error
    out = result.output
    assert out["shown"] in ("masked", "summarized") and out["next_offset"] is None
    assert out["text"].startswith("SECRET-TOKEN-") and "collected item" in out["text"]
    assert json.dumps(out)  # data, JSON-serialisable

    # Search finds the hidden outputs (case-insensitive), each with a handle that fetches its source.
    result = await tool.execute({"operation": "search", "query": "secret-token-1\n"})
    assert result.success
    hits = result.output["results"]
    assert hits and all(h["shown"] in ("masked", "summarized", "truncated") for h in hits)
    first = hits[0]
    assert "SECRET-TOKEN-1" in first["excerpt"] and first["message"] < len(manager.history.messages)
    fetched = (await tool.execute({"operation": "fetch", "handle": first["handle"]})).output
    assert "SECRET-TOKEN-1\n" in fetched["text"]
    assert fetched["message"] == first["message"] and fetched.get("block") == first.get("block")

    # Tool calls of hidden messages are searchable too.
    calls = (await tool.execute({"operation": "search", "query": "pytest tests/test_0.py"})).output["results"]
    assert calls and calls[0]["role"] == "assistant"

    # Only the hidden part is searched: the newest outputs (verbatim in the view) are not found.
    last = max(t for t in range(30) if f"SECRET-TOKEN-{t}\\n" in json.dumps(view))
    assert not (await tool.execute({"operation": "search", "query": f"SECRET-TOKEN-{last}\n"})).output["results"]


async def test_summary_preamble_names_the_tool_only_when_it_is_on():
    on, view_on = await compacted("anthropic", {"observation_masking": False})
    off, view_off = await compacted("anthropic", {"observation_masking": False, "recall_tool": False})
    line = RECALL_LINE.format(tool="context_recall")
    summary_on = next(m["content"] for m in view_on if str(m.get("content")).startswith(SUMMARY_MARKER))
    summary_off = next(m["content"] for m in view_off if str(m.get("content")).startswith(SUMMARY_MARKER))
    assert line in summary_on and line not in summary_off
    assert on.fingerprint != off.fingerprint  # the summary text differs, so do the cache keys
    assert on.mask_settings is None and off.mask_settings is None
    masked_on, _ = await compacted("openai")
    masked_off, view = await compacted("openai", {"recall_tool": False})
    assert masked_on.mask_settings.recall_tool == "context_recall" and masked_off.mask_settings.recall_tool is None
    assert "recall with" not in json.dumps(view) and placeholders(view)


async def test_handles_survive_resume():
    manager, view = await compacted("amplifier")
    handles = placeholders(view)
    stored = await manager.get_messages()
    resumed = create_manager({"max_tokens": BUDGET}, store=manager.store)
    await resumed.set_messages(stored)
    again = await resumed.get_messages_for_request()
    assert placeholders(again) == handles
    tool = RecallTool(resumed)
    for handle in handles[:3]:
        result = await tool.execute({"operation": "fetch", "handle": handle})
        assert result.success and result.output["text"].startswith("SECRET-TOKEN-")


async def test_a_huge_output_is_fetched_in_pages():
    huge = "".join(f"line {i:06d} of the enormous build log\n" for i in range(8_000))  # ~300k chars
    assert len(huge) > 300_000
    history = [
        {"role": "user", "content": "Build everything."},
        tool_call("anthropic", "toolu_big", "Bash", {"command": "make all"}),
        tool_result("anthropic", "toolu_big", huge),
        {"role": "assistant", "content": "Built."},
    ]
    for t in range(12):
        history += tool_session("anthropic", 1)[1:] if t else []
        history.append({"role": "user", "content": f"Next step {t}."})
        history.append({"role": "assistant", "content": f"Step {t} done."})
    manager = create_manager({"max_tokens": BUDGET, "mask_keep_recent": 0})
    await replay(manager, history, FakeProvider(), budget=BUDGET)
    tool = RecallTool(manager)
    hits = (await tool.execute({"operation": "search", "query": "line 004000"})).output["results"]
    assert hits and len(hits[0]["excerpt"]) < 400
    handle = hits[0]["handle"]
    pages, offset = [], 0
    while offset is not None:
        out = (await tool.execute({"operation": "fetch", "handle": handle, "offset": offset})).output
        assert len(out["text"]) <= PAGE_CHARS and out["total_chars"] == len(huge)
        pages.append(out["text"])
        offset = out["next_offset"]
    assert "".join(pages) == huge and len(pages) == -(-len(huge) // PAGE_CHARS)
    past = await tool.execute({"operation": "fetch", "handle": handle, "offset": len(huge) + 1})
    assert not past.success and "past the end" in past.error["message"]


async def test_foreign_forged_and_malformed_handles_are_refused_clearly():
    manager, view = await compacted("openai")
    handle = placeholders(view)[0]
    other, other_view = await compacted("anthropic")
    tool = RecallTool(manager)
    foreign = next(h for h in placeholders(other_view) if h not in placeholders(view))
    index, checksum = handle.rsplit("-", 1)
    forged = f"{index}-{'0' if checksum[0] != '0' else '1'}{checksum[1:]}"
    for bad, words in (
        (foreign, "does not belong to this session"),
        (forged, "checksum mismatch"),
        ("m999999-abcdef", "does not belong to this session"),
        ("../etc/passwd", "is not a handle"),
    ):
        result = await tool.execute({"operation": "fetch", "handle": bad})
        assert not result.success and words in result.error["message"], (bad, result.error)
    for bad_input, words in (
        ({"operation": "delete"}, "operation must be"),
        ({"operation": "fetch"}, "needs a 'handle'"),
        ({"operation": "fetch", "handle": handle, "offset": -1}, "'offset' must be"),
        ({"operation": "search"}, "non-empty 'query'"),
        ({"operation": "search", "query": "x", "max_results": 0}, "'max_results' must be"),
        ({"operation": "search", "query": "x" * 501}, "at most 500"),
    ):
        result = await tool.execute(bad_input)
        assert not result.success and words in result.error["message"], bad_input


async def test_regex_search_invalid_pattern_and_time_budget():
    manager, _ = await compacted("anthropic")
    tool = RecallTool(manager)
    found = (await tool.execute({"operation": "search", "query": r"secret-token-\d+\n", "regex": True})).output
    assert found["results"] and len(found["results"]) <= 10 and not found["complete"]
    total = sum(len(h["excerpt"]) for h in found["results"])
    assert total <= SEARCH_OUTPUT_CHARS
    many = (await tool.execute({"operation": "search", "query": "collected", "max_results": 50})).output
    assert sum(len(h["excerpt"]) for h in many["results"]) <= SEARCH_OUTPUT_CHARS and "budget" in many["note"]

    invalid = await tool.execute({"operation": "search", "query": "(unclosed", "regex": True})
    assert not invalid.success and "invalid regular expression" in invalid.error["message"]
    literal = await tool.execute({"operation": "search", "query": "(unclosed"})
    assert literal.success  # plain text is never a pattern

    slow = RecallTool(manager, search_seconds=0.05)
    result = await slow.execute({"operation": "search", "query": r"(.*e){40}x", "regex": True})
    assert result.success and not result.output["complete"] and "time budget" in result.output["note"]


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["summarize", "mask", "truncate"])
async def test_views_stay_valid_and_within_budget_with_the_tool_on_or_off(strategy):
    history = mixed_history(60)
    for recall in (True, False):
        manager = create_manager({"max_tokens": BUDGET, "compaction_strategy": strategy, "recall_tool": recall})
        views = await replay(manager, history, FakeProvider(), budget=BUDGET)  # checks validity and the budget
        assert views and manager.state.tail_start > 0
        tool = RecallTool(manager)
        assert (await tool.execute({"operation": "search", "query": "Request 0"})).output["results"]


async def test_the_oracle_recall_row_gets_back_what_the_view_lost_and_charges_its_tokens():
    from amplifier_module_context_summarize.evaluation.loader import Probe
    from amplifier_module_context_summarize.evaluation.runner import score_view, score_with_recall

    history = [{"role": "user", "content": "Find the failing config key."}]
    for t in range(40):
        output = f"line {t}\n" * 200 + ("the culprit is KEY_ZETA_77 in settings.toml\n" if t == 1 else "")
        history += [
            tool_call("openai", f"c{t}", "bash", {"command": f"cat part{t}.log"}),
            tool_result("openai", f"c{t}", output),
        ]
        history.append({"role": "assistant", "content": f"Read part {t}."})
    manager = create_manager({"max_tokens": 12_000, "summarizer": "extractive"})
    views = await replay(manager, history, None, budget=12_000)
    probe = Probe("p1", len(history) - 1, "artifact", "Which key?", "KEY_ZETA_77", ("KEY_ZETA_77",))
    tokens = manager.counter.count_messages(views[-1])
    plain = score_view(views[-1], probe, tokens)
    recalled = score_with_recall(views[-1], probe, tokens, RecallTool(manager), manager.counter)
    assert plain.key_score == 0.0 and recalled.key_score == 1.0
    assert recalled.view_tokens > tokens


LONE = "\ud83d"
# ------------------------------------------------------------------------------- 2, 11. the recall tool


async def recall_manager(lone: str = "") -> Any:
    """A compacted session whose hidden outputs hold ``lone`` (a lone surrogate, or nothing) and "xxxx"."""
    manager = create_manager({"max_tokens": 6_000})
    history: list[dict[str, Any]] = [{"role": "user", "content": "start"}]
    for t in range(24):
        history.append(tool_call("openai", f"c{t}", "bash", {"command": f"cat f{t}.txt"}, f"Reading {t}{lone}."))
        history.append(tool_result("openai", f"c{t}", f"emoji {lone} cut xxxx\n" + f"line {t}\n" * 300))
    await replay(manager, history, FakeProvider(), budget=6_000)
    assert manager.state.tail_start > 0
    return manager


HOSTILE_PATTERNS = [
    "(?:a{65535}){65535}",
    "(?:x|(?R)){1,100}",
    "(?:x|(?0)){1,100}",
    "(a)(?:x|(?1)){1,100}",
    "(?P<n>a)(?&n){1000}",
    "(?P<n>a)(?P>n)",
    r"(a)\g<1>",
    "(?:xx){e<=3}",
    "((((a{20}){20}){20}){20})",
    "a{1001}",
    "a{99999999999999999999}",
]


@pytest.mark.parametrize("pattern", HOSTILE_PATTERNS)
async def test_a_costly_regex_is_refused_as_an_error_result(pattern: str) -> None:
    tool = RecallTool(await recall_manager())
    result = await tool.execute({"operation": "search", "query": pattern, "regex": True})
    assert isinstance(result, ToolResult) and not result.success
    assert "refused" in result.error["message"]
    result.model_dump_json()


async def test_ordinary_regexes_still_search() -> None:
    tool = RecallTool(await recall_manager())
    for query in [r"line \d+", "(?:x{2}){2}", "x{1,1000}", r"cat f\d\.txt", "(li)(ne)"]:
        result = await tool.execute({"operation": "search", "query": query, "regex": True})
        assert result.success and result.output["results"], query


async def test_memory_errors_while_matching_are_an_error_result(monkeypatch) -> None:
    tool = RecallTool(await recall_manager())

    def exhausted(self: Any, input: dict[str, Any]) -> dict[str, Any]:
        raise MemoryError

    monkeypatch.setattr(RecallTool, "search", exhausted)
    result = await tool.execute({"operation": "search", "query": "x"})
    assert not result.success and "MemoryError" in result.error["message"]


async def test_recall_output_never_carries_a_lone_surrogate() -> None:
    manager = await recall_manager(LONE)
    tool = RecallTool(manager)
    found = await tool.execute({"operation": "search", "query": "emoji"})
    assert found.success and found.output["results"]
    found.model_dump_json()
    by_query = await tool.execute({"operation": "search", "query": f"emoji {LONE}"})
    by_query.model_dump_json()
    handle = found.output["results"][0]["handle"]
    page = await tool.execute({"operation": "fetch", "handle": handle})
    assert page.success and REPLACEMENT in page.output["text"]
    page.model_dump_json()
    refused = await tool.execute({"operation": "fetch", "handle": f"m1-{LONE}"})
    assert not refused.success
    refused.model_dump_json()


# ------------------------------------------------------------------------ 5. regex cost from the parsed pattern


REGEX_EXAMPLES = 300
"""Generated patterns (verbose spaces, newlines, # and (?#…) comments between a group and its count, nesting)."""
FUZZ_EXAMPLES = 300
"""Patterns of random regex punctuation: the check never raises, and what it accepts compiles cheaply."""

BOMBS = [
    "(?x)(?:(?:a{1000}) {1000}) {1000}",  # the 33 characters: 10⁹ items
    "(?:(?:a{1000})(?#c){1000})(?#c){1000}",
    "(?x)(?:(?:a{1000}) # once\n {1000}) # twice\n {1000}",
    "(?x:(?:(?:a{200})\n{200}))",
    "(?x)(?:a{1000})\t{21}",
    "(?x)(?: (?: (?: a {30} ) {30} ) {30} )",
]


@pytest.mark.parametrize("pattern", BOMBS)
async def test_verbose_and_comment_spellings_of_a_bomb_are_refused(pattern: str) -> None:
    problem = pattern_problem(pattern)
    assert problem and f"{MAX_PATTERN_COST:,}" in problem, problem

    tool = RecallTool(await recall_manager())
    result = await tool.execute({"operation": "search", "query": pattern, "regex": True})
    assert not result.success and "regular expression refused" in result.error["message"]


async def test_incompatible_flags_are_an_error_result_not_a_crash() -> None:

    tool = RecallTool(await recall_manager())
    result = await tool.execute({"operation": "search", "query": "(?V1)line", "regex": True})
    assert not result.success and "flags" in result.error["message"]


@st.composite
def regex_trees(draw: Any, depth: int = 0) -> tuple[str, int, str]:
    """(verbose spelling parts, items it unrolls to, a text it matches); spelled with the separators below."""
    if depth >= 3 or draw(st.booleans()):
        letter = draw(st.sampled_from("abcxyz"))
        return letter, 1, letter
    items = draw(st.lists(regex_trees(depth + 1), min_size=1, max_size=3))
    body = "".join(s for s, _, _ in items)
    cost = sum(c for _, c, _ in items)
    text = "".join(t for _, _, t in items)
    if draw(st.booleans()):
        count = draw(st.sampled_from([1, 2, 3, 10, 50, 200, 1000]))
        return f"(?:{body})\x00{{{count}}}", max(cost, 1) * count, text * count
    return f"(?:{body})", cost, text


VERBOSE_GAPS = [" ", "\n", "  # a comment\n", "\t", "(?#note)", " (?#x) "]
PLAIN_GAPS = ["", "(?#note)", "(?#a)(?#b)"]


@settings(max_examples=REGEX_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(regex_trees(), st.sampled_from(["(?x)", "(?x:", ""]), st.data())
def test_generated_patterns_are_judged_by_what_they_unroll_to(tree: tuple[str, int, str], mode: str, data) -> None:
    spelled, cost, text = tree
    gaps = VERBOSE_GAPS if mode else PLAIN_GAPS
    pieces = spelled.split("\x00")
    pattern = pieces[0] + "".join(data.draw(st.sampled_from(gaps)) + piece for piece in pieces[1:])
    pattern = {"(?x)": f"(?x){pattern}", "(?x:": f"(?x:{pattern})", "": pattern}[mode]
    problem = pattern_problem(pattern)
    if cost > MAX_PATTERN_COST:
        assert problem and "unroll" in problem, (pattern, cost)
        return
    assert problem is None, (pattern, cost, problem)
    compiled = regex.compile(pattern, SEARCH_FLAGS)  # cheap: at most MAX_PATTERN_COST items
    assert compiled.fullmatch(text), (pattern, "the spelling does not say what the tree says")


@settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(st.sampled_from(list("(){}?:#x a\n*+|[]\\,0123456789-^$.")), max_size=40))
def test_random_punctuation_never_breaks_the_check(pattern: str) -> None:
    problem = pattern_problem(pattern)
    assert problem is None or isinstance(problem, str)
    if problem is None:  # accepted: it compiles (or is reported invalid), never a bomb
        try:
            compiled = regex.compile(pattern, SEARCH_FLAGS)
        except (regex.error, ValueError):
            return
        compiled.search("xa a\n" * 50, timeout=1.0)


def test_repeat_counts_over_the_limit_are_refused_however_spelled() -> None:
    for pattern in [f"a{{{MAX_REPEAT + 1}}}", f"(?x)a {{{MAX_REPEAT + 1}}}", f"a(?#c){{0,{MAX_REPEAT + 1}}}"]:
        assert "repeat count" in (pattern_problem(pattern) or ""), pattern
