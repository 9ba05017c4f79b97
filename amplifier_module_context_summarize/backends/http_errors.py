"""HTTP failures as ``BackendError`` categories, shared by the SDK adapters.

What is decided here (retryable or not, how long the server asked us to wait) is what
``retrying.RetryingBackend`` consumes; the adapters only feed it a status, headers and their reading of
the error body.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from email.utils import parsedate_to_datetime

from .base import BackendError, Fault

# Phrases providers use when the prompt does not fit the model (Anthropic, OpenAI, vLLM, llama.cpp...).
_TOO_LONG_MARKERS = (
    "prompt is too long",
    "input is too long",
    "context length",
    "context_length",
    "context window",
    "context limit",
    "maximum context",
    "too many tokens",
    "input length",
)


def mentions_input_too_long(text: str | None) -> bool:
    """True when a provider's error text says the input does not fit (used for matching only, never logged)."""
    lowered = (text or "").lower()
    return any(marker in lowered for marker in _TOO_LONG_MARKERS)


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds the server asked us to wait: ``retry-after-ms``, or ``retry-after`` as seconds or an HTTP date."""
    if not headers:
        return None
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            value = float(raw_ms) / 1000
        except ValueError:
            value = math.nan
        if math.isfinite(value) and value >= 0:
            return value
    raw = headers.get("retry-after")
    if not raw:
        return None
    raw = raw.strip()
    try:
        value = float(raw)
    except ValueError:
        try:
            when = parsedate_to_datetime(raw)
        except (TypeError, ValueError, IndexError):
            return None
        if when is None:
            return None
        return max(0.0, when.timestamp() - time.time())
    return value if math.isfinite(value) and value >= 0 else None


def error_for_status(status: int, headers: Mapping[str, str] | None = None, *, too_long: bool = False) -> BackendError:
    """Classify an HTTP failure; ``too_long`` is the backend's reading of a 400's body."""
    if status == 429:
        return BackendError(Fault.RATE_LIMITED, retry_after=parse_retry_after(headers))
    if status == 408:
        return BackendError(Fault.TIMEOUT)
    if status >= 500:
        return BackendError(Fault.SERVER_ERROR, retry_after=parse_retry_after(headers))
    if status in (401, 403):
        return BackendError(Fault.AUTH)
    if status == 413 or (too_long and status in (400, 422)):
        return BackendError(Fault.INPUT_TOO_LONG)
    if status in (400, 404, 422):
        return BackendError(Fault.BAD_REQUEST)
    return BackendError(Fault.ERROR)
