"""Amplifier context manager that compacts long sessions with cached, content-addressed LLM summaries.

Mount it from a mount plan as ``context-summarize``; see README.md for the configuration.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from . import events
from .backends.base import Backend
from .backends.registry import build_backend
from .compaction.job import Strategy
from .config import Config, parse_config
from .core.invariants import check_view
from .core.tokens import TokenCounter
from .core.wire import ToolSchemaMeter
from .manager import SUMMARY_MARKER, SummarizingContextManager
from .recall.tool import RecallTool
from .stores import RedisSettings, SummaryStore, open_store
from .summarizer.prompts import load_prompts
from .summarizer.span import SpanSummarizer, SummarizerSettings

__amplifier_module_type__ = "context"
__all__ = [
    "SUMMARY_MARKER",
    "Config",
    "Strategy",
    "SummarizingContextManager",
    "check_view",
    "create_manager",
    "mount",
    "parse_config",
    "RecallTool",
]

logger = logging.getLogger(__name__)


def create_manager(
    config: Mapping[str, Any] | Config | None = None,
    *,
    coordinator: Any | None = None,
    hooks: Any | None = None,
    store: SummaryStore | None = None,
    backend: Backend | None = None,
    http_client: Any | None = None,
    clock: Callable[[], float] | None = None,
    strategy: Strategy | None = None,
) -> SummarizingContextManager:
    """Build a manager outside a session (CLI, evaluation, tests); ``mount`` uses the same path."""
    cfg = config if isinstance(config, Config) else parse_config(config)
    counter = TokenCounter(cfg.token_encoding)
    settings = SummarizerSettings(
        max_output_tokens=cfg.summary_output_tokens,
        max_input_tokens=cfg.summarizer.max_input_tokens,
        timeout_s=cfg.summarizer.timeout_s,
        max_retries=cfg.summarizer.max_retries,
    )
    if backend is None and cfg.compaction_strategy == "summarize":
        backend = build_backend(cfg.summarizer, coordinator, http_client)
    summarizer = SpanSummarizer(backend, load_prompts(cfg.prompt_dir), counter.count_text, settings)
    if hooks is None and coordinator is not None:
        hooks = getattr(coordinator, "hooks", None)
    if store is None:
        store = open_store(cfg.storage_path, cfg.cache_max_entries, _redis_settings(cfg), hooks)
    tools = ToolSchemaMeter(lambda: coordinator.get("tools"), counter.count_text) if coordinator is not None else None
    return SummarizingContextManager(
        cfg,
        summarizer=summarizer,
        hooks=hooks,
        store=store,
        counter=counter,
        tools=tools,
        clock=clock,
        strategy=strategy,
    )


def _redis_settings(cfg: Config) -> RedisSettings | None:
    if cfg.storage_url is None:
        return None
    return RedisSettings(
        cfg.storage_url, cfg.storage_password_env, cfg.storage_ttl_s, cfg.storage_timeout_s, cfg.storage_retry_s
    )


async def mount(coordinator: Any, config: Mapping[str, Any] | None = None) -> SummarizingContextManager:
    """Validate the config, mount the manager at ``context`` (and its recall tool) and advertise its events."""
    manager = create_manager(config or {}, coordinator=coordinator)
    manager.listen_to_usage(getattr(coordinator, "hooks", None))
    await coordinator.mount("context", manager)
    if manager.config.recall_tool:
        tool = RecallTool(manager)
        await coordinator.mount("tools", tool, name=tool.name)
    register = getattr(coordinator, "register_contributor", None)
    if callable(register):
        register("observability.events", "context-summarize", lambda: list(events.EMITTED))
    logger.info("mounted context-summarize (%r)", manager)
    return manager
