"""``view/request.py``: the request view of one history in one state, built and fitted directly (without the
manager): its count is its messages' count, a fitted copy never exceeds the budget however small, what a hook
injected shows only beside the state it followed."""

from __future__ import annotations

import pytest
from test_plan import CONFIG, COUNTER, history_of

from amplifier_module_context_summarize.compaction.view.masking import Masks, MaskSettings
from amplifier_module_context_summarize.compaction.view.request import RequestView
from amplifier_module_context_summarize.core.budget import RequestBudget
from amplifier_module_context_summarize.core.history import History
from amplifier_module_context_summarize.core.state import CompactionState, Segment

WIRE = 20_000


def view_of(history: History, state: CompactionState, masking: bool = False) -> RequestView:
    c = CONFIG
    budget = RequestBudget(COUNTER, None, WIRE, c.compact_threshold, c.target_usage, c.preserve_recent_ratio)
    view = RequestView(c, COUNTER, budget)
    view.install(history, Masks(history, MaskSettings()) if masking else None, state)
    return view


def summarized(turns: int = 30, words: int = 400, boundary: int = 60) -> tuple[History, CompactionState]:
    history = history_of(turns, words)
    text = " ".join(f"fact{i}" for i in range(300))
    return history, CompactionState(boundary, (Segment(0, boundary, text, COUNTER.count_text(text)),))


@pytest.mark.parametrize("masking", [False, True], ids=["plain", "masked"])
def test_the_views_count_is_the_count_of_the_messages_it_builds(masking: bool) -> None:
    history, state = summarized()
    view = view_of(history, state.masked_to(80) if masking else state, masking)
    built = view.build()
    assert view.tokens() == COUNTER.count_messages(built)
    assert built[: len(history.system)] == [history.messages[i] for i in history.system]
    assert built[-1] == history.messages[-1], "the verbatim tail ends the view"


@pytest.mark.parametrize("budget", [12_000, 4_000, 1_500, 400, 120, 64, 60, 40])
def test_a_fitted_copy_never_exceeds_the_budget(budget: int) -> None:
    """Down to the smallest valid view there is (39 tokens here: the system prompt, the latest request and its
    reply): below 62 tokens the truncation marker itself gives way, as the view still opens with the request."""
    history, state = summarized()
    view = view_of(history, state)
    assert view.tokens() > budget
    fitted, tokens = view.fitted(budget)
    assert tokens == COUNTER.count_messages(fitted) <= budget
    assert view.state is state and view.build() != fitted, "only the copy is fitted, never the state"
    assert view.sent_tokens(budget) == tokens


def test_a_view_that_fits_is_sent_as_it_is_and_forgets_what_was_clipped() -> None:
    history, state = summarized()
    view = view_of(history, state)
    tokens = view.tokens()
    _, fitted = view.fitted(tokens // 3)
    assert view.clipped, "fitting a third of the view clips tool outputs (recall searches them)"
    assert all(history.messages[i]["role"] == "tool" for i in view.clipped)

    assert view.sent_tokens(tokens) == tokens
    assert view.clipped == ()
    assert view.fitted(tokens) == (view.build(), tokens)


def test_an_injection_shows_after_the_summary_of_its_state_only() -> None:
    history, state = summarized()
    view = view_of(history, state)
    before = view.tokens()
    view.inject("Remember: the deploy key lives in vault.")
    shows = view.shown()
    assert shows.injected is not None and shows.injected[0]["content"].startswith("Remember")
    built = view.build()
    assert built.index(shows.injected[0]) == built.index(shows.summary) + 1
    assert view.tokens() == before + shows.injected[1]

    view.state = CompactionState(state.boundary + 3, state.segments)  # the next compaction installs its state
    assert view.shown().injected is None


def test_an_injection_is_clipped_to_the_pins_room_and_none_clears_it() -> None:
    history, state = summarized()
    view = view_of(history, state)
    view.inject("word " * 50_000)
    room = view.pin_room()
    assert view.injection is not None and view.injection.tokens <= room + 64
    view.inject(None)
    assert view.injection is None and view.shown().injected is None


def irregular_history() -> History:
    """Steps shown as stored, groups a view shows sanitized (a call never answered, a result no call made), and
    an open group still waiting for its result."""
    history = history_of(12, 60)
    for i in range(3):
        call = {"id": f"lost_{i}", "type": "function", "function": {"name": "run", "arguments": "{}"}}
        history.append({"role": "user", "content": f"Try {i}."})
        history.append({"role": "assistant", "content": "Running it.", "tool_calls": [call]})
        history.append({"role": "user", "content": f"Never mind {i}."})
        history.append({"role": "tool", "tool_call_id": f"stray_{i}", "content": "an answer to nothing"})
        history.append({"role": "assistant", "content": "Noted."})
    for message in history_of(4, 60).messages[1:]:
        history.append(message)
    call = {"id": "open", "type": "function", "function": {"name": "run", "arguments": "{}"}}
    history.append({"role": "user", "content": "One more."})
    history.append({"role": "assistant", "content": None, "tool_calls": [call]})
    return history


@pytest.mark.parametrize("masking", [False, True], ids=["plain", "masked"])
def test_the_views_message_count_is_the_length_of_the_view_it_builds_without_building_it(
    masking: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    history = irregular_history()
    assert history.irregular, "groups shown other than stored are counted as shown"
    closed = len(history.groups) - 1
    text = "a summary"
    states = [CompactionState()]
    for boundary in (1, 5, closed // 2, closed):
        segment = Segment(0, boundary, text, COUNTER.count_text(text))
        state = CompactionState(boundary, (segment,))
        states += [state, state.masked_to(min(boundary + 6, closed))] if masking else [state]
    counts = []
    for state in states:
        view = view_of(history, state, masking)
        counts.append(view.message_count())
        assert counts[-1] == len(view.build())
    fresh = view_of(history, CompactionState(), masking)
    monkeypatch.setattr(RequestView, "build", lambda self: pytest.fail("a count builds no view"))
    assert fresh.message_count() == counts[0]
