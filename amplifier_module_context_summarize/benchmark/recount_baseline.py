"""The baseline simple context managers embody: recount every message's tokens on every request.

It is a cost model, not a usable manager: it keeps the history, counts it all with the same counter
as the module (so both pay for the same accuracy), and cuts the oldest messages when over the
threshold. Its views are not group-aware and it summarizes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Message = dict[str, Any]


def chars_estimate(message: Message) -> int:
    """The cheaper recount some managers use instead of a tokenizer: characters / 4 of the whole message."""
    return len(str(message)) // 4


class NaiveContextManager:
    def __init__(
        self,
        count_message: Callable[[Message], int],
        compact_threshold: float = 0.92,
        target_usage: float = 0.5,
        messages: list[Message] | None = None,
    ) -> None:
        self.count_message = count_message
        self.compact_threshold = compact_threshold
        self.target_usage = target_usage
        self.messages: list[Message] = list(messages or [])
        self.last_total = 0

    async def add_message(self, message: Message) -> None:
        self.messages.append(message)

    async def get_messages_for_request(self, token_budget: int) -> list[Message]:
        counts = [self.count_message(m) for m in self.messages]
        total = self.last_total = sum(counts)
        if total <= token_budget * self.compact_threshold:
            return list(self.messages)
        keep, target, start = total, token_budget * self.target_usage, 0
        while start < len(counts) - 1 and keep > target:
            keep -= counts[start]
            start += 1
        system = [m for m in self.messages[:start] if m.get("role") == "system"]
        return system + self.messages[start:]
