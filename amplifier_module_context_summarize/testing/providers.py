"""Amplifier providers for tests: a minimal fake and a provider-anthropic look-alike.

``FakeProvider`` implements the Provider protocol and summarizes by quoting the head of the transcript it is
sent; it records every request and can fail, stall or give a fixed reply.

``AnthropicLikeProvider`` behaves like microsoft/amplifier-module-provider-anthropic where it matters to a
context manager (read from its public source): it takes the model from ``kwargs["model"]``
(``ChatRequest.model`` is ignored), streams unless ``request.metadata["stream"] is False``, retries on its own
with backoff, counts the request with its own tokenizer (system, messages and tool schemas, ``TOKENIZER_RATIO``
times ours) and reports that count in ``llm:response`` usage. Agent requests answer with a ``read_file`` call
(``ReadFileTool``) after a user message and with text after a tool result; see ``loops.LoopLike``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from amplifier_core import llm_errors
from amplifier_core.message_models import ChatRequest, ChatResponse, TextBlock, ToolCall, Usage
from amplifier_core.models import ProviderInfo

from ..core.clock import now
from ..core.tokens import TokenCounter
from ..summarizer.in_context import INSTRUCTION_KIND

__all__ = ["TOKENIZER_RATIO", "AnthropicLikeProvider", "FakeProvider", "ReadFileTool"]


class FakeProvider:
    """Implements the Provider protocol; summarizes by quoting the head of the transcript it is sent."""

    def __init__(
        self,
        *,
        name: str = "fake",
        context_window: int | None = None,
        max_output_tokens: int | None = None,
        fail_with: BaseException | None = None,
        reply: str | None = None,
        delay: float = 0.0,
    ) -> None:
        self._name = name
        self.context_window = context_window
        self.max_output = max_output_tokens
        self.fail_with = fail_with
        self.reply = reply
        self.delay = delay
        self.requests: list[Any] = []

    @property
    def name(self) -> str:
        return self._name

    def get_info(self) -> ProviderInfo:
        defaults: dict[str, Any] = {}
        if self.context_window:
            defaults = {"context_window": self.context_window, "max_output_tokens": self.max_output}
        return ProviderInfo(id=self._name, display_name="Fake", defaults=defaults)

    async def list_models(self) -> list[Any]:
        return []

    async def complete(self, request: Any, **kwargs: Any) -> ChatResponse:
        self.requests.append(request)
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.fail_with is not None:
            raise self.fail_with
        prompt = request.messages[-1].content
        text = (
            self.reply
            if self.reply is not None
            else f"SUMMARY#{len(self.requests)}: " + prompt[-200:].replace("TRANSCRIPT>>>", "")
        )
        return ChatResponse(
            content=[TextBlock(text=text)],
            usage=Usage(input_tokens=len(prompt) // 4, output_tokens=len(text) // 4, total_tokens=0),
        )

    def parse_tool_calls(self, response: Any) -> list[Any]:
        return []


TOKENIZER_RATIO = 1.15
"""The provider's tokenizer counts this many tokens for each of ours (Claude's is hungrier than cl100k)."""


class AnthropicLikeProvider:
    name = "anthropic"

    def __init__(
        self,
        hooks: Any,
        *,
        window: int = 200_000,
        max_output: int = 8_000,
        fail_summaries: bool = False,
        retries: int = 5,
        retry_delay: float = 0.05,
    ) -> None:
        self.hooks = hooks
        self.default_model = "claude-sonnet-4-5"
        self.window, self.max_output = window, max_output
        self.fail_summaries = fail_summaries
        self.retries, self.retry_delay = retries, retry_delay
        self.counter = TokenCounter()
        self.agent_wire_tokens: list[int] = []
        self.summary_calls: list[dict[str, Any]] = []
        self.stream_deltas: list[str] = []

    def get_info(self) -> ProviderInfo:
        defaults = {"model": self.default_model, "context_window": self.window, "max_output_tokens": self.max_output}
        return ProviderInfo(id="anthropic", display_name="Anthropic-like", defaults=defaults)

    async def list_models(self) -> list[Any]:
        return []

    def parse_tool_calls(self, response: ChatResponse) -> list[ToolCall]:
        return response.tool_calls or []

    def wire_tokens(self, request: ChatRequest) -> int:
        messages = [m.model_dump(exclude_none=True) for m in request.messages]
        tools = [t.model_dump(exclude_none=True) for t in request.tools or []]
        ours = self.counter.count_messages(messages)
        if tools:
            ours += self.counter.count_text(json.dumps(tools))
        return int(ours * TOKENIZER_RATIO)

    async def complete(self, request: ChatRequest, **kwargs: Any) -> ChatResponse:
        model = kwargs.get("model", self.default_model)
        streaming = not (isinstance(request.metadata, dict) and request.metadata.get("stream") is False)
        summary = "<<<TRANSCRIPT" in str(request.messages[-1].content) or in_context_summary(request)
        for attempt in range(self.retries + 1):
            try:
                response = self._answer(request, summary, model)
                break
            except llm_errors.ProviderUnavailableError:
                if attempt == self.retries:
                    raise
                await asyncio.sleep(self.retry_delay * 2**attempt)
        if streaming:
            for block in response.content:
                if isinstance(block, TextBlock):  # this provider answers in text blocks only
                    self.stream_deltas.append(block.text)
                    await self.hooks.emit("llm:stream_block_delta", {"provider": self.name, "delta": block.text})
        usage = response.usage.model_dump() if response.usage is not None else None
        await self.hooks.emit(
            "llm:response",
            {"provider": self.name, "model": model, "status": "ok", "usage": usage},
        )
        return response

    def _answer(self, request: ChatRequest, summary: bool, model: str) -> ChatResponse:
        tokens = self.wire_tokens(request)
        usage = Usage(input_tokens=tokens, output_tokens=20, total_tokens=tokens + 20)
        if summary:
            self.summary_calls.append({"model": model, "metadata": request.metadata, "at": now()})
            if self.fail_summaries:
                raise llm_errors.ProviderUnavailableError("500 from the summarizer", provider=self.name)
            if in_context_summary(request):  # the session's own view, then the instruction: quote the conversation
                quoted = " ".join(str(m.content) for m in request.messages[:-1] if m.role == "user")
            else:
                prompt = str(request.messages[-1].content)
                start = prompt.rindex("<<<TRANSCRIPT") + len("<<<TRANSCRIPT")
                quoted = prompt[start : start + 400].replace("TRANSCRIPT>>>", "")
            text = "### Progress\n" + quoted[:400].rsplit(" ", 1)[0]
            return ChatResponse(content=[TextBlock(text=text)], usage=usage)
        self.agent_wire_tokens.append(tokens)
        before_injection = request.messages[-2]
        if before_injection.role == "user":
            call = ToolCall(id=f"toolu_{len(self.agent_wire_tokens)}", name="read_file", arguments={"path": "a.py"})
            return ChatResponse(content=[TextBlock(text="Reading.")], tool_calls=[call], usage=usage)
        return ChatResponse(content=[TextBlock(text="Done. " + "The file looks fine. " * 20)], usage=usage)


def in_context_summary(request: ChatRequest) -> bool:
    """A summary asked in the session's own context: its view, then the module's instruction as the last message."""
    metadata = request.messages[-1].metadata if request.messages else None
    return isinstance(metadata, dict) and metadata.get("source") == INSTRUCTION_KIND


class ReadFileTool:
    name = "read_file"
    description = "Read a file from the workspace and return its text with line numbers. " * 3
    input_schema = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Path of the file, relative to the workspace root."},
            "offset": {"type": "integer", "description": "First line to read."},
            "limit": {"type": "integer", "description": "Number of lines to read."},
        },
        "required": ["path"],
    }
