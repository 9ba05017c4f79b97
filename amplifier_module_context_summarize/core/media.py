"""What binary content costs on the wire, read from its own bytes: image sizes, PDF pages, data URLs.

A provider bills an image by its pixels and a PDF by its pages, not by the length of the base64 that carries
them (a 1 MB screenshot is ~1,400k characters of base64 but ~1,600 tokens). Counting reads only what it
needs: an image's header from a bounded prefix, a PDF decoded once (cached per string) and scanned for its
page objects, so every cost here is linear in the data and most are constant.

The rules, from the providers' documentation:

* Images (Anthropic, "Images and vision"): ``tokens = width * height / 750`` after the image is scaled down
  to a long edge of at most 1,568 px and about 1.15 megapixels (about 1,600 tokens). OpenAI's high-detail rule
  (85 + 170 per 512 px tile after fitting 2048 px and a 768 px short side) costs more for small images, so an
  image costs the larger of the two; one whose size cannot be read (a URL, a file id, an unknown format)
  costs the ceiling, ``IMAGE_MAX_TOKENS``.
* PDFs (Anthropic, "PDF support"; OpenAI "File inputs" does the same): every page is sent as its extracted
  text *and* as an image of the page; Anthropic puts the text at 1,500-3,000 tokens per page, and measured
  totals (text and image) stay within ``PDF_PAGE_TOKENS`` per page. Pages are counted from the page objects,
  compressed object streams included; when none can be read, from the decoded size (``PDF_BYTES_PER_PAGE``).
* Other files (OpenAI "File inputs": .docx, .pptx, spreadsheets): their extracted text, at most about one
  token per byte of the file (``BINARY_BYTES_PER_TOKEN``).
"""

from __future__ import annotations

import base64
import binascii
import math
import re
import struct
import threading
import zlib

IMAGE_MAX_TOKENS = 1600
"""Anthropic's ceiling: an image past ~1.15 megapixels or a 1,568 px edge is scaled down to about this."""
ANTHROPIC_PIXELS_PER_TOKEN = 750
ANTHROPIC_MAX_EDGE = 1568
ANTHROPIC_MAX_PIXELS = IMAGE_MAX_TOKENS * ANTHROPIC_PIXELS_PER_TOKEN
OPENAI_BASE_TOKENS = 85
OPENAI_TILE_TOKENS = 170

PDF_PAGE_TOKENS = 3000
"""One PDF page: its text (Anthropic: 1,500-3,000 tokens) and an image of the page, at the dense end."""
PDF_BYTES_PER_PAGE = 20_000
"""Used only when no page object can be read: text PDFs run 3-60 KB a page, so this errs towards more pages."""
PDF_INFLATE_FACTOR = 20
"""Object streams are inflated to at most this many times the PDF's size in all (a zip bomb stops there)."""

BINARY_BYTES_PER_TOKEN = 1
"""Another file (.docx, .xlsx) is sent as the text extracted from it; deflated text holds up to ~3.5 bytes of
text per byte and a token ~4 of them, so about one token a byte at most."""

HEADER_CHARS = 87_384
"""Base64 characters decoded to find an image's size: 64 KB of bytes, past a JPEG's EXIF block and thumbnail."""

PAGE_CACHE_SIZE = 1024
DICTIONARY_CHARS = 4096
"""How far before a stream its dictionary (``/Type /ObjStm``) is looked for."""

_DATA_URL = re.compile(r"data:([^;,]{0,200})((?:;[^;,]{0,200}){0,8}),", re.ASCII)
_PAGE = re.compile(rb"/Type\s*/Page(?![A-Za-z])")
_OBJECT_STREAM = re.compile(rb"/Type\s*/ObjStm(?![A-Za-z])")
_STREAM_START = re.compile(rb"stream\r?\n")
_PAGES: dict[tuple[int, int], int] = {}
_PAGES_LOCK = threading.Lock()


def data_url(url: str) -> tuple[str, str] | None:
    """``(media type, base64 data)`` of a ``data:<type>;base64,<data>`` URL, else None (a web URL, plain data)."""
    if not url.startswith("data:"):
        return None
    found = _DATA_URL.match(url)
    if found is None or ";base64" not in found.group(2).lower():
        return None
    return found.group(1).strip().lower(), url[found.end() :]


