"""A native summary sent as the session's provider module carries it: provider-anthropic's compaction carrier.

provider-anthropic (the releases with its ``compaction.py``) sends a message whose ``metadata["anthropic:compaction"]``
is ``{"version": 1, "model": <its model>, "block": <the signed compaction block>}`` as the block itself, first,
once, with the beta header, in place of the messages the block summarizes; ``validate_compacted_context(message)``
says whether it will. So when the view's summary is exactly one native segment from the session's first group,
written with the session's model and stored with its block, and the block's readable content is the summary's text
as shown, the view carries the block instead of that text: the carrier, then the ``[CONTEXT SUMMARY]`` message
with everything else it restates (the working set, pinned requests, recall). Any other case (another provider
module, a merged or fragmented summary, a fallback, a narrative clipped to fit, a view that would no longer fit)
keeps the readable view.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ...core.history import History
from ...core.messages import Message
from ...core.state import CompactionState, Segment
from ...stores import SummaryStore
from ...stores.records import ArtefactKey, read

CARRIER_KEY = "anthropic:compaction"
CARRIER_VERSION = 1
SUMMARY_HEAD = "[CONTEXT SUMMARY]"


class NativeCarrier:
    """Puts a native segment's signed block in the view for a provider module that can send it."""

    def __init__(
        self,
        store: SummaryStore,
        backend_name: str,
        model: str | None,
        count_messages: Callable[[list[Message]], int],
    ) -> None:
        self.store = store
        self.count_messages = count_messages
        self.carries = backend_name == "native:anthropic"
        self.model = model
        self._blocks: dict[tuple[str, str], dict[str, Any] | None] = {}
        """The block stored for the last segment looked up (one entry: the view's first segment changes rarely)."""

    async def apply(
        self,
        view: list[Message],
        provider: Any | None,
        history: History,
        state: CompactionState,
        budget: int,
    ) -> list[Message]:
        """``view`` with the carrier in place of the summary's text when every condition holds, else ``view``."""
        validate = getattr(provider, "validate_compacted_context", None)
        if not self.carries or not callable(validate) or len(state.segments) != 1:
            return view
        segment = state.segments[0]
        if segment.start != 0 or segment.tier != 0 or getattr(provider, "default_model", None) != self.model:
            return view
        block = await self._block(history, segment)
        at = next((i for i, m in enumerate(view) if _is_summary(m)), None)
        if block is None or at is None or segment.text not in view[at]["content"]:
            return view
        carrier: Message = {
            "role": "user",
            "content": segment.text,  # what a module that does not carry it would show; counted as the block
            "metadata": {CARRIER_KEY: {"version": CARRIER_VERSION, "model": self.model, "block": block}},
        }
        try:
            if validate(carrier) is not True:
                return view
        except Exception:  # a provider's refusal of the block is its own: the readable view goes
            return view
        rest = {**view[at], "content": view[at]["content"].replace(segment.text, "", 1)}
        carried = [*view[:at], carrier, rest, *view[at + 1 :]]
        return carried if self.count_messages(carried) <= budget else view

    async def _block(self, history: History, segment: Segment) -> dict[str, Any] | None:
        start, end = history.chain_at(segment.start), history.chain_at(segment.end)
        if (start, end) not in self._blocks:
            found = None
            for record in await read(self.store, ArtefactKey(start)):
                block = _parsed(record.text)
                ours = record.end.startswith(end) and record.groups == segment.end - segment.start
                if ours and block and block["content"].strip() == segment.text.strip():  # the text shown is its
                    found = block
            self._blocks = {(start, end): found}
        return self._blocks[(start, end)]


def _parsed(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if not isinstance(value, dict) or value.get("type") != "compaction":
        return None
    if not isinstance(value.get("content"), str) or not isinstance(value.get("signature"), str):
        return None
    return value


def _is_summary(message: Message) -> bool:
    content = message.get("content")
    return message.get("role") == "user" and isinstance(content, str) and content.startswith(SUMMARY_HEAD)
