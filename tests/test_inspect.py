"""``inspect``: the Markdown account of each compaction, the self-contained HTML page (rendered in a real
headless Chromium when one is installed), and the ``artifacts_kept`` / ``artifacts_lost`` counts of
``context:post_compact``."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from amplifier_module_context_summarize import SUMMARY_MARKER, create_manager
from amplifier_module_context_summarize.__main__ import main
from amplifier_module_context_summarize.__main__ import main as cli_main
from amplifier_module_context_summarize.cli.inspect import inspect_session, render_html, render_markdown
from amplifier_module_context_summarize.cli.losses import standing_text
from amplifier_module_context_summarize.compaction.view.losses import account, newly_hidden
from amplifier_module_context_summarize.core.messages import REPLACEMENT, message_text
from amplifier_module_context_summarize.testing import EventRecorder, FakeProvider, replay, tool_call, tool_result

BUDGET = 6_000
LOSSY_TURNS = 40
"""Long enough that at this budget the working set must drop something (what the account then lists)."""
HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)> & "quotes"'
CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)


def session(turns: int = 24) -> list[dict]:
    history: list[dict] = [{"role": "system", "content": "You are a coding agent."}]
    for t in range(turns):
        if t % 4 == 0:
            history.append({"role": "user", "content": f"Task {t}: fix src/pkg/mod_{t}.py. {HOSTILE}"})
        call = f"call_{t}"
        history.append(tool_call("openai", call, "bash", {"command": f"python -m pytest tests/test_{t}.py"}))
        output = f"ERROR: test_{t} failed in src/pkg/mod_{t}.py\n" + "".join(
            f"line {i}: checking branch {i} of src/pkg/mod_{t}.py {HOSTILE}\n" for i in range(40)
        )
        history.append(tool_result("openai", call, output))
        history.append({"role": "assistant", "content": f"Fixed src/pkg/mod_{t}.py (ticket ABC-{100 + t})."})
    return history


@pytest.fixture
def session_file(tmp_path: Path) -> Path:
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(json.dumps(m) for m in session(LOSSY_TURNS)) + "\n")
    return path


def test_markdown_lists_each_compaction_its_summary_and_what_was_lost(session_file, capsys):
    assert main(["inspect", str(session_file), "--budget", str(BUDGET)]) == 0
    out = capsys.readouterr().out
    compactions = re.findall(r"^## Compaction (\d+), at message (\d+)$", out, re.MULTILINE)
    assert len(compactions) >= 2 and [int(n) for n, _ in compactions] == list(range(1, len(compactions) + 1))
    assert out.count("### Summary message") == len(compactions) == out.count("### What was lost")
    assert SUMMARY_MARKER in out and "newly summarized: groups 0–" in out
    assert "artifacts of the hidden messages are no longer named where the view stands for them" in out
    assert re.search(r"^- (files|commands|errors|identifiers).*: `", out, re.MULTILINE)


async def test_the_account_matches_the_replay_and_the_events():
    messages = session(LOSSY_TURNS)
    found = await inspect_session(messages, BUDGET, "s")
    manager = found.manager
    assert list(manager.history.messages) == messages  # the history is untouched
    assert found.compactions and found.view == await manager.get_messages_for_request(token_budget=BUDGET)
    for record in found.compactions:
        assert record.payload["artifacts_kept"] >= 0 and record.payload["artifacts_lost"] >= 0
        assert all(a < b and first < end for _, a, b, first, end in record.newly)
        assert record.summary.startswith(SUMMARY_MARKER) or not record.summary  # empty: only masking so far
    assert any(r.summary for r in found.compactions) or not manager.state.segments
    last = found.compactions[-1].loss
    standing = standing_text(manager, found.view)  # the view's text between its system part and its verbatim tail
    assert standing and standing in "\n".join(message_text(m) for m in found.view)
    assert last.lost and all(item not in standing for items in last.account.lost.values() for item in items)
    assert "inspect" in render_markdown(found).lower()


def test_html_is_self_contained_and_escaped(session_file, tmp_path, capsys):
    out = tmp_path / "out.html"
    assert main(["inspect", str(session_file), "--budget", str(BUDGET), "--html", str(out)]) == 0
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and "<style>" in page
    # links stay in the page (the table's and the chart's #compaction-N); nothing is fetched or run
    assert not re.search(r"<(script|link|img|iframe)\b|<[^>]*\s(src|href)=(?!\"#)|url\(|@import", page, re.IGNORECASE)
    assert html.escape(HOSTILE) in page
    for css_class in ("summarized", "masked", "verbatim", "legend", "segment-summary"):
        assert f'class="{css_class}' in page or f" {css_class}" in page
    assert "<details" in page and re.search(r"Summary of \d+ messages \(0–", page)


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary: install it with `apt-get install -y chromium`")
async def test_html_renders_in_headless_chromium(tmp_path):
    found = await inspect_session(session(), BUDGET, "s")
    path = tmp_path / "page.html"
    path.write_text(render_html(found), encoding="utf-8")
    result = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", path.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    dom = result.stdout
    assert result.returncode == 0 and "</html>" in dom, result.stderr[-2000:]
    state = found.manager.state
    assert state.segments
    for n, segment in enumerate(state.segments):
        assert f'id="segment-{n}"' in dom and html.escape(segment.text.splitlines()[0]) in dom
    assert 'id="verbatim"' in dom and 'class="legend"' in dom
    for record in found.compactions:
        assert f'id="compaction-{record.number}"' in dom
    assert "<script>" not in dom and "<img" not in dom  # the hostile text stayed text
    assert html.escape('<script>alert("x")</script>', quote=False) in dom


async def test_post_compact_counts_artifacts_kept_and_lost():
    for strategy in ("summarize", "mask", "truncate"):
        recorder = EventRecorder()
        manager = create_manager(
            {"max_tokens": BUDGET, "compaction_strategy": strategy, "summarizer": "extractive", "mask_keep_recent": 1},
            hooks=recorder,
        )
        await replay(manager, session(), FakeProvider(), budget=BUDGET)
        posts = recorder.payloads("context:post_compact")
        assert posts, strategy
        assert all(isinstance(p["artifacts_kept"], int) and isinstance(p["artifacts_lost"], int) for p in posts)
        kept, lost = sum(p["artifacts_kept"] for p in posts), sum(p["artifacts_lost"] for p in posts)
        if strategy == "truncate":
            assert lost > 0  # a marker names nothing
        else:
            assert kept > 0  # the summary's artifact list, or the calls a masked group keeps


def test_account_and_spans():
    span = session(4)[1:]
    everything = account(span, json.dumps(span))
    assert everything.lost_count == 0 and everything.kept_count > 0
    nothing = account(span, "")
    assert nothing.kept_count == 0 and nothing.lost_count == everything.kept_count
    assert newly_hidden(0, 0, 3, 5) == [(0, 3), (3, 5)]
    assert newly_hidden(2, 6, 4, 8) == [(2, 4), (6, 8)]
    assert newly_hidden(2, 6, 2, 6) == []


def test_bad_input_is_reported(tmp_path, capsys):
    assert main(["inspect", str(tmp_path / "missing.jsonl")]) == 2
    assert "cannot read the file" in capsys.readouterr().err
    assert main(["inspect", "--example", "--budget", "0"]) == 2


def test_html_leads_with_the_chart_then_the_table_of_losses(session_file, tmp_path):
    out = tmp_path / "out.html"
    assert main(["inspect", str(session_file), "--budget", str(BUDGET), "--html", str(out)]) == 0
    page = out.read_text()
    assert "<title>session.jsonl</title>" in page and "<h1>session.jsonl</h1>" in page
    assert str(tmp_path) not in page  # the file name, not its path
    order = [
        page.index('<svg class="view-chart"'),
        page.index('<table class="compactions"'),
        page.index("The conversation as the last request saw it"),
        page.index('id="compaction-1"'),
    ]
    assert order == sorted(order)
    rows = re.findall(r'<tr id="row-(\d+)">(.*?)</tr>', page)
    wide = re.search(r'<svg class="view-chart" .*?</svg>', page).group(0)  # the narrow frame draws the same marks
    marks = re.findall(r'<a class="mark" href="#compaction-(\d+)">', wide)
    assert len(rows) >= 2 and [int(n) for n, _ in rows] == list(range(1, len(rows) + 1)) == [int(m) for m in marks]
    for n, row in rows:
        assert f'href="#compaction-{n}"' in row and f'id="compaction-{n}"' in page
        assert re.search(r"\d[\d,]* → \d[\d,]*", row) and re.search(r"(summarized|masked|truncated) \d+", row)
        cell = r'<td class="lost-(new" data-label="newly lost">\d+: \d+ \w+[^<]*|none" data-label="newly lost">0)</td>'
        assert re.search(cell, row)  # counts, no click needed
    assert any('class="lost-new"' in row for _, row in rows)
    assert wide.count('<line class="budget"') == 1 and "budget 6,000" in wide


def test_the_chart_thins_long_sessions_and_keeps_spikes_in_the_frame():
    from amplifier_module_context_summarize.cli.inspect_chart import WIDE, Mark, render_chart

    requests = [(i, 1_000 + (i % 500) * 40) for i in range(0, 60_000, 3)]
    marks = [Mark(n + 1, i, 21_000, 2_000) for n, i in enumerate(range(1497, 60_000, 1500))]
    marks.append(Mark(len(marks) + 1, 30_000, 900_000, 5_000))  # one huge tool output
    svg = render_chart(requests, marks, 20_000, 60_000)
    points = re.search(r'<polyline class="view" points="([^"]+)"', svg).group(1).split()
    assert len(points) < 3 * 1160 + 3 * len(marks)  # thinned, not 20,000 points
    ys = [float(p.split(",")[1]) for p in points]
    assert min(ys) >= WIDE.top and max(ys) <= WIDE.height
    assert svg.count('<a class="mark"') == len(marks) and "900,000 → 5,000 tokens (drawn at the top edge)" in svg
    assert "<script" not in svg


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary: install it with `apt-get install -y chromium`")
def test_the_first_screen_shows_the_chart_and_the_table(session_file, tmp_path):
    """A 1280x900 window: screenshot of the page as written, element positions from a copy with a measuring script
    (the report itself has none)."""
    page = tmp_path / "report.html"
    assert main(["inspect", str(session_file), "--budget", str(BUDGET), "--html", str(page)]) == 0
    screenshot = tmp_path / "inspect-first-screen.png"
    flags = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1280,900"]
    shot = subprocess.run([*flags, f"--screenshot={screenshot}", page.as_uri()], capture_output=True, timeout=120)
    assert shot.returncode == 0 and screenshot.is_file(), shot.stderr[-2000:]
    png = screenshot.read_bytes()
    size = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and size == (1280, 900)
    print(f"\nfirst screen of the inspect report: {screenshot}")

    measure = (
        "<script>const r=s=>{const e=document.querySelector(s);if(!e)return null;const b=e.getBoundingClientRect();"
        "return [b.top,b.bottom,b.width]};const p=document.createElement('pre');p.id='layout';p.textContent="
        "JSON.stringify({chart:r('svg.view-chart'),table:r('table.compactions'),row:r('table.compactions tbody tr'),"
        "conversation:r('#system'),height:document.documentElement.scrollHeight});document.body.append(p)</script>"
    )
    probe = tmp_path / "measure.html"
    probe.write_text(page.read_text().replace("</body>", measure + "</body>"), encoding="utf-8")
    dump = subprocess.run([*flags, "--dump-dom", probe.as_uri()], capture_output=True, text=True, timeout=120)
    found = re.search(r'<pre id="layout">(.*?)</pre>', dump.stdout)
    assert dump.returncode == 0 and found, dump.stderr[-2000:]
    layout = json.loads(html.unescape(found.group(1)))
    chart, table, row = layout["chart"], layout["table"], layout["row"]
    assert chart[2] > 900 and 0 <= chart[0] < chart[1] <= 900  # the whole chart, full width, on the first screen
    assert chart[1] <= table[0] < 900 and row[1] <= 900  # the table starts there, its first row whole
    assert layout["conversation"][0] > table[0]


PHONE_PROBE = """(() => {
  const d = document.documentElement, box = e => e.getBoundingClientRect();
  const svg = [...document.querySelectorAll('figure.chart svg')].find(e => getComputedStyle(e).display !== 'none');
  const label = [...svg.querySelectorAll('text')].find(t => /\\d/.test(t.textContent));
  const scroll = document.querySelector('div.table-scroll');
  const cells = [...document.querySelectorAll('table.compactions tbody tr td:last-child')].map(c => box(c).right);
  const span = document.querySelector('section.span.summarized');
  return {page: [d.scrollWidth, d.clientWidth], chart: svg.getAttribute('class'), label: box(label).height,
          table: [scroll.scrollWidth, scroll.clientWidth], lostSoFar: cells,
          span: [box(span).width, box(span.querySelector('details')).width,
                 box(span.querySelector('div')).bottom <= box(span.querySelector('details')).top]};
})()"""


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary: install it with `apt-get install -y chromium`")
def test_the_report_reads_on_a_390px_phone(session_file, tmp_path):
    """A 390 px phone (Chromium's mobile emulation, which obeys the viewport meta as a phone does): the page is laid
    out at the phone's width with no sideways scroll, the chart's labels keep a readable size, every row's losses
    are on screen without scrolling a box, and a segment's summary sits under its messages, not in a second column."""
    from chromium_phone import measure_on_phone

    page = tmp_path / "report.html"
    assert main(["inspect", str(session_file), "--budget", str(BUDGET), "--html", str(page)]) == 0
    found = measure_on_phone(CHROMIUM, page, PHONE_PROBE, tmp_path / "profile")
    print(f"\n390 px phone: {found}")
    scroll_width, client_width = found["page"]
    assert client_width == 390 and scroll_width <= client_width, found  # 980 without a viewport meta
    assert found["chart"] == "view-chart-narrow" and found["label"] >= 9, found  # the wide chart's were ~3.5 px
    assert found["table"][0] <= found["table"][1], found  # the table's box does not scroll sideways
    assert len(found["lostSoFar"]) >= 2 and max(found["lostSoFar"]) <= client_width, found
    span_width, summary_width, stacked = found["span"]
    assert stacked and summary_width >= 0.9 * span_width, found

    example = tmp_path / "example.html"  # the quick start's page: its long commands wrap too
    assert main(["inspect", "--example", "--html", str(example)]) == 0
    width = "[document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    assert measure_on_phone(CHROMIUM, example, width, tmp_path / "profile2") == [390, 390]


LONE = "\ud83d"
# ------------------------------------------------------------------------------- 6. inspect and surrogates


def surrogate_session(path: Path) -> Path:
    messages = [{"role": "user", "content": f"emoji {LONE} cut"}]
    for i in range(30):
        messages.append(tool_call("openai", f"c{i}", "bash", {"command": f"cat {LONE}{i}.txt"}, f"Reading {LONE}"))
        messages.append(tool_result("openai", f"c{i}", f"half {LONE} an emoji\n" + "row\n" * 400))
    path.write_text("\n".join(json.dumps(m) for m in messages) + "\n")
    return path


@pytest.mark.parametrize("name", ["s.jsonl", "s\udcff.jsonl"], ids=["utf8-name", "non-utf8-name"])
def test_inspect_prints_and_writes_html_for_lone_surrogates(name: str, tmp_path: Path, capsys) -> None:
    session = surrogate_session(Path(os.fsdecode(os.fsencode(tmp_path)) + "/" + name))
    html = tmp_path / "out.html"
    assert cli_main(["inspect", "--budget", "4000", str(session)]) == 0
    out = capsys.readouterr().out
    assert REPLACEMENT in out and "\ud83d" not in out
    out.encode("utf-8")
    assert cli_main(["inspect", "--budget", "4000", "--html", str(html), str(session)]) == 0
    text = html.read_text(encoding="utf-8")
    assert REPLACEMENT in text and text.rstrip().endswith("</html>")
