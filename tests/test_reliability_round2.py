"""Reliability round 2 (issue 23): each break found by the second adversarial review, and its class.

* JSON inside a message (tool-call arguments, stringified outputs) nested past the stack is plain text.
* The recall tool bounds what a model's regex may cost (compile and match) and answers in a ``ToolResult``.
* Every regex that reads message content is linear: timed at n and 2n, and against a fixed bound.
* Non-finite and absurdly large numbers are refused at mount, naming the key.
* Unhashable ``role`` / block ``type`` fields are refused naming the field and the message.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import os
import re
import time
from pathlib import Path
from typing import Any

import pytest
from amplifier_core.models import ToolResult

from amplifier_module_context_summarize import RecallTool, create_manager
from amplifier_module_context_summarize.__main__ import main as cli_main
from amplifier_module_context_summarize.cli.session_io import SessionFileError, load_messages, load_session
from amplifier_module_context_summarize.config import (
    _NUMBERS,
    _SUMMARIZER_NUMBERS,
    Config,
    SummarizerConfig,
    parse_config,
)
from amplifier_module_context_summarize.core.budget import request_budget, window_budget
from amplifier_module_context_summarize.core.history import History
from amplifier_module_context_summarize.core.messages import REPLACEMENT
from amplifier_module_context_summarize.stores import CachedSummary, SqliteStore
from amplifier_module_context_summarize.summarizer.extractive import extractive_summary
from amplifier_module_context_summarize.testing import (
    EventRecorder,
    FakeProvider,
    mixed_history,
    replay,
    tool_call,
    tool_result,
)
from amplifier_module_context_summarize.working_set.definitions import names_in
from amplifier_module_context_summarize.working_set.facts import error_line, extract, looks_failed

LONE = "\ud83d"
DEEP = "[" * 3_000 + "]" * 3_000


def deep_call_session(turns: int = 14) -> list[dict[str, Any]]:
    """A session whose first call carries arguments nested 3,000 deep as a JSON string, then ordinary turns."""
    call = {"id": "deep", "type": "function", "function": {"name": "bash", "arguments": DEEP}}
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "start"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "deep", "content": "exit code 0\n" + "x" * 3_000},
    ]
    for i in range(turns):
        messages += [
            {"role": "user", "content": f"step {i} " + "word " * 400},
            tool_call("openai", f"c{i}", "bash", {"command": f"cat f{i}.py"}),
            tool_result("openai", f"c{i}", "line\n" * 600),
        ]
    return messages


# ------------------------------------------------------------------------------- 1. deep JSON in arguments


def test_deep_json_arguments_are_read_as_text_by_the_ledger() -> None:
    call = {"id": "d", "type": "function", "function": {"name": "write_file", "arguments": DEEP}}
    facts = extract([{"role": "assistant", "content": "", "tool_calls": [call]}])
    assert facts.outcomes == ()  # no exception, nothing to read


def test_deep_json_tool_output_is_read_as_text() -> None:
    messages = [
        tool_call("openai", "c", "bash", {"command": "run"}),
        tool_result("openai", "c", "{" + '"a":' * 3_000 + "1" + "}" * 3_000),
    ]
    assert len(extract(messages).outcomes) == 1


@pytest.mark.parametrize("strategy", ["summarize", "mask", "truncate", "extractive"])
async def test_deep_json_arguments_never_brick_a_session(strategy: str) -> None:
    manager = create_manager({"max_tokens": 4_000, "compaction_strategy": strategy, "background_compaction": False})
    views = await replay(manager, deep_call_session(), FakeProvider(), budget=4_000)
    assert len(views[-1]) < len(manager.history.messages)
    resumed = create_manager({"max_tokens": 4_000, "compaction_strategy": strategy, "background_compaction": False})
    await resumed.set_messages(manager.history.messages)
    assert await resumed.get_messages_for_request(provider=FakeProvider())


# ------------------------------------------------------------------------------- 3. linear regexes


def seconds(fn: Any, *args: Any) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def outcome_of(output: str) -> Any:
    return extract([tool_call("openai", "c", "bash", {"command": "make"}), tool_result("openai", "c", output)])


def command_facts(command: str) -> Any:
    return extract([tool_call("openai", "c", "bash", {"command": command})])


def definitions_of(code: str) -> Any:
    return names_in(code, "a.py")


PATHOLOGICAL: list[tuple[str, Any, Any]] = [
    ("exit code + spaces", outcome_of, lambda n: "exit code" + " " * n),
    ("exit code + blank lines", outcome_of, lambda n: "exit code" + "\n" * n),
    ("returncode : spaces", looks_failed, lambda n: "returncode" + " " * n + ":" + " " * n + "x"),
    ("error line of exit codes", error_line, lambda n: ("exit code " + " " * 50 + "\n") * (n // 60)),
    ("commit lines without ')'", outcome_of, lambda n: "[main (x\n" * (n // 9)),
    ("blank .py lines", definitions_of, lambda n: "\n" * n),
    ("indented .py lines", definitions_of, lambda n: ("    " + "\n") * (n // 5) + "x"),
    ("java modifiers", lambda t: names_in(t, "A.java"), lambda n: ("public " * 50 + "a " * 100 + "\n") * (n // 550)),
    ("java spaces", lambda t: names_in(t, "A.java"), lambda n: ("public a" + " " * 390 + "b\n") * (n // 400)),
    ("shell trailing blanks", lambda t: names_in(t, "a.sh"), lambda n: ("f()" + " " * 390 + "x\n") * (n // 395)),
    ("js function blanks", lambda t: names_in(t, "a.js"), lambda n: ("function" + " " * 390 + "!\n") * (n // 400)),
    ("js unclosed params", lambda t: names_in(t, "a.js"), lambda n: "const a = (\n" * (n // 12)),
    ("pipes into head", command_facts, lambda n: "x" + " | head" * (n // 7)),
    ("PR and spaces", outcome_of, lambda n: ("PR" + " " * 98 + "\n") * (n // 100)),
    ("short ids", outcome_of, lambda n: "ab-" + "1a" * (n // 2) + "-"),
    ("exit code of n digits", outcome_of, lambda n: "exit code: " + "7" * n),
    ("recorded returncode of n digits", outcome_of, lambda n: "<returncode>" + "1" * n + "</returncode>"),
    ("Gemini exit code of n digits", outcome_of, lambda n: "Error: (none)\nExit Code: " + "0" * n),
    ("one long shell word", command_facts, lambda n: "echo " + "a" * n),
    ("an unclosed heredoc quote", command_facts, lambda n: "cat <<'" + "a" * n),
    ("a Windows path of n segments", command_facts, lambda n: "type " + "a\\" * (n // 2)),
]


@pytest.mark.parametrize(("name", "fn", "make_text"), PATHOLOGICAL, ids=[p[0] for p in PATHOLOGICAL])
def test_regexes_over_message_content_are_linear(name: str, fn: Any, make_text: Any) -> None:
    small, large = make_text(50_000), make_text(100_000)
    fn(small)  # warm up
    t_small = min(seconds(fn, small) for _ in range(2))
    t_large = min(seconds(fn, large) for _ in range(2))
    assert t_large < 1.0, f"{name}: {t_large:.2f}s for 100k characters"
    assert t_large < 3 * t_small + 0.05, f"{name}: {t_small:.3f}s at 50k, {t_large:.3f}s at 100k"


def test_extractive_summary_of_pathological_text_is_fast() -> None:
    messages = [
        {"role": "user", "content": "now " * 25_000},
        {"role": "assistant", "content": "exit code" + " " * 50_000},
        tool_call("openai", "c", "bash", {"command": "x" + " | head" * 10_000}),
        tool_result("openai", "c", "[main (x\n" * 10_000),
    ]
    elapsed = seconds(lambda: extractive_summary(messages, previous_summary=None, max_tokens=2_000, count_tokens=len))
    assert elapsed < 2.0


def test_definitions_still_read_one_line_heads() -> None:
    code = "class A:\n\n\n    def b(self):\n        pass\nasync def c():\n"
    assert names_in(code, "a.py") == ["A", "b", "c"]
    java = "public class A {\n  public static <T> List<T> items(int n) {\n  protected Map<String, Integer> m (\n"
    assert names_in(java, "A.java") == ["A", "items", "m"]
    assert names_in("f() {\n}\ng()  \n", "a.sh") == ["f", "g"]


def test_exit_codes_still_read() -> None:
    cases = [("exit code: 3", True), ("exit code 0", False), ('"returncode": 2', True), ("exit status=1", True)]
    for text, code in [*cases, ("exit code: 0", False), ("exit code  =  7", True)]:
        assert looks_failed(text) is code, text


def test_deep_json_payload_is_json() -> None:
    with pytest.raises(RecursionError):
        json.loads(DEEP)


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


# ------------------------------------------------------------------------------- 5. extreme numbers in config


def numeric_keys() -> list[str]:
    """Every numeric key of the config and of its ``summarizer`` mapping, read from the dataclasses."""
    keys = [f.name for f in dataclasses.fields(Config) if re.search(r"\b(int|float)\b", str(f.type))]
    keys += [f"summarizer.{f.name}" for f in dataclasses.fields(SummarizerConfig) if "int" in str(f.type)]
    keys += [f"summarizer.{f.name}" for f in dataclasses.fields(SummarizerConfig) if "float" in str(f.type)]
    return keys


def config_with(key: str, value: Any) -> dict[str, Any]:
    if key.startswith("summarizer."):
        return {"summarizer": {"provider": "extractive", key.split(".", 1)[1]: value}}
    return {key: value}


EXTREMES = [math.nan, math.inf, -math.inf, 10**400, 1e300, 10**13]


def test_every_numeric_key_is_checked() -> None:
    assert len(numeric_keys()) >= 24
    for key in numeric_keys():
        assert key in _NUMBERS or key.split(".", 1)[1] in _SUMMARIZER_NUMBERS, key


@pytest.mark.parametrize("key", numeric_keys())
@pytest.mark.parametrize("value", EXTREMES, ids=["nan", "inf", "-inf", "10**400", "1e300", "10**13"])
def test_non_finite_and_huge_numbers_are_refused_naming_the_key(key: str, value: Any) -> None:
    with pytest.raises(ValueError, match=re.escape(f"config key '{key}'")):
        parse_config(config_with(key, value))


async def test_a_huge_token_budget_is_refused_clearly() -> None:
    manager = create_manager({})
    await manager.add_message({"role": "user", "content": "hi"})
    with pytest.raises(ValueError, match="token_budget must be at most"):
        await manager.get_messages_for_request(token_budget=10**400)
    assert await manager.get_messages_for_request(token_budget=10**12)


@pytest.mark.parametrize("command", ["inspect", "compact"])
@pytest.mark.parametrize("budget", ["1" + "0" * 400, str(10**12 + 1), "0"])
def test_the_cli_refuses_a_huge_budget_in_one_line(command: str, budget: str, capsys) -> None:
    assert cli_main([command, "--example", "--budget", budget]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--budget must be a whole number of tokens" in err


def test_the_cli_refuses_a_budget_that_is_no_integer(capsys) -> None:
    with pytest.raises(SystemExit) as exit:
        cli_main(["inspect", "--example", "--budget", "1e400"])
    assert exit.value.code == 2


# ------------------------------------------------------------------------------- 7. unhashable fields


UNHASHABLE: list[tuple[dict[str, Any], str]] = [
    ({"role": ["user"], "content": "x"}, "'role'"),
    ({"role": {"a": 1}, "content": "x"}, "'role'"),
    ({"role": "user", "content": [{"type": ["text"], "text": "x"}]}, "'content[0].type'"),
    ({"role": "assistant", "content": [{"type": {"k": "tool_use"}, "id": "a"}]}, "'content[0].type'"),
    (
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": [{"type": ["text"]}]}]},
        "'content[0].content[0].type'",
    ),
    (
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "x"},
                {"type": "tool_result", "tool_use_id": "a", "output": [{"type": "text"}, {"type": [1]}]},
            ],
        },
        "'content[1].output[1].type'",
    ),
    ({"role": "assistant", "content": "x", "thinking_block": {"type": ["thinking"]}}, "'thinking_block.type'"),
]


@pytest.mark.parametrize(("message", "field"), UNHASHABLE)
async def test_unhashable_role_or_type_is_refused_naming_field_and_index(message: dict[str, Any], field: str) -> None:
    manager = create_manager({})
    await manager.add_message({"role": "user", "content": "before"})
    with pytest.raises(ValueError, match=re.escape("messages[1]: ") + ".*" + re.escape(field)):
        await manager.add_message(message)
    with pytest.raises(ValueError, match=re.escape("messages[2]: ") + ".*" + re.escape(field)):
        await manager.set_messages([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}, message])
    assert await manager.get_messages() == [{"role": "user", "content": "before"}]


@pytest.mark.parametrize(("message", "field"), UNHASHABLE)
def test_the_cli_names_file_and_line_of_an_unhashable_field(message: dict[str, Any], field: str, tmp_path, capsys):
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps({"role": "user", "content": "hi"}) + "\n" + json.dumps(message) + "\n")
    # A file with a readable message is read (issue 35): the bad line is skipped, named by file, line and field.
    assert cli_main(["inspect", str(path)]) == 0
    err = capsys.readouterr().err
    assert f"warning: {path}:2: skipped: " in err and field in err and err.count("\n") == 1
    path.write_text(json.dumps(message) + "\n")  # nothing readable: refused, naming the same
    assert cli_main(["inspect", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:1" in err and field in err and err.count("\n") == 1


async def test_a_type_of_any_kind_inside_tool_arguments_is_data() -> None:
    args = [{"type": ["string", "null"]}, {"type": {"a": 1}}]
    manager = create_manager({"max_tokens": 4_000})
    history = [{"role": "user", "content": "go"}]
    for i in range(12):
        history.append(
            {"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": "schema", "input": args}]}
        )
        history.append(
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "ok " * 400}]}
        )
    views = await replay(manager, history, FakeProvider(), budget=4_000)
    assert views[-1]


# ------------------------------------------------------------------------------- 4. windows without room


@pytest.mark.parametrize(
    ("window", "output", "expected"),
    [(32_768, 32_768, 23_576), (8_192, 7_500, 5_144), (8_192, None, 5_144), (200_000, 8_000, 191_000)],
)
async def test_the_budget_never_exceeds_a_reported_window(window: int, output: int | None, expected: int) -> None:
    provider = FakeProvider(context_window=window, max_output_tokens=output)
    assert await request_budget(None, provider, 1_000, None, 200_000) == expected
    manager = create_manager({})
    for message in mixed_history(60):
        await manager.add_message(message)
    view = await manager.get_messages_for_request(provider=provider)
    assert manager.counter.count_messages(view) <= window


@pytest.mark.parametrize("window", [1, 2, 3, 10, 1_000, 4_000, 10**12])
@pytest.mark.parametrize("output", [None, 1, 500, 4_000, 10**12])
@pytest.mark.parametrize("margin", [0, 1_000, 10**6])
def test_window_budget_is_positive_and_inside_the_window(window: int, output: int | None, margin: int) -> None:
    assert 1 <= window_budget(window, output, margin) <= window


# ------------------------------------------------------------------------------- 6. inspect and surrogates


def surrogate_session(path: Path) -> Path:
    messages = [{"role": "user", "content": f"emoji {LONE} cut"}]
    for i in range(30):
        messages.append(tool_call("openai", f"c{i}", "bash", {"command": f"cat {LONE}{i}.txt"}, f"Reading {LONE}"))
        messages.append(tool_result("openai", f"c{i}", f"half {LONE} an emoji\n" + "row\n" * 400))
    path.write_text("\n".join(json.dumps(m) for m in messages) + "\n")
    return path


@pytest.mark.parametrize("name", ["s.jsonl", "s\udcff.jsonl"], ids=["utf8-name", "non-utf8-name"])
def test_inspect_prints_and_writes_html_for_lone_surrogates(name: str, tmp_path: Path, capsys) -> None:
    session = surrogate_session(Path(os.fsdecode(os.fsencode(tmp_path)) + "/" + name))
    html = tmp_path / "out.html"
    assert cli_main(["inspect", "--budget", "4000", str(session)]) == 0
    out = capsys.readouterr().out
    assert REPLACEMENT in out and "\ud83d" not in out
    out.encode("utf-8")
    assert cli_main(["inspect", "--budget", "4000", "--html", str(html), str(session)]) == 0
    text = html.read_text(encoding="utf-8")
    assert REPLACEMENT in text and text.rstrip().endswith("</html>")


# ------------------------------------------------------------------------------- 8. loading a JSON array


def test_loading_a_json_array_is_linear(tmp_path: Path) -> None:
    def load(count: int) -> float:
        path = tmp_path / f"a{count}.json"
        path.write_text(
            "[\n" + ",\n".join(json.dumps({"role": "user", "content": f"m{i}"}) for i in range(count)) + "\n]"
        )
        start = time.perf_counter()
        messages = load_messages(path)
        assert len(messages) == count
        return time.perf_counter() - start

    load(1_000)
    small, large = min(load(6_000) for _ in range(2)), min(load(24_000) for _ in range(2))
    assert large < 8 * small + 0.05, f"{small:.3f}s for 6,000 messages, {large:.3f}s for 24,000"


def test_array_elements_keep_their_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_text('[\n{"role": "user", "content": "a"},\n\n{"role": "user", "content": "b"},\n{"role": 3}\n]')
    loaded = load_session(path)  # read, the bad element skipped and named by its line (issue 35)
    assert [m["content"] for m in loaded.messages] == ["a", "b"] and [line for line, _ in loaded.skipped] == [5]
    path.write_text('[\n\n{"role": 3}\n]')
    with pytest.raises(SessionFileError, match=r"a\.json:3: "):
        load_messages(path)


# ------------------------------------------------------------------------------- 10. the SQLite LRU and the clock


class SteppedClock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def summary(i: int, kind: str) -> CachedSummary:
    return CachedSummary(f"{kind}{i}", f"e{i}", f"summary {kind} {i}", 5, 2, 0)


@pytest.mark.parametrize("step_back", [5_000.0, 10.0, 1e9])
async def test_sqlite_lru_survives_the_clock_stepping_back(tmp_path: Path, step_back: float) -> None:
    clock = SteppedClock(1_700_000_000.0)
    async with SqliteStore(tmp_path / "s.sqlite", max_entries=10, clock=clock) as store:
        for i in range(10):
            await store.put(summary(i, "stale"))
        clock.now -= step_back  # NTP correction, or a VM restored from a snapshot
        await store.put(summary(0, "fresh"))
        for i in range(1, 10):
            assert await store.get("fresh0", "e0") is not None  # hits keep it the most recently used
            await store.put(summary(i, "fresh"))
        fresh = [i for i in range(10) if await store.get(f"fresh{i}", f"e{i}") is not None]
        stale = [i for i in range(10) if await store.get(f"stale{i}", f"e{i}") is not None]
    assert fresh == list(range(10)) and stale == [], (fresh, stale)


async def test_sqlite_lru_reads_stamps_of_a_file_written_before(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    async with SqliteStore(path, max_entries=10, clock=lambda: 1_800_000_000.0) as store:  # a fast clock
        for i in range(10):
            await store.put(summary(i, "old"))
    clock = SteppedClock(1_700_000_000.0)
    async with SqliteStore(path, max_entries=10, clock=clock) as store:
        for i in range(5):
            await store.put(summary(i, "new"))
        assert all([await store.get(f"new{i}", f"e{i}") for i in range(5)])
        assert await store.count() <= 10


# ------------------------------------------------------------------------------- 9. a flight orphaned by its loop


class NeverAnswers(FakeProvider):
    """A session provider whose summaries never come back (the loop is closed under them)."""

    async def complete(self, request: Any, **kwargs: Any) -> Any:
        self.requests.append(request)
        await asyncio.Event().wait()


def heavy_turns(start: int, count: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(start, start + count):
        out += [
            {"role": "user", "content": f"Look at file {i}. " + "Please read it carefully. " * 40},
            tool_call("openai", f"c{i}", "bash", {"command": f"cat src/f{i}.py"}),
            tool_result("openai", f"c{i}", f"line {i} of the file\n" * 60),
            {"role": "assistant", "content": f"File {i} is fine."},
        ]
    return out


@pytest.mark.parametrize("prefetch", [False, True])
def test_a_flight_orphaned_by_a_closed_loop_is_dropped(prefetch: bool) -> None:
    config = {"max_tokens": 6_000, "observation_masking": False, "compaction_deadline_s": 20, "prefetch": prefetch}
    manager = create_manager(config)
    provider = NeverAnswers()

    async def until_in_flight() -> bool:
        for message in heavy_turns(0, 40):
            await manager.add_message(message)
            await manager.get_messages_for_request(provider=provider)
            if manager.background.running or manager.prefetcher.busy:
                return True
        return False

    loop = asyncio.new_event_loop()
    try:
        assert loop.run_until_complete(until_in_flight())
    finally:
        loop.close()  # without cancelling the flight's task

    async def go_on() -> tuple[float, list[dict[str, Any]]]:
        longest, view = 0.0, []
        for message in heavy_turns(40, 30):
            await manager.add_message(message)
            began = time.monotonic()
            view = await manager.get_messages_for_request(provider=FakeProvider())
            longest = max(longest, time.monotonic() - began)
        return longest, view

    longest, view = asyncio.run(go_on())
    assert longest < 5.0 and manager.counter.count_messages(view) <= 6_000


# ---------------------------------------------------------------- smaller: prompts, parallel results, rekey


def test_a_prompt_file_that_is_not_utf8_names_the_key(tmp_path: Path) -> None:
    for name in ("summarize_system", "summarize_user", "merge_system", "merge_user"):
        (tmp_path / f"{name}.md").write_text("{transcript} {previous_summary} {max_tokens}\n")
    (tmp_path / "merge_user.md").write_bytes(b"caf\xe9 {transcript}")
    with pytest.raises(ValueError, match=r"config key 'prompt_dir': .*merge_user\.md is not UTF-8"):
        create_manager({"prompt_dir": str(tmp_path), "summarizer": "extractive"})


async def test_parallel_tool_results_are_added_in_linear_time() -> None:
    async def add(count: int) -> float:
        manager = create_manager({})
        calls = [
            {"id": f"c{i}", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}
            for i in range(count)
        ]
        await manager.add_message({"role": "user", "content": "go"})
        await manager.add_message({"role": "assistant", "content": "", "tool_calls": calls})
        began = time.perf_counter()
        for i in range(count):
            await manager.add_message({"role": "tool", "tool_call_id": f"c{i}", "content": f"result {i}"})
        view = await manager.get_messages_for_request()
        assert len(view) == count + 2 and manager.history.total == manager.counter.count_messages(view)
        return time.perf_counter() - began

    await add(100)
    small, large = await add(1_000), await add(2_000)
    assert large < 1.0 and large < 4 * small + 0.05, f"{small:.3f}s for 1,000 results, {large:.3f}s for 2,000"


def test_the_open_group_counts_as_shown_whenever_read() -> None:
    history = History(create_manager({}).counter, "f")
    call = tool_call("openai", "a", "bash", {"command": "ls"})
    call["tool_calls"].append({"id": "b", "type": "function", "function": {"name": "x", "arguments": "{}"}})
    for message in [{"role": "user", "content": "go"}, call, tool_result("openai", "a", "one")]:
        history.append(message)
        shown = [m for g in range(len(history.groups)) for m in history.shown(g)]
        assert history.total == history.counter.count_messages(shown)
    history.append({"role": "user", "content": "next"})  # closes the group with call b never answered
    shown = [m for g in range(len(history.groups)) for m in history.shown(g)]
    assert history.total == history.counter.count_messages(shown)


class SwitchingModel(NeverAnswers):
    default_model = "model-a"


async def test_a_summary_in_flight_when_the_default_model_changes_is_cancelled() -> None:
    recorder = EventRecorder()
    manager = create_manager({"max_tokens": 6_000, "observation_masking": False}, hooks=recorder)
    provider = SwitchingModel()
    for message in heavy_turns(0, 40):
        await manager.add_message(message)
        await manager.get_messages_for_request(provider=provider)
        if manager.background.running:
            break
    assert manager.background.running
    before = manager.fingerprint
    provider.default_model = "model-b"
    await manager.add_message({"role": "user", "content": "and now?"})
    await manager.get_messages_for_request(provider=provider)
    assert manager.fingerprint != before
    reasons = [data.get("reason") for _, data in recorder.get_events("context:background_compaction")]
    assert "rekeyed" in reasons
    await manager.clear()
