import pytest

from amplifier_module_context_summarize.core.handles import HandleError, handle_for, resolve

MESSAGES = [
    {"role": "user", "content": "read the config"},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "read", "input": {"path": "c.toml"}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "x = 1"}]},
]


def test_handles_resolve_to_what_they_name_and_are_stable():
    whole = handle_for(MESSAGES, 0)
    block = handle_for(MESSAGES, 2, 0)
    assert whole.startswith("m0-") and block.startswith("m2.0-")
    assert resolve(MESSAGES, whole)[1] is MESSAGES[0]
    assert resolve(MESSAGES, block)[1]["content"] == "x = 1"
    assert handle_for([dict(m) for m in MESSAGES], 2, 0) == block  # same history, same handle


def test_foreign_forged_and_malformed_handles_are_refused():
    other = [{"role": "user", "content": "something else"}, *MESSAGES[1:]]
    with pytest.raises(HandleError, match="does not belong to this session"):
        resolve(other, handle_for(MESSAGES, 0))
    with pytest.raises(HandleError, match="does not belong"):
        resolve(MESSAGES, "m9-abcdef")
    with pytest.raises(HandleError, match="does not belong"):
        resolve(MESSAGES, "m1.5-abcdef")
    with pytest.raises(HandleError, match="is not a handle"):
        resolve(MESSAGES, "../etc/passwd")
