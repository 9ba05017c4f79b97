"""The request budget (core/budget.py): what a window and its output reserve leave for the view."""

from __future__ import annotations

import pytest

from amplifier_module_context_summarize import create_manager
from amplifier_module_context_summarize.core.budget import request_budget, window_budget
from amplifier_module_context_summarize.testing import (
    FakeProvider,
    mixed_history,
)

# ------------------------------------------------------------------------------- 4. windows without room


@pytest.mark.parametrize(
    ("window", "output", "expected"),
    [(32_768, 32_768, 23_576), (8_192, 7_500, 5_144), (8_192, None, 5_144), (200_000, 8_000, 191_000)],
)
async def test_the_budget_never_exceeds_a_reported_window(window: int, output: int | None, expected: int) -> None:
    provider = FakeProvider(context_window=window, max_output_tokens=output)
    assert await request_budget(None, provider, 1_000, None, 200_000) == expected
    manager = create_manager({})
    for message in mixed_history(60):
        await manager.add_message(message)
    view = await manager.get_messages_for_request(provider=provider)
    assert manager.counter.count_messages(view) <= window


@pytest.mark.parametrize("window", [1, 2, 3, 10, 1_000, 4_000, 10**12])
@pytest.mark.parametrize("output", [None, 1, 500, 4_000, 10**12])
@pytest.mark.parametrize("margin", [0, 1_000, 10**6])
def test_window_budget_is_positive_and_inside_the_window(window: int, output: int | None, margin: int) -> None:
    assert 1 <= window_budget(window, output, margin) <= window
