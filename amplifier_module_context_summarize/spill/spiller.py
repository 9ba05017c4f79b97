"""Which stored outputs a view shows as a spill preview, and the file each one is written to.

``Spiller.shown`` is the hook ``core.history.History`` calls for every stored message it shows (``History.spill``):
a tool output over ``spill_threshold_tokens`` comes back as a copy whose body is the preview, the whole text
having been written to the session's spill folder first. The same history always gives the same previews and
paths (the path is the folder, a hash of the session's first message and the recall handle), so a resume in any
process shows what the live session showed, writing the file again if the folder's bounds had removed it.

A folder that cannot be used turns spilling off for the rest of the process with one warning and one
``context:store_degraded`` (``store: spill``): outputs are then shown whole, as without spilling.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..config import Config
from ..core.handles import handle_for
from ..core.messages import RESULT_BLOCK_TYPE, Message, block_kind, block_text, canonical_json, content_hash, scrub_text
from ..core.tokens import TokenCounter
from ..events import StoreDegraded
from ..stores import SqliteStore, SummaryStore
from ..stores.default_path import MEMORY
from .folder import SpillFolder
from .preview import Spilled, render

logger = logging.getLogger(__name__)

OFF = frozenset({MEMORY, "off", "none"})
"""``spill_path`` values that turn spilling off."""
FOLDER_NAME = "spill"
"""The folder beside the summary store's file, by default."""
TEXT_KINDS = frozenset({"text", "input_text", "output_text"})


class Spiller:
    """Shows stored outputs over the threshold as previews of files written to ``folder``."""

    def __init__(
        self, folder: SpillFolder | None, threshold_tokens: int, counter: TokenCounter, recall_tool: str | None
    ) -> None:
        self.folder = folder
        self.threshold = threshold_tokens
        self.counter = counter
        self.recall_tool = recall_tool
        self._messages: Sequence[Message] | None = None
        self._memo: dict[int, tuple[Message, Message]] = {}
        """id(stored message) -> (it, as shown): every output over the byte bound is decided once per history."""
        self._sessions: dict[int, tuple[Message, str]] = {}
        self._pending: list[StoreDegraded] = []
        self._key = ["spill-v1", threshold_tokens, recall_tool] if folder is not None else None
        """Fixed at start: a folder that degrades later does not rekey the session's summaries."""

    @property
    def enabled(self) -> bool:
        return self.folder is not None

    @property
    def key(self) -> list[Any] | None:
        """What changes the text a summarizer reads (previews in place of outputs): part of the fingerprint."""
        return self._key

    @property
    def hook(self) -> Callable[[Sequence[Message], int], Message] | None:
        """What ``History.spill`` calls: None while spilling is off, so a history without it pays nothing."""
        return self.shown if self.folder is not None else None

    def take_events(self) -> list[StoreDegraded]:
        """The degradations not reported yet (``compaction.run.reports`` sends them after the next request)."""
        pending, self._pending = self._pending, []
        return pending

    def shown(self, messages: Sequence[Message], index: int) -> Message:
        """``messages[index]`` as a view shows it: itself, or a copy with each output over the threshold previewed."""
        message = messages[index]
        if self.folder is None or not _may_carry_large_output(message, self.threshold):
            return message
        if messages is not self._messages:  # another history: what was decided for the last one is let go
            self._messages, self._memo, self._sessions = messages, {}, {}
        memo = self._memo.get(id(message))
        if memo is not None and memo[0] is message:
            return memo[1]
        shown = self._spilled(messages, index, message)
        self._memo[id(message)] = (message, shown)
        return shown

    def _spilled(self, messages: Sequence[Message], index: int, message: Message) -> Message:
        content = message.get("content")
        if message.get("role") == "tool" and not isinstance(content, list):
            text = block_text(content) if content is not None else ""
            preview = self._preview(messages, index, None, text)
            return message if preview is None else {**message, "content": preview}
        if not isinstance(content, list):
            return message
        blocks: list[Any] = list(content)
        for i, block in enumerate(content):
            if not (isinstance(block, dict) and block_kind(block) == RESULT_BLOCK_TYPE):
                continue
            key = "content" if "content" in block else "output"
            if not _textual(block.get(key)):
                continue  # images or documents in it: a text file would lose them
            preview = self._preview(messages, index, i, block_text(block))
            if preview is not None:
                blocks[i] = {**block, key: preview}
        changed = any(a is not b for a, b in zip(blocks, content, strict=True))
        return {**message, "content": blocks} if changed else message

    def _preview(self, messages: Sequence[Message], index: int, block: int | None, text: str) -> str | None:
        if self.folder is None or _utf8_bytes(text) <= self.threshold:
            return None
        tokens = self.counter.count_text(text)
        if tokens <= self.threshold:
            return None
        handle = handle_for(messages, index, block)
        data = scrub_text(text).encode("utf-8")
        name = f"{handle}-{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()[:10]}.txt"
        try:
            path = self.folder.write(self._session(messages), name, data)
        except OSError as exc:
            self._degrade(exc)
            return None
        return render(text, Spilled(str(path), handle, tokens, self.recall_tool))

    def _session(self, messages: Sequence[Message]) -> str:
        """The session's folder name: a hash of its first message that is not a system message (the same in every
        process that holds the session; a fork sharing it shares the folder, whose names are content hashes)."""
        first = next((m for m in messages if m.get("role") != "system"), messages[0])
        known = self._sessions.get(id(first))
        if known is not None and known[0] is first:
            return known[1]
        session = content_hash(canonical_json(first))[:16]
        self._sessions[id(first)] = (first, session)
        return session

    def _degrade(self, exc: OSError) -> None:
        folder = self.folder
        self.folder = None
        reason = type(exc).__name__
        logger.warning(
            "spill folder %s cannot be used (%s: %s); large tool outputs stay in the context whole",
            folder.root if folder is not None else "?",
            reason,
            exc.strerror or exc,
        )
        self._pending.append(StoreDegraded(store="spill", reason=reason, fallback="whole outputs"))


def spiller_for(config: Config, store: SummaryStore, counter: TokenCounter) -> Spiller:
    """The spiller a config names: ``spill_path``, else beside the summary store's file; a store in memory (or
    Redis without a local file) writes nothing, so spilling is off."""
    root = spill_root(config.spill_path, store)
    folder = SpillFolder(root, config.spill_max_mb * 2**20, config.spill_max_age_s) if root is not None else None
    return Spiller(folder, config.spill_threshold_tokens, counter, config.recall_tool_name)


def spill_root(spill_path: str | None, store: SummaryStore) -> Path | None:
    if spill_path is not None:
        return None if spill_path.strip().lower() in OFF else Path(spill_path).expanduser()
    local = getattr(store, "local", store)  # a Redis store's local store holds its file
    if isinstance(local, SqliteStore):
        return local.path.expanduser().parent / FOLDER_NAME
    return None


def _may_carry_large_output(message: Message, threshold: int) -> bool:
    """Cheap first look: a message that cannot hold an output over ``threshold`` tokens is shown as it is."""
    content = message.get("content")
    if isinstance(content, str):
        return message.get("role") == "tool" and len(content) * 4 > threshold
    return isinstance(content, list | dict) or (content is not None and message.get("role") == "tool")


def _textual(body: Any) -> bool:
    if not isinstance(body, list):
        return True
    return all(isinstance(b, str) or (isinstance(b, dict) and block_kind(b) in TEXT_KINDS) for b in body)


def _utf8_bytes(text: str) -> int:
    """A bound on the tokens of ``text`` (every token is at least one byte)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
