"""What a provider's own compaction is sent and what comes back, as plain JSON: no SDK, no I/O.

Anthropic (beta ``compact-2026-09-04``, the SDK's ``BetaCompactionConfigParam`` / ``BetaCompactionBlock``): a
Messages request with a top-level ``compaction: {"type": "summarize", "instructions": ...}`` answers with one
``compaction`` block (readable ``content``, a ``signature``) and ``stop_reason: "compaction"``; its usage is in
``usage.iterations``. OpenAI (``responses.compact``, the SDK's ``CompactedResponse`` / ``ResponseCompactionItem``):
the input's user messages come back followed by one compaction item whose ``encrypted_content`` only OpenAI can
read, so its readable text is asked of the model in a second request carrying the compacted window.

Every answer that is no usable summary is a ``BackendError`` whose fault the fallback event names: the summarizer
then writes this module's own summary (``summarizer/span.py``).
"""

from __future__ import annotations

import json
from typing import Any

from .base import BackendError, Completion, Fault

ANTHROPIC_BETA = "compact-2026-09-04"
"""The beta an on-demand compaction request, and every later request carrying its block, must name."""
INSTRUCTIONS_MAX_CHARS = 16_384
"""Anthropic's limit on ``compaction.instructions``; OpenAI documents none, and gets the same."""
CLIP_MARK = "\n[... instructions clipped ...]"
FAMILIES = ("anthropic", "openai")
_OPENAI_PREFIXES = ("gpt", "o1", "o3", "o4", "codex", "chatgpt")
NOT_NATIVE = "for provider 'native' must name an Anthropic (claude-*) or OpenAI (gpt-*, o*) model"
DEFAULT_MODEL = "claude-sonnet-4-6"
"""The model when ``summarizer.model`` is unset: one Anthropic documents on-demand compaction for."""
RESTATE = (
    "Write out, as plain text, the summary of the conversation so far that the compacted context holds: every "
    "file, command, identifier, error and decision it keeps, and what was being done last. No preamble."
)
"""Asked of an OpenAI model after compaction: the compaction item is encrypted, so the model reads it back."""
TRANSCRIPT_INTRO = "The transcript of an agent session follows, to be compacted."
"""OpenAI's compaction keeps user messages verbatim: the transcript goes in an assistant message, so it is compacted."""


def family_of(model: str) -> str:
    """``anthropic`` or ``openai``, from the model's name; ``ValueError`` naming ``summarizer.model`` otherwise."""
    lowered = model.lower()
    if lowered.startswith("claude"):
        return "anthropic"
    if lowered.startswith(_OPENAI_PREFIXES):
        return "openai"
    raise ValueError(NOT_NATIVE)


def instructions(system: str, guidance: str) -> str:
    """The compaction's ``instructions``: the user's guidance first (standing instructions, the focus), then the
    summarizer's rules, clipped to ``INSTRUCTIONS_MAX_CHARS`` (the prompt itself still carries the guidance)."""
    text = f"{guidance.strip()}\n\n{system.strip()}".strip() if guidance.strip() else system.strip()
    if len(text) <= INSTRUCTIONS_MAX_CHARS:
        return text
    return text[: INSTRUCTIONS_MAX_CHARS - len(CLIP_MARK)] + CLIP_MARK


def anthropic_request(model: str, system: str, prompt: str, guidance: str, max_output_tokens: int) -> dict[str, Any]:
    """The on-demand compaction request for one prompt (the span's transcript, as the summarizer writes it)."""
    return {
        "model": model,
        "max_tokens": max_output_tokens,
        "messages": [{"role": "user", "content": prompt}],
        "compaction": {"type": "summarize", "instructions": instructions(system, guidance)},
    }


def anthropic_answer(raw: str) -> Completion:
    """The summary in a 200 answer's raw body, with the signed block as its artefact; else a ``BackendError``:
    ``tool_call`` for ``tool_use``, ``refusal``, and ``empty`` for any other stop, or no (or no readable) block."""
    body = _object(raw)
    stop = body.get("stop_reason")
    if stop == "tool_use":
        raise BackendError(Fault.TOOL_CALL)
    if stop == "refusal":
        raise BackendError(Fault.REFUSAL)
    content = body.get("content")
    blocks = content if isinstance(content, list) else []
    if stop != "compaction" or len(blocks) != 1:
        raise BackendError(Fault.EMPTY)
    block = blocks[0]
    if not (
        isinstance(block, dict)
        and block.get("type") == "compaction"
        and isinstance(block.get("content"), str)
        and block["content"].strip()
        and isinstance(block.get("signature"), str)
        and block["signature"]
    ):
        raise BackendError(Fault.EMPTY)
    tokens_in, tokens_out = _anthropic_usage(body.get("usage"))
    return Completion(
        text=block["content"],
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        model=body.get("model") if isinstance(body.get("model"), str) else None,
        artefact=artefact_json(block),
    )


