"""The README and docs/: every internal link and anchor resolves; every config key and event is documented."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from amplifier_module_context_summarize import events
from amplifier_module_context_summarize.config import Config

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.M | re.S)
    found: set[str] = set()
    for heading in re.findall(r"^#{1,6} (.+)$", text, re.M):
        slug, n = _slug(heading), 0
        while (f"{slug}-{n}" if n else slug) in found:
            n += 1
        found.add(f"{slug}-{n}" if n else slug)
    return found


def broken_links(path: Path) -> list[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.M | re.S)
    broken = []
    for target in LINK.findall(text):
        if re.match(r"^[a-z]+:", target):
            continue  # http(s), mailto: not checked offline
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if not dest.exists():
            broken.append(f"{path.name}: {target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{path.name}: {target} (no such anchor)")
    return broken


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_internal_links_and_anchors_resolve(page):
    assert broken_links(page) == []


def test_the_checker_catches_a_broken_anchor(tmp_path):
    page = tmp_path / "a.md"
    page.write_text("# Title\n\nsee [x](#nowhere) and [y](b.md) and [z](#title)\n")
    assert broken_links(page) == ["a.md: #nowhere (no such anchor)", "a.md: b.md (no such file)"]


def test_the_docs_have_the_reference_pages_and_the_readme_maps_them():
    readme = (ROOT / "README.md").read_text()
    for name in ("configuration", "events", "recall", "persistence-and-fleets", "evaluation", "performance"):
        assert (ROOT / "docs" / f"{name}.md").is_file()
        assert f"docs/{name}.md" in readme
    assert "docs/architecture.md" in readme
    assert len(readme.splitlines()) < 150


def test_every_config_key_is_documented():
    text = (ROOT / "docs" / "configuration.md").read_text()
    missing = [f.name for f in dataclasses.fields(Config) if f"`{f.name}`" not in text]
    assert missing == []


def test_every_event_is_documented():
    text = (ROOT / "docs" / "events.md").read_text()
    missing = [name for name in events.EMITTED if f"`{name}`" not in text]
    assert missing == []


def test_readme_first_screen_has_the_newcomer_path():
    first = "\n".join((ROOT / "README.md").read_text().splitlines()[:60])
    for needle in ("context-simple", "pip install", "compact --example", "inspect", "[CONTEXT SUMMARY]", "convert"):
        assert needle in first, needle
