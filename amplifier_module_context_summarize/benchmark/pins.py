"""What ``pin_patterns`` cost a request (issue 43, item 8): a Claude Code-shaped session whose every user turn
carries a ``<system-reminder>``, replayed with the pattern and without, timing each request's CPU.

A pin is worked out once per message (marked at ``add_message``, its shown form and tokens kept by index in the
append-only history), so a request costs the same at 500 turns as at 150: the figure that shows it is the median
request time at each length, with the pattern and without (a request that compacts aside; the mean beside it).
"""

from __future__ import annotations

import asyncio
import statistics
import time
from dataclasses import dataclass
from typing import Any

from .. import create_manager
from ..testing.replay import request_due

REMINDER = "<system-reminder>Use the project's style guide; run the tests before committing.</system-reminder>"
PIN_TURNS = (150, 500)
QUICK_TURNS = (60, 200)
TARGET_GROWTH = 2.0
"""With the pattern, a request at the longest replay costs at most this many times one at the shortest."""
WINDOW = 50
"""Requests timed: the last ``WINDOW`` of each replay."""


def claude_code_session(turns: int) -> list[dict[str, Any]]:
    """Anthropic blocks as Claude Code stores them: every user turn opens with a reminder, each answer reads a file."""
    messages: list[dict[str, Any]] = []
    for i in range(turns):
        body = " ".join(f"w{i}_{k}" for k in range(40))
        asks = [{"type": "text", "text": REMINDER}, {"type": "text", "text": f"Task {i}: {body}"}]
        messages.append({"role": "user", "content": asks})
        call = f"toolu_{i:05d}"
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"Reading part {i}."},
                    {"type": "tool_use", "id": call, "name": "Read", "input": {"file_path": f"src/part_{i}.py"}},
                ],
            }
        )
        output = "\n".join(f"{n}\tdef f_{i}_{n}(): return {n}" for n in range(60))
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": call, "content": output}]})
        messages.append({"role": "assistant", "content": f"Part {i} done. {body}"})
    return messages


@dataclass(frozen=True)
class PinTiming:
    turns: int
    pinned: bool
    request_ms: float
    """Median CPU milliseconds of the last ``WINDOW`` requests (a request that compacts aside)."""
    mean_ms: float
    """Their mean, compactions included."""


async def _replay(turns: int, pinned: bool, budget: int) -> PinTiming:
    config: dict[str, Any] = {"max_tokens": budget, "summarizer": "extractive", "background_compaction": False}
    if pinned:
        config["pin_patterns"] = ["<system-reminder>"]
    manager = create_manager(config)
    messages = claude_code_session(turns)
    times: list[float] = []
    for i, message in enumerate(messages):
        await manager.add_message(message)
        if request_due(messages, i, at_end=i == len(messages) - 1):
            start = time.process_time()
            await manager.get_messages_for_request(budget)
            times.append(time.process_time() - start)
    window = times[-WINDOW:]
    return PinTiming(turns, pinned, 1000 * statistics.median(window), 1000 * statistics.fmean(window))


def run_pins(turns: tuple[int, ...] = PIN_TURNS, budget: int = 20_000) -> list[PinTiming]:
    """Each length replayed with the pattern and without."""
    return [asyncio.run(_replay(n, pinned, budget)) for n in turns for pinned in (False, True)]


def pins_target(timings: list[PinTiming]) -> tuple[str, bool]:
    """A request's cost does not grow with the history: the pinned replays' growth against ``TARGET_GROWTH``."""
    pinned = sorted((t for t in timings if t.pinned), key=lambda t: t.turns)
    growth = pinned[-1].request_ms / max(pinned[0].request_ms, 1e-6)
    line = f"with pins, {pinned[-1].turns} turns cost {growth:.2f}x a request at {pinned[0].turns} (target <= "
    return f"{line}{TARGET_GROWTH:.0f}x)", growth <= TARGET_GROWTH


def render(timings: list[PinTiming]) -> str:
    lines = ["| turns | pin_patterns | ms a request (median of the last 50) | mean |", "|---|---|---|---|"]
    for t in timings:
        pattern = "<system-reminder>" if t.pinned else "none"
        lines.append(f"| {t.turns} | {pattern} | {t.request_ms:.2f} | {t.mean_ms:.2f} |")
    text, passed = pins_target(timings)
    return "\n".join(lines) + f"\n\n{'PASS' if passed else 'FAIL'} {text}"
