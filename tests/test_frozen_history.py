"""The stored history is kept in a form the garbage collector does not walk (issue 48): messages as exact tuples of
atoms, closed groups as an array of starts. Readers still get ordinary, mutable messages."""

from __future__ import annotations

import datetime
import gc

from amplifier_module_context_summarize import create_manager
from amplifier_module_context_summarize.core import atoms, frozen
from amplifier_module_context_summarize.core.frozen import MessageLog, freeze, thaw
from amplifier_module_context_summarize.core.messages import group_messages
from amplifier_module_context_summarize.testing import mixed_history


def test_a_message_thaws_to_what_was_frozen_in_new_containers_and_the_same_atoms() -> None:
    for message in mixed_history(40):
        thawed = thaw(freeze(message))
        assert thawed == message and thawed is not message
        assert type(thawed["content"]) is type(message["content"])
    odd = {"role": "user", "content": "x", "metadata": {"at": datetime.date(2026, 1, 2), "tags": {"a"}, "t": (1, [2])}}
    thawed = thaw(freeze(odd))
    assert thawed == odd
    assert thawed["metadata"]["tags"] is not odd["metadata"]["tags"]  # not JSON: a deep copy, never the stored one


def test_the_stored_forms_are_not_tracked_by_the_collector_once_collected() -> None:
    log = MessageLog()
    for message in mixed_history(60):
        log.append(message)
    gc.collect()
    stored = [log.frozen(i) for i in range(len(log))]
    assert stored and not any(gc.is_tracked(form) for form in stored)
    assert not any(isinstance(form, (dict, list)) for form in stored)


def test_a_tag_is_told_by_identity_not_by_an_equal_string() -> None:
    message = {"role": "user", "content": ["\x00frozen dict", "a", "b"]}
    assert thaw(freeze(message)) == message


def test_reads_give_one_object_per_message_while_it_is_cached_and_a_fresh_one_after(monkeypatch) -> None:
    monkeypatch.setattr(frozen, "CACHE_SIZE", 4)
    log = MessageLog()
    messages = mixed_history(20)
    for message in messages:
        log.append(message)
    assert log[-1] is log[len(log) - 1]
    first = log[0]
    assert first == messages[0]
    for i in range(1, len(log)):  # twice the cache: message 0 is let go
        assert log[i] == messages[i]
    assert log[0] == first and log[0] is not first
    assert log[2:5] == messages[2:5] and list(log) == messages


def test_closed_groups_are_an_array_and_read_as_the_grouping_of_a_plain_list() -> None:
    manager = create_manager({"max_tokens": 50_000})
    messages = mixed_history(50)
    for message in messages:
        manager.history.append(message)
    groups = manager.history.groups
    assert [(g.start, g.end, set(g.pending), g.closed) for g in groups] == [
        (g.start, g.end, set(g.pending), g.closed) for g in group_messages(messages)
    ]
    assert groups[-1] is groups[len(groups) - 1]  # the newest group is the one the grouper extends
    assert len(groups._starts) == len(groups) - 1  # the closed groups are starts, not objects


async def test_get_messages_returns_what_was_added_as_copies_the_caller_may_change() -> None:
    manager = create_manager({"max_tokens": 50_000})
    messages = mixed_history(30)
    for message in messages:
        await manager.add_message(message)
    got = await manager.get_messages()
    assert got == messages
    got[3]["role"] = "changed"
    content = got[5].get("content")
    if isinstance(content, list):
        content.append({"type": "text", "text": "changed"})
    assert await manager.get_messages() == messages
    view = await manager.get_messages_for_request(token_budget=50_000)
    assert all(type(m) is dict for m in view)


async def test_a_manager_holds_few_tracked_objects_per_message(monkeypatch) -> None:
    """Before issue 48 about three per message (a dict, a list and a group); now the thaw cache is bounded and
    what grows with the history is the working set's records."""
    monkeypatch.setattr(frozen, "CACHE_SIZE", 16)
    messages = mixed_history(1_500)
    gc.collect()
    before = len(gc.get_objects())
    manager = create_manager({"max_tokens": 8_000, "compaction_strategy": "extractive"})
    for message in messages:
        await manager.add_message(message)
    await manager.get_messages_for_request(token_budget=8_000)
    gc.collect()
    held = len(gc.get_objects()) - before
    assert held < 1.25 * len(messages), held  # 3 per message before


def test_every_shape_thaws_compiled_and_by_the_general_reader_alike() -> None:
    values = [
        {},
        [],
        (),
        {"a": [], "b": {}, "c": ()},
        {"role": "user", "content": [[[]], [(), (1,)], {"k": (2, [3.5, None, True])}]},
        {1: "int key", (1, "t"): "tuple key", None: [False]},
        {"deep": [[[[[[[[[[{"x": 1}]]]]]]]]]]},
    ]
    for value in values:
        form = freeze(value)
        assert thaw(form) == value and frozen._read_all(form) == value
        assert type(thaw(form)) is type(value)


