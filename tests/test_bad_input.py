"""Bad and awkward input: each case is either a clear ``ValueError`` naming the problem, or accepted and handled.

Documented behaviour, case by case:

* not a dict / no role / unknown role / content of a wrong type / a tool call without an id /
  a ``tool`` message without ``tool_call_id``: ``ValueError`` naming the field; nothing is stored.
* duplicate tool-call ids: accepted. Each call is answered inside its own group, a second result for an
  already answered id is an orphan; every view stays valid.
* values JSON cannot hold (datetime, set, bytes, Decimal, objects, non-string keys): accepted; counting,
  hashing, transcripts and summaries work; the stored message is an equal deep copy.
* a 10 MB message: accepted and stored untouched; the view fits the budget by clipping tool output in the
  view copy only (or by summarizing the message once it is no longer the newest).
* bad config values: ``ValueError`` at mount time naming the key (``config key 'name'``).
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from amplifier_core.testing import MockCoordinator

from amplifier_module_context_summarize import create_manager, mount
from amplifier_module_context_summarize.__main__ import main as cli_main
from amplifier_module_context_summarize.config import (
    _NUMBERS,
    _SUMMARIZER_NUMBERS,
    Config,
    SummarizerConfig,
    parse_config,
)
from amplifier_module_context_summarize.core.invariants import check_view
from amplifier_module_context_summarize.testing import (
    FakeProvider,
    mixed_history,
    openai_turn,
    replay,
)

BUDGET = 12_000


def make(config: dict[str, Any] | None = None):
    return create_manager({"max_tokens": BUDGET, **(config or {})})


# ------------------------------------------------------------------------------------------- rejected messages

REJECTED = [
    ("hello", "must be a dict"),
    (["role", "user"], "must be a dict"),
    (None, "must be a dict"),
    (42, "must be a dict"),
    ({"content": "no role"}, "no 'role' field"),
    ({"role": None, "content": "x"}, "no 'role' field"),
    ({"role": "robot", "content": "x"}, "'role' is 'robot'"),
    ({"role": "USER", "content": "x"}, "'role' is 'USER'"),
    ({"role": "user", "content": 42}, "'content' must be"),
    ({"role": "user", "content": {"text": "x"}}, "'content' must be"),
    ({"role": "user", "content": b"bytes"}, "'content' must be"),
    ({"role": "user", "content": ["ok", 7]}, "'content[1]'"),
    (
        {"role": "assistant", "content": None, "tool_calls": [{"type": "function", "function": {"name": "f"}}]},
        "'tool_calls[0]' has no 'id'",
    ),
    (
        {"role": "assistant", "content": None, "tool_calls": [{"id": "", "function": {"name": "f"}}]},
        "'tool_calls[0]' has no 'id'",
    ),
    ({"role": "assistant", "content": None, "tool_calls": {"id": "a"}}, "'tool_calls' must be a list"),
    (
        {"role": "assistant", "content": [{"type": "tool_use", "name": "Bash", "input": {}}]},
        "'content[0]' is a tool_use block without an 'id'",
    ),
    (
        {"role": "assistant", "content": [{"type": "text", "text": "x"}, {"type": "tool_call", "id": None}]},
        "'content[1]' is a tool_call block without an 'id'",
    ),
    ({"role": "tool", "content": "result without a call id"}, "no 'tool_call_id'"),
]


@pytest.mark.parametrize(("message", "problem"), REJECTED, ids=[p for _, p in REJECTED])
async def test_unusable_message_is_rejected_with_a_clear_error(message, problem):
    manager = make()
    await manager.add_message({"role": "user", "content": "before"})
    with pytest.raises(ValueError, match=problem.replace("[", r"\[").replace("]", r"\]")):
        await manager.add_message(message)
    with pytest.raises(ValueError, match=r"messages\[1\]"):
        await manager.set_messages([{"role": "user", "content": "fine"}, message])
    assert await manager.get_messages() == [{"role": "user", "content": "before"}]
    assert await manager.get_messages_for_request(BUDGET) == [{"role": "user", "content": "before"}]


async def test_set_messages_needs_a_list():
    manager = make()
    with pytest.raises(ValueError, match="expects a list"):
        await manager.set_messages({"role": "user", "content": "x"})


@pytest.mark.parametrize("budget", [0, -1, "1000", 10.5, True])
async def test_bad_token_budget_is_named(budget):
    manager = make()
    await manager.add_message({"role": "user", "content": "x"})
    with pytest.raises(ValueError, match="token_budget"):
        await manager.get_messages_for_request(token_budget=budget)


async def test_accepted_odd_but_legal_shapes():
    manager = make()
    for message in [
        {"role": "user", "content": None},
        {"role": "user", "content": ""},
        {"role": "user", "content": []},
        {"role": "developer", "content": "developer note"},
        {"role": "function", "name": "legacy", "content": "legacy function result"},
        {"role": "assistant", "content": "", "reasoning_content": "thinking out loud"},
        {"role": "user", "content": ["bare string block"]},
        {"role": "tool", "content": [{"type": "tool_result", "tool_call_id": "ghost", "output": "orphan"}]},
    ]:
        await manager.add_message(message)
        assert check_view(await manager.get_messages_for_request(BUDGET)) == []


# ------------------------------------------------------------------------------------------- duplicate ids


def _openai_call(call_id: str, n: int = 1) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": "bash", "arguments": "{}"}} for _ in range(n)
        ],
    }


DUPLICATES = {
    "same id in two turns": [
        {"role": "user", "content": "one"},
        _openai_call("call_1"),
        {"role": "tool", "tool_call_id": "call_1", "content": "a"},
        {"role": "user", "content": "two"},
        _openai_call("call_1"),
        {"role": "tool", "tool_call_id": "call_1", "content": "b"},
    ],
    "same id twice in one parallel call": [
        {"role": "user", "content": "go"},
        _openai_call("dup", n=2),
        {"role": "tool", "tool_call_id": "dup", "content": "x"},
    ],
    "two results for one call": [
        {"role": "user", "content": "go"},
        _openai_call("c"),
        {"role": "tool", "tool_call_id": "c", "content": "first"},
        {"role": "tool", "tool_call_id": "c", "content": "again"},
        {"role": "assistant", "content": "done"},
    ],
    "same id across shapes": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "x", "name": "Read", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x", "content": "r1"}]},
        {"role": "assistant", "content": [{"type": "tool_call", "id": "x", "name": "grep", "input": {}}]},
        {
            "role": "tool",
            "tool_call_id": "x",
            "content": [{"type": "tool_result", "tool_call_id": "x", "output": "r2"}],
        },
    ],
    "result arrives before any call with that id": [
        {"role": "user", "content": "go"},
        {"role": "tool", "tool_call_id": "later", "content": "early"},
        _openai_call("later"),
        {"role": "tool", "tool_call_id": "later", "content": "on time"},
    ],
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(DUPLICATES))
async def test_duplicate_tool_call_ids_are_accepted_and_views_stay_valid(name):
    snippet = DUPLICATES[name]
    history = [{"role": "system", "content": "agent"}]
    for i in range(30):  # repeat the awkward snippet between ordinary turns, so it gets compacted too
        history += openai_turn(i, size=10)
        history += snippet
    manager = make()
    views = await replay(manager, history, FakeProvider(), budget=BUDGET)
    for i in range(1, len(history) + 1):  # and a request after every single message of the tail
        if i > len(history) - 12:
            partial = make()
            await partial.set_messages(history[:i])
            view = await partial.get_messages_for_request(BUDGET, FakeProvider())
            assert check_view(view) == []
    assert views and await manager.get_messages() == history


# ------------------------------------------------------------------------------------------- non-JSON values


class Opaque:
    def __init__(self, value: int) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Opaque) and other.value == self.value

    def __repr__(self) -> str:
        return f"Opaque({self.value})"


def odd_values(i: int) -> dict[str, Any]:
    return {
        "when": datetime.datetime(2024, 5, 17, 12, 0, i % 60),
        "tags": {"a", "b", f"t{i}"},
        "frozen": frozenset({1, 2}),
        "raw": b"\x00\xffbytes",
        "price": decimal.Decimal("12.50"),
        "pair": (1, 2),
        "obj": Opaque(i),
        "mixed_keys": {1: "int key", "s": "str key", None: "none key"},
        "tuple_keys": {(1, 2): "tuple key"},
        "nan": float("nan"),
    }


def odd_turn(i: int) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": f"request {i} " + "words " * 200},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hm", "signature": "sig=="},
                {"type": "tool_use", "id": f"t{i}", "name": "Run", "input": odd_values(i)},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": f"t{i}",
                    "content": [
                        {"type": "text", "text": "output " * 300},
                        {"type": "custom", "payload": odd_values(i)},
                    ],
                }
            ],
        },
        {
            "role": "assistant",
            "content": [{"type": "tool_call", "id": f"a{i}", "name": "grep", "input": odd_values(i)}],
        },
        {
            "role": "tool",
            "tool_call_id": f"a{i}",
            "content": [{"type": "tool_result", "tool_call_id": f"a{i}", "output": odd_values(i)}],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": f"o{i}", "type": "function", "function": {"name": "f", "arguments": odd_values(i)}}],
        },
        {"role": "tool", "tool_call_id": f"o{i}", "content": "done " * 100, "extra": odd_values(i)},
    ]


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["summarize", "extractive", "truncate"])
async def test_values_json_cannot_hold_do_not_break_counting_hashing_or_summaries(strategy):
    history = [m for i in range(25) for m in odd_turn(i)]
    manager = make({"max_tokens": 6_000, "compaction_strategy": strategy})
    # A grounded reply: the default fake quotes the transcript's last 200 characters, names cut mid-word included,
    # which the grounding check rightly refuses (and a refused span is asked again on resume).
    provider = FakeProvider(reply="The agent searched with grep again and again; every search finished.")
    views = await replay(manager, history, provider, budget=6_000)
    assert views
    stored = await manager.get_messages()
    assert len(stored) == len(history)
    assert stored[1]["content"][1]["input"]["tags"] == {"a", "b", "t0"}
    assert stored[1]["content"][1]["input"]["obj"] == Opaque(0)
    if strategy == "summarize":
        assert provider.requests and "Run(" in provider.requests[0].messages[1].content
    # The same history hashes the same way: a resumed manager on the same cache needs no provider call.
    resumed = create_manager({"max_tokens": 6_000, "compaction_strategy": strategy}, store=manager.store)
    await resumed.set_messages(history)
    calls = len(provider.requests)
    view = await resumed.get_messages_for_request(6_000, provider)
    assert check_view(view) == []
    if strategy == "summarize":
        assert len(provider.requests) == calls


# ------------------------------------------------------------------------------------------- a 10 MB message

BIG = ("2024-05-17 12:00:00 INFO worker-7 GET /api/v1/items?id=17 200 OK in 12ms\n" * 140_000)[:10_000_000]


def big_results() -> dict[str, list[dict[str, Any]]]:
    return {
        "openai": [_openai_call("big"), {"role": "tool", "tool_call_id": "big", "content": BIG}],
        "anthropic": [
            {"role": "assistant", "content": [{"type": "tool_use", "id": "big", "name": "Read", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "big", "content": BIG}]},
        ],
        "anthropic-blocks": [
            {"role": "assistant", "content": [{"type": "tool_use", "id": "big", "name": "Read", "input": {}}]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "big", "content": [{"type": "text", "text": BIG}]}],
            },
        ],
        "amplifier": [
            {"role": "assistant", "content": [{"type": "tool_call", "id": "big", "name": "cat", "input": {}}]},
            {
                "role": "tool",
                "tool_call_id": "big",
                "content": [{"type": "tool_result", "tool_call_id": "big", "output": {"stdout": BIG, "code": 0}}],
            },
        ],
    }


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["openai", "anthropic", "anthropic-blocks", "amplifier"])
async def test_ten_megabyte_tool_output_is_clipped_in_the_view_only(shape):
    history = [
        {"role": "system", "content": "agent"},
        *mixed_history(3)[1:],
        {"role": "user", "content": "read the big log"},
        *big_results()[shape],
    ]
    manager = make()
    for message in history:
        await manager.add_message(message)
    provider = FakeProvider()
    view = await manager.get_messages_for_request(BUDGET, provider)
    assert check_view(view) == []
    assert manager.counter.count_messages(view) <= BUDGET
    assert {"role": "user", "content": "read the big log"} in view
    assert await manager.get_messages() == history, "storage is untouched"

    # Once the big output is no longer the newest group, it is summarized (its transcript clipped) and fits.
    more = [{"role": "assistant", "content": "The log shows only 200s."}, *mixed_history(2)[1:]]
    for message in more:
        await manager.add_message(message)
    view = await manager.get_messages_for_request(BUDGET, provider)
    assert check_view(view) == [] and manager.counter.count_messages(view) <= BUDGET
    assert all(len(r.messages[1].content) < 1_000_000 for r in provider.requests), "summarizer input is bounded"
    assert (await manager.get_messages())[len(history) - 1] == history[-1]


@pytest.mark.slow
async def test_ten_megabyte_user_message_is_stored_and_summarized_once_older():
    history = [
        {"role": "system", "content": "agent"},
        {"role": "user", "content": BIG},
        {"role": "assistant", "content": "That is a lot of log."},
        {"role": "user", "content": "summarize it"},
    ]
    manager = make()
    for message in history:
        await manager.add_message(message)
    provider = FakeProvider()
    view = await manager.get_messages_for_request(BUDGET, provider)
    assert check_view(view) == [] and manager.counter.count_messages(view) <= BUDGET
    assert view[-1] == {"role": "user", "content": "summarize it"}
    assert (await manager.get_messages())[1]["content"] == BIG


# ------------------------------------------------------------------------------------------- config

BAD_CONFIG: dict[str, list[Any]] = {
    "compaction_strategy": ["fancy", 3, None],
    "max_tokens": [0, -5, "100", 1.5, True],
    "compact_threshold": [0, 1.5, "0.9", True],
    "target_usage": [0, 1.2, 0.95, "half"],
    "preserve_recent_ratio": [-0.1, 1.1, 0.6, None],
    "preserve_system": ["yes", 1, None],
    "safety_margin": [-1, 1.5, "1000"],
    "summary_max_tokens": [8, 0, "2000", 100.5],
    "summary_budget_ratio": [0, 2, "0.2"],
    "summarizer": [42, "gpt", {"provider": "gemini"}, {"unknown": 1}, ["session"]],
    "prompt_dir": ["", 5, "/nonexistent/prompts"],
    "storage_path": ["", 7],
    "cache_max_entries": [0, -1, 2.5],
    "prefetch": ["true", 0],
    "background_compaction": ["false", 1, None],
    "prefetch_threshold": [0, 0.95, 1.5],
    "failure_cooldown_s": [-1, "1", None],
    "token_encoding": ["", 3],
    "compaction_deadline_s": [0, -1, "30"],
    "calibrate_from_usage": ["yes", 1],
    "initial_calibration": [0.2, 3, "1.1"],
    "observation_masking": ["no", 0],
    "mask_min_chars": [50, 1000.5, "1000", True],
    "mask_keep_recent": [-1, 2.5, None],
    "storage_url": ["", 7, "http://cache:6379", "redis://:pw@cache:6379/0", "redis://cache/zero"],
    "storage_password_env": ["", 5, "REDIS_PASSWORD"],  # the last: without storage_url
    "storage_ttl_s": [-1, "60", None],
    "storage_timeout_s": [0, -1, 61, "1"],
    "storage_retry_s": [0, -5, "30"],
    "ledger_share": [-0.1, 0.9, "0.4", True],
    "summary_instructions": ["", "   ", 5, ["keep"], "x" * 20_001, "@/nonexistent/keep.md"],
    "pin_patterns": ["<system-reminder>", [""], [5], {"a": 1}, ["x"] * 51],
    "pin_budget_ratio": [-0.1, 0.6, "0.2", True, float("nan")],
    "preserve_recent_user_turns": [-1, 1.5, "2", True, 101],
    "usage_fractions": ["0.6", [0], [1.2], [True], [float("nan")]],
    "usage_threshold_fractions": [0.5, [-0.1], ["0.9"]],
    "recall_tool": ["yes", 1],
    "notify": ["no", 0],
    "spill_threshold_tokens": [999, 0, "10000", True, 2.5],
    "spill_path": ["", 5, ["spill"]],
    "spill_max_mb": [0, -1, "512", True],
    "spill_max_age_s": [-1, "60", True],
}
BAD_SUMMARIZER: dict[str, list[Any]] = {
    "provider": ["gemini", 1],
    "model": ["", 5],
    "base_url": ["", 5],
    "api_key_env": ["", 5],
    "session_provider": ["", 5],
    "timeout_s": [0, -1, "30"],
    "max_retries": [-1, 50, 1.5],
    "max_output_tokens": [4, "100"],
    "max_input_tokens": [10, 1e9 + 0.5],
    "circuit_failures": [-1, 1.5, "3"],
    "circuit_open_s": [-1, "60"],
    "prompt_cache_ttl_s": [-1, "300"],
}


def test_every_config_key_has_bad_values_here():
    assert set(BAD_CONFIG) == {f.name for f in dataclasses.fields(Config)}
    assert set(BAD_SUMMARIZER) == {f.name for f in dataclasses.fields(SummarizerConfig)}


@pytest.mark.parametrize(("key", "value"), [(k, v) for k, vs in BAD_CONFIG.items() for v in vs])
async def test_bad_config_value_is_named_at_mount_time(key, value):
    with pytest.raises(ValueError, match=rf"config key '{key}(\.\w+)?'"):
        await mount(MockCoordinator(), {key: value})


@pytest.mark.parametrize(("key", "value"), [(k, v) for k, vs in BAD_SUMMARIZER.items() for v in vs])
def test_bad_summarizer_value_is_named(key, value):
    with pytest.raises(ValueError, match=rf"config key 'summarizer\.{key}'"):
        create_manager({"summarizer": {key: value}})


def test_unknown_key_and_non_mapping_config():
    with pytest.raises(ValueError, match="config key 'max_token'.*not a known key"):
        parse_config({"max_token": 1000})
    with pytest.raises(ValueError, match="config must be a mapping"):
        parse_config(["max_tokens", 1000])
    # the key is named also when the module config sits inside a whole mount plan
    with pytest.raises(ValueError, match="config key 'compact_threshold'"):
        parse_config({"session": {"context": {"module": "context-summarize", "config": {"compact_threshold": 2}}}})


async def test_unknown_token_encoding_is_accepted_with_an_estimate():
    manager = make({"token_encoding": "no_such_encoding"})
    await manager.add_message({"role": "user", "content": "hello world " * 100})
    assert 0 < await manager.get_token_count() < 1_000


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


# ---------------------------------------------------------------- smaller: prompts, parallel results, rekey


def test_a_prompt_file_that_is_not_utf8_names_the_key(tmp_path: Path) -> None:
    for name in ("summarize_system", "summarize_user", "merge_system", "merge_user"):
        (tmp_path / f"{name}.md").write_text("$guidance_section $transcript $max_tokens\n" if "user" in name else "x")
    (tmp_path / "merge_user.md").write_bytes(b"caf\xe9 $guidance_section $transcript")
    with pytest.raises(ValueError, match=r"config key 'prompt_dir': .*merge_user\.md is not UTF-8"):
        create_manager({"prompt_dir": str(tmp_path), "summarizer": "extractive"})
