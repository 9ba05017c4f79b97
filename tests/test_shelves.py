"""The shelves: the working set's layout inputs kept up to date group by group, equal to deriving them afresh.

The reference below derives every input the straightforward way, from everything folded (as the layout did
before the shelves): random facts with roots that change, spellings that merge, moves, deletions, failures that
resolve, commands run with and without ``cd <root> &&``. Any difference fails with the seed and the step.
"""

from __future__ import annotations

import gc
import posixpath
import random
from collections import Counter
from typing import Any

import pytest

from amplifier_module_context_summarize.core.tokens import TokenCounter
from amplifier_module_context_summarize.working_set import layout
from amplifier_module_context_summarize.working_set.fold import (
    CHANGED_ORDER,
    DELETED,
    MOVED_AWAY,
    WorkingSet,
    canonical,
    command_in_root,
    merge_entry,
)
from amplifier_module_context_summarize.working_set.layout import Layout
from amplifier_module_context_summarize.working_set.reads import READ_GROUP, read_form
from amplifier_module_context_summarize.working_set.records import (
    DELETE,
    EDIT,
    MOVE,
    READ,
    USE,
    WRITE,
    CallOutcome,
    Facts,
)
from amplifier_module_context_summarize.working_set.records import FileAction as Action
from amplifier_module_context_summarize.working_set.shelves import Shelves, definition_lines, shelved

COUNT = TokenCounter().count_text
ROOTS = ("/repo", "/work/app", "/srv")
FOLDERS = ("src", "src/app", "tests", "docs", "lib/x", "")


def random_path(rng: random.Random) -> str:
    folder = rng.choice(FOLDERS)
    name = f"{rng.choice('abcdefgh')}{rng.randrange(12)}.{rng.choice(('py', 'ex', 'md'))}"
    relative = posixpath.join(folder, name) if folder else name
    roll = rng.random()
    if roll < 0.35:
        return f"{rng.choice(ROOTS)}/{relative}"
    if roll < 0.4:
        return f"./{relative}"
    if roll < 0.43:
        return rng.choice(("~/notes.md", "../other/x.py", "/tmp/t.log", "/", "."))
    return relative


def one_file_reads(rng: random.Random) -> tuple[str, ...]:
    """Reads the working set folds per file (``reads.py``), of a few files in a few spellings."""
    path = rng.choice(("src/a1.py", "/repo/src/a1.py", "lib/b.ex", "./lib/b.ex"))
    return (f"sed -n '{rng.randrange(9)},20p' {path}", f"grep -n x{rng.randrange(5)} {path} -B2", f"head -5 {path}")


def random_facts(rng: random.Random) -> Facts:
    files = []
    for _ in range(rng.randint(0, 4)):
        action = rng.choice((WRITE, EDIT, READ, READ, USE, DELETE, MOVE))
        target = random_path(rng) if action == MOVE else ""
        files.append(Action(action, random_path(rng), target))
    outcomes = []
    for _ in range(rng.randint(0, 3)):
        ok = rng.random() < 0.6
        error = "" if ok else rng.choice(("", "E: boom", "FAILED t::x", "No module named y"))
        if rng.random() < 0.7:
            command = rng.choice(
                ("pytest", "make", "cat src/a1.py", "git status", f"ls {rng.randrange(30)}", *one_file_reads(rng))
            )
            key = f"cd {rng.choice(ROOTS)} && {command}" if rng.random() < 0.3 else command
            outcomes.append(CallOutcome(key, True, ok, "passed" if ok else "failed", error, rng.random() < 0.4))
        else:
            key = f"{rng.choice(('Edit', 'Read'))} {random_path(rng)}"
            outcomes.append(CallOutcome(key, False, ok, "ok" if ok else "failed", error))
    urls = tuple(f"https://x.example/{rng.randrange(40)}" for _ in range(rng.randint(0, 1)))
    ids = tuple(
        rng.choice(
            (
                f"PROJ-{rng.randrange(50)}",
                f"commit {rng.choice(('abcdef1234567', 'abcdef9999', '0123456789ab'))[: rng.randint(4, 13)]}",
                f"PR #{rng.randrange(9)}",
            )
        )
        for _ in range(rng.randint(0, 2))
    )
    workdirs = tuple(rng.choice(ROOTS) for _ in range(rng.random() < 0.15))
    definitions = tuple(
        (
            random_path(rng),
            tuple(rng.sample(("f", "g", "h", "K", "j", "m", "n", "p", "q", "r"), rng.randint(1, 9))),
            tuple(rng.sample(("old", "gone", "was"), rng.randint(0, 2))),
        )
        for _ in range(rng.randint(0, 2))
    )
    return Facts(tuple(files), tuple(outcomes), urls, ids, workdirs, definitions)


