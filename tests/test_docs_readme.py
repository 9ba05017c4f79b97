"""The README's quick start is what a newcomer gets (issue 45 item 8): two commands under "Try it in two
commands", the output excerpt is what ``compact --example`` prints, and the README and every docs page state
the default budgets the commands use."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_docs_cli import matches

from amplifier_module_context_summarize.__main__ import main
from amplifier_module_context_summarize.cli.compact import DEFAULT_BUDGET
from amplifier_module_context_summarize.evaluation.cli import DEFAULT_BUDGET as EVAL_BUDGET

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
PAGES = {"README.md": README} | {f"docs/{p.name}": p.read_text() for p in sorted((ROOT / "docs").glob("*.md"))}


def section(text: str, heading: str) -> str:
    return text.partition(f"\n## {heading}\n")[2].partition("\n## ")[0]


def fenced(text: str) -> list[tuple[str, str]]:
    """(language, body) of each fenced block."""
    return re.findall(r"^```(\w*)\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)


def test_try_it_in_two_commands_lists_two():
    """On 0553db5 the block under "Try it in two commands" listed four."""
    blocks = [body for lang, body in fenced(section(README, "Try it in two commands")) if lang == "bash"]
    commands = [line for body in blocks for line in body.splitlines() if line.strip() and not line.startswith("#")]
    assert len(commands) == 2, commands
    assert commands[-1].startswith("context-summarize compact --example")


def test_the_readme_excerpt_is_what_compact_prints(monkeypatch, capsys):
    """On 0553db5 the README showed 13,026 tokens where the command printed 13,021."""
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    [excerpt] = [body for lang, body in fenced(section(README, "Try it in two commands")) if lang == ""]
    blocks: list[list[str]] = [[]]
    for line in excerpt.splitlines():
        if line == "…":
            blocks.append([])
        else:
            blocks[-1].append(line)
    assert main(["compact", "--example"]) == 0
    output = capsys.readouterr().out.splitlines()
    assert matches([b for b in blocks if b], output), "the README's excerpt no longer matches `compact --example`"


STATED = [
    # (pattern, which default it states)
    (r"[Tt]he default budget of `compact` and `inspect` is ([\d,]+) tokens", DEFAULT_BUDGET),
    (r"compact --example[^\n]*at an? ([\d.]+k) budget", DEFAULT_BUDGET),
    (r"`--budget N` \(default ([\d,]+)", EVAL_BUDGET),
    (r"[Tt]he default budget (?:is|of) ([\d,]+k?)", DEFAULT_BUDGET),
]


def tokens(text: str) -> int:
    text = text.replace(",", "")
    return round(float(text[:-1]) * 1_000) if text.endswith("k") else int(text)


@pytest.mark.parametrize("page", sorted(PAGES))
def test_every_page_states_the_defaults_the_commands_use(page):
    """On 0553db5 docs/cli.md said 24,000 where `compact` and `inspect` use 16,000."""
    for pattern, default in STATED:
        for found in re.finditer(pattern, PAGES[page]):
            assert tokens(found.group(1)) == default, f"{page}: {found.group(0)!r} (the command uses {default:,})"


def test_the_defaults_are_stated_where_a_newcomer_reads():
    said = [(pattern, page) for pattern, _ in STATED for page in PAGES if re.search(pattern, PAGES[page])]
    assert {page for _, page in said} >= {"README.md", "docs/cli.md", "docs/evaluation.md"}
