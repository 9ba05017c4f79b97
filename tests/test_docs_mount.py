"""One way to mount the module, stated alike everywhere: the README, every docs page and the behavior file include it
by its local path (it is not published, so no git URL or package-index install of it may appear), and the Python
example in docs/configuration.md mounts it on amplifier-core's own test coordinator as written."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "behaviors" / "context-summarize.yaml"]
INCLUDE = "  - bundle: /path/to/amplifier-module-context-summarize/behaviors/context-summarize.yaml"
"""The one include line (under ``includes:``), as the README gives it."""
ELSEWHERE = re.compile(
    r"(git\+\S*amplifier-module-context-summarize"  # a repository that does not resolve
    r"|github\.com/\S*/amplifier-module-context-summarize"
    r"|pip install\s+[\"']?amplifier-module-context-summarize)"  # an index that does not have it
)


def _includes(text: str) -> list[str]:
    """Every line that includes this module's behavior, whatever the path it names."""
    lines = text.splitlines()
    return [line.lstrip("#").rstrip() for line in lines if "bundle:" in line and "context-summarize" in line]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_page_mounts_it_one_way(page: Path):
    text = page.read_text()
    assert not ELSEWHERE.findall(text), f"{page.name} points at a source the module is not published to"
    for line in _includes(text):
        assert line.strip() == INCLUDE.strip(), f"{page.name}: {line!r}"
    for block in re.findall(r"context:\n((?:[ \t]+.*\n)+)", text):  # a mount plan's context section
        if "context-summarize" in block:
            assert "source:" not in block.split("config:")[0], f"{page.name} gives the module a source"


def test_the_readme_and_the_configuration_page_carry_the_same_snippet():
    for page in (ROOT / "README.md", ROOT / "docs" / "configuration.md"):
        assert f"```yaml\nincludes:\n{INCLUDE}\n```" in page.read_text(), page.name


def test_the_python_mount_example_runs_as_written(capsys):
    """The ``python`` block under "Mounting it", run with amplifier-core's test coordinator (the suite's cache is
    in memory, conftest.py)."""
    text = (ROOT / "docs" / "configuration.md").read_text()
    section = text.split("## Mounting it", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert code is not None and "create_test_coordinator" in code.group(1)
    source = code.group(1).replace("asyncio.run(main())", "")
    namespace: dict = {}
    exec(compile(source, "configuration.md", "exec"), namespace)
    asyncio.run(namespace["main"]())
    assert capsys.readouterr().out.strip() == "SummarizingContextManager 1 message(s) in the view"