def decoded_size(data: str) -> int:
    """Bytes that ``data`` (base64) decodes to, without decoding it."""
    length = len(data.strip())
    return max(length * 3 // 4 - data.rstrip()[-2:].count("="), 0)


def _decode(data: str) -> bytes | None:
    try:
        return base64.b64decode(data, validate=False)
    except (binascii.Error, ValueError):
        return None


def decode_text(data: str) -> str | None:
    """The text a base64 text file carries (undecodable bytes replaced), or None when it is not base64."""
    raw = _decode(data)
    return None if raw is None else raw.decode("utf-8", "replace")


# ------------------------------------------------------------------------------------------------ images


def image_size(data: str) -> tuple[int, int] | None:
    """``(width, height)`` from the header of a base64 PNG, GIF, WebP or JPEG; None when it cannot be read."""
    prefix = data[:HEADER_CHARS].strip()
    raw = _decode(prefix[: len(prefix) - len(prefix) % 4])
    if not raw:
        return None
    try:
        return _dimensions(raw)
    except (struct.error, IndexError):
        return None


def _dimensions(raw: bytes) -> tuple[int, int] | None:
    if raw.startswith(b"\x89PNG\r\n\x1a\n") and raw[12:16] == b"IHDR":
        return struct.unpack(">II", raw[16:24])
    if raw[:6] in (b"GIF87a", b"GIF89a"):
        return struct.unpack("<HH", raw[6:10])
    if raw[:4] == b"RIFF" and raw[8:12] == b"WEBP":
        chunk = raw[12:16]
        if chunk == b"VP8 ":
            width, height = struct.unpack("<HH", raw[26:30])
            return width & 0x3FFF, height & 0x3FFF
        if chunk == b"VP8L":
            bits = int.from_bytes(raw[21:25], "little")
            return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
        if chunk == b"VP8X":
            return int.from_bytes(raw[24:27], "little") + 1, int.from_bytes(raw[27:30], "little") + 1
        return None
    if raw[:2] == b"\xff\xd8":
        return _jpeg_size(raw)
    return None


def _jpeg_size(raw: bytes) -> tuple[int, int] | None:
    """Walk the JPEG's segments to its start-of-frame marker (each segment says its own length)."""
    at = 2
    while at + 9 < len(raw):
        if raw[at] != 0xFF:
            return None
        marker = raw[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
            continue
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", raw[at + 5 : at + 9])
            return width, height
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:  # markers without a length
            at += 2
            continue
        at += 2 + struct.unpack(">H", raw[at + 2 : at + 4])[0]
    return None


def image_tokens(size: tuple[int, int] | None) -> int:
    """What one image of ``size`` costs: the larger of Anthropic's and OpenAI's rules; the ceiling if unknown."""
    if size is None or size[0] <= 0 or size[1] <= 0:
        return IMAGE_MAX_TOKENS
    return min(max(_anthropic_tokens(*size), _openai_tokens(*size)), IMAGE_MAX_TOKENS)


def _anthropic_tokens(width: int, height: int) -> int:
    scale = min(1.0, ANTHROPIC_MAX_EDGE / max(width, height), math.sqrt(ANTHROPIC_MAX_PIXELS / (width * height)))
    return max(math.ceil(width * scale * height * scale / ANTHROPIC_PIXELS_PER_TOKEN), 1)


def _openai_tokens(width: int, height: int) -> int:
    scale = min(1.0, 2048 / max(width, height))
    w, h = width * scale, height * scale
    scale = min(1.0, 768 / min(w, h))
    w, h = w * scale, h * scale
    return OPENAI_BASE_TOKENS + OPENAI_TILE_TOKENS * math.ceil(w / 512) * math.ceil(h / 512)


def base64_image_tokens(data: str) -> int:
    return image_tokens(image_size(data))


# -------------------------------------------------------------------------------------------------- PDFs


def pdf_tokens(data: str) -> int:
    """What a base64 PDF costs: ``PDF_PAGE_TOKENS`` for each of its pages."""
    return PDF_PAGE_TOKENS * pdf_pages(data)


def pdf_pages(data: str) -> int:
    """Pages of a base64 PDF: its page objects, else an estimate from its decoded size (at least one).

    Remembered per string: a view is counted at every request and the history holds the same string each
    time. The key is the string's hash (computed once per string object) and length, so the cache never keeps
    a PDF alive after its history lets it go.
    """
    key = (hash(data), len(data))
    pages = _PAGES.get(key)
    if pages is None:
        pages = count_pdf_pages(_decode(data) or b"")
        if pages <= 0:
            pages = max(1, math.ceil(decoded_size(data) / PDF_BYTES_PER_PAGE))
        with _PAGES_LOCK:  # counts run in worker threads too
            if len(_PAGES) >= PAGE_CACHE_SIZE:
                _PAGES.pop(next(iter(_PAGES)))
            _PAGES[key] = pages
    return pages


def count_pdf_pages(raw: bytes) -> int:
    """``/Type /Page`` objects in the file and in its compressed object streams (0 when none can be read).

    One pass over the streams: each is found once, and only the dictionary just before it is looked at.
    """
    pages = len(_PAGE.findall(raw))
    allowance = max(len(raw), 1) * PDF_INFLATE_FACTOR
    at = 0
    while allowance > 0:
        start = _STREAM_START.search(raw, at)
        if start is None:
            break
        end = raw.find(b"endstream", start.end())
        if end < 0:
            break
        if _OBJECT_STREAM.search(raw, max(at, start.start() - DICTIONARY_CHARS), start.start()):
            try:
                inflated = zlib.decompressobj().decompress(raw[start.end() : end], allowance)
            except zlib.error:
                inflated = b""
            allowance -= len(inflated)
            pages += len(_PAGE.findall(inflated))
        at = end + len(b"endstream")
    return pages
