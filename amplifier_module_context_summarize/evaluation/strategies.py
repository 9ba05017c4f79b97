"""The strategies compared side by side, all fed the same summarizer backend."""

from __future__ import annotations

from typing import Any

from .. import create_manager
from ..backends.base import Backend
from ..manager import SummarizingContextManager
from ..stores import MemoryStore
from .models import ModelSpec
from .naive import NaiveStrategy

STRATEGIES = ("summarize", "naive", "truncation")
"""``summarize``: this module. ``naive``: whole prefix re-summarized at each compaction, no cache.
``truncation``: oldest groups dropped (``compaction_strategy: truncate``)."""


def manager_config(strategy: str, budget: int, summarizer: ModelSpec) -> dict[str, Any]:
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r} (expected one of {', '.join(STRATEGIES)})")
    settings: dict[str, Any] = {"provider": summarizer.provider}
    if summarizer.model:
        settings["model"] = summarizer.model
    return {
        "max_tokens": budget,
        "compaction_strategy": "truncate" if strategy == "truncation" else "summarize",
        "summarizer": settings,
    }


def make_manager(
    strategy: str, budget: int, summarizer: ModelSpec, backend: Backend | None
) -> SummarizingContextManager:
    """A fresh manager with an empty private cache, as at the start of a real session."""
    config = manager_config(strategy, budget, summarizer)
    manager = create_manager(config, backend=backend, store=MemoryStore())
    if strategy == "naive":
        manager.strategy = NaiveStrategy(manager.summarizer)
    return manager
