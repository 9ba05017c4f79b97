"""Issue 43, item 1: every packaged prompt template renders with the values the code fills in, leaving no
``$placeholder`` as literal text, and the user's guidance (``summary_instructions`` and a compaction's focus)
reaches every prompt that writes or rewrites a summary — the merge prompt included."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from amplifier_core.models import HookResult
from amplifier_core.testing import MockCoordinator

from amplifier_module_context_summarize import create_manager
from amplifier_module_context_summarize.backends.base import Completion
from amplifier_module_context_summarize.summarizer.prompts import (
    PLACEHOLDERS,
    default_prompt_dir,
    load_prompts,
)
from amplifier_module_context_summarize.summarizer.span import SpanSummarizer, SummarizerSettings
from amplifier_module_context_summarize.testing import FakeProvider, mixed_history, replay

LEFT_OVER = re.compile(r"\$(?:[A-Za-z_]|\{)")
"""A ``$name`` or ``${...}`` still in a rendered prompt: a placeholder the template engine did not fill."""
INSTRUCTIONS = "Always keep ORD-7731"
FOCUS_TEXT = "keep the parser port decisions"


def rendered(name: str) -> str:
    """Template ``name`` as the code renders it, each of its values a marker of its own."""
    prompts = load_prompts(default_prompt_dir(), (name,))
    kind, part = name.rsplit("_", 1)
    if part == "system":
        return prompts.system(kind)
    return prompts.user(kind, **{value: f"<{value.upper()}>" for value in PLACEHOLDERS[name]})


def test_every_packaged_template_is_known_and_renders_without_a_literal_placeholder():
    names = {path.stem for path in Path(default_prompt_dir()).glob("*.md")}
    assert names == set(PLACEHOLDERS), "every packaged template has its placeholders listed (and no listed one is gone)"
    for name in sorted(names):
        text = rendered(name)
        assert not LEFT_OVER.search(text), f"{name}.md leaves {LEFT_OVER.search(text).group(0)!r}… as literal text"
        for value in PLACEHOLDERS[name]:
            assert f"<{value.upper()}>" in text, f"{name}.md never shows ${value}"


def test_the_merge_prompt_starts_with_the_guidance_or_with_its_own_words():
    prompts = load_prompts()
    plain = prompts.user("merge", transcript="T", max_words="90", max_tokens="120")
    assert plain.startswith("Merge these consecutive summaries")
    guided = prompts.user("merge", transcript="T", max_words="90", max_tokens="120", guidance_section="GUIDE\n")
    assert guided.startswith("GUIDE\n") and "\nMerge these consecutive summaries" in guided


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("$guidance_sectionMerge.\n$transcript", r"merge_user\.md has the unknown placeholder \$guidance_sectionM"),
        ("$guidance_section Merge these.", r"merge_user\.md lacks the placeholder \$transcript"),
        ("Merge these.\n$transcript", r"merge_user\.md lacks the placeholder \$guidance_section"),
    ],
)
def test_a_template_that_would_send_a_literal_placeholder_or_drop_the_guidance_is_refused(tmp_path, text, message):
    for path in Path(default_prompt_dir()).glob("*.md"):
        (tmp_path / path.name).write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "merge_user.md").write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=r"config key 'prompt_dir': .*" + message):
        create_manager({"prompt_dir": str(tmp_path), "summarizer": "extractive"})


def test_glued_and_dollar_forms_are_accepted(tmp_path):
    for path in Path(default_prompt_dir()).glob("*.md"):
        (tmp_path / path.name).write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "merge_user.md").write_text("${guidance_section}Merge (costs $$0).\n$transcript", encoding="utf-8")
    prompts = load_prompts(tmp_path)
    assert prompts.user("merge", transcript="T", guidance_section="G ") == "G Merge (costs $0).\nT"


class Recording:
    name = "recording"
    model: str | None = "fake"

    def __init__(self) -> None:
        self.prompts: list[str] = []

    async def complete(self, system: str, prompt: str, max_output_tokens: int, provider: Any = None) -> Completion:
        self.prompts.append(prompt)
        return Completion("### State\n- merged", 5, 5)


async def test_a_merge_prompt_carries_the_instructions_and_the_focus():
    backend = Recording()
    summarizer = SpanSummarizer(backend, load_prompts(), lambda t: len(t) // 4, SummarizerSettings(400, 100_000, 30, 0))
    summarizer.instructions = INSTRUCTIONS
    await summarizer.merge(["### State\n- " + "one " * 200, "### State\n- " + "two " * 200], focus=FOCUS_TEXT)
    [prompt] = backend.prompts
    assert INSTRUCTIONS in prompt and FOCUS_TEXT in prompt
    assert not LEFT_OVER.search(prompt)
    assert prompt.index(FOCUS_TEXT) < prompt.index("Merge these consecutive summaries")


async def test_in_a_session_every_summarize_and_merge_prompt_carries_the_guidance():
    """Merges happen (a small summary room); each prompt the provider gets has the standing instructions and the
    focus a ``context:pre_compact`` hook returned, and no literal placeholder."""

    async def focus(event: str, data: dict[str, Any]) -> HookResult:
        return HookResult(action="modify", data={**data, "focus": FOCUS_TEXT})

    hooks = MockCoordinator().hooks
    hooks.register("context:pre_compact", focus, priority=10, name="focus")
    config = {
        "max_tokens": 8_000,
        "summary_budget_ratio": 0.05,
        "background_compaction": False,
        "summary_instructions": INSTRUCTIONS,
    }
    manager = create_manager(config, hooks=hooks)
    provider = FakeProvider()
    await replay(manager, mixed_history(120), provider, budget=8_000)
    prompts = [str(request.messages[-1].content) for request in provider.requests]
    merges = [p for p in prompts if "Merge these consecutive summaries" in p]
    assert merges and len(merges) < len(prompts), "both summaries and merges were asked for"
    for prompt in prompts:
        assert INSTRUCTIONS in prompt and FOCUS_TEXT in prompt, prompt[:300]
        assert not LEFT_OVER.search(prompt.split("<<<TRANSCRIPT")[0]), prompt[:300]
