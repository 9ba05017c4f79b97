"""``working_set/index.py``'s ``FactsLog``: the facts kept per group (compressed a block at a time) read back as the
very facts extracted, named tuples and all."""

from __future__ import annotations

from amplifier_module_context_summarize.core.messages import group_messages
from amplifier_module_context_summarize.testing import mixed_history
from amplifier_module_context_summarize.working_set.facts import extract
from amplifier_module_context_summarize.working_set.index import FactsLog
from amplifier_module_context_summarize.working_set.records import NO_FACTS, CallOutcome, Facts, FileAction


def test_facts_read_back_from_the_log_are_the_facts_kept() -> None:
    messages = mixed_history(600)
    extracted = [extract(messages[g.start : g.end]) for g in group_messages(messages)]
    assert len(extracted) > 2 * FactsLog.BLOCK and NO_FACTS in extracted and any(f.outcomes for f in extracted)
    log = FactsLog()
    for facts in extracted:
        log.append(facts)
    read = [log[g] for g in range(len(extracted))]
    assert read == extracted and list(log.read(0, len(extracted))) == extracted
    for facts in read:
        assert type(facts) is Facts
        assert all(type(f) is FileAction and f.path == f[1] for f in facts.files)
        assert all(type(o) is CallOutcome and o.reads == o[5] for o in facts.outcomes)
    assert all(log[g] is NO_FACTS for g, facts in enumerate(extracted) if facts == NO_FACTS)
