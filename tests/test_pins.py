"""Pins on tool output and what pins cost a request (issue 43, items 7 and 8).

A pinned tool output (``metadata.pin`` on the result, a ``pin_patterns`` match in it, or a pattern in the arguments
of the call that got it) is restated verbatim after the summary under its call, or reported dropped; a request
never tokenizes the marked messages again.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from amplifier_core.models import HookResult
from amplifier_core.testing import MockCoordinator

from amplifier_module_context_summarize import create_manager
from amplifier_module_context_summarize.core.history import History
from amplifier_module_context_summarize.core.invariants import check_view
from amplifier_module_context_summarize.core.messages import message_text
from amplifier_module_context_summarize.core.state import pins_for
from amplifier_module_context_summarize.core.tokens import TokenCounter
from amplifier_module_context_summarize.stores import MemoryStore
from amplifier_module_context_summarize.testing.builders import tool_call, tool_result

BUDGET = 4_000
SHAPES = ("openai", "anthropic", "amplifier", "orchestrator")


def config(**extra: Any) -> dict[str, Any]:
    fixed = {"max_tokens": BUDGET, "background_compaction": False, "safety_margin": 0, "summarizer": "extractive"}
    return {**fixed, **extra}


def filler_turns(start: int, count: int, shape: str) -> list[dict[str, Any]]:
    """Turns that push the pinned messages' groups into the summary."""
    out: list[dict[str, Any]] = []
    for i in range(start, start + count):
        words = " ".join(f"w{i}_{k}" for k in range(60))
        out.append({"role": "user", "content": f"Request {i}: {words}"})
        out.append(tool_call(shape, f"call_f{i}", "bash", {"command": f"make part{i}"}))
        out.append(tool_result(shape, f"call_f{i}", f"built part {i}. {words}"))
        out.append({"role": "assistant", "content": f"Done with {i}. {words}"})
    return out


def hooks() -> tuple[Any, list[dict[str, Any]]]:
    registry = MockCoordinator().hooks
    seen: list[dict[str, Any]] = []

    async def record(event: str, data: dict[str, Any]) -> HookResult:
        seen.append({"event": event, **data})
        return HookResult(action="continue")

    for name in ("context:pins_dropped", "context:post_compact"):
        registry.register(name, record, priority=0, name=f"record-{name}")
    return registry, seen


