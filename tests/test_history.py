"""The stored history (core/history.py): groups, what each shows, and the running total."""

from __future__ import annotations

from amplifier_module_context_summarize import create_manager
from amplifier_module_context_summarize.core.history import History
from amplifier_module_context_summarize.core.tokens import TokenCounter
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


def test_group_hashes_worked_out_elsewhere_chain_as_chain_at_would():
    def built() -> History:
        history = History(TokenCounter(), "fp")
        for i in range(12):
            history.append({"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i}"})
        return history

    alone, adopted = built(), built()
    adopted.chain_at(3)
    adopted.adopt_group_hashes(1, [adopted.group_hash(g) for g in range(1, 9)])  # overlaps what is chained
    assert adopted.chained == 9 and adopted.chain_at(9) == alone.chain_at(9)
    gap = built()
    gap.adopt_group_hashes(4, [gap.group_hash(g) for g in range(4, 9)])  # nothing chained before 4: left to chain_at
    assert gap.chained == 0 and gap.chain_at(9) == alone.chain_at(9)
