"""The steering measurement (``evaluation/steering.py``) on one short bundled session: a fact only a pin keeps and
one only a focus keeps survive 8+ compactions when steered and are lost without it; the other probes score the
same."""

from __future__ import annotations

from amplifier_module_context_summarize.evaluation.cli import DEFAULT_CORPUS
from amplifier_module_context_summarize.evaluation.loader import load_corpus
from amplifier_module_context_summarize.evaluation.steering import main, measure, seeded, seeds_of, table


async def test_pins_and_focus_keep_their_facts_after_eight_compactions_and_other_probes_do_not_lose():
    [session] = load_corpus(DEFAULT_CORPUS, ["swe-pydicom-1413"])
    [row] = await measure([session], 12_000)
    plain, steered = row.plain, row.steered
    assert min(plain.compactions, steered.compactions) >= 8
    assert not plain.pin_kept and not plain.focus_kept, "without steering the seeded facts are lost"
    assert steered.pin_kept and steered.focus_kept
    assert steered.views_after_8 > 0
    assert steered.pin_after_8 == steered.focus_after_8 == steered.views_after_8, "in every view after the 8th"
    assert steered.key_score >= plain.key_score and steered.probes == plain.probes == len(session.probes)
    assert "plain 0 of 2, steered 2 of 2" in table([row])


def test_the_seeded_notes_shift_the_probes_and_only_the_steered_one_is_pinned():
    [session] = load_corpus(DEFAULT_CORPUS, ["swe-pydicom-1413"])
    seeds = seeds_of(session)
    plain, steered = seeded(session, seeds, False), seeded(session, seeds, True)
    assert len(steered.messages) == len(session.messages) + 2
    pins = [m for m in steered.messages if m.get("metadata", {}).get("pin")]
    assert len(pins) == 1 and seeds.pin in pins[0]["content"]
    assert not any(m.get("metadata", {}).get("pin") for m in plain.messages)
    for before, after in zip(session.probes, steered.probes, strict=True):
        assert steered.messages[after.at] == session.messages[before.at]
    text = "\n".join(str(m.get("content")) for m in session.messages)
    assert seeds.pin not in text and seeds.focus not in text


def test_a_budget_too_small_is_named(capsys):
    import pytest

    with pytest.raises(SystemExit):
        main(["--budget", "10"])
    assert "--budget" in capsys.readouterr().err
