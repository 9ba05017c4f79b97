"""Fakes that behave like the real Amplifier modules where it matters to a context manager.

Read from their public source (microsoft/amplifier-module-provider-anthropic, -loop-basic, -loop-streaming):

* the provider takes the model from ``kwargs["model"]`` (``ChatRequest.model`` is ignored), streams unless
  ``request.metadata["stream"] is False``, retries on its own with backoff, counts the request with its own
  tokenizer (system, messages and tool schemas) and reports that count in ``llm:response`` usage;
* the loop calls ``get_messages_for_request(provider=...)`` before every call, appends an ephemeral hook
  injection to that one request, sends the mounted tools' schemas, and writes tool calls as
  ``{"id", "tool", "arguments"}`` with results as ``{"role": "tool", "tool_call_id", "content"}``.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from amplifier_core import llm_errors
from amplifier_core.message_models import ChatRequest, ChatResponse, Message, TextBlock, ToolCall, ToolSpec, Usage
from amplifier_core.models import ProviderInfo

from amplifier_module_context_summarize.tokens import TokenCounter

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
        summary = "<<<TRANSCRIPT" in str(request.messages[-1].content)
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
                self.stream_deltas.append(block.text)
                await self.hooks.emit("llm:stream_block_delta", {"provider": self.name, "delta": block.text})
        await self.hooks.emit(
            "llm:response",
            {"provider": self.name, "model": model, "status": "ok", "usage": response.usage.model_dump()},
        )
        return response

    def _answer(self, request: ChatRequest, summary: bool, model: str) -> ChatResponse:
        tokens = self.wire_tokens(request)
        usage = Usage(input_tokens=tokens, output_tokens=20, total_tokens=tokens + 20)
        if summary:
            self.summary_calls.append({"model": model, "metadata": request.metadata, "at": time.monotonic()})
            if self.fail_summaries:
                raise llm_errors.ProviderUnavailableError("500 from the summarizer", provider=self.name)
            prompt = str(request.messages[-1].content)
            start = prompt.rindex("<<<TRANSCRIPT") + len("<<<TRANSCRIPT")
            text = "### Progress\n" + prompt[start : start + 400].replace("TRANSCRIPT>>>", "")
            return ChatResponse(content=[TextBlock(text=text)], usage=usage)
        self.agent_wire_tokens.append(tokens)
        before_injection = request.messages[-2]
        if before_injection.role == "user":
            call = ToolCall(id=f"toolu_{len(self.agent_wire_tokens)}", name="read_file", arguments={"path": "a.py"})
            return ChatResponse(content=[TextBlock(text="Reading.")], tool_calls=[call], usage=usage)
        return ChatResponse(content=[TextBlock(text="Done. " + "The file looks fine. " * 20)], usage=usage)


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


class LoopLike:
    """One agent turn the way loop-basic runs it: request → provider → tool calls → results → request ..."""

    def __init__(self, context: Any, provider: AnthropicLikeProvider, tools: dict[str, Any]) -> None:
        self.context, self.provider, self.tools = context, provider, tools
        self.injection = "<system-reminder>Keep the todo list current.</system-reminder>"

    async def turn(self, prompt: str) -> None:
        await self.context.add_message({"role": "user", "content": prompt})
        for _ in range(4):
            view = await self.context.get_messages_for_request(provider=self.provider)
            view = [*view, {"role": "user", "content": self.injection}]  # ephemeral: this request only
            specs = [
                ToolSpec(name=t.name, description=t.description, parameters=t.input_schema) for t in self.tools.values()
            ]

            request = ChatRequest(messages=[Message(**m) for m in view], tools=specs)
            response = await self.provider.complete(request)
            text = "".join(b.text for b in response.content)
            if not response.tool_calls:
                await self.context.add_message({"role": "assistant", "content": text})
                return
            calls = [{"id": c.id, "tool": c.name, "arguments": c.arguments} for c in response.tool_calls]
            await self.context.add_message({"role": "assistant", "content": text, "tool_calls": calls})
            for call in calls:
                body = "1: def main():\n" + "2:     print('the module under review prints this line')\n" * 60
                await self.context.add_message({"role": "tool", "tool_call_id": call["id"], "content": body})