# ------------------------------------------------------------------ the straightforward reference


def reference_root(ws: WorkingSet) -> str | None:
    if ws.votes:
        return ws.votes.most_common(1)[0][0]
    majority = [f for f, n in ws.folders.items() if n * 2 > ws.absolute]
    if not majority:
        return None
    root = max(majority, key=len)
    parent, name = posixpath.split(root)
    firsts = {r.split("/", 1)[0] for spellings in ws.relative_by_name.values() for r in _all(spellings) if "/" in r}
    return parent if parent != "/" and name in firsts else root


def _all(spellings: str | tuple[str, ...]) -> tuple[str, ...]:
    return (spellings,) if isinstance(spellings, str) else spellings


def reference(ws: WorkingSet) -> dict[str, Any]:
    """Every layout input derived from everything folded, the way the layout did before the shelves."""
    root = reference_root(ws)
    merged: dict[str, list[Any]] = {}
    for spelling, record in ws.files.items():
        merged.setdefault(canonical(spelling, root), []).append(record)
    every = [merge_entry(path, records, root) for path, records in merged.items() if path not in (".", "/")]
    entries = [e for e in every if e.state != MOVED_AWAY]
    folders: dict[bool, dict[str, list[Any]]] = {True: {}, False: {}}
    for entry in entries:
        folders[entry.state in CHANGED_ORDER].setdefault(posixpath.dirname(entry.path), []).append(entry)
    states = {e.path: e.state for e in every}
    names: dict[str, dict[str, tuple[int, int, bool]]] = {}
    for spelling, marks in ws.definitions.items():
        path = canonical(spelling, root)
        if states.get(path) in (DELETED, MOVED_AWAY):
            continue
        known = names.setdefault(path, {})
        for name, mark in marks.items():
            if name not in known or mark[:2] > known[name][:2]:
                known[name] = mark
    definitions = {}
    for path, known in names.items():
        order = sorted(known, key=lambda n: (-known[n][0], known[n][1]))
        text, short = definition_lines(path, [n for n in order if not known[n][2]], [n for n in order if known[n][2]])
        definitions[path] = (text, short, max(m[0] for m in known.values()))
    commands: dict[str, list[Any]] = {}
    in_root = 0
    for key, (seq, runs, ok, label, reads) in ws.commands.items():
        shown, failure = command_in_root(key, root), ws.errors.get(key)
        in_root += shown != key
        known_row = commands.get(shown)
        if known_row is None:
            commands[shown] = [seq, runs, ok, label, reads, failure]
            continue
        if seq > known_row[0]:
            known_row[0], known_row[2], known_row[3] = seq, ok, label
        known_row[1] += runs
        known_row[4] = known_row[4] and reads
        if failure is not None and (known_row[5] is None or failure[0] > known_row[5][0]):
            known_row[5] = failure
    command_rows = []
    reads: dict[str, list[tuple[Any, ...]]] = {}
    for shown, (seq, runs, ok, label, r, f) in commands.items():
        row = ((0 if r else 1) if f is None else (2 if ok else 3), seq, shown, runs, label, f)
        form = read_form(shown) if row[0] == 0 else None
        if form is None:
            command_rows.append(row)
        else:
            reads.setdefault(canonical(form[0], root), []).append((seq, form[1], runs, row))
    for path, listed in reads.items():
        if len(listed) == 1:
            command_rows.append(listed[0][3])
        else:
            folded = tuple(sorted(r[:3] for r in listed))
            command_rows.append((0, folded[-1][0], path, folded, READ_GROUP, None))
    command_rows.sort()
    error_rows = sorted(
        (2 if key in ws.resolved else 3, seq, key, line)
        for key, (seq, line, command, _) in ws.errors.items()
        if not command
    )
    return {
        "root": root,
        "folders": {
            changed: [
                (name, max(e.last for e in files), [(e.path, e.state, e.last, e.moved_from) for e in files])
                for name, files in sorted(by.items())
            ]
            for changed, by in folders.items()
        },
        "relative": any(not e.path.startswith(("/", "~")) for e in entries),
        "definitions": definitions,
        "commands": command_rows,
        "in_root": in_root > 0,
        "errors": error_rows,
        "ids": sorted(ws.ids.items(), key=lambda item: item[1]),
        "urls": sorted(ws.urls.items(), key=lambda item: item[1]),
    }


