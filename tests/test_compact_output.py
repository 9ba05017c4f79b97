"""``compact`` shows the result: tokens before -> after and % saved, a line per compaction, the summary in full."""

from __future__ import annotations

import io
import json
import re

from amplifier_module_context_summarize.__main__ import main
from amplifier_module_context_summarize.cli.compact import render_result
from amplifier_module_context_summarize.cli.progress import Progress


def test_default_budget_gives_the_example_a_summary_shown_in_full_with_summary(capsys):
    assert main(["compact", "--example", "--summary"]) == 0
    out = capsys.readouterr().out
    assert "% saved)" in out and " -> " in out
    assert "  compaction 1: " in out
    head, _, summary = out.partition("the final [CONTEXT SUMMARY] in full")
    assert summary.splitlines()[1] == "[CONTEXT SUMMARY]"
    assert "characters clipped" not in summary
    assert re.search(r"; [1-9]\d* compactions in ", head)


def test_no_summary_hides_it_and_json_holds_view_report_and_compactions(capsys):
    assert main(["compact", "--example", "--no-summary"]) == 0
    assert "in full" not in capsys.readouterr().out
    assert main(["compact", "--example", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result) == {"view", "report", "compactions"}
    assert "history_tokens" in result["report"]


def test_progress_bar_goes_to_stderr(capsys):
    assert main(["compact", "--example", "--progress", "--no-summary"]) == 0
    captured = capsys.readouterr()
    assert "replaying" in captured.err and "/123" in captured.err
    assert "replaying" not in captured.out and "\r" not in captured.out


def test_progress_bar_redraws_on_one_line():
    stream = io.StringIO()
    bar = Progress(100, "replaying", True, stream, delay_s=0.0, use_tqdm=False, unit="messages")
    for done in range(1, 101):
        bar(done, 100)
    bar.close()
    text = stream.getvalue()
    assert text.count("\n") == 1
    assert text.rstrip().split("\r")[-1].startswith("replaying [##############################] 100/100 messages")


def test_each_compaction_line_says_its_change_and_counts_in_words():
    report = {"history_tokens": 10_000, "view_tokens": 3_000, "budget": 4_000, "requests": 3, "compactions": 2}
    grew = {"tokens_before": 3_694, "token_count": 3_713, "newly_summarized": 1, "summarized_messages": 49}
    shrank = {"tokens_before": 4_000, "token_count": 1_000, "newly_summarized": 4, "summarized_messages": 53}
    lines = render_result({"report": report, "compactions": [grew, shrank]}).splitlines()
    assert lines[1] == "  compaction 1: 3,694 -> 3,713 tokens (+1%), 1 message summarized, 49 in the summary now"
    assert lines[2] == "  compaction 2: 4,000 -> 1,000 tokens (-75%), 4 messages summarized, 53 in the summary now"
