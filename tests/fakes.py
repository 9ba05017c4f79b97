"""Test doubles: a fake Amplifier provider and history builders in the three tool shapes."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from amplifier_core.message_models import ChatResponse, TextBlock, Usage
from amplifier_core.models import ProviderInfo


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


FILLER = "The quick brown fox jumps over the lazy dog while the compiler checks every branch. "


def openai_turn(i: int, size: int = 20) -> list[dict[str, Any]]:
    call_id = f"call_{i}"
    return [
        {"role": "user", "content": f"Request {i}: please inspect module_{i}.py. " + FILLER * size},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": "bash", "arguments": json.dumps({"command": f"cat src/module_{i}.py"})},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": f"contents of module_{i}\n" + FILLER * size},
        {"role": "assistant", "content": f"Module {i} looks fine. " + FILLER * (size // 2)},
    ]


def anthropic_turn(i: int, size: int = 20) -> list[dict[str, Any]]:
    a, b = f"toolu_{i}a", f"toolu_{i}b"
    return [
        {"role": "user", "content": [{"type": "text", "text": f"Request {i}: run the tests. " + FILLER * size}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": f"plan {i}", "signature": f"sig-{i}=="},
                {"type": "tool_use", "id": a, "name": "Bash", "input": {"command": f"pytest tests/test_{i}.py"}},
                {"type": "tool_use", "id": b, "name": "Read", "input": {"file_path": f"/repo/src/m{i}.py"}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": a, "content": "1 passed. " + FILLER * size}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": b, "content": FILLER * size}]},
        {"role": "assistant", "content": [{"type": "text", "text": f"Tests {i} pass. " + FILLER * (size // 2)}]},
    ]


def amplifier_turn(i: int, size: int = 20) -> list[dict[str, Any]]:
    call_id = f"amp_{i}"
    return [
        {"role": "user", "content": f"Request {i}: grep for TODO. " + FILLER * size},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Searching."},
                {"type": "tool_call", "id": call_id, "name": "grep", "input": {"pattern": "TODO", "path": "src"}},
            ],
        },
        {
            "role": "tool",
            "tool_call_id": call_id,
            "content": [{"type": "tool_result", "tool_call_id": call_id, "output": {"matches": FILLER * size}}],
        },
        {"role": "assistant", "content": f"Found TODOs in turn {i}. " + FILLER * (size // 2)},
    ]


SHAPES = {"openai": openai_turn, "anthropic": anthropic_turn, "amplifier": amplifier_turn}


def mixed_history(turns: int, size: int = 20, system: bool = True) -> list[dict[str, Any]]:
    builders = list(SHAPES.values())
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are a careful coding agent."}] if system else []
    for i in range(turns):
        history.extend(builders[i % 3](i, size))
    return history