def as_shelved(shelves: Shelves, ws: WorkingSet) -> dict[str, Any]:
    """The same inputs as the shelves hold them."""
    return {
        "root": shelves.root,
        "folders": {
            changed: [
                (name, shelf.last, [(e.path, e.state, e.last, e.moved_from) for e in shelf.files])
                for name, shelf in sorted(shelves.folders[changed].items())
            ]
            for changed in (True, False)
        },
        "relative": shelves.relative_entries > 0,
        "definitions": dict(shelves.definition_items),
        "commands": sorted(row for recency in shelves.commands.values() for row in recency.rows.values()),
        "in_root": shelves.in_root > 0,
        "errors": sorted(row for recency in shelves.errors.values() for row in recency.rows.values()),
        "ids": [(i, ws.ids[i]) for i in reversed(list(shelves.ids.newest()))],
        "urls": [(u, ws.urls[u]) for u in reversed(list(shelves.urls.newest()))],
    }


@pytest.mark.parametrize("seed", range(40))
def test_shelves_kept_up_to_date_equal_the_inputs_derived_afresh(seed: int) -> None:
    rng = random.Random(seed)
    ws = WorkingSet()
    for step in range(rng.randint(5, 120)):
        ws.add(random_facts(rng))
        if rng.random() < 0.4:
            assert ws.root() == reference_root(ws), (seed, step)
            assert as_shelved(shelved(ws), ws) == reference(ws), (seed, step)


@pytest.mark.parametrize("seed", range(25))
def test_a_render_from_kept_shelves_equals_one_from_fresh_shelves(seed: int) -> None:
    rng = random.Random(1_000 + seed)
    kept, facts = WorkingSet(), []
    for _ in range(rng.randint(5, 80)):
        facts.append(random_facts(rng))
        kept.add(facts[-1])
        if rng.random() < 0.3:
            fresh = WorkingSet()
            for each in facts:
                fresh.add(each)
            for max_tokens in (rng.randint(0, 40), rng.randint(40, 400), rng.randint(400, 4_000)):
                kept_text = layout.render(kept, max_tokens, COUNT)
                assert kept_text == layout.render(fresh, max_tokens, COUNT), (seed, max_tokens)


def test_the_fallback_root_walks_down_the_folders_holding_most_absolute_paths() -> None:
    ws = WorkingSet()
    paths = ["/home/u/p/src/a.py", "/home/u/p/src/b.py", "/home/u/p/lib/c.py", "/etc/x.conf", "src/d.py"]
    ws.add(Facts(tuple(Action(READ, p) for p in paths)))

    assert not ws.votes
    assert ws.root() == reference_root(ws) == "/home/u/p"  # 3 of 4 under it; ``src/`` is relative: one level up


