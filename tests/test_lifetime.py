"""A manager let go takes its history with it: nothing the package keeps at module level (the working set's index,
its shelves, the line counts) holds a session's messages past the manager that stored them. A host that makes a
manager per session or per sub-agent would otherwise keep every session it ever ran."""

from __future__ import annotations

import gc
import weakref

import pytest

from amplifier_module_context_summarize import create_manager
from amplifier_module_context_summarize.benchmark.coding import CodingSession
from amplifier_module_context_summarize.benchmark.synth import SMALL, TextSource


@pytest.mark.parametrize("strategy", ["extractive", "summarize", "mask"])
async def test_a_manager_let_go_frees_its_history_and_working_set(strategy: str) -> None:
    messages = CodingSession(SMALL, seed=3, text=TextSource()).history(1_500)
    manager = create_manager({"max_tokens": 20_000, "compaction_strategy": strategy, "background_compaction": False})
    await manager.set_messages(messages[:1_400])
    await manager.get_messages_for_request(token_budget=20_000)
    for message in messages[1_400:]:
        await manager.add_message(message)
        await manager.get_messages_for_request(token_budget=20_000)
    assert manager.state.boundary > 0 or manager.state.mask_end > 0  # it compacted: the working set was read
    history = weakref.ref(manager.history)
    del manager
    gc.collect()
    assert history() is None
