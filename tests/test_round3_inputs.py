"""Issue 32, items 5 and 12: what a model's regex or a pasted secret can do to the module.

* A recall regex is judged by the tree the engine parses (verbose spaces, comments, nesting), not its spelling.
* Every config key that names an environment variable refuses a value that is not a name, and no error ever
  repeats such a value (a secret pasted where its variable's name belongs).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from amplifier_module_context_summarize import create_manager
from amplifier_module_context_summarize.backends.registry import SummarizerConfig
from amplifier_module_context_summarize.config import ENV_NAME_KEYS, Config, parse_config
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
