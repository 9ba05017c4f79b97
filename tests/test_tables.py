"""The one Markdown table writer (core/tables.py) and the report tables built on it, pinned byte for byte."""

from amplifier_module_context_summarize.core.tables import markdown_table
from amplifier_module_context_summarize.evaluation.loader import PROBE_KINDS
from amplifier_module_context_summarize.evaluation.report import kind_table


def test_a_markdown_table_is_a_header_a_rule_and_one_line_per_row():
    assert markdown_table(["a", "b"], [["1", "2"], ["x y", "—"]]) == [
        "| a | b |",
        "| --- | --- |",
        "| 1 | 2 |",
        "| x y | — |",
    ]
    assert markdown_table(["only"], []) == ["| only |", "| --- |"]


def test_the_eval_kind_table_keeps_its_exact_text():
    kinds = {kind: {"key_score": None, "judge_score": None, "probes": 0} for kind in PROBE_KINDS}
    kinds[PROBE_KINDS[0]] = {"key_score": 0.5, "judge_score": 3.25, "probes": 4}
    summary = {
        "by_kind": {"summarize": kinds},
        "strategies": {"summarize": {"key_score": 0.75, "judge_score": None, "probes": 8}},
    }
    assert kind_table(summary) == (
        "| strategy | recall | artifact | continuation | decision | all |\n"
        "| --- | --- | --- | --- | --- | --- |\n"
        "| summarize | 0.50 (n=4), judge 3.2 | — | — | — | 0.75 (n=8) |"
    )
