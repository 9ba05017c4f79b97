"""The stored history (core/history.py): groups, what each shows, and the running total."""

from __future__ import annotations

from amplifier_module_context_summarize import create_manager
from amplifier_module_context_summarize.core.history import History
from amplifier_module_context_summarize.testing import (
    tool_call,
    tool_result,
)


def test_the_open_group_counts_as_shown_whenever_read() -> None:
    history = History(create_manager({}).counter, "f")
    call = tool_call("openai", "a", "bash", {"command": "ls"})
    call["tool_calls"].append({"id": "b", "type": "function", "function": {"name": "x", "arguments": "{}"}})
    for message in [{"role": "user", "content": "go"}, call, tool_result("openai", "a", "one")]:
        history.append(message)
        shown = [m for g in range(len(history.groups)) for m in history.shown(g)]
        assert history.total == history.counter.count_messages(shown)
    history.append({"role": "user", "content": "next"})  # closes the group with call b never answered
    shown = [m for g in range(len(history.groups)) for m in history.shown(g)]
    assert history.total == history.counter.count_messages(shown)
