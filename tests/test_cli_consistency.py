"""The command line agrees with itself (issue 45 item 8): ``--version``, one line for any bad argument, ``--json``
with the per-compaction lines, ``inspect --json`` and ``--summarizer``, a description for every subcommand."""

from __future__ import annotations

import json

import pytest

from amplifier_module_context_summarize.__main__ import main


@pytest.fixture(autouse=True)
def no_keys(monkeypatch):
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def test_version(capsys):
    from amplifier_module_context_summarize.cli.args import package_version

    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip().endswith(f" {package_version()}") and package_version() != "unknown"


@pytest.mark.parametrize(
    ("argv", "names"),
    [
        (["compact", "--example", "--budget", "abc"], "--budget"),
        (["inspect", "--example", "--budget", "12q"], "--budget"),
        (["compact"], "--example"),
        (["compact", "--example", "--summarizer", "gpt"], "--summarizer"),
        (["bench", "--sizes", "x"], "--sizes"),
    ],
)
def test_a_bad_argument_is_one_line_and_exit_2(argv, names, capsys):
    """On 0553db5 ``--budget abc`` printed an 8-line usage block where ``--budget 0`` got one line."""
    with pytest.raises(SystemExit) as exited:
        main(argv)
    err = capsys.readouterr().err.strip()
    assert exited.value.code == 2 and len(err.splitlines()) == 1 and names in err and "usage:" not in err


def test_json_carries_one_entry_per_compaction(capsys):
    assert main(["compact", "--example", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    compactions, report = result["compactions"], result["report"]
    assert len(compactions) == report["compactions"] >= 2
    assert [c["loss"] for c in compactions if c["loss"]] == report["losses"]
    assert all(c["token_count"] < c["tokens_before"] for c in compactions)


def test_inspect_has_json_and_summarizer(capsys):
    assert main(["inspect", "--example", "--json", "--summarizer", "extractive"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert main(["compact", "--example", "--json"]) == 0
    compacted = json.loads(capsys.readouterr().out)
    assert found["summarizer"] == "extractive" and found["history_tokens"] == compacted["report"]["history_tokens"]
    assert [c["token_count"] for c in found["compactions"]] == [c["token_count"] for c in compacted["compactions"]]
    assert [c["loss"] for c in found["compactions"]] == compacted["report"]["losses"]
    assert any(c["summary"].startswith("[CONTEXT SUMMARY]") for c in found["compactions"])


def test_inspect_with_an_llm_summarizer_and_no_key_says_which_key(capsys):
    assert main(["inspect", "--example", "--summarizer", "anthropic"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "ANTHROPIC_API_KEY" in err


@pytest.mark.parametrize("command", ["compact", "inspect", "convert", "eval", "bench"])
def test_every_subcommand_has_a_description(command, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    help_text = capsys.readouterr().out
    description = help_text.split("\n\n")[1]
    assert not description.lstrip().startswith(("positional arguments", "options")), help_text[:300]
