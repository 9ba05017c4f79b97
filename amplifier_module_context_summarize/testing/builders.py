"""Message builders in every tool-call shape the module reads.

Whole turns (a user ask, a tool call, its result, an answer) with filler text of a chosen size:

* ``openai_turn``: ``tool_calls`` with ``function`` (``arguments`` a JSON string), results as ``role: tool``;
* ``anthropic_turn``: ``thinking`` and two ``tool_use`` blocks, results as ``tool_result`` blocks in user messages;
* ``amplifier_turn``: Amplifier ``tool_call`` content blocks, results as ``tool_result`` blocks in a tool message;
* ``mixed_history``: a system message and turns rotating through the three (``SHAPES``).

Single messages, for planting a call and its result in a hand-written session: ``tool_call`` and ``tool_result``
take a shape from ``CALL_SHAPES``: the three above plus Amplifier's orchestrators (``ORCHESTRATOR_SHAPES``):
loop-basic's ``{"id", "tool", "arguments"}`` entries with a dict (``orchestrator``) or a JSON string
(``orchestrator_json``), and loop-streaming's double record (``streaming``: content blocks including a
``tool_call`` block, the same call in ``tool_calls``, and a copy of the thinking block in ``thinking_block``).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "CALL_SHAPES",
    "FILLER",
    "ORCHESTRATOR_SHAPES",
    "SHAPES",
    "amplifier_turn",
    "anthropic_turn",
    "mixed_history",
    "openai_turn",
    "tool_call",
    "tool_result",
]

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


ORCHESTRATOR_SHAPES = ("orchestrator", "orchestrator_json", "streaming")
CALL_SHAPES = ("openai", "anthropic", "amplifier", *ORCHESTRATOR_SHAPES)


def tool_call(shape: str, call_id: str, name: str, args: dict[str, Any], text: str = "") -> dict[str, Any]:
    """An assistant message making one tool call in ``shape`` (one of ``CALL_SHAPES``), with optional text."""
    if shape in ORCHESTRATOR_SHAPES:
        arguments = json.dumps(args) if shape == "orchestrator_json" else args
        message: dict[str, Any] = {
            "role": "assistant",
            "content": text,
            "tool_calls": [{"id": call_id, "tool": name, "arguments": arguments}],
        }
        if shape == "streaming":
            thinking = {
                "type": "thinking",
                "thinking": f"Next: {name}.",
                "signature": "c2ln",
                "visibility": None,
                "content": None,
            }
            blocks = [{"type": "text", "text": text, "visibility": None}] if text else []
            block = {"type": "tool_call", "id": call_id, "name": name, "input": args, "visibility": None}
            message.update(content=[*blocks, thinking, block], thinking_block=dict(thinking), metadata={"turn": 1})
        return message
    if shape == "openai":
        fn = {"name": name, "arguments": json.dumps(args)}
        return {
            "role": "assistant",
            "content": text or None,
            "tool_calls": [{"id": call_id, "type": "function", "function": fn}],
        }
    if shape not in ("anthropic", "amplifier"):
        raise ValueError(f"unknown tool-call shape {shape!r}; expected one of {CALL_SHAPES}")
    kind = "tool_use" if shape == "anthropic" else "tool_call"
    blocks = [{"type": "text", "text": text}] if text else []
    return {"role": "assistant", "content": [*blocks, {"type": kind, "id": call_id, "name": name, "input": args}]}


def tool_result(
    shape: str, call_id: str, output: Any, is_error: bool | None = None, name: str | None = None
) -> dict[str, Any]:
    """The message answering ``call_id`` in ``shape``; ``is_error`` is kept by the Anthropic shape only,
    ``name`` (the tool's, as the orchestrators write it) by the ``role: tool`` shapes."""
    if shape == "anthropic":
        block = {"type": "tool_result", "tool_use_id": call_id, "content": output}
        if is_error is not None:  # as a runner records it; Claude Code sets it from a shell's exit status
            block["is_error"] = is_error
        return {"role": "user", "content": [block]}
    if shape == "amplifier":
        message = {"role": "tool", "content": [{"type": "tool_result", "tool_call_id": call_id, "output": output}]}
    elif shape == "openai" or shape in ORCHESTRATOR_SHAPES:
        message = {"role": "tool", "tool_call_id": call_id, "content": output}
    else:
        raise ValueError(f"unknown tool-call shape {shape!r}; expected one of {CALL_SHAPES}")
    if name is not None:
        message["name"] = name
    return message