def _anthropic_usage(usage: object) -> tuple[int, int]:
    """On-demand compaction reports in ``usage.iterations`` (the top-level counters may be zero)."""
    if not isinstance(usage, dict):
        return 0, 0
    rows = usage.get("iterations")
    if isinstance(rows, list) and rows:
        rows = [r for r in rows if isinstance(r, dict)]
        return _sum(rows, "input_tokens") + _sum(rows, "cache_read_input_tokens"), _sum(rows, "output_tokens")
    return _sum([usage], "input_tokens"), _sum([usage], "output_tokens")


def openai_compact_request(model: str, system: str, prompt: str, guidance: str) -> dict[str, Any]:
    """``POST /responses/compact`` for one prompt: a short user turn, the transcript as the assistant's."""
    return {
        "model": model,
        "input": [
            {"role": "user", "content": TRANSCRIPT_INTRO},
            {"role": "assistant", "content": prompt},
        ],
        "instructions": instructions(system, guidance),
    }


def openai_compacted(raw: str) -> tuple[list[dict[str, Any]], dict[str, Any], tuple[int, int]]:
    """The compacted window (user messages, then the one compaction item), that item, and the usage; a window
    without exactly one compaction item, last, is ``empty``."""
    body = _object(raw)
    output = body.get("output")
    items = [i for i in output if isinstance(i, dict)] if isinstance(output, list) else []
    compactions = [i for i in items if i.get("type") == "compaction"]
    if (
        len(compactions) != 1
        or items[-1] is not compactions[0]
        or not isinstance(compactions[0].get("encrypted_content"), str)
        or not compactions[0]["encrypted_content"]
    ):
        raise BackendError(Fault.EMPTY)
    return items, compactions[0], _openai_usage(body.get("usage"))


def openai_restate_request(
    model: str, window: list[dict[str, Any]], system: str, guidance: str, max_output_tokens: int
) -> dict[str, Any]:
    """``POST /responses``: the compacted window and the request to write its summary out (not stored)."""
    return {
        "model": model,
        "input": [*window, {"role": "user", "content": RESTATE}],
        "instructions": instructions(system, guidance),
        "max_output_tokens": max_output_tokens,
        "store": False,
    }


def openai_answer(raw: str, item: dict[str, Any], compact_usage: tuple[int, int]) -> Completion:
    """The restated summary, with the compaction item as its artefact; a tool call is ``tool_call``, a refusal
    ``refusal``, no text ``empty``."""
    body = _object(raw)
    output = body.get("output")
    texts: list[str] = []
    for entry in output if isinstance(output, list) else []:
        if not isinstance(entry, dict):
            continue
        if entry.get("type") in ("function_call", "custom_tool_call", "tool_call"):
            raise BackendError(Fault.TOOL_CALL)
        if entry.get("type") != "message" or not isinstance(entry.get("content"), list):
            continue
        for part in entry["content"]:
            if isinstance(part, dict) and part.get("type") == "refusal":
                raise BackendError(Fault.REFUSAL)
            if isinstance(part, dict) and part.get("type") == "output_text" and isinstance(part.get("text"), str):
                texts.append(part["text"])
    text = "".join(texts)
    if not text.strip():
        raise BackendError(Fault.EMPTY)
    tokens_in, tokens_out = _openai_usage(body.get("usage"))
    return Completion(
        text=text,
        input_tokens=compact_usage[0] + tokens_in,
        output_tokens=compact_usage[1] + tokens_out,
        model=body.get("model") if isinstance(body.get("model"), str) else None,
        artefact=artefact_json(item),
    )


def _openai_usage(usage: object) -> tuple[int, int]:
    return (_sum([usage], "input_tokens"), _sum([usage], "output_tokens")) if isinstance(usage, dict) else (0, 0)


def artefact_json(value: dict[str, Any]) -> str:
    """The artefact as stored: JSON in ASCII with the provider's key order, so every string (the signature, the
    encrypted content) reads back exactly as it came, lone surrogates included."""
    return json.dumps(value, ensure_ascii=True, separators=(",", ":"))


def _object(raw: str) -> dict[str, Any]:
    try:
        body = json.loads(raw)
    except ValueError:
        raise BackendError(Fault.ERROR) from None
    if not isinstance(body, dict):
        raise BackendError(Fault.ERROR)
    return body


def _sum(rows: list[Any], field: str) -> int:
    total = 0
    for row in rows:
        value = row.get(field) if isinstance(row, dict) else None
        if type(value) is int and value >= 0:
            total += value
    return total
