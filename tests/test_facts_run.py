"""``FactsRun`` joins the facts of consecutive groups as ``joined`` does, field for field, in order."""

from __future__ import annotations

from amplifier_module_context_summarize.benchmark.coding import CodingSession
from amplifier_module_context_summarize.benchmark.synth import SMALL, TextSource
from amplifier_module_context_summarize.compaction.view.losses import FactsRun, joined
from amplifier_module_context_summarize.working_set.facts import extract
from amplifier_module_context_summarize.working_set.records import NO_FACTS, Facts, FileAction


def test_a_run_is_its_groups_joined() -> None:
    history = CodingSession(SMALL, seed=11, text=TextSource()).history(600)
    parts = [extract(history[i : i + 3]) for i in range(0, len(history), 3)]
    parts += [NO_FACTS, Facts(urls=("https://example.com/a",)), Facts(files=(FileAction("read", "a.py"),))]
    parts += [Facts(identifiers=("PROJ-12",), workdirs=("/repo",)), Facts(definitions=(("a.py", ("f",), ()),))]
    assert any(p is NO_FACTS for p in parts) and sum(bool(p.outcomes) for p in parts) > 20
    run = FactsRun()
    for part in parts:
        run.add(part)
    assert run.facts() == joined(parts)
    assert all(run.facts())  # every field holds items: a field read into another would show


def test_a_run_of_groups_without_facts_is_not_empty_but_holds_none() -> None:
    run = FactsRun()
    run.add(NO_FACTS)
    assert not run.empty
    assert run.facts() == NO_FACTS