def test_a_shape_too_large_or_too_deep_to_compile_is_read_by_the_general_reader() -> None:
    wide = {"role": "tool", "content": [{"type": "text", "text": str(i)} for i in range(1_000)]}
    deep: object = "leaf"
    for _ in range(60):
        deep = [deep]
    for value in (wide, {"role": "user", "content": deep}):
        form = freeze(value)
        assert thaw(form) == value
        assert frozen._compiled.get(form[0]) is None


def test_a_shape_is_compiled_once_and_its_string_shared_by_every_form() -> None:
    first, second = freeze({"role": "user", "content": "a"}), freeze({"role": "user", "content": "b"})
    assert first[0] is second[0]
    thaw(first)
    assert frozen._compiled[first[0]] is frozen._compiled[second[0]]
    assert thaw(second) == {"role": "user", "content": "b"}


def test_a_cyclic_message_is_kept_as_a_deep_copy_of_its_own() -> None:
    message: dict = {"role": "user", "content": []}
    message["content"].append(message)
    form, copied = frozen.frozen_copy(message)
    assert copied is not message and copied["content"][0] is copied
    assert thaw(form)["content"][0]["role"] == "user"


async def test_what_the_caller_changes_after_add_or_set_never_reaches_the_stored_history() -> None:
    manager = create_manager({"max_tokens": 50_000})
    messages = mixed_history(12)
    originals = [thaw(freeze(m)) for m in messages]
    for message in messages[:6]:
        await manager.add_message(message)
    for message in messages[:6]:
        message["role"] = "changed"
        content = message.get("content")
        if isinstance(content, list) and content and isinstance(content[0], dict):
            content[0]["text"] = "changed"
    assert await manager.get_messages() == originals[:6]
    await manager.set_messages(messages[6:])
    messages[6]["role"] = "changed"
    assert await manager.get_messages() == originals[6:]
    assert (await manager.get_messages())[0] is not (await manager.get_messages())[0]


def test_the_stored_forms_are_held_in_untracked_chunks_so_a_collection_does_not_visit_them(monkeypatch) -> None:
    monkeypatch.setattr(atoms, "CHUNK", 8)
    log = MessageLog()
    messages = mixed_history(30)
    for message in messages:
        log.append(message)
    gc.collect()
    gc.collect()  # a chunk is untracked once its forms are: the collection after the one that untracked them at most
    *chunks, tail = log.stored()
    assert len(chunks) == len(messages) // 8 and len(tail) == len(messages) % 8
    assert not any(gc.is_tracked(chunk) for chunk in chunks)
    assert [log.frozen(i) for i in range(len(log))] == [freeze(m) for m in messages]
    assert log.copies() == messages and list(log) == messages and log[-1] == messages[-1]


async def test_bench_collector_counts_the_managers_tracked_objects_beside_the_hosts() -> None:
    from amplifier_module_context_summarize.benchmark.collector import measure_collector, render

    costs = await measure_collector(600)
    assert costs.host.tracked > costs.alone.tracked  # the host's messages are tracked dicts and lists
    # 0.59 at 50,000 messages; at this size a manager's fixed objects (caches, the working set's shelves) weigh
    # about 2 a message, and message copies kept as dicts and lists would add 2 to 3 more
    assert 0 < costs.tracked_per_message < 3.5, costs
    assert costs.ratio > 0 and "tracked objects per stored message" in render([costs])
    assert costs.tracked_ratio == costs.manager.tracked / costs.host.tracked > 1


class _Text(str):
    """A ``str`` subclass: not an atom, so it is frozen whole (an ``o`` atom), yet JSON writes it as a string."""


SURROGATE = "ok \ud800 then"


def test_a_lone_surrogate_is_found_from_the_frozen_atoms_wherever_the_message_holds_it() -> None:
    holding = [
        {"role": "user", "content": SURROGATE},
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": SURROGATE}]},
        {"role": "assistant", "content": "x", "tool_calls": [{"id": "c", "function": {"name": "f", SURROGATE: 1}}]},
        {"role": "user", "content": "x", "metadata": {"tags": {SURROGATE}}},  # a set: searched whole
        {"role": "user", "content": "x", "metadata": {"t": (1, [SURROGATE])}},
        {"role": "user", "content": "x", "metadata": {(1, SURROGATE): 2}},  # a key JSON cannot hold
        {"role": "user", "content": _Text(SURROGATE)},
    ]
    clean = [*mixed_history(30), {"role": "user", "content": "naïve ☃ \U0001f600", "metadata": {"tags": {"é"}}}]
    for message in holding + clean:
        expected = message in holding
        assert frozen.holds_lone_surrogate(freeze(message)) is expected, message
        log = MessageLog()
        log.append(message)
        assert log.holds_lone_surrogate(0) is expected


async def test_a_history_holding_a_lone_surrogate_anywhere_is_marked_unencodable() -> None:
    for where in ({"content": SURROGATE}, {"content": "x", "metadata": {"k": [{SURROGATE: "v"}]}}):
        manager = create_manager({"max_tokens": 50_000})
        await manager.set_messages([*mixed_history(10), {"role": "user", **where}])
        assert manager.history.unencodable
    manager = create_manager({"max_tokens": 50_000})
    await manager.set_messages(mixed_history(10))
    assert not manager.history.unencodable
