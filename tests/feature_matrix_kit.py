"""What the feature matrix (``test_feature_matrix.py``) drives and measures: a summarizer that does what the user's
guidance asks (as a provider in the session, as a direct backend, and writing for the stand-in of Anthropic's own
compaction behind ``summarizer.provider: native``), the tokenizer's work, and the views' strings.

The guided model keeps, from everything fenced as transcript or summaries (or from the conversation, when asked in
the session's own context), each sentence naming an id the guidance names (``ORD-7731``): a model that follows the
guidance it is sent. So a fact the guidance asks for is lost exactly when the guidance did not reach the prompt.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from amplifier_core.message_models import ChatRequest, ChatResponse, TextBlock, Usage
from amplifier_core.models import ProviderInfo

from amplifier_module_context_summarize.backends.base import Completion
from amplifier_module_context_summarize.backends.registry import SummarizerConfig, build_backend
from amplifier_module_context_summarize.core import tokens as tokens_module
from amplifier_module_context_summarize.core.messages import scrub_text
from amplifier_module_context_summarize.spill.preview import MARKER as SPILL_MARKER
from amplifier_module_context_summarize.testing.native_standins import AnthropicCompactionStandIn, http_client
from amplifier_module_context_summarize.testing.providers import in_context_summary

NAMED_ID = re.compile(r"\b[A-Z]{3}-\d{4}\b")
FENCE = re.compile(r"<<<TRANSCRIPT\n?(.*?)TRANSCRIPT>>>", re.S)
SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
MARKUP = re.compile(r"[\[\]#<>]")


@dataclass
class Call:
    """One summarizer call as the model received it: the guidance (everything outside the fences) and the span."""

    guidance: str
    span: str
    merge: bool


@dataclass
class GuidedModel:
    """Writes grounded summaries (the span's own words) keeping what the guidance names; can stall.

    ``stall_every``: every n-th call stalls ``stall_s`` virtual seconds; with ``swallow`` a cancelled stall is
    caught and the call goes on for ``stall_s`` more (a provider SDK that swallows ``CancelledError``)."""

    stall_every: int = 0
    stall_s: float = 0.0
    swallow: bool = False
    calls: list[Call] = field(default_factory=list)

    async def write(self, guidance: str, span: str, merge: bool) -> str:
        self.calls.append(Call(guidance, span, merge))
        if self.stall_every and len(self.calls) % self.stall_every == 0:
            try:
                await asyncio.sleep(self.stall_s)
            except asyncio.CancelledError:
                if not self.swallow:
                    raise
                await asyncio.sleep(self.stall_s)
        names = set(NAMED_ID.findall(guidance))
        kept = [s for s in SENTENCE_END.split(span) if names and any(n in s for n in names)]
        head = " ".join([w for w in span.split() if not MARKUP.search(w)][:30])  # a model writes no markup
        return "\n".join(["### Progress", head, *dict.fromkeys(kept)])


def split_prompt(prompt: str) -> tuple[str, str]:
    """(guidance: the prompt outside its fences, span: the fenced text)."""
    return FENCE.sub(" ", prompt), "\n".join(FENCE.findall(prompt))


class GuidedBackend:
    """A direct ``Backend`` (``create_manager(backend=...)``) over the guided model."""

    name = "guided-direct"
    model = "guided-1"

    def __init__(self, model: GuidedModel) -> None:
        self.guided = model

    async def complete(
        self, system: str, prompt: str, max_output_tokens: int, provider: Any | None = None, deadline: Any = None
    ) -> Completion:
        guidance, span = split_prompt(prompt)
        text = await self.guided.write(guidance, span, merge="Merge these" in prompt)
        return Completion(text, len(prompt) // 4, len(text) // 4)


def native_backend(model: GuidedModel) -> Any:
    """``summarizer.provider: native`` through the real anthropic SDK against the compaction stand-in, whose
    summaries the guided model writes from what the request carries (the prompt; the guidance also in
    ``instructions``)."""
    import anthropic

    stand_in = AnthropicCompactionStandIn(GuidedBackend(model))
    config = SummarizerConfig(provider="native", max_retries=0)
    return build_backend(config, http_client=http_client(stand_in, anthropic), environ={"ANTHROPIC_API_KEY": "k"})


class GuidedProvider:
    """The session's own provider (``summarizer: session``), passed with every request; answers summaries only."""

    name = "guided"
    default_model = "guided-1"

    def __init__(self, model: GuidedModel) -> None:
        self.guided = model

    def get_info(self) -> ProviderInfo:
        defaults = {"model": self.default_model, "context_window": 200_000, "max_output_tokens": 8_000}
        return ProviderInfo(id="guided", display_name="Guided", defaults=defaults)

    async def list_models(self) -> list[Any]:
        return []

    def parse_tool_calls(self, response: Any) -> list[Any]:
        return []

    async def complete(self, request: ChatRequest, **kwargs: Any) -> ChatResponse:
        last = str(request.messages[-1].content)
        if in_context_summary(request):
            span = "\n".join(str(m.content) for m in request.messages[:-1] if m.role != "system")
            text = await self.guided.write(last, span, merge=False)
        else:
            guidance, span = split_prompt(last)
            text = await self.guided.write(guidance, span, merge="Merge these" in last)
        return ChatResponse(
            content=[TextBlock(text=text)], usage=Usage(input_tokens=len(last) // 4, output_tokens=20, total_tokens=0)
        )


class Tokenizer:
    """Counts the characters the tokenizer is given (the module's every count goes through it), paused while the
    test counts for itself."""

    def __init__(self) -> None:
        self.chars = 0
        self.paused = False

    @contextmanager
    def installed(self, monkeypatch: pytest.MonkeyPatch, encoding: str = "cl100k_base") -> Iterator[None]:
        inner: Callable[[str], int] = tokens_module.text_counter(encoding)

        def counting(text: str) -> int:
            if not self.paused:
                self.chars += len(text)
            return inner(text)

        monkeypatch.setitem(tokens_module._encoders, encoding, counting)
        yield

    @contextmanager
    def pause(self) -> Iterator[None]:
        self.paused = True
        try:
            yield
        finally:
            self.paused = False


def strings(value: Any) -> list[str]:
    """Every string in a view (keys included): what a provider's serializer encodes."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in strings(k) + strings(v)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in strings(v)]
    return []


def text_chars(message: dict[str, Any]) -> int:
    return sum(len(s) for s in strings(message))


SPILL_FILE = re.compile(r"^File: (.+)$", re.M)


def spill_problems(view: list[dict[str, Any]], history: list[dict[str, Any]], spilling: bool) -> list[str]:
    """What is wrong with the spill previews in ``view``: one shown with spilling off, or one whose file does not
    hold, whole, an output of the session (its lone surrogates as U+FFFD)."""
    previews = [t for t in strings(view) if t.startswith(SPILL_MARKER)]
    if previews and not spilling:
        return ["a spill preview in a view with spilling off"]
    outputs = {scrub_text(t) for m in history for t in strings(m.get("content"))}
    problems = []
    for preview in previews:
        named = SPILL_FILE.search(preview)
        if named is None:
            problems.append("a spill preview names no file")
        elif not Path(named.group(1)).is_file():
            problems.append(f"the spill file {named.group(1)} is missing")
        elif Path(named.group(1)).read_text(encoding="utf-8") not in outputs:
            problems.append(f"the spill file {named.group(1)} holds no output of the session")
    return problems
