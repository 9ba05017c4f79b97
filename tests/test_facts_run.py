"""``FactsRun`` joins the facts of consecutive groups as ``joined`` does, field for field, in order."""

from __future__ import annotations

from amplifier_module_context_summarize.benchmark.coding import CodingSession
from amplifier_module_context_summarize.benchmark.synth import SMALL, TextSource
from amplifier_module_context_summarize.compaction.view.losses import FactsRun, account_of, joined
from amplifier_module_context_summarize.working_set.facts import extract
from amplifier_module_context_summarize.working_set.fold import WorkingSet
from amplifier_module_context_summarize.working_set.index import FactsLog
from amplifier_module_context_summarize.working_set.records import NO_FACTS, CallOutcome, Facts, FileAction


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


def test_a_run_of_plain_forms_is_its_groups_joined() -> None:
    """Groups read from the log in its plain form (``FactsLog.plain``) join as their facts do, named tuples and all,
    mixed with groups added as ``Facts``."""
    history = CodingSession(SMALL, seed=13, text=TextSource()).history(900)
    parts = [extract(history[i : i + 2]) for i in range(0, len(history), 2)]
    assert len(parts) > 2 * FactsLog.BLOCK and any(p is NO_FACTS for p in parts)
    log = FactsLog()
    for part in parts:
        log.append(part)
    run = FactsRun()
    for g, part in enumerate(parts):
        if g % 5 == 0:
            run.add(part)
        else:
            run.add_plain(log.plain(g))
    joined_facts = run.facts()
    assert joined_facts == joined(parts) and joined_facts.files and joined_facts.outcomes and joined_facts.definitions
    assert all(type(f) is FileAction for f in joined_facts.files)
    assert all(type(o) is CallOutcome and o.reads == o[5] for o in joined_facts.outcomes)
    empty = FactsRun()
    empty.add_plain(log.plain(next(g for g, p in enumerate(parts) if p is NO_FACTS)))
    assert not empty.empty and empty.facts() == NO_FACTS


def test_an_account_of_plain_forms_is_the_account_of_the_facts() -> None:
    """The account reads a run's plain form (the log's tuples, never all made named tuples at once): the same
    root as a fold of the joined ``Facts`` (it reads only the root's evidence), the same artifacts kept and lost."""
    history = CodingSession(SMALL, seed=17, text=TextSource()).history(3_000)
    parts = [extract(history[i : i + 2]) for i in range(0, len(history), 2)]
    parts += [Facts(workdirs=("/repo",), files=(FileAction("read", "/repo/src/x.py"), FileAction("move", "a", "b")))]
    log = FactsLog()
    for part in parts:
        log.append(part)
    run = FactsRun()
    for g in range(len(parts)):
        run.add_plain(log.plain(g))
    plain = run.plain()
    assert all(type(f) is tuple for f in plain[0]) and all(type(o) is tuple for o in plain[1])
    facts = run.facts()
    assert len(facts.files) > 1_000 and len(facts.outcomes) > 500
    whole = WorkingSet()
    whole.add(facts)
    evidence = WorkingSet()
    evidence.add_root_evidence(plain[0], plain[4])
    assert evidence.root() == whole.root() is not None and evidence.votes == whole.votes
    shown = " ".join(f.path for f in facts.files[::7]) + " " + " ".join(o.key for o in facts.outcomes[::5])
    assert account_of(plain, shown) == account_of(facts, shown)
    kept = account_of(plain, shown)
    assert kept.kept_count and kept.lost_count
