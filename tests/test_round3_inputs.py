"""Issue 32, items 5 and 12: what a model's regex or a pasted secret can do to the module.

* A recall regex is judged by the tree the engine parses (verbose spaces, comments, nesting), not its spelling.
* Every config key that names an environment variable refuses a value that is not a name, and no error ever
  repeats such a value (a secret pasted where its variable's name belongs).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amplifier_module_context_summarize import create_manager
from amplifier_module_context_summarize.backends.registry import SummarizerConfig
from amplifier_module_context_summarize.config import ENV_NAME_KEYS, Config, parse_config
from amplifier_module_context_summarize.recall.tool import (
    MAX_PATTERN_COST,
    MAX_REPEAT,
    SEARCH_FLAGS,
    RecallTool,
    pattern_problem,
)
from amplifier_module_context_summarize.stores import MemoryStore
from amplifier_module_context_summarize.stores.redis_settings import RedisSettings
from amplifier_module_context_summarize.stores.redis_store import RedisStore

# ------------------------------------------------------------------------ 12. secrets pasted as variable names

SECRETS = [
    "hunter2-s3cret!pass",
    "sk-ant-api03-AbCdEfGh_1234567890-zyxw",
    "p@ss word with spaces",
    "x" * 129,  # name-shaped but longer than any variable name
    "1LEADING_DIGIT_SECRET",
]


def test_every_key_naming_a_variable_is_known() -> None:
    """Closes the class: a new ``*_env`` key must join ``ENV_NAME_KEYS`` (and so get the check)."""
    found = {f.name for f in dataclasses.fields(Config) if f.name.endswith("_env")}
    found |= {f"summarizer.{f.name}" for f in dataclasses.fields(SummarizerConfig) if f.name.endswith("_env")}
    assert found == set(ENV_NAME_KEYS)


def _config_with(key: str, value: Any) -> dict[str, Any]:
    if key.startswith("summarizer."):
        return {"summarizer": {"provider": "anthropic", key.split(".", 1)[1]: value}}
    return {"storage_url": "redis://127.0.0.1:6379/0", key: value}


@pytest.mark.parametrize("key", ENV_NAME_KEYS)
@pytest.mark.parametrize("secret", SECRETS)
def test_a_secret_pasted_as_a_variable_name_is_refused_without_repeating_it(key: str, secret: str) -> None:
    with pytest.raises(ValueError) as error:
        create_manager(_config_with(key, secret))
    message = str(error.value)
    assert f"config key '{key}'" in message and "name of an environment variable" in message
    assert secret not in message and secret[:8] not in message


@pytest.mark.parametrize("key", ENV_NAME_KEYS)
def test_an_unset_variable_is_named(key: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ACS_TEST_UNSET_VARIABLE", raising=False)
    with pytest.raises(ValueError, match=f"'{key}'.*ACS_TEST_UNSET_VARIABLE"):
        create_manager(_config_with(key, "ACS_TEST_UNSET_VARIABLE"))


@pytest.mark.parametrize("secret", SECRETS)
def test_redis_store_built_directly_never_echoes_its_password_variable(secret: str) -> None:
    settings = RedisSettings("redis://127.0.0.1:6379/0", secret)
    with pytest.raises(ValueError) as error:
        RedisStore(settings, local=MemoryStore(), environ={})
    assert secret not in str(error.value) and "storage_password_env" in str(error.value)


@pytest.mark.parametrize("secret", SECRETS)
def test_config_reprs_never_show_a_pasted_secret(secret: str) -> None:
    shown = repr(Config(storage_password_env=secret, summarizer=SummarizerConfig(api_key_env=secret)))
    shown += repr(RedisSettings("redis://cache/0", secret))
    assert secret not in shown


def test_good_names_still_parse() -> None:
    config = parse_config({"storage_url": "redis://cache/0", "storage_password_env": "REDIS_PW"})
    assert config.storage_password_env == "REDIS_PW"
    assert parse_config({"summarizer": {"api_key_env": "MY_KEY"}}).summarizer.api_key_env == "MY_KEY"


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
    from test_reliability_round2 import recall_manager

    tool = RecallTool(await recall_manager())
    result = await tool.execute({"operation": "search", "query": pattern, "regex": True})
    assert not result.success and "regular expression refused" in result.error["message"]


async def test_incompatible_flags_are_an_error_result_not_a_crash() -> None:
    from test_reliability_round2 import recall_manager

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
