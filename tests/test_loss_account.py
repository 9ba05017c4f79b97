"""What was lost is one account: ``compact`` (its lines and ``--json``) and ``inspect`` (Markdown and the HTML table)
tell the same numbers for every compaction, and when the running total falls they say what was named again."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from amplifier_module_context_summarize import create_manager
from amplifier_module_context_summarize.__main__ import main
from amplifier_module_context_summarize.cli.losses import running
from amplifier_module_context_summarize.compaction.view.losses import KINDS, Account
from amplifier_module_context_summarize.testing import tool_call, tool_result

BUDGET = 6_000


def lossy_session(turns: int = 40) -> list[dict]:
    """Long enough that at ``BUDGET`` the working set must drop earlier artifacts (not only the newly hidden ones')."""
    history: list[dict] = [{"role": "system", "content": "You are a coding agent."}]
    for t in range(turns):
        if t % 4 == 0:
            history.append({"role": "user", "content": f"Task {t}: fix src/pkg/mod_{t}.py."})
        call = f"call_{t}"
        history.append(tool_call("openai", call, "bash", {"command": f"python -m pytest tests/test_{t}.py"}))
        output = f"ERROR: test_{t} failed in src/pkg/mod_{t}.py\n" + "".join(
            f"line {i}: checking branch {i} of src/pkg/mod_{t}.py\n" for i in range(40)
        )
        history.append(tool_result("openai", call, output))
        history.append({"role": "assistant", "content": f"Fixed src/pkg/mod_{t}.py (ticket ABC-{100 + t})."})
    return history


@pytest.fixture
def session_file(tmp_path: Path) -> Path:
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(json.dumps(m) for m in lossy_session()) + "\n")
    return path


def compact_lines(out: str) -> list[tuple[int, int, int]]:
    """(newly lost, named again, lost so far) per ``compact`` line; a line that names no change keeps the total."""
    found, total = [], 0
    for line in re.findall(r"^  compaction \d+: .*$", out, re.MULTILINE):
        newly = re.search(r"(\d+) newly lost", line)
        again = re.search(r"(\d+) named again", line)
        so_far = re.search(r"\((\d+) of \d+ lost so far\)", line)
        total = int(so_far.group(1)) if so_far else total
        found.append((int(newly.group(1)) if newly else 0, int(again.group(1)) if again else 0, total))
    return found


def markdown_losses(out: str) -> list[tuple[int, int, int]]:
    found = []
    for section in out.split("\n## Compaction ")[1:]:
        lost = section.partition("### What was lost")[2]
        so_far = re.search(r"^(\d+) of \d+ artifacts", lost, re.MULTILINE)
        newly = re.search(r"(\d+) newly lost at this compaction", lost)
        again = re.search(r"(\d+) named again", lost)
        found.append(
            (
                int(newly.group(1)) if newly else 0,
                int(again.group(1)) if again else 0,
                int(so_far.group(1)) if so_far else 0,
            )
        )
    return found


def html_losses(page: str) -> list[tuple[int, int, int]]:
    found = []
    for row in re.findall(r'<tr id="row-\d+">(.*?)</tr>', page):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row)
        newly, again, so_far = cells[4], cells[5] if len(cells) > 6 else "0", cells[-1]
        found.append((int(newly.split(":")[0]), int(again.split(":")[0]), int(so_far.split(" of ")[0])))
    return found


def test_compact_its_json_and_inspect_tell_one_account(session_file, tmp_path, capsys):
    """On 5818ea8 ``compact`` said nothing was lost where ``inspect`` counted 19 newly lost (the working set
    dropping earlier artifacts, which the event's account of the newly hidden groups never sees), and ``--json``
    carried no account at all."""
    assert main(["compact", str(session_file), "--budget", str(BUDGET), "--no-summary"]) == 0
    text = compact_lines(capsys.readouterr().out)
    page = tmp_path / "page.html"
    assert main(["inspect", str(session_file), "--budget", str(BUDGET), "--html", str(page), "--markdown"]) == 0
    markdown = markdown_losses(capsys.readouterr().out)
    assert text == markdown == html_losses(page.read_text())
    assert main(["compact", str(session_file), "--budget", str(BUDGET), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)["report"]
    as_json = [(loss["newly_lost"], loss["named_again"], loss["lost_so_far"]) for loss in report["losses"]]
    assert len(text) == report["compactions"] >= 2 and as_json == text
    assert sum(newly for newly, _, _ in as_json) > 0  # something was lost: the agreement is not all zeros
    assert report["artifacts_lost"] == as_json[-1][2]


def test_lost_so_far_falls_only_by_what_is_named_again_and_says_so(tmp_path, capsys):
    """The bundled example: masking cuts 12 commands (heredocs clipped), the summary then names them again."""
    page = tmp_path / "example.html"
    assert main(["inspect", "--example", "--html", str(page), "--markdown"]) == 0
    out = capsys.readouterr().out
    losses = markdown_losses(out)
    assert losses == html_losses(page.read_text())
    previous = 0
    fell = False
    for newly, again, so_far in losses:
        assert so_far == previous + newly - again
        fell |= so_far < previous
        assert (so_far < previous) <= (again > 0)  # a fall is always said: so many named again
        previous = so_far
    assert fell
    assert "Named again (" in out and "named again" in page.read_text()


def test_running_account_reconciles_item_by_item():
    def lost(**kinds: list[str]) -> Account:
        return Account({kind: [] for kind in KINDS}, {kind: kinds.get(kind, []) for kind in KINDS})

    first, second, third = running([lost(commands=["a", "b"]), lost(commands=["b", "c"], urls=["u"]), lost()])
    assert (first.newly, first.regained, first.lost) == (2, 0, 2)
    assert second.newly_lost["commands"] == ["c"] and second.newly_lost["urls"] == ["u"]
    assert second.named_again["commands"] == ["a"] and second.lost == 3
    assert third.newly == 0 and third.regained == 3 and third.lost == 0


async def test_the_ledger_gives_the_whole_prefix_account_as_the_prefix_grows():
    """``HiddenLedger`` reads each group once; its account is the one ``account_of`` gives the whole prefix."""
    from amplifier_module_context_summarize.compaction.view.losses import HiddenLedger, account_of, joined
    from amplifier_module_context_summarize.testing import mixed_history
    from amplifier_module_context_summarize.working_set.index import index_of

    manager = create_manager({"summarizer": "extractive"})
    await manager.set_messages(mixed_history(60))
    history = manager.history
    text = "\n".join(str(m.get("content")) for m in history.messages[: len(history.messages) // 3])
    ledger = HiddenLedger(history)
    ends = [0, 5, 6, 20, len(history.groups) // 2, len(history.groups) - 1]
    for end in [*ends, 3]:  # an end that falls starts afresh
        whole = account_of(joined(index_of(history).facts(g) for g in range(end)), text)
        got = ledger.account(end, text)
        assert (got.kept, got.lost) == (whole.kept, whole.lost), end
    assert any(ledger.account(end, text).kept_count for end in ends) and any(whole.lost.values())
