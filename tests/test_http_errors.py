"""Turning an HTTP status, its headers and the body's wording into a ``BackendError`` category."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amplifier_module_context_summarize.backends.base import Fault
from amplifier_module_context_summarize.backends.http_errors import (
    error_for_status,
    mentions_input_too_long,
    parse_retry_after,
)

KNOWN = {
    Fault.AUTH,
    Fault.BAD_REQUEST,
    Fault.CONNECTION,
    Fault.ERROR,
    Fault.INPUT_TOO_LONG,
    Fault.RATE_LIMITED,
    Fault.SERVER_ERROR,
    Fault.TIMEOUT,
}


def test_parse_retry_after_forms() -> None:
    assert parse_retry_after(None) is None
    assert parse_retry_after({}) is None
    assert parse_retry_after({"retry-after": "12"}) == 12.0
    assert parse_retry_after({"retry-after": "0.5"}) == 0.5
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({"retry-after": "-3"}) is None
    future = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert 25 <= (parse_retry_after({"retry-after": future}) or 0) <= 31


@given(st.floats(min_value=0, max_value=1e6, allow_nan=False))
def test_parse_retry_after_seconds_roundtrip(seconds: float) -> None:
    assert parse_retry_after({"retry-after": repr(seconds)}) == pytest.approx(seconds)


@given(st.integers(min_value=100, max_value=599), st.booleans(), st.text(max_size=20))
def test_error_for_status_is_total(status: int, too_long: bool, header: str) -> None:
    error = error_for_status(status, {"retry-after": header}, too_long=too_long)
    assert error.fault in KNOWN
    assert str(error) == error.fault
    assert error.retry_after is None or error.retry_after >= 0


def test_too_long_markers() -> None:
    assert mentions_input_too_long("prompt is too long: 210000 tokens > 200000 maximum")
    assert mentions_input_too_long("This model's maximum context length is 8192 tokens")
    assert not mentions_input_too_long(
        "max_tokens: 100000 > 64000, which is the maximum allowed number of output tokens"
    )
    assert not mentions_input_too_long(None)
