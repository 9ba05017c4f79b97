"""Issue 48: the long sequences a history keeps for a whole session are held in forms a full collection does not
visit item by item (``core.atoms``), and read as the lists they replaced."""

from __future__ import annotations

import bisect
import gc
import random
import types

import pytest

from amplifier_module_context_summarize.core import atoms
from amplifier_module_context_summarize.core.atoms import AtomChunks, SortedChunks
from amplifier_module_context_summarize.core.history import History
from amplifier_module_context_summarize.core.tokens import TokenCounter
from amplifier_module_context_summarize.testing import mixed_history
from amplifier_module_context_summarize.working_set.shelves import LineTokens


def visited_references(root: object) -> int:
    """References a full collection visits among the tracked objects reachable from ``root`` (modules, classes
    and functions left out: they are the program's, not the data's)."""
    seen, stack, visits = {id(root)}, [root], 0
    while stack:
        current = stack.pop()
        if not gc.is_tracked(current) or isinstance(current, (types.ModuleType, type, types.FunctionType)):
            continue
        referents = gc.get_referents(current)
        visits += len(referents)
        for referent in referents:
            if id(referent) not in seen:
                seen.add(id(referent))
                stack.append(referent)
    return visits


@pytest.mark.parametrize("seed", range(3))
def test_atom_chunks_read_as_the_list_of_what_was_appended(monkeypatch, seed: int) -> None:
    monkeypatch.setattr(atoms, "CHUNK", 4)
    rng = random.Random(seed)
    chunks: AtomChunks[str] = AtomChunks()
    plain: list[str] = []
    for n in range(rng.randrange(0, 40)):
        chunks.append(f"item {n}")
        plain.append(f"item {n}")
        assert len(chunks) == len(plain) and list(chunks) == plain
    for index in [*range(-len(plain), len(plain)), len(plain), len(plain) + 4, -len(plain) - 1, 10**6]:
        if -len(plain) <= index < len(plain):
            assert chunks[index] == plain[index]
        else:
            with pytest.raises(IndexError):
                chunks[index]
    assert chunks[1:7:2] == plain[1:7:2] and chunks[::-1] == plain[::-1]


def test_full_chunks_are_untracked_once_they_survived_a_collection(monkeypatch) -> None:
    monkeypatch.setattr(atoms, "CHUNK", 8)
    chunks = AtomChunks((f"hash {n}", n) for n in range(30))
    gc.collect()  # untracks the items; the chunks holding them at the next collection at most
    gc.collect()
    *full, newest = chunks.parts()
    assert len(full) == 3 and len(newest) == 6
    assert not any(gc.is_tracked(chunk) for chunk in full)


@pytest.mark.parametrize("seed", range(5))
def test_sorted_chunks_hold_what_insort_into_a_list_holds(monkeypatch, seed: int) -> None:
    monkeypatch.setattr(atoms, "SORTED_CHUNK", 2)  # splits and emptied chunks every few steps
    rng = random.Random(seed)
    chunks: SortedChunks[tuple[int, str]] = SortedChunks()
    plain: list[tuple[int, str]] = []
    for _ in range(400):
        if plain and rng.random() < 0.4:
            item = rng.choice(plain)
            plain.remove(item)
            chunks.remove(item)
        else:
            item = (rng.randrange(30), rng.choice("abcdef"))
            if item in plain:
                continue
            bisect.insort(plain, item)
            chunks.add(item)
        assert list(chunks) == plain and list(reversed(chunks)) == plain[::-1] and len(chunks) == len(plain)
    with pytest.raises(ValueError, match="not in"):
        chunks.remove((99, "z"))


def test_a_long_history_adds_few_references_for_the_collector_beyond_its_messages() -> None:
    """Its prefix sums, chain hashes and user-turn indices were lists, one visit per group or turn in every full
    collection (31,000 each at 50,000 messages); the stored messages themselves are checked in test_frozen_history."""
    history = History(TokenCounter("cl100k_base"), "fingerprint")
    for message in mixed_history(1_500, size=4):
        history.append(message)
    history.chain_at(len(history.groups) - 1)
    assert len(history.groups) > 2_000 and len(history.requests) >= 1_500
    gc.collect()
    gc.collect()
    history.messages._recent.clear()  # the thaw cache: at most two generations of 128 messages, not the history
    history.messages._older.clear()
    assert visited_references(history) < 2 * atoms.CHUNK + 500  # the newest chunk of each sequence, and the rest


def test_line_counts_are_remembered_in_dicts_the_collector_does_not_track() -> None:
    calls: list[str] = []

    def count(text: str) -> int:
        calls.append(text)
        return len(text.split())

    measured = LineTokens(count)
    lines = [f"line {n} of {'word ' * (n % 5)}" for n in range(3 * 100)]
    assert [measured(line) for line in lines] == [count(line + "\n") for line in lines]
    calls.clear()
    assert [measured(line) for line in lines] == [len((line + "\n").split()) for line in lines] and not calls
    assert not gc.is_tracked(measured._recent) and not gc.is_tracked(measured._older)