async def replay(manager: Any, messages: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    views = []
    for i, message in enumerate(messages):
        await manager.add_message(message)
        if i + 1 == len(messages) or messages[i + 1]["role"] == "assistant":
            view = await manager.get_messages_for_request(BUDGET)
            assert manager.counter.count_messages(view) <= BUDGET
            assert not check_view(view), check_view(view)
            views.append(view)
    return views


def shown_texts(view: list[dict[str, Any]]) -> list[str]:
    return [message_text(m) for m in view]


# ------------------------------------------------------------------ item 7: a pinned tool output keeps what it pins


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("how", ["metadata", "pattern"])
async def test_a_pinned_tool_output_is_shown_verbatim_after_its_group_is_summarized(shape, how):
    rules = "RULE-7731: never force-push to main; squash before merging."
    result = tool_result(shape, "call_rules", rules if how == "metadata" else f"<pin-me/> {rules}")
    if how == "metadata":
        result["metadata"] = {"pin": True}
    messages = [
        {"role": "user", "content": "Request 0: set up the repository."},
        tool_call(shape, "call_rules", "read_file", {"path": "docs/CONTRIBUTING.md"}, text="Reading the guide."),
        result,
        {"role": "assistant", "content": "Read it."},
        *filler_turns(1, 40, shape),
    ]
    registry, seen = hooks()
    manager = create_manager(config(pin_patterns=["<pin-me/>"]), hooks=registry)
    views = await replay(manager, messages)
    posts = [e for e in seen if e["event"] == "context:post_compact"]
    assert len(posts) >= 5
    for view in views[-10:]:
        pinned = [t for t in shown_texts(view) if rules in t]
        assert pinned, "the pinned output is in every view"
        assert any(t.startswith("[PINNED TOOL OUTPUT] read_file(") and "docs/CONTRIBUTING.md" in t for t in pinned)
    assert not [e for e in seen if e["event"] == "context:pins_dropped"]


async def test_a_pattern_in_a_calls_arguments_pins_the_output_it_got_not_the_line_asking_for_it():
    """The docs' example: ``pin_patterns: ["AGENTS.md"]`` keeps the rules read, not "let me read the rules"."""
    rules = "RULE-AGENTS-42: run `make lint` before every commit."
    messages = [
        {"role": "user", "content": "Request 0: follow the project's rules."},
        tool_call("anthropic", "toolu_1", "Read", {"file_path": "AGENTS.md"}, text="Let me read the rules first."),
        tool_result("anthropic", "toolu_1", rules),
        {"role": "assistant", "content": "Understood."},
        *filler_turns(1, 40, "anthropic"),
    ]
    manager = create_manager(config(pin_patterns=["AGENTS.md"]))
    views = await replay(manager, messages)
    for view in views[-10:]:
        texts = shown_texts(view)
        assert any(rules in t and "AGENTS.md" in t for t in texts), "the rules read are kept under their call"
        assert "Let me read the rules first." not in texts, "the line asking to read them is not a pin"


async def test_pinned_tool_outputs_past_their_room_are_reported_dropped_and_the_newest_kept():
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Request 0: gather the facts."}]
    for i in range(8):
        messages.append(tool_call("openai", f"call_{i}", "lookup", {"key": i}))
        result = tool_result("openai", f"call_{i}", f"FACT-{i}: " + "detail " * 60)
        messages.append({**result, "metadata": {"pin": True}})
    messages.append({"role": "assistant", "content": "Gathered."})
    messages += filler_turns(1, 40, "openai")
    registry, seen = hooks()
    manager = create_manager(config(pin_budget_ratio=0.1), hooks=registry)
    views = await replay(manager, messages)
    dropped = [e for e in seen if e["event"] == "context:pins_dropped"]
    assert dropped, "pinned outputs that do not fit their room are reported"
    last = dropped[-1]
    results = {i: messages.index(next(m for m in messages if m.get("tool_call_id") == f"call_{i}")) for i in range(8)}
    text = "\n".join(shown_texts(views[-1]))
    kept = [i for i in range(8) if f"FACT-{i}: " in text]
    assert kept and kept == list(range(8 - len(kept), 8)), "the newest pinned outputs are kept"
    assert last["dropped_indices"] == [results[i] for i in range(8) if i not in kept]
    assert last["pin_tokens"] <= last["pin_room"]


async def test_a_resume_shows_the_same_pinned_outputs():
    """Marks are made as messages are added, so ``set_messages`` in a new process pins the same outputs."""
    rules = "RULE-AGENTS-9: tabs in Makefiles."
    messages = [
        {"role": "user", "content": "Request 0: follow the rules."},
        tool_call("openai", "call_r", "read_file", {"path": "AGENTS.md"}),
        tool_result("openai", "call_r", rules),
        {"role": "assistant", "content": "Understood."},
        *filler_turns(1, 30, "openai"),
    ]
    store = MemoryStore()
    first = create_manager(config(pin_patterns=["AGENTS.md"]), store=store)
    views = await replay(first, messages)
    assert any(rules in t for t in shown_texts(views[-1]))
    resumed = create_manager(config(pin_patterns=["AGENTS.md"]), store=store)
    await resumed.set_messages(messages)
    assert await resumed.get_messages_for_request(BUDGET) == views[-1]


# ------------------------------------------------------------------ item 8: marked messages tokenized once


def reminder(i: int) -> str:
    return f"<system-reminder>Reminder {i}: keep the style guide.</system-reminder>"


def claude_code_turns(count: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(count):
        words = " ".join(f"w{i}_{k}" for k in range(40))
        asks = [{"type": "text", "text": reminder(i)}, {"type": "text", "text": words}]
        out.append({"role": "user", "content": asks})
        out.append(tool_call("anthropic", f"toolu_{i}", "Read", {"file_path": f"src/p{i}.py"}, text=f"Part {i}."))
        out.append(tool_result("anthropic", f"toolu_{i}", f"def f{i}(): pass  # {words}"))
        out.append({"role": "assistant", "content": f"Part {i} done. {words}"})
    return out


async def test_pin_patterns_tokenize_each_marked_message_a_bounded_number_of_times():
    """A request reads each pin's tokens as worked out when first needed: the reminders of a long session are not
    tokenized again on every request (on 5818ea8 each was tokenized once per request after its group was summarized,
    so a request's cost grew with the history)."""
    manager = create_manager(config(pin_patterns=["<system-reminder>"], max_tokens=20_000))
    counted: Counter[str] = Counter()
    count_text = manager.counter.count_text

    def counting(text: str) -> int:
        if text.startswith("<system-reminder>"):
            counted[text] += 1
        return count_text(text)

    manager.counter.count_text = counting
    messages = claude_code_turns(120)
    for i, message in enumerate(messages):
        await manager.add_message(message)
        if i + 1 == len(messages) or messages[i + 1]["role"] == "assistant":
            await manager.get_messages_for_request(20_000)
    assert manager.state.boundary > 40, "most of the session is summarized, its reminders pinned or dropped"
    worst = max(counted[reminder(i)] for i in range(1, 60))
    assert worst <= 8, f"an old reminder was tokenized {worst} times over {len(messages)} messages"


def test_bench_pins_times_each_length_with_and_without_the_pattern_and_judges_the_growth():
    from amplifier_module_context_summarize.benchmark.pins import PinTiming, pins_target, render, run_pins

    timings = run_pins((6, 12), budget=3_000)
    assert [(t.turns, t.pinned) for t in timings] == [(6, False), (6, True), (12, False), (12, True)]
    assert all(t.request_ms >= 0 and t.mean_ms >= 0 for t in timings)
    flat = [PinTiming(150, True, 1.0, 2.0), PinTiming(500, True, 1.5, 2.0)]
    steep = [PinTiming(150, True, 1.0, 2.0), PinTiming(500, True, 3.0, 2.0)]
    assert pins_target(flat)[1] and not pins_target(steep)[1]
    assert "| 500 | <system-reminder> | 3.00 | 2.00 |" in render(steep) and "FAIL" in render(steep)


# ------------------------------------------------------------------ a pin's room is tokens, whatever the script


@pytest.mark.parametrize(
    "words", ["部署前必须运行完整的测试套件并记录结果。", "Run the whole test suite before deploying. "]
)
def test_a_long_pin_is_clipped_to_its_allowance_in_tokens_whatever_its_script(words):
    """A pin is clipped by the view's own counter, not at three characters a token (a Chinese pin took 3x its room)."""
    counter = TokenCounter()
    history = History(counter, "fp")
    history.append({"role": "user", "content": words * 400})
    history.append({"role": "assistant", "content": "Noted."})
    history.append({"role": "user", "content": "Next."})
    history.append({"role": "assistant", "content": "Done."})
    allowance = 300
    pinned = pins_for(history, len(history.groups), counter, allowance)
    assert pinned, "the first request is always pinned"
    for message, tokens in pinned:
        assert tokens == counter.count_message(message)
        assert tokens <= allowance, tokens
    long_pin = message_text(pinned[0][0])
    assert words[:10] in long_pin and "handle" in long_pin  # the task, clipped with its recall handle


def test_a_message_is_taken_apart_for_its_pinned_words_only_when_something_could_pin_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every append asks whether a message's words are pinned: with no ``pin_patterns`` and no ``metadata.pin``
    the answer is no without stripping the message of its tool blocks (a cold resume appends 50,000)."""
    from amplifier_module_context_summarize.core import pins
    from amplifier_module_context_summarize.core.pins import PinRule

    stripped: list[object] = []
    strip = pins.strip_tool_blocks
    monkeypatch.setattr(pins, "strip_tool_blocks", lambda m, **kw: stripped.append(m) or strip(m, **kw))
    plain = {"role": "assistant", "content": [{"type": "text", "text": "keep the TICKET-1 fix"}]}
    flagged = {"role": "user", "content": "remember this", "metadata": {"pin": True}}
    assert not PinRule(()).words(plain, False) and stripped == []
    assert PinRule(()).words(flagged, True) and PinRule(("TICKET-1",)).words(plain, False)
    assert not PinRule(("nowhere",)).words(plain, False) and len(stripped) == 3
