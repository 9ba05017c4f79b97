"""docs/cli.md and docs/evaluation.md say what the commands do: the ``inspect`` excerpt is what ``inspect``
prints, and the strategies ``eval`` compares are the ones it runs."""

from __future__ import annotations

import re
from pathlib import Path

from amplifier_module_context_summarize.__main__ import main
from amplifier_module_context_summarize.evaluation.strategies import STRATEGIES

DOCS = Path(__file__).resolve().parent.parent / "docs"
NUMBERS = {4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight"}


def excerpt_blocks(text: str) -> tuple[str, list[list[str]]]:
    """The command the cli.md excerpt is of, and its lines in blocks split at lines that are only ``…``."""
    command = re.search(r"An excerpt of `(inspect [^`]+)`", text)
    body = re.search(r"^`````markdown\n(.*?)^`````$", text, re.MULTILINE | re.DOTALL)
    assert command and body, "docs/cli.md has no inspect excerpt"
    blocks: list[list[str]] = [[]]
    for line in body.group(1).splitlines():
        if line == "…":
            blocks.append([])
        else:
            blocks[-1].append(line)
    return command.group(1), [b for b in blocks if b]


def matches(blocks: list[list[str]], output: list[str]) -> bool:
    """Each block matches consecutive output lines (``…`` inside a line stands for any text), blocks in order."""
    at = 0
    for block in blocks:
        patterns = [re.compile(".*?".join(map(re.escape, line.split("…")))) for line in block]
        while at + len(block) <= len(output):
            if all(p.fullmatch(output[at + i]) for i, p in enumerate(patterns)):
                at += len(block)
                break
            at += 1
        else:
            return False
    return True


def test_the_inspect_excerpt_is_what_inspect_prints(capsys):
    command, blocks = excerpt_blocks((DOCS / "cli.md").read_text())
    assert main(command.split()) == 0
    output = capsys.readouterr().out.splitlines()
    assert matches(blocks, output), f"docs/cli.md's excerpt of `{command}` no longer matches what it prints"


def test_the_excerpt_checker_catches_a_change():
    blocks = [["## Compaction 2, at message 9", "- view: 1 → …"], ["done"]]
    assert matches(blocks, ["x", "## Compaction 2, at message 9", "- view: 1 → 2 tokens", "y", "done"])
    assert not matches(blocks, ["## Compaction 2, at message 9", "x", "- view: 1 → 2 tokens", "done"])
    assert not matches(blocks, ["## Compaction 2, at message 9", "- view: 3 → 2 tokens", "done"])


def test_the_evaluation_docs_name_every_strategy_and_count_them_right():
    text = (DOCS / "evaluation.md").read_text()
    assert f"through {NUMBERS[len(STRATEGIES)]} strategies" in text
    assert f"(default: all {NUMBERS[len(STRATEGIES)]})" in text
    for name in STRATEGIES:
        assert re.search(rf"^- `{re.escape(name)}`:", text, re.MULTILINE), name
    for number in NUMBERS.values():
        if number != NUMBERS[len(STRATEGIES)]:
            assert f"{number} strategies" not in text and f"all {number})" not in text
