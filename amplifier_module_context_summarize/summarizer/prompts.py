"""Summarizer prompt templates, loaded from files so they can be tuned without touching code.

The wheel ships ``prompts/`` inside the package; a source checkout reads the repository's
``prompts/``; ``prompt_dir`` in the config overrides both.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from string import Template

from ..core.clip import clip_middle
from ..core.messages import (
    CALL_BLOCK_TYPES,
    RESULT_BLOCK_TYPE,
    Message,
    arguments_text,
    block_kind,
    block_text,
    content_hash,
    extra_thinking,
    listed_calls,
    scrub_text,
    unique_content,
)

FENCE_OPEN = "<<<TRANSCRIPT"
FENCE_CLOSE = "TRANSCRIPT>>>"
TEMPLATE_NAMES = ("summarize_system", "summarize_user", "merge_system", "merge_user")

_PACKAGE_DIR = Path(__file__).resolve().parent.parent


def default_prompt_dir() -> Path:
    for candidate in (_PACKAGE_DIR / "prompts", _PACKAGE_DIR.parent / "prompts"):
        if (candidate / "summarize_system.md").is_file():
            return candidate
    raise FileNotFoundError("the packaged summarizer prompts are missing (expected prompts/summarize_system.md)")


@dataclass(frozen=True)
class PromptSet:
    templates: dict[str, str]

    @property
    def version(self) -> str:
        """Changes whenever any template changes, so cached summaries from old prompts are not served."""
        return content_hash(*self.templates.values())[:16]

    def system(self, kind: str) -> str:
        return self.templates[f"{kind}_system"].strip()

    def user(self, kind: str, **values: str) -> str:
        return Template(self.templates[f"{kind}_user"]).safe_substitute(values).strip()


def load_prompts(prompt_dir: str | Path | None = None, names: tuple[str, ...] = TEMPLATE_NAMES) -> PromptSet:
    folder = Path(prompt_dir) if prompt_dir else default_prompt_dir()
    templates = {}
    for name in names:
        path = folder / f"{name}.md"
        if not path.is_file():
            raise ValueError(f"config key 'prompt_dir': {folder} has no {name}.md")
        try:
            templates[name] = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:  # the bare error names neither the file nor the key that chose it
            where = scrub_text(f"{folder}/{name}.md")
            raise ValueError(
                f"config key 'prompt_dir': {where} is not UTF-8 text (invalid byte at offset {exc.start})"
            ) from None
        except OSError as exc:
            raise ValueError(
                f"config key 'prompt_dir': cannot read {scrub_text(str(path))} ({type(exc).__name__})"
            ) from None
    return PromptSet(templates)


def fence_safe(text: str) -> str:
    """Neutralise fence markers inside data so transcript text cannot close the fence early."""
    return text.replace(FENCE_CLOSE, "TRANSCRIPT>\u200b>>").replace(FENCE_OPEN, "<<\u200b<TRANSCRIPT")


def _block_line(block: object) -> str:
    text = block_text(block)
    if not isinstance(block, dict):
        return text
    kind = block_kind(block)
    if kind in CALL_BLOCK_TYPES:
        return f"[tool call {block.get('id', '')}] {text}"
    if kind == RESULT_BLOCK_TYPE:
        ref = block.get("tool_use_id") or block.get("tool_call_id") or ""
        return f"[tool result {ref}{' (error)' if block.get('is_error') else ''}] {text}"
    return text


def render_transcript(messages: list[Message], max_chars_per_message: int = 12_000) -> str:
    """Plain-text transcript of a span: one entry per message, tool traffic labelled, huge outputs clipped."""
    entries: list[str] = []
    for message in messages:
        role = str(message.get("role", "?")).upper()
        if message.get("role") == "tool":
            role = f"TOOL RESULT {message.get('tool_call_id', '')}".strip()
        content = unique_content(message)  # a call stored both as a block and in tool_calls is shown once
        parts = [content] if isinstance(content, str) else [_block_line(b) for b in content or []]
        parts += [f"[tool call {i}] {name}({arguments_text(args)})" for i, name, args in listed_calls(message)]
        if message.get("reasoning_content"):
            parts.append(f"(reasoning) {message['reasoning_content']}")
        thinking = extra_thinking(message)
        if thinking:
            parts.append(f"(reasoning) {block_text(thinking)}")
        body = "\n".join(p for p in parts if p)
        entries.append(f"{role}: {clip_middle(body, max_chars_per_message)}")
    return fence_safe("\n\n".join(entries))