def test_a_tie_in_votes_goes_to_the_folder_voted_for_first() -> None:
    ws = WorkingSet()
    ws.add(Facts(workdirs=("/b", "/a", "/a", "/b")))

    assert ws.root() == reference_root(ws) == Counter(["/b", "/a", "/a", "/b"]).most_common(1)[0][0] == "/b"


@pytest.mark.parametrize("seed", range(30))
def test_the_estimate_at_every_ladder_step_is_the_sum_of_the_lines_it_would_write(seed: int) -> None:
    rng = random.Random(2_000 + seed)
    ws = WorkingSet()
    for _ in range(rng.randint(5, 150)):
        ws.add(random_facts(rng))
    shelves = shelved(ws)
    measure = shelves.measure(COUNT)
    laid_out = Layout(shelves, ws, rng.choice((30, 300, 3_000)), measure)
    estimate = laid_out.estimate()

    for steps in range(len(laid_out.ladder) + 1):
        assert estimate(steps) == sum(measure(line) for line in laid_out.lines(steps)), (seed, steps)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(40))
def test_cutting_what_cannot_fit_by_its_shortest_lines_renders_what_the_count_cut_renders(seed: int) -> None:
    """Folders, definitions and URLs beyond what could fit are only counted: the text must not change."""
    rng = random.Random(3_000 + seed)
    ws = WorkingSet()
    for _ in range(rng.randint(5, 200)):
        ws.add(random_facts(rng))
        if rng.random() < 0.2:
            shelves = shelved(ws)
            measure = shelves.measure(COUNT)
            for max_tokens in (rng.randint(1, 40), rng.randint(40, 300), rng.randint(300, 3_000)):
                cut = Layout(shelves, ws, max_tokens, measure)
                counted = Layout(shelves, ws, max_tokens, measure, fit=False)
                assert cut.text(COUNT) == counted.text(COUNT), (seed, max_tokens)


@pytest.mark.parametrize("seed", range(20))
def test_commit_ids_are_merged_as_a_scan_of_every_id_would_merge_them(seed: int) -> None:
    rng = random.Random(4_000 + seed)
    ws, reference_ids = WorkingSet(), {}
    for seq in range(1, 300):
        sha = rng.choice(("abcdef1234567", "abcdef9999", "0123456789ab", "0123456fff"))[: rng.randint(3, 13)]
        identifier = f"commit {sha}" if rng.random() < 0.8 else f"PROJ-{rng.randrange(20)}"
        ws.add(Facts(identifiers=(identifier,)))
        known = None
        if identifier not in reference_ids and identifier.startswith("commit "):
            known = next(
                (
                    k
                    for k in reference_ids
                    if k.startswith("commit ") and (k.startswith(identifier) or identifier.startswith(k))
                ),
                None,
            )
        reference_ids[known or identifier] = seq
        assert list(ws.ids.items()) == list(reference_ids.items()), (seed, seq)


def test_the_files_a_session_touched_are_kept_in_forms_the_collector_stops_walking() -> None:
    """Issue 48: each file's row and its entry on its folder's shelf are plain tuples of atoms, which a collection
    untracks (a dataclass or a named tuple per file stays tracked: thousands of objects in a long session)."""
    rng = random.Random(7)
    ws = WorkingSet()
    for _ in range(200):
        ws.add(random_facts(rng))
    shelves = shelved(ws)
    gc.collect()  # a tuple is untracked once the tuples in it are: an entry made in an older generation than its
    gc.collect()  # row is looked at after it in the first collection (CPython merges the younger generations first)
    rows = list(shelves.files.values())
    entries = [e for kind in shelves.folders.values() for shelf in kind.values() for e in shelf.by_order.values()]
    assert len(rows) > 50 and len(entries) > 50
    assert not any(gc.is_tracked(row) for row in [*rows, *entries])
