"""Issue 43 (item 14): a view fitted to a budget keeps the working set its summary lists to the last.

When the newest messages leave the view over its budget, the summary's narrative (the segment summaries) gives way
first, then the newest tool outputs are clipped with their handles; only then does the working set lose anything
it lists, and only after it the truncation marker stands in for the summary.
"""

from __future__ import annotations

import pytest
from test_plan import COUNTER
from test_request_view import summarized, view_of

from amplifier_module_context_summarize import create_manager
from amplifier_module_context_summarize.compaction.view.fit import handle_notes
from amplifier_module_context_summarize.compaction.view.splice import NARRATIVE_LEFT_OUT, summary_message
from amplifier_module_context_summarize.core.clip import clip_tool_outputs
from amplifier_module_context_summarize.core.messages import message_text
from amplifier_module_context_summarize.core.state import SUMMARY_MARKER
from amplifier_module_context_summarize.testing.builders import openai_turn
from amplifier_module_context_summarize.working_set.fold import HEADING

LEFT_OUT = NARRATIVE_LEFT_OUT.split("(")[0]
NARRATIVE_CLIPPED = "characters of the summary's narrative left out for this request"
HANDLE = "characters clipped; recall with context_recall, handle m"


def section(text: str) -> str:
    """The working-set section of a summary's text ("" when it has none)."""
    at = text.find(HEADING)
    return text[at:] if at >= 0 else ""


def summary_of(view: list[dict]) -> str:
    texts = [message_text(m) for m in view if message_text(m).startswith(SUMMARY_MARKER)]
    assert len(texts) <= 1
    return texts[0] if texts else ""


def outputs(view: list[dict]) -> list[str]:
    return [message_text(m) for m in view if m.get("role") == "tool"]


def smallest_whole_working_set(view) -> int:
    """Tokens of the smallest view that still shows the whole working set: the narrative left out and every tool
    output clipped to the floor, with its handle (what may give way before the working set does)."""
    state, history, tool = view.state, view.history, view.config.recall_tool_name
    built = view.build()
    at = len(view.system_view())
    built[at] = summary_message(state, history, view.working_set_room(), tool, narrative_chars=0)
    stored = {id(m): i for i, m in enumerate(history.messages)}
    notes = handle_notes(history, [stored.get(id(m)) for m in built], tool)
    clipped, _ = clip_tool_outputs(built, 0, COUNTER.count_messages, notes)
    return COUNTER.count_messages(clipped)


def test_the_history_gives_a_summary_with_a_narrative_a_working_set_and_large_outputs() -> None:
    history, state = summarized()
    view = view_of(history, state)
    text = message_text(view.shown().summary)
    assert section(text).count("— read") >= 20 and state.summary_text in text
    assert all(len(o) > 1_000 for o in outputs(view.build()))


@pytest.mark.parametrize("share", [0.95, 0.8, 0.6, 0.45, 0.3, 0.15, 0.05, 0.0])
def test_the_working_set_stays_whole_while_the_narrative_and_the_outputs_can_give_way(share: float) -> None:
    history, state = summarized()
    view = view_of(history, state)
    whole_section = section(message_text(view.shown().summary))
    floor = smallest_whole_working_set(view)
    budget = floor + int((view.tokens() - floor) * share)
    assert floor <= budget < view.tokens()
    fitted, tokens = view.fitted(budget)
    assert tokens <= budget
    assert section(summary_of(fitted)) == whole_section, "the working set is the last part of a summary to give way"


