"""Amplifier context manager that compacts long sessions with cached, content-addressed LLM summaries.

Mount it from a mount plan as ``context-summarize``; see README.md for the configuration.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from . import events
from .backends.base import Backend
from .backends.registry import build_backend
from .compaction.plan.strategies import Strategy, strategy_for
from .config import Config, parse_config
from .core.invariants import check_view
from .core.tokens import TokenCounter
from .core.wire import ToolSchemaMeter
from .manager import SUMMARY_MARKER, SummarizingContextManager
from .notify import Notifier
from .recall.tool import RecallTool
from .stores import MEMORY, RedisSettings, SummaryStore, default_store_path, open_store
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
    default_store: bool = False,
) -> SummarizingContextManager:
    """Build a manager outside a session (CLI, evaluation, tests); ``mount`` uses the same path.

    ``default_store``: without a ``storage_path``, keep summaries in the per-user cache file
    (``stores.default_store_path``) rather than in memory, as a mounted session does."""
    cfg = config if isinstance(config, Config) else parse_config(config)
    counter = TokenCounter(cfg.token_encoding)
    settings = SummarizerSettings(
        max_output_tokens=cfg.summary_output_tokens,
        max_input_tokens=cfg.summarizer.max_input_tokens,
        timeout_s=cfg.summarizer.timeout_s,
        max_retries=cfg.summarizer.max_retries,
    )
    strategy = strategy or strategy_for(cfg)
    if backend is None and strategy.asks_llm:
        backend = build_backend(cfg.summarizer, coordinator, http_client)
    summarizer = SpanSummarizer(backend, load_prompts(cfg.prompt_dir), counter.count_text, settings)
    summarizer.instructions = cfg.summary_instructions
    if hooks is None and coordinator is not None:
        hooks = getattr(coordinator, "hooks", None)
    if store is None:
        path = cfg.storage_path
        if path is None and default_store:
            path = str(default_store_path() or MEMORY)
        store = open_store(path, cfg.cache_max_entries, _redis_settings(cfg), hooks)
        if backend is not None and path and path != MEMORY:
            _remember_paths_beside(backend, Path(path).expanduser())
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


def _remember_paths_beside(backend: Backend, store_file: Path) -> None:
    """The session backend remembers which providers need their streaming path next to the local store file, so
    a later process of the same install does not pay a failed request again; memory keeps no such file."""
    from .backends.provider_paths import ProviderPaths, beside
    from .backends.session import SessionBackend

    if isinstance(backend, SessionBackend) and backend.paths is None:
        backend.paths = ProviderPaths(beside(store_file))


def _redis_settings(cfg: Config) -> RedisSettings | None:
    if cfg.storage_url is None:
        return None
    return RedisSettings(
        cfg.storage_url, cfg.storage_password_env, cfg.storage_ttl_s, cfg.storage_timeout_s, cfg.storage_retry_s
    )


CLOSE_WAIT_S = 10.0
"""Longest a session's cleanup waits for background summaries to reach the store."""


async def mount(coordinator: Any, config: Mapping[str, Any] | None = None) -> Callable[[], Awaitable[None]]:
    """Validate the config, mount the manager at ``context`` (and its recall tool), advertise its events, show
    compactions on the user's screen (``notify``); return the cleanup the kernel calls when the session ends."""
    manager = create_manager(config or {}, coordinator=coordinator, default_store=True)
    hooks = getattr(coordinator, "hooks", None)
    manager.listen_to_usage(hooks)
    await coordinator.mount("context", manager)
    if manager.config.recall_tool:
        tool = RecallTool(manager)
        await coordinator.mount("tools", tool, name=tool.name)
    register = getattr(coordinator, "register_contributor", None)
    if callable(register):
        register("observability.events", "context-summarize", lambda: list(events.EMITTED))
    if manager.config.notify and hooks is not None:
        Notifier(coordinator).register(hooks)
    logger.info("mounted context-summarize (%r)", manager)

    async def cleanup() -> None:
        await manager.close(min(CLOSE_WAIT_S, manager.config.compaction_deadline_s))

    cleanup.manager = manager  # type: ignore[attr-defined]
    return cleanup
