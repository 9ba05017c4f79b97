"""What ``compact`` prints (issue 45 items 2, 6, 7): the result first, then what was kept and lost; the summary
and the raw report behind flags; a summarizer that failed said once, with why; the display's shortening unlike
the view's own clip markers."""

from __future__ import annotations

import json
import re

import pytest

from amplifier_module_context_summarize.__main__ import main
from amplifier_module_context_summarize.cli import compact
from amplifier_module_context_summarize.cli.compact import render_view
from amplifier_module_context_summarize.readers import READERS, Loaded


@pytest.fixture(autouse=True)
def no_keys(monkeypatch):
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def failing_summarizer(monkeypatch):
    """An LLM summarizer that fails at once: the session's provider, which a replay has none of (``no_provider``),
    as a fake key without network fails (``connection``), minus the wait."""
    monkeypatch.setattr(compact, "choose_summarizer", lambda requested, environ: ("session", None))


def test_a_failed_llm_summarizer_is_said_once_with_why(failing_summarizer, capsys):
    """On 0553db5: exit 0, nothing on stderr, ``fallback no_provider`` at the end of one compaction line,
    ``fallbacks: [<Fault.NO_PROVIDER: 'no_provider'>]`` and ``summarizer: session`` in the report."""
    assert main(["compact", "--example"]) == 0
    out, err = capsys.readouterr()
    warnings = [line for line in err.splitlines() if line.startswith("warning: summaries fell back")]
    assert len(warnings) == 1 and "offline extractive summarizer" in warnings[0] and "no_provider" in warnings[0]
    headline = out.splitlines()[1]
    assert (
        headline.startswith("tokens: ") and "summaries: extractive, offline: session failed (no_provider)" in headline
    )
    assert "Fault." not in out and out.count("no_provider") == 1


def test_the_json_report_names_the_fallback_as_text(failing_summarizer, capsys):
    assert main(["compact", "--example", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)["report"]
    assert report["fallbacks"] == ["no_provider"]
    assert report["offline_fallbacks"] == report["summarizing_compactions"] == 1


def test_a_summarizer_that_worked_is_not_called_a_fallback(capsys):
    assert main(["compact", "--example"]) == 0
    out, err = capsys.readouterr()
    assert "fell back" not in err and "offline:" not in out
    assert out.splitlines()[1].endswith("; summaries: extractive")


def test_compact_leads_with_the_result_then_kept_and_lost_and_hides_the_rest(capsys):
    """On 0553db5 the default output carried a raw ``report:`` dump (``tokens_before_last_compaction``,
    ``skipped: []``) and the whole summary."""
    assert main(["compact", "--example"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines[:4]] == ["read", "tokens", "kept", "lost"]
    assert re.fullmatch(
        r"kept: 48 messages in the final view: a \[CONTEXT SUMMARY\] for the oldest \d+ messages, .*", lines[2]
    )
    assert lines[-1].startswith("more: --summary the final [CONTEXT SUMMARY] (")
    text = "\n".join(lines)
    assert "report:" not in text and "tokens_before_last_compaction" not in text and "skipped:" not in text
    assert "\n[CONTEXT SUMMARY]\n" not in text


def test_the_summary_and_the_report_come_with_their_flags(capsys):
    assert main(["compact", "--example", "--summary", "--report"]) == 0
    out = capsys.readouterr().out
    report = out.partition("\nreport:\n")[2]
    assert "  view_tokens: " in report and "  skipped: none" in report and "[]" not in report
    summary = out.partition("the final [CONTEXT SUMMARY] in full")[2]
    assert summary.splitlines()[1] == "[CONTEXT SUMMARY]"
    assert "\nmore: --view every message of the final view, --json all of it\n" in out  # what was not asked for


def test_a_session_that_fits_says_so(tmp_path, capsys):
    path = tmp_path / "short.jsonl"
    messages = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi, what shall we do?"}]
    path.write_text("\n".join(json.dumps(m) for m in messages))
    assert main(["compact", str(path)]) == 0
    out = capsys.readouterr().out
    assert "fits the budget of 16,000: nothing to compact" in out
    assert "saved" not in out and "kept:" not in out


def test_counts_are_in_words_and_labels_nest_no_parentheses(capsys):
    """``1 part(s)``, ``(the summary stands for 77)`` and ``gemini (Gemini CLI (Content[] …))`` on 0553db5."""
    assert main(["compact", "--example"]) == 0
    out = capsys.readouterr().out
    assert "(s)" not in out and "stands for" not in out
    for name in ["native", *(reader.NAME for reader in READERS)]:
        line = compact.read_line(
            compact.EXAMPLE_SESSION, Loaded([{"role": "user", "content": "x"}], name, skipped=[(3, "bad")])
        )
        depth = deepest = 0
        for char in line:
            depth += {"(": 1, ")": -1}.get(char, 0)
            deepest = max(deepest, depth)
        assert deepest <= 1 and "1 part of the file skipped" in line, line


def test_the_display_cut_looks_unlike_a_clip_and_keeps_the_real_markers():
    """On 0553db5 ``--view`` cut long messages with ``[... N characters clipped ...]``, the view's own clip marker,
    and could cut the real ``[clipped: …; handle …]`` marker in half."""
    real = "[clipped: 423 chars; recall with context_recall, handle m5-3fa2b1]"
    text = "Q" * 1_000 + real + "Z" * 1_000
    shown = render_view([{"role": "tool", "content": text}], width=400)
    assert "characters clipped" not in shown and real in shown
    notes = [int(n.replace(",", "")) for n in re.findall(r"<display: ([\d,]+) characters not printed>", shown)]
    assert notes and sum(notes) + shown.count("Q") + shown.count("Z") == 2_000


def test_the_display_cut_leaves_short_messages_and_is_linear():
    assert render_view([{"role": "user", "content": "short"}]) == "[0] user: short"
    big = "x" * 2_000_000
    assert len(render_view([{"role": "user", "content": big}])) < 500
