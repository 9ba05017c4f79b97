"""What each content block that is not plain text carries to the model: one reading for counting, transcripts
and search, so a block is never counted by one rule and shown (or searched) by another.

The shapes, from the providers' API references:

* Anthropic ``image``: ``source`` is ``{"type": "base64", "media_type", "data"}``, ``{"type": "url", "url"}``
  or ``{"type": "file", "file_id"}``.
* Anthropic ``document``: optional ``title`` and ``context`` (both sent as text) and a ``source`` that is a
  plain-text document ``{"type": "text", "media_type": "text/plain", "data"}``, a custom-content document
  ``{"type": "content", "content": [text and image blocks] | str}``, a base64 PDF ``{"type": "base64",
  "media_type": "application/pdf", "data"}``, a PDF by ``{"type": "url", "url"}`` or ``{"type": "file",
  "file_id"}``.
* Anthropic ``search_result``: ``source`` and ``title`` (text) and ``content``, a list of text blocks.
* OpenAI Chat Completions ``image_url``: ``{"image_url": {"url": "<https or data URL>", "detail"}}``;
  ``file``: ``{"file": {"file_data": "data:application/pdf;base64,…", "filename"} | {"file_id"}}``.
* OpenAI Responses ``input_image``: ``{"image_url": "<url>", "detail"} | {"file_id"}``; ``input_file``:
  ``{"file_data": "<data URL>", "filename"} | {"file_id"} | {"file_url"}``.

Text blocks (``text``, ``input_text``, ``output_text``, ``refusal``) and tool traffic are read in
``messages.py``; a block of any other type is read as the JSON of what it carries.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from . import media

TEXT_FIELDS = {"text": "text", "input_text": "text", "output_text": "text", "refusal": "refusal"}
"""Block types that are plain text, and the field holding it."""
ATTACHMENT_TYPES = frozenset({"document", "search_result", "file", "input_file"})
"""Block types that carry text of their own beside what the turn's author wrote."""
CITATION_FIELDS = ("citations", "annotations")
"""Where a text block keeps the sources it cites (Anthropic ``citations``, OpenAI ``annotations``)."""
TEXT_MEDIA = ("text/", "application/json", "application/xml", "application/x-yaml", "application/yaml")
BLOCK_OVERHEAD = 4
"""Framing tokens of one attachment (its type and field names on the wire)."""
UNREAD_DOCUMENT_TOKENS = media.PDF_PAGE_TOKENS
"""A document by URL or file id: its size is not in the message (Anthropic's token counting refuses these
sources too), so it is counted as one PDF page."""


