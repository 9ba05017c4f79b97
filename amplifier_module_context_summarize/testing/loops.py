"""An agent loop in the shape of microsoft/amplifier-module-loop-basic, for driving a context manager.

Read from the public source of loop-basic and loop-streaming: the loop calls
``get_messages_for_request(provider=...)`` before every provider call, appends an ephemeral hook injection to
that one request, sends the mounted tools' schemas, and writes tool calls as ``{"id", "tool", "arguments"}``
with results as ``{"role": "tool", "tool_call_id", "content"}``.
"""

from __future__ import annotations

from typing import Any

from amplifier_core.message_models import ChatRequest, Message, TextBlock, ToolSpec

from .providers import AnthropicLikeProvider

__all__ = ["LoopLike"]


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
            text = "".join(b.text for b in response.content if isinstance(b, TextBlock))
            if not response.tool_calls:
                await self.context.add_message({"role": "assistant", "content": text})
                return
            calls = [{"id": c.id, "tool": c.name, "arguments": c.arguments} for c in response.tool_calls]
            await self.context.add_message({"role": "assistant", "content": text, "tool_calls": calls})
            for call in calls:
                body = "1: def main():\n" + "2:     print('the module under review prints this line')\n" * 60
                await self.context.add_message({"role": "tool", "tool_call_id": call["id"], "content": body})
