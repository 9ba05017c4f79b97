"""Claude Code session logs (``~/.claude/projects/<project>/<session>.jsonl``).

One JSON record per line; ``type`` is ``user``, ``assistant``, ``progress``, ``system``, ``summary``,
``file-history-snapshot`` or ``queue-operation``. Messages are Anthropic API messages under ``message``; Claude
Code writes one record per content block, so the records of one API message (same ``message.id``) are merged
back, and the tool-result records answering it into one user message. Other record types are dropped. The
``isCompactSummary`` record after a ``system/compact_boundary`` is Claude Code's own summary: it is returned as
a reference, not put in the session. Base64 images longer than ``IMAGE_DATA_LIMIT`` become a placeholder.
"""

from __future__ import annotations

import hashlib
from typing import Any

NAME = "claude-code"
LABEL = "Claude Code JSONL (~/.claude/projects/*/*.jsonl)"
IMAGE_DATA_LIMIT = 2_000
Message = dict[str, Any]
_TYPES = {"user", "assistant", "progress", "system", "summary", "file-history-snapshot", "queue-operation"}


def detect(data: Any, kind: str) -> bool:
    if kind != "jsonl":
        return False
    records = [r for r in data if isinstance(r, dict)]
    return (
        bool(records)
        and all(r.get("type") in _TYPES for r in records[:20])
        and any(isinstance(r.get("message"), dict) and r.get("type") in ("user", "assistant") for r in records)
    )


def _image_block(block: dict[str, Any]) -> dict[str, Any]:
    source = dict(block.get("source") or {})
    data = source.get("data")
    if isinstance(data, str) and len(data) > IMAGE_DATA_LIMIT:
        digest = hashlib.sha256(data.encode("ascii", "replace")).hexdigest()[:16]
        source["data"] = f"<base64 image data omitted: {len(data)} chars, sha256 {digest}>"
    return {"type": "image", "source": source}


def _cc_block(block: Any) -> dict[str, Any] | None:
    """One Claude Code content block in API shape; None for blocks to drop."""
    if isinstance(block, str):
        return {"type": "text", "text": block} if block.strip() else None
    kind = block.get("type")
    if kind == "text":
        text = block.get("text", "")
        return {"type": "text", "text": text} if text.strip() else None
    if kind == "thinking":
        out = {"type": "thinking", "thinking": block.get("thinking", "")}
        if "signature" in block:
            out["signature"] = block["signature"]
        return out
    if kind == "redacted_thinking":
        return {"type": "redacted_thinking", "data": block.get("data", "")}
    if kind == "tool_use":
        return {"type": "tool_use", "id": block["id"], "name": block["name"], "input": block.get("input", {})}
    if kind == "tool_result":
        content = block.get("content", "")
        if isinstance(content, list):
            content = [b for b in (_cc_result_part(p) for p in content) if b is not None]
        return {
            "type": "tool_result",
            "tool_use_id": block["tool_use_id"],
            "content": content,
            "is_error": bool(block.get("is_error", False)),
        }
    if kind == "image":
        return _image_block(block)
    # Unknown block types are kept as they are.
    return dict(block)


def _cc_result_part(part: Any) -> dict[str, Any] | None:
    if isinstance(part, dict) and part.get("type") == "image":
        return _image_block(part)
    if isinstance(part, dict) and part.get("type") == "text":
        return {"type": "text", "text": part.get("text", "")}
    if isinstance(part, str):
        return {"type": "text", "text": part}
    return dict(part) if isinstance(part, dict) else None


def _only_results(content: Any) -> bool:
    return (
        isinstance(content, list)
        and bool(content)
        and all(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    )


def _summary_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")


def convert(records: list[Any], kind: str = "jsonl") -> tuple[list[Message], dict[str, Any] | None]:
    """Claude Code records -> Anthropic-shape messages, and its own compaction summary as a reference."""
    out: list[Message] = []
    # API message id -> index in ``out`` of the assistant message it became.
    assistant_at: dict[str, int] = {}
    # Index of the assistant message whose results the last user result message carries.
    results_for: dict[int, int] = {}
    boundary: int | None = None
    summary: str | None = None

    def mergeable(index: int) -> bool:
        # Blocks may still be appended to assistant message ``index`` if everything after it is the
        # tool-result carrier of that same message.
        tail = out[index + 1 :]
        return all(results_for.get(index + 1 + k) == index for k in range(len(tail)))

    for rec in records:
        kind = rec.get("type")
        if kind == "system" and rec.get("subtype") == "compact_boundary":
            boundary = len(out)
            assistant_at.clear()
            continue
        if kind not in ("user", "assistant"):
            continue
        message = rec.get("message") or {}
        if rec.get("isCompactSummary"):
            summary = _summary_text(message.get("content"))
            continue
        content = message.get("content")
        if kind == "assistant":
            blocks = [b for b in (_cc_block(x) for x in (content or [])) if b is not None]
            mid = message.get("id")
            if mid and mid in assistant_at and mergeable(assistant_at[mid]):
                out[assistant_at[mid]]["content"].extend(blocks)
                continue
            out.append({"role": "assistant", "content": blocks})
            if mid:
                assistant_at[mid] = len(out) - 1
            continue
        # user record
        if isinstance(content, str):
            out.append({"role": "user", "content": content})
            continue
        blocks = [b for b in (_cc_block(x) for x in (content or [])) if b is not None]
        if _only_results(blocks):
            # Which assistant message do these results answer?
            ids = {b["tool_use_id"] for b in blocks}
            owner = None
            for j in range(len(out) - 1, -1, -1):
                m = out[j]
                if m["role"] == "assistant":
                    calls = {b.get("id") for b in m["content"] if b.get("type") == "tool_use"}
                    if ids & calls:
                        owner = j
                    break
            last = len(out) - 1
            if owner is not None and results_for.get(last) == owner:
                out[last]["content"].extend(blocks)
                continue
            out.append({"role": "user", "content": blocks})
            if owner is not None:
                results_for[len(out) - 1] = owner
            continue
        out.append({"role": "user", "content": blocks})

    # An assistant record that held only whitespace text leaves an empty message behind when no
    # other block of its API message followed; drop those.
    kept = [m for m in out if not (isinstance(m["content"], list) and not m["content"])]
    if boundary is not None:
        dropped_before = sum(1 for m in out[:boundary] if isinstance(m["content"], list) and not m["content"])
        boundary -= dropped_before
    reference = None
    if summary is not None and boundary is not None:
        reference = {"source": "claude-code", "summary": summary, "boundary": boundary}
    return kept, reference
