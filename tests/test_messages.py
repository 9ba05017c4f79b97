"""Groups and view validity in the tool shapes, mixed, with the awkward cases."""

import pytest

from amplifier_module_context_summarize.core.invariants import check_view
from amplifier_module_context_summarize.core.messages import (
    group_messages,
    is_user_turn,
    sanitize,
    validate_message,
)
from amplifier_module_context_summarize.testing import amplifier_turn, anthropic_turn, mixed_history, openai_turn


@pytest.mark.parametrize("turn", [openai_turn, anthropic_turn, amplifier_turn])
def test_tool_turn_is_one_group(turn):
    messages = turn(0)
    groups = group_messages(messages)
    # user request | assistant call + all results | assistant reply
    assert [(g.start, g.end) for g in groups] == [(0, 1), (1, len(messages) - 1), (len(messages) - 1, len(messages))]
    assert not check_view(messages)


def test_mixed_history_is_valid_and_groups_cover_everything():
    history = mixed_history(9)
    groups = group_messages(history)
    assert groups[0].start == 0 and groups[-1].end == len(history)
    assert all(a.end == b.start for a, b in zip(groups, groups[1:], strict=False))
    assert not check_view(history)


def test_parallel_results_split_across_messages_join_one_group():
    messages = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "x", "arguments": "{}"}},
                {"id": "b", "type": "function", "function": {"name": "y", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "b", "content": "B"},
        {"role": "tool", "tool_call_id": "a", "content": "A"},
        {"role": "user", "content": "next"},
    ]
    groups = group_messages(messages)
    assert [(g.start, g.end) for g in groups] == [(0, 3), (3, 4)]


def test_orphan_result_and_dangling_call_are_removed_from_the_view():
    messages = [
        {"role": "tool", "tool_call_id": "ghost", "content": "orphan"},
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "calling"},
                {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}},
            ],
        },
        {"role": "user", "content": "never mind"},
    ]
    assert check_view(messages)
    view = [m for g in group_messages(messages) for m in sanitize(messages[g.start : g.end])]
    assert not check_view(view)
    assert {"role": "user", "content": "go"} in view
    assert view[1]["content"] == [{"type": "text", "text": "calling"}]
    assert messages[2]["content"][1]["type"] == "tool_use", "sanitizing must not touch the input"


def test_sanitize_returns_untouched_groups_as_the_same_objects():
    messages = anthropic_turn(1)[1:4]
    assert sanitize(messages) is messages
    assert messages[0]["content"][0]["signature"] == "sig-1=="


def test_user_message_with_results_and_text_stays_with_its_call():
    messages = [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "Read", "input": {}}]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t", "content": "ok"},
                {"type": "text", "text": "and also check the docs"},
            ],
        },
    ]
    assert len(group_messages(messages)) == 1
    assert is_user_turn(messages[1])
    assert not is_user_turn({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]})


@pytest.mark.parametrize(
    ("message", "fragment"),
    [
        ("hello", "must be a dict"),
        ({}, "no 'role'"),
        ({"role": "wizard", "content": "x"}, "'role' is 'wizard'"),
        ({"role": "user", "content": 42}, "'content' must be"),
        ({"role": "assistant", "content": [{"type": "tool_use", "name": "x"}]}, "without an 'id'"),
        ({"role": "assistant", "tool_calls": [{"function": {}}]}, "'tool_calls[0]' has no 'id'"),
        ({"role": "assistant", "tool_calls": [{"tool": "bash", "arguments": {}}]}, "'tool_calls[0]' has no 'id'"),
        ({"role": "tool", "content": "x"}, "no 'tool_call_id'"),
    ],
)
def test_bad_messages_name_the_field(message, fragment):
    with pytest.raises(ValueError) as info:
        validate_message(message)
    assert fragment in str(info.value)


def test_view_problems_reports_result_without_call_and_call_without_result():
    assert check_view([{"role": "tool", "tool_call_id": "x", "content": ""}])
    assert check_view([{"role": "assistant", "tool_calls": [{"id": "x"}]}, {"role": "user", "content": "hi"}])


@pytest.mark.parametrize("arguments", [{"path": "a.py"}, '{"path": "a.py"}', None])
def test_orchestrator_tool_calls_are_valid_and_grouped(arguments):
    """loop-basic's ``{"id", "tool", "arguments"}`` calls, answered by ``role: tool`` messages carrying a ``name``."""
    messages = [
        {"role": "user", "content": "read it"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "tool": "read_file", "arguments": arguments}]},
        {"role": "tool", "tool_call_id": "c1", "name": "read_file", "content": "print(1)"},
        {"role": "assistant", "content": "It prints 1."},
    ]
    for message in messages:
        validate_message(message)
    assert [(g.start, g.end) for g in group_messages(messages)] == [(0, 1), (1, 3), (3, 4)]
    assert not check_view(messages)
    assert check_view(messages[:2] + messages[3:]) and check_view(messages[2:])


CALL_SHAPES = [
    {"role": "assistant", "content": "no calls"},
    {"role": "user", "content": [{"type": "tool_use", "id": "u1", "name": "x", "input": {}}]},
    {"role": "assistant", "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{}"}}, {"id": ""}, "x"]},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "b", "name": "f", "input": {}}, "text", 3]},
    {  # loop-streaming stores each call twice: a tool_calls entry and a content block
        "role": "assistant",
        "content": [{"type": "tool_call", "id": "c", "name": "f", "input": {}}, {"type": "text", "text": "hi"}],
        "tool_calls": [{"id": "c", "tool": "f", "arguments": {}}, {"id": "d", "tool": "g", "arguments": {}}],
    },
    {  # a block repeating an entry after one that does not, an unhashable type, a call with no id
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "e", "name": "f", "input": {}},
            {"type": ["tool_use"], "id": "z"},
            {"type": "tool_use", "name": "f", "input": {}},
            {"type": "tool_use", "id": "e", "name": "f", "input": {}},
        ],
        "tool_calls": [{"id": "f", "tool": "g", "arguments": {}}],
    },
]


@pytest.mark.parametrize("message", CALL_SHAPES)
def test_call_ids_are_message_calls_ids_each_once_in_order(message):
    """``call_ids`` reads ids without taking calls apart (every append asks): the same as ``message_calls``' ids."""
    from amplifier_module_context_summarize.core.messages import call_ids, message_calls

    wanted = list(dict.fromkeys(i for i, _, _ in message_calls(message) if i)) if message["role"] == "assistant" else []
    assert call_ids(message) == wanted