def test_the_narrative_gives_way_before_the_newest_output_is_clipped() -> None:
    history, state = summarized()
    view = view_of(history, state)
    narrative = COUNTER.count_text(state.summary_text or "")
    fitted, tokens = view.fitted(view.tokens() - narrative // 2)
    text = summary_of(fitted)
    assert NARRATIVE_CLIPPED in text, "the narrative is clipped head and tail, the marker saying so"
    assert section(text) == section(message_text(view.shown().summary))
    assert outputs(fitted) == outputs(view.build()), "no output is clipped while the narrative can give way"
    assert tokens <= view.tokens() - narrative // 2


def test_outputs_clipped_with_their_handles_give_the_narrative_back_the_room_the_clips_left() -> None:
    history, state = summarized()
    view = view_of(history, state)
    narrative = COUNTER.count_text(state.summary_text or "")
    budget = view.tokens() - 3 * narrative
    fitted, tokens = view.fitted(budget)
    text = summary_of(fitted)
    assert tokens <= budget and any(HANDLE in o for o in outputs(fitted))
    assert section(text) == section(message_text(view.shown().summary))
    assert LEFT_OUT not in text, "the clips left room: the narrative shows (clipped or whole), not left out"


def test_the_working_set_gives_way_only_once_the_narrative_is_out_and_the_outputs_are_clipped() -> None:
    history, state = summarized()
    view = view_of(history, state)
    floor = smallest_whole_working_set(view)
    whole_section = section(message_text(view.shown().summary))
    fitted, tokens = view.fitted(floor - 60)
    text = summary_of(fitted)
    assert tokens <= floor - 60
    assert text and LEFT_OUT in text and NARRATIVE_CLIPPED not in text, "the narrative went first, whole"
    assert section(text) and len(section(text)) < len(whole_section), "then the working set, shortened, not dropped"
    assert all(HANDLE in o for o in outputs(fitted)), "every output was clipped, with its handle, before it"


def suite_run(call_id: str, lines: int) -> list[dict]:
    """A request, a test run and its output of ``lines`` lines (about 14 tokens each)."""
    args = '{"command": "pytest -q tests/"}'
    call = {"id": call_id, "type": "function", "function": {"name": "bash", "arguments": args}}
    output = "\n".join(f"tests/test_{j}.py::test_case PASSED [{j}%]" for j in range(lines))
    return [
        {"role": "user", "content": "Run the suite."},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": output},
    ]


@pytest.mark.parametrize("lines", [600, 2_000])
async def test_a_large_new_output_beside_a_summary_is_clipped_and_the_working_set_stays(lines: int) -> None:
    """The item's case, in band through the manager: a summary in view, then an output larger than the room left."""
    budget = 8_000
    config = {"max_tokens": budget, "summarizer": {"provider": "extractive"}, "background_compaction": False}
    manager = create_manager(config)
    history = [{"role": "system", "content": "You are a careful coding agent."}]
    for i in range(40):
        history += openai_turn(i, 10)
    for message in history:
        await manager.add_message(message)
    await manager.get_messages_for_request(token_budget=budget)
    for message in suite_run("run_1", lines):
        await manager.add_message(message)
    view = await manager.get_messages_for_request(token_budget=budget)
    whole = section(message_text(manager.view.shown().summary))
    assert manager.view.tokens() > budget >= manager.counter.count_messages(view), "the view was fitted"
    assert whole.count("— read") >= 30
    assert section(summary_of(view)) == whole, "the files the agent touched stay in view"
    assert HANDLE in outputs(view)[-1], "the newest output is clipped, with the handle that recalls it"


def test_a_narrative_clipped_to_fit_keeps_the_lines_the_instructions_keep():
    """The matrix (issue 43): a large new output made the fit ladder clip the narrative, and the fact
    ``summary_instructions`` says every summary keeps went with the clipped middle."""
    from amplifier_module_context_summarize.compaction.view.splice import shortened

    lines = [f"- step {i}: read src/part_{i}.py and checked every branch" for i in range(40)]
    lines[20] = "- The refund id is ORD-7731 and it is pending."
    narrative = "\n".join(lines)
    clipped = shortened(narrative, 600, keep=("ORD-7731",))
    assert len(clipped) < len(narrative) and "characters of the summary's narrative left out" in clipped
    assert "- The refund id is ORD-7731 and it is pending." in clipped
    assert "ORD-7731" not in shortened(narrative, 600)  # without the guidance, the middle goes whole
    left_out = shortened(narrative, 60, keep=("ord-7731",))  # no room for a head and tail: the kept line stays
    assert left_out.startswith("- The refund id is ORD-7731") and "left out for this request" in left_out


def test_a_narrative_clipped_to_fit_keeps_what_the_offline_summary_kept_for_a_focus():
    """The feature matrix (explore mode, kept): a ``pre_compact`` hook's focus ("keep MIG-4410") steered a
    summary the LLM, stalling, left to the offline one, which kept the fact in its ``Kept as the user asked``
    section; a request whose newest messages filled the budget clipped the narrative, and the kept line went with
    the middle (the request knows the instructions' names, not a past compaction's focus)."""
    from amplifier_module_context_summarize.compaction.view.splice import shortened
    from amplifier_module_context_summarize.summarizer.extractive import KEPT

    steps = [f"- step {i}: read src/part_{i}.py and checked every branch" for i in range(40)]
    narrative = "\n".join(
        ["### User requests", *steps[:20], KEPT, "- The migration window is MIG-4410 on Friday.", "### Progress"]
        + steps[20:]
    )
    clipped = shortened(narrative, 600)
    assert len(clipped) < len(narrative) and "characters of the summary's narrative left out" in clipped
    assert f"{KEPT}\n- The migration window is MIG-4410 on Friday.\n" in clipped
    assert "- step 20:" not in clipped  # the rest of the middle still goes