@dataclass(frozen=True, slots=True)
class Media:
    """One binary part, costed by its own rule."""

    kind: str
    """``image``, ``pdf``, ``binary`` (a non-text, non-PDF file) or ``unread`` (a document by URL or id)."""
    data: str = ""
    """Its base64 data, when the message holds it."""

    def tokens(self) -> int:
        if self.kind == "image":
            return media.base64_image_tokens(self.data) if self.data else media.IMAGE_MAX_TOKENS
        if self.kind == "pdf":
            return media.pdf_tokens(self.data) if self.data else UNREAD_DOCUMENT_TOKENS
        if self.kind == "binary":
            return max(media.decoded_size(self.data) // media.BINARY_BYTES_PER_TOKEN, 1)
        return UNREAD_DOCUMENT_TOKENS


@dataclass(slots=True)
class Carried:
    """What one block carries."""

    label: str
    """How a transcript names the block (``[document: spec.md]``); never sent, never counted."""
    meta: list[str] = field(default_factory=list)
    """Text sent beside the content and already named by the label (a title, a source): counted, not shown."""
    texts: list[str] = field(default_factory=list)
    """Text sent, counted and shown: a document's context and data, a text file's contents."""
    nested: list[Any] = field(default_factory=list)
    """Blocks inside (a custom-content document's, a search result's), read by the caller like any block."""
    parts: list[Media] = field(default_factory=list)


def carried(block: dict[str, Any], kind: str | None) -> Carried | None:
    """What a block of ``kind`` carries, or None when ``kind`` is text, tool traffic or unknown."""
    if kind == "image":
        return _image_source(block.get("source"))
    if kind == "image_url":
        url = block.get("image_url")
        return _image_url(url.get("url") if isinstance(url, dict) else url)
    if kind == "input_image":
        return _image_url(block.get("image_url"), block.get("file_id"))
    if kind == "document":
        return _document(block)
    if kind == "search_result":
        return _search_result(block)
    if kind == "file":
        inner = block.get("file")
        inner = inner if isinstance(inner, dict) else {}
        return _file(inner.get("file_data"), inner.get("filename"), inner.get("file_id"), None)
    if kind == "input_file":
        return _file(block.get("file_data"), block.get("filename"), block.get("file_id"), block.get("file_url"))
    return None


def citation_texts(block: dict[str, Any]) -> list[str]:
    """The citations a text block carries, as the JSON sent back; Anthropic does not count ``cited_text`` as
    input ("When passed back in subsequent conversation turns, cited_text is also not counted towards input
    tokens"), so it is left out."""
    out: list[str] = []
    for key in CITATION_FIELDS:
        value = block.get(key)
        if not isinstance(value, list):
            continue
        for citation in value:
            if isinstance(citation, dict):
                citation = {k: v for k, v in citation.items() if k != "cited_text"}
            out.append(as_json(citation))
    return out


def as_json(value: Any) -> str:
    """``value`` as JSON text (what the wire carries); values JSON cannot hold through their ``repr``."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=repr)
    except (TypeError, ValueError):  # keys JSON cannot hold, or a cycle
        return repr(value)


def _string(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else as_json(value)


def _named(what: str, name: str) -> str:
    return f"[{what}: {name}]" if name else f"[{what}]"


def _image_source(source: Any) -> Carried:
    if not isinstance(source, dict):
        return Carried("[image]", parts=[Media("image")])
    if source.get("type") == "base64":
        return Carried("[image]", parts=[Media("image", _string(source.get("data")))])
    where = _string(source.get("url") or source.get("file_id"))
    return Carried(_named("image", where), parts=[Media("image")])


def _image_url(url: Any, file_id: Any = None) -> Carried:
    url = _string(url)
    found = media.data_url(url)
    if found is not None:
        return Carried("[image]", parts=[Media("image", found[1])])
    return Carried(_named("image", url or _string(file_id)), parts=[Media("image")])


def _document(block: dict[str, Any]) -> Carried:
    title, context = _string(block.get("title")), _string(block.get("context"))
    out = Carried(_named("document", title), meta=[title] if title else [], texts=[context] if context else [])
    source = block.get("source")
    kind = source.get("type") if isinstance(source, dict) else None
    if kind == "text":
        out.texts.append(_string(source.get("data")))  # type: ignore[union-attr]
    elif kind == "content":
        content = source.get("content")  # type: ignore[union-attr]
        out.nested = content if isinstance(content, list) else [content] if content is not None else []
    elif kind == "base64":
        _binary(out, _string(source.get("media_type")), _string(source.get("data")))  # type: ignore[union-attr]
    elif kind in ("url", "file"):
        where = _string(source.get("url") or source.get("file_id"))  # type: ignore[union-attr]
        out.label = _named("document", " ".join(p for p in (title, where) if p))
        out.parts.append(Media("unread"))
    elif source is not None:  # a source of another shape: the JSON it carries
        out.texts.append(as_json(source))
    return out


def _search_result(block: dict[str, Any]) -> Carried:
    title, source = _string(block.get("title")), _string(block.get("source"))
    content = block.get("content")
    nested = content if isinstance(content, list) else [content] if content is not None else []
    name = f"{title} ({source})" if title and source else title or source
    return Carried(_named("search result", name), meta=[p for p in (title, source) if p], nested=nested)


def _file(data: Any, filename: Any, file_id: Any, file_url: Any) -> Carried:
    name = _string(filename)
    out = Carried(_named("file", name), meta=[name] if name else [])
    found = media.data_url(_string(data)) if data else None
    if found is not None:
        _binary(out, *found)
    elif isinstance(data, str) and data:  # bare base64 (no data: prefix): read by its name
        _binary(out, "application/pdf" if name.lower().endswith(".pdf") else "", data)
    else:
        where = _string(file_url or file_id)
        out.label = _named("file", " ".join(p for p in (name, where) if p))
        out.parts.append(Media("unread"))
    return out


def _binary(out: Carried, media_type: str, data: str) -> None:
    """Base64 data of ``media_type``: a text file's text is read; a PDF (or an unnamed type) costs its pages."""
    media_type = media_type.lower()
    if media_type.startswith(TEXT_MEDIA):
        text = media.decode_text(data)
        if text is not None:
            out.texts.append(text)
            return
    if not media_type or media_type == "application/pdf":
        out.parts.append(Media("pdf", data))
    elif media_type.startswith("image/"):
        out.parts.append(Media("image", data))
    else:
        out.parts.append(Media("binary", data))
