"""Every common agent recording goes straight in: one small hand-written fixture per format.

The fixtures in ``tests/fixtures/sessions`` are written for these tests from each format's public description;
no third-party session text is copied in.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amplifier_module_context_summarize.__main__ import main
from amplifier_module_context_summarize.core.messages import message_text
from amplifier_module_context_summarize.readers import READERS, dump_line
from amplifier_module_context_summarize.readers.session_io import SessionFileError, load_messages
from amplifier_module_context_summarize.readers.session_io import load_session as load

FIXTURES = Path(__file__).parent / "fixtures" / "sessions"

# fixture -> (format it is read as, a string the converted session must contain, tool calls in it)
CASES = {
    "claude_code.jsonl": ("claude-code", "tests/test_parse.py", 3),
    "codex_rollout.jsonl": ("codex", "--verbose", 3),
    "codex_exec.jsonl": ("codex", "make test", 2),
    "codex_trajectory.json": ("codex", "sys.argv[1]", 1),
    "gemini_trajectory.json": ("gemini-cli", "src/db.ts:40", 1),
    "gemini_chat.json": ("gemini-cli", "npm run build", 2),
    "gemini_chat_session.jsonl": ("gemini-cli", "pushes each item twice", 2),
    "gemini_stream.jsonl": ("gemini-cli", "It runs `pytest -q`.", 1),
    "openhands_events.json": ("openhands", "/workspace/hello.py", 4),
    "swe_agent.traj": ("swe-agent", "models.py", 3),
    "mini_swe_agent.traj.json": ("swe-agent", "utils/range.py", 0),
    "cline_ui_messages.json": ("cline", "formatDate", 2),
    "cline_api_conversation_history.json": ("cline", "README", 1),
    "cline_api_text_results.json": ("cline", "12 passed (12)", 4),
    "cline_api_xml_calls.json": ("cline", "TS2322", 2),
    "cline_api_nags.json": ("cline", "better-sqlite3", 7),
    "aider.chat.history.md": ("aider", "treat None as 0", 4),
    "aider_whole.chat.history.md": ("aider", "load balancers", 4),
    "aider_modes.chat.history.md": ("aider", "hash the model name too", 4),
    "amplifier_transcript.jsonl": ("native", "8080", 1),
    "amplifier_cli_transcript.jsonl": ("amplifier", "missing semicolon", 18),
    "messages_nested.json": ("messages", "version 1.2.0", 1),
    "codex_messages_export.json": ("messages", "1 failed in 0.03s", 2),
    "ours.json": ("native", "notes.txt", 1),
}


def _calls(messages):
    count = 0
    for m in messages:
        count += len(m.get("tool_calls") or [])
        content = m.get("content")
        if isinstance(content, list):
            count += sum(1 for b in content if isinstance(b, dict) and b.get("type") in ("tool_use", "tool_call"))
    return count


def test_every_reader_has_a_fixture():
    formats = {fmt for fmt, _, _ in CASES.values()}
    assert {r.NAME for r in READERS} <= formats
    assert sorted(p.name for p in FIXTURES.iterdir()) == sorted(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_fixture_is_detected_and_converted(name):
    fmt, needle, calls = CASES[name]
    loaded = load(FIXTURES / name)
    assert loaded.format == fmt
    assert needle in "\n".join(message_text(m) for m in loaded.messages)
    assert _calls(loaded.messages) == calls
    assert load_messages(FIXTURES / name) == loaded.messages


@pytest.mark.parametrize("name", sorted(CASES))
def test_convert_writes_our_jsonl_that_reads_back_the_same(name, tmp_path, capsys):
    out = tmp_path / "out.jsonl"
    assert main(["convert", str(FIXTURES / name), "-o", str(out)]) == 0
    assert CASES[name][0] in capsys.readouterr().err
    # our own format is Amplifier's messages: an Amplifier transcript stays one (its results now read)
    assert load(out).format == ("amplifier" if CASES[name][0] == "amplifier" else "native")
    assert load(out).messages == load(FIXTURES / name).messages


def test_claude_code_keeps_its_own_summary_as_reference(tmp_path):
    records = [
        {"type": "user", "message": {"role": "user", "content": "start"}},
        {
            "type": "assistant",
            "message": {"id": "m1", "role": "assistant", "content": [{"type": "text", "text": "ok"}]},
        },
        {"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted"},
        {
            "type": "user",
            "isCompactSummary": True,
            "message": {"role": "user", "content": "This session is being continued"},
        },
        {"type": "user", "message": {"role": "user", "content": "go on"}},
    ]
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    loaded = load(path)
    assert [m["content"] for m in loaded.messages if m["role"] == "user"] == ["start", "go on"]
    assert loaded.reference == {"source": "claude-code", "summary": "This session is being continued", "boundary": 2}


def test_recorded_exit_codes_are_kept():
    messages = load(FIXTURES / "gemini_chat.json").messages
    results = [m["content"][0] for m in messages if m["role"] == "tool"]
    assert [(r["output"]["exit_code"], r["is_error"]) for r in results] == [(0, False), (1, True)]


def test_amplifier_transcript_results_read_as_the_tools_returned_them():
    """amplifier-core 2.0 hands the loop ``str(result)`` whenever a ``tool:post`` hook runs (the CLI's save
    always does): a dict output as its Python repr, a failed shell command as ``Failed``, an error as
    ``Error: …``; without a hook a dict is JSON and a failure its bare message. Each is read as what it was."""
    from amplifier_module_context_summarize.working_set import facts

    loaded = load(FIXTURES / "amplifier_cli_transcript.jsonl")
    results = {m["tool_call_id"]: m["content"] for m in loaded.messages if m["role"] == "tool"}
    assert json.loads(results["toolu_01"]) == {"stdout": "", "stderr": "", "returncode": 0}
    assert json.loads(results["toolu_03"])["content"].endswith("3\t}\n")
    assert results["toolu_05"] == json.dumps(
        {"file_path": "/home/dev/demo/main.c", "replacements_made": 1, "bytes_written": 33}
    )
    flagged = {k: v[0]["output"] for k, v in results.items() if isinstance(v, list) and v[0]["is_error"]}
    assert flagged == {
        "toolu_02": "Failed",
        "toolu_04": "Error: File not found: src/main.c",
        "toolu_06": "Error: Command timed out after 30 seconds",
        "toolu_07": "File not found: docs/build.md",
        "toolu_08": {"error": "Tool execution was cancelled by user", "cancelled": True, "tool": "bash"},
    }
    outcomes = {o.key: (o.ok, o.label) for o in facts.extract(loaded.messages).outcomes}
    assert outcomes["cat > Makefile <<'EOF' …"] == (True, "ok")
    assert outcomes["make && ./demo --serve"] == (False, "timed out")
    assert outcomes["edit_file src/main.c"][0] is False
    assert outcomes["read_file docs/build.md"][0] is False
    assert outcomes["make clean"] == (False, "interrupted")  # loop-basic's cancelled call: the mark is carried
    assert outcomes["make"] == (True, "ok")  # its last run; the first run failed
    assert "Makefile" in {f.path for f in facts.extract(loaded.messages).files}


def test_gemini_session_jsonl_is_folded_as_the_cli_resumes_it():
    """Current Gemini CLI appends records: a reply re-appended with its tool calls replaces itself in place, and
    ``$rewindTo`` drops the rewound exchange (its user turn, reply and notice) from the history."""
    messages = load(FIXTURES / "gemini_chat_session.jsonl").messages
    texts = [message_text(m) for m in messages if m["role"] == "user"]
    assert texts == ["Why does the checkout test fail?", "Instead, read the cart reducer."]
    results = [m["content"][0] for m in messages if m["role"] == "tool"]
    assert [(r["is_error"], r["output"]["exit_code"] if isinstance(r["output"], dict) else None) for r in results] == [
        (True, 1),
        (False, None),
    ]


def test_a_repr_result_that_is_not_plain_data_is_kept_as_written(tmp_path):
    call = {"id": "c1", "tool": "probe", "arguments": {}}
    lines = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": [{"type": "tool_call", "id": "c1", "name": "probe", "input": {}}],
            "tool_calls": [call],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "{'seen': {1, 2}, 'at': b'x'}"},
        {"role": "assistant", "content": "Error: is only a failure in a result"},
    ]
    path = tmp_path / "transcript.jsonl"
    path.write_text("".join(json.dumps(m) + "\n" for m in lines))
    loaded = load(path)
    assert loaded.format == "amplifier"
    assert [m["content"] for m in loaded.messages[2:]] == [lines[2]["content"], lines[3]["content"]]


def test_a_file_of_no_known_format_gets_one_line_naming_what_was_seen(tmp_path, capsys):
    path = tmp_path / "notes.json"
    path.write_text(json.dumps({"title": "x", "items": [1, 2]}, indent=2))
    with pytest.raises(SessionFileError) as caught:
        load(path)
    text = str(caught.value)
    assert "\n" not in text
    assert "an object with keys 'title', 'items'" in text
    for label in ("Claude Code", "Codex", "Gemini CLI", "OpenHands", "SWE-agent", "Cline", "Aider", '{"messages"'):
        assert label in text
    assert main(["compact", str(path)]) == 2
    assert capsys.readouterr().err.count("error:") == 1


def test_dump_line_keeps_one_message_per_line():
    assert "\n" not in dump_line({"role": "user", "content": "a\u2028b\nc"}).replace("\\n", "")


def test_compact_reads_a_recording_directly(capsys):
    assert main(["compact", "--budget", "1k", str(FIXTURES / "openhands_events.json"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["report"]["messages"] == 9


def test_console_script_and_budget_suffixes():
    from amplifier_module_context_summarize.cli.args import token_count

    assert [token_count(t) for t in ("24k", "200K", "1.5m", "24000", "24_000")] == [24_000, 200_000, 1_500_000] + [
        24_000
    ] * 2
    for bad in ("24q", "1.0005k", "", "k"):
        with pytest.raises(Exception, match="token"):
            token_count(bad)
    done = subprocess.run(
        [sys.executable, "-m", "amplifier_module_context_summarize", "convert", "--help"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0 and "Aider" in done.stdout


def test_every_recorded_outcome_of_the_format_fixtures_is_shown_as_recorded():
    # tools/measure_working_set.py is how the outcome accuracy is measured on real recordings; run it here
    # on the fixtures so it keeps working and they stay at 100%.
    import importlib.util

    script = Path(__file__).resolve().parent.parent / "tools" / "measure_working_set.py"
    spec = importlib.util.spec_from_file_location("measure_working_set", script)
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)

    rows = [tool.measure(path) for path in sorted((Path(__file__).parent / "fixtures" / "sessions").iterdir())]

    assert sum(total for *_, total in rows) >= 10
    assert [(fmt, matched) for fmt, _, _, matched, total in rows if matched != total] == []


def test_a_messages_export_with_blocks_next_to_openai_tool_calls_is_read(tmp_path, capsys):
    """Codex trajectory exports: each call as a block without an id and as a ``tool_calls`` entry; results carry
    ``tool_call_id``. Each call is read once, with its result (issue 35 item 3)."""
    from amplifier_module_context_summarize.core.messages import message_calls
    from amplifier_module_context_summarize.working_set import facts

    loaded = load(FIXTURES / "codex_messages_export.json")
    assert loaded.skipped == []
    calls = [c for m in loaded.messages for c in message_calls(m)]
    assert len(calls) == 2
    found = facts.extract(loaded.messages)
    (outcome,) = [o for o in found.outcomes if "pytest" in o.key]
    assert not outcome.ok and outcome.label == "failed (exit 1)"
    (result,) = loaded.messages[3]["content"]  # the JSON envelope read as the output it holds, not escaped JSON
    assert result["output"] == {
        "output": "F\nFAILED tests/test_parser.py::test_empty - IndexError\n1 failed in 0.03s\n",
        "exit_code": 1,
    }
    assert "src/parser.py" in {f.path for f in found.files}
    assert main(["convert", str(FIXTURES / "codex_messages_export.json"), "-o", str(tmp_path / "o.jsonl")]) == 0
    assert capsys.readouterr().err.count("codex_messages_export.json") == 1


def test_cline_text_results_are_paired_with_their_calls():
    """Cline answers a tool_use with a text block ``[read_file for 'x'] Result:`` in the next user message: each is
    the call's result, the files are in the working set and no result is a user request (issue 35 item 5)."""
    from amplifier_module_context_summarize.core.messages import is_user_turn, message_text
    from amplifier_module_context_summarize.working_set import facts

    for name, paths, commands in (
        ("cline_api_text_results.json", {"src/cli.ts": "read", "src/flags.ts": "write"}, {"npm test": True}),
        ("cline_api_xml_calls.json", {"package.json": "read"}, {"npm run build": True}),
    ):
        messages = load(FIXTURES / name).messages
        found = facts.extract(messages)
        assert {f.path: f.action for f in found.files if f.path in paths} == paths, name
        assert {o.key: o.ok for o in found.outcomes if o.command} == commands, name
        turns = [message_text(m) for m in messages if is_user_turn(m)]
        assert not any("Result:" in t or "environment_details" in t.replace("<task>", "") for t in turns[1:]), turns
        assert sum("<task>" in t for t in turns) == 1
    *_, last = (m for m in load(FIXTURES / "cline_api_text_results.json").messages if is_user_turn(m))
    assert last["content"] == [{"type": "text", "text": "also document it in README.md"}]  # the user's feedback


def test_clines_own_notes_are_kept_as_developer_text_and_only_the_users_words_are_requests():
    """Cline writes into the user's role its resumption notice, the ``[ERROR] You did not use a tool`` nag, its
    environment report and its answers for calls it skipped or the user denied: those are kept (as the harness's
    ``developer`` notes, or as the result of the call they answer), and only the user's words are requests, in
    the pins and in the offline summary's "User requests" (issue 35)."""
    from amplifier_module_context_summarize.core.history import History
    from amplifier_module_context_summarize.core.invariants import ToolPairing
    from amplifier_module_context_summarize.core.messages import is_user_turn
    from amplifier_module_context_summarize.core.tokens import TokenCounter
    from amplifier_module_context_summarize.summarizer.extractive import REQUESTS, extractive_summary
    from amplifier_module_context_summarize.working_set import facts
    from amplifier_module_context_summarize.working_set.facts import authored_text

    messages = load(FIXTURES / "cline_api_nags.json").messages
    requests = [authored_text(m) for m in messages if is_user_turn(m)]
    assert requests == [
        "<task>\nMove the job queue from Postgres to SQLite in src/db.ts\n</task>",
        "Use better-sqlite3 and keep the old table names",
        "keep the pool size of 5 as a busy timeout instead",
        "run it with --dry-run first",
        "not yet, show me the SQL",
    ]
    notes = "\n".join(m["content"] for m in messages if m["role"] == "developer")
    for said in ("[ERROR] You did not use a tool", "This task was interrupted just now", "(The user did not provide"):
        assert said in notes  # in the history, as Cline's
    assert notes.count("<environment_details>") == 9
    assert ToolPairing().problems(messages, None) == []  # every call answered, the interrupted one too

    history = History(TokenCounter("cl100k_base"), "fingerprint")
    for message in messages:
        history.append(message)
    assert authored_text(history.messages[history.first_request]).startswith("<task>")
    assert authored_text(history.messages[history.latest_request]) == "not yet, show me the SQL"

    summary = extractive_summary(messages, previous_summary=None, max_tokens=2_000, count_tokens=lambda t: len(t) // 4)
    listed = summary.split(REQUESTS, 1)[1].split("###", 1)[0]
    assert "run it with --dry-run first" in listed
    assert not any(s in listed for s in ("TASK RESUMPTION", "[ERROR]", "environment_details", "Result:"))

    found = facts.extract(messages)
    outcomes = {o.key: (o.ok, o.label) for o in found.outcomes if o.command}
    assert outcomes["npm ls pg"] == (False, "interrupted")
    assert outcomes["npm run migrate"][0] is False  # the user turned it down: it never ran
    ok, label = outcomes["node scripts/print-migration.js"]  # exit 0 as Cline recorded it, the error it printed kept
    assert ok and label.startswith("exit 0, printed: Error: no pending migrations")
    actions = {(f.path, f.action) for f in found.files}
    assert ("src/db.ts", "read") in actions
    assert not any(a in ("edit", "write") for p, a in actions if p == "src/db.ts")  # the edit was denied
    assert ("src/schema.ts", "read") not in actions  # skipped: Cline ran one tool per message


def test_aider_edits_commits_and_requests_are_read_from_its_console_lines():
    """``> Applied edit to``, whole-file and SEARCH/REPLACE blocks and ``> Commit`` lines are facts; console lines are
    not requests and the first real request is its own message (issue 35 item 6)."""
    from amplifier_module_context_summarize.core.messages import is_user_turn, message_text
    from amplifier_module_context_summarize.working_set import facts

    messages = load(FIXTURES / "aider_whole.chat.history.md").messages
    found = facts.extract(messages)
    actions = {(f.path, f.action) for f in found.files}
    assert {("backend/service.py", "write"), ("app/cli.py", "edit")} <= actions
    assert "commit 0c5878a" in found.identifiers
    assert [o.ok for o in found.outcomes if o.command and "pytest" in o.key] == [False]
    turns = [message_text(m) for m in messages if is_user_turn(m)]
    assert turns == [
        "Create a plan for turning the CLI in app/cli.py into a FastAPI service under backend/.\nKeep the CLI working.",
        "does the health route need auth?",
    ]
    definitions = {path: names for path, names, _ in found.definitions}
    assert "health" in definitions.get("backend/service.py", ())
    messages = load(FIXTURES / "aider.chat.history.md").messages
    edit = [c for m in messages for c in m.get("tool_calls") or [] if c["function"]["name"] == "edit_file"]
    assert json.loads(edit[0]["function"]["arguments"])["new_string"].endswith("return (a or 0) + (b or 0)")


def test_aider_chat_mode_commands_are_read_as_aider_ran_them():
    """Aider logs ``#### /ask Q`` and then, as ``Coder.run`` sends it, ``#### Q`` again; ``/help Q`` sends a prompt
    of retrieved docs; a bare ``/ask`` or ``/chat-mode`` switches mode and lists the modes (``> - ask : …``); ``/as``
    is ``/ask`` (a unique prefix) and ``/code`` may stand alone on the first line of ``{`` multi-line input; the
    architect's reply is logged again as ``#### `` lines when aider hands it to its editor. Each question is one
    request, said once; no command, mode listing, doc or handoff is (issue 45 item 10: ``- -ask``)."""
    from amplifier_module_context_summarize.core.messages import is_user_turn
    from amplifier_module_context_summarize.core.tokens import text_counter
    from amplifier_module_context_summarize.summarizer.extractive import REQUESTS, extractive_summary

    messages = load(FIXTURES / "aider_modes.chat.history.md").messages
    turns = [message_text(m) for m in messages if is_user_turn(m)]
    assert turns == [
        "why does the cache key ignore the model name?",
        "and where is the budget read?",
        "how do I undo a commit?",
        "make key() hash the model name too",
        "keep the hashing apart from the naming",
    ]
    replies = [message_text(m) for m in messages if m["role"] == "assistant" and m.get("content")]
    assert replies[1] == "Once, in `config.load()`."  # the reply to ``/as``'s question is its own, not merged
    summary = extractive_summary(messages, previous_summary=None, max_tokens=2000, count_tokens=text_counter())
    listed = summary.partition(REQUESTS)[2].split("\n\n")[0].strip().splitlines()
    assert listed == [f"- {turn}" for turn in turns], summary


def test_swe_agent_traj_without_tool_calls_reads_its_actions_as_calls(tmp_path):
    """SWE-agent 0.x trajectories keep the chat in ``history`` without ``tool_calls`` (the command sits in the
    reply text and in ``action``): each step's action is a call, ``open``/``create``/``edit`` name their file
    (``edit`` the one ``state`` says is open), and the task statement is kept."""
    state = '{{"open_file": "{}", "working_dir": "/repo"}}\n'
    handler = state.format("/repo/pkg/handler.py")
    steps = [
        ("create repro.py\n", "[File: /repo/repro.py (1 lines total)]\n1:", state.format("/repo/repro.py")),
        ("edit 1:1\nprint(1)\nend_of_edit\n", "File updated.", state.format("/repo/repro.py")),
        ("python repro.py\n", "1", state.format("/repo/repro.py")),
        ("open pkg/handler.py 290\n", "[File: /repo/pkg/handler.py (372 lines total)]", handler),
        ("edit 287:295\n    x = 2\nend_of_edit\n", "File updated.", handler),
        ("rm repro.py\n", "", state.format("n/a")),
        ("submit\n", "diff --git a/pkg/handler.py b/pkg/handler.py", state.format("n/a")),
    ]
    history = [
        {"role": "system", "content": "SETTING: you are in a shell.", "agent": "primary"},
        {"role": "user", "content": "We're solving the following issue: handler drops rows.", "agent": "primary"},
    ]
    for action, observation, _ in steps:
        reply = f"Next.\n```\n{action}```"
        history.append({"role": "assistant", "content": reply, "thought": "Next.", "action": action})
        history.append({"role": "user", "content": observation, "agent": "primary"})
    data = {
        "environment": "swe_main",
        "trajectory": [
            {"action": a, "observation": o, "response": f"Next.\n```\n{a}```", "state": s, "thought": "Next."}
            for a, o, s in steps
        ],
        "history": history,
        "info": {"exit_status": "submitted"},
    }
    path = tmp_path / "pkg__pkg-1.traj"
    path.write_text(json.dumps(data), encoding="utf-8")
    loaded = load(path)
    assert loaded.format == "swe-agent"
    assert "handler drops rows" in message_text(loaded.messages[1])
    from amplifier_module_context_summarize.working_set import facts, records

    found = facts.extract(loaded.messages).files
    assert records.FileAction("write", "repro.py") in found
    assert records.FileAction("read", "pkg/handler.py") in found
    assert records.FileAction("edit", "/repo/pkg/handler.py") in found
    assert records.FileAction("edit", "/repo/repro.py") in found
    assert records.FileAction("delete", "repro.py") in found
    assert _calls(loaded.messages) == len(steps)


# ------------------------------------------------------------------ tags in recorded text, in linear time


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["<a>", "</a>", "<b>", "</b>", "<c-d>", "</c-d>", "x", "\n", "<", ">"]), max_size=40))
def test_tag_pairs_are_what_a_lazy_regex_finds(pieces):
    from amplifier_module_context_summarize.readers._common import tagged

    text = "".join(pieces)
    lazy = re.compile(r"<(a|b)>(.*?)</\1>", re.DOTALL)
    expected = [(m.group(1), m.start(), m.end(), m.group(2)) for m in lazy.finditer(text)]
    found = [(t.name, t.start, t.end, t.inner(text)) for t in tagged(text, ("a", "b").__contains__)]
    assert found == expected


def test_thousands_of_unclosed_tags_in_a_cline_recording_read_in_linear_time():
    """``<feedback>``, ``<answer>``, ``<user_message>`` and tool tags never closed (the lazy regexes the reader used
    took 17 s for 100 KB of unclosed ``<answer>``, the square of the size)."""
    import time

    from amplifier_module_context_summarize.readers import cline

    def session(n: int) -> list:
        hostile = "<answer> <feedback><user_message><read_file><path>" * (n // 50)
        return [
            {"role": "user", "content": [{"type": "text", "text": "<task>go</task>"}]},
            {"role": "assistant", "content": [{"type": "text", "text": hostile}]},
            {"role": "user", "content": [{"type": "text", "text": "[read_file for 'a'] Result:"}, hostile]},
            {"role": "user", "content": [{"type": "text", "text": "[TASK RESUMPTION] " + hostile}]},
        ]

    def seconds(n: int) -> float:
        data = session(n)
        started = time.perf_counter()
        cline.convert(data, "json")
        return time.perf_counter() - started

    small, large = min(seconds(25_000) for _ in range(3)), min(seconds(100_000) for _ in range(3))
    assert large < 1.0 and large < 8 * small + 0.05, (small, large)


# ------------------------------------------------------------------ issue 45 item 10: what recordings show in summaries

EXEC_OK = (
    "Command: /bin/bash -c 'git status --short'\nChunk ID: 4f2a1c\nWall time: 0.0521 seconds\n"
    "Process exited with code 0\nOriginal token count: 6\nOutput:\n M src/app.py\n"
)
EXEC_FAILED = (
    "Command: /bin/bash -c 'pytest -q tests/test_app.py'\nChunk ID: 9b1e07\nWall time: 1.2 seconds\n"
    "Process exited with code 1\nOriginal token count: 20\nOutput:\nFAILED tests/test_app.py::test_home\n1 failed\n"
)
ENVIRONMENT = (
    "<environment_context>\n  <cwd>/repo</cwd>\n  <approval_policy>on-request</approval_policy>\n"
    "  <sandbox_mode>workspace-write</sandbox_mode>\n  <shell>bash</shell>\n</environment_context>"
)
AGENTS_MD = "# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>\nRun the tests before committing.\n</INSTRUCTIONS>"


def _summary_of(messages):
    """The offline summary of ``messages`` (less system text), as a compaction writes it."""
    from amplifier_module_context_summarize.core.tokens import text_counter
    from amplifier_module_context_summarize.summarizer.extractive import extractive_summary

    body = [m for m in messages if m["role"] != "system"]
    return extractive_summary(body, previous_summary=None, max_tokens=2_000, count_tokens=text_counter())


def _requests_and_progress(summary: str) -> tuple[list[str], list[str]]:
    sections = {part.split("\n", 1)[0]: part for part in summary.split("\n\n")}
    lines = lambda head: [x[2:] for x in sections.get(head, "").splitlines()[1:]]  # noqa: E731
    return lines("### User requests"), lines("### Assistant progress")


def _codex_rollout(tmp_path: Path) -> Path:
    def item(payload):
        return {"timestamp": "2025-11-01T10:00:00Z", "type": "response_item", "payload": payload}

    def said(role, text):
        kind = "input_text" if role == "user" else "output_text"
        return item({"type": "message", "role": role, "content": [{"type": kind, "text": text}]})

    records = [
        {"timestamp": "2025-11-01T10:00:00Z", "type": "session_meta", "payload": {"id": "r1", "cwd": "/repo"}},
        said("user", AGENTS_MD),
        said("user", ENVIRONMENT),
        said("user", "Fix the failing home test"),
        item(
            {
                "type": "function_call",
                "name": "exec_command",
                "arguments": '{"cmd": "git status --short"}',
                "call_id": "c1",
            }
        ),
        item({"type": "function_call_output", "call_id": "c1", "output": EXEC_OK}),
        item(
            {
                "type": "function_call",
                "name": "exec_command",
                "arguments": '{"cmd": "pytest -q tests/test_app.py"}',
                "call_id": "c2",
            }
        ),
        item(
            {"type": "function_call_output", "call_id": "c2", "output": [{"type": "input_text", "text": EXEC_FAILED}]}
        ),
        said("assistant", "The home test fails on the page title."),
    ]
    path = tmp_path / "rollout-2025-11-01.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _codex_export(tmp_path: Path) -> Path:
    def call(call_id, command):
        arguments = json.dumps({"cmd": command})
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": "exec_command", "arguments": arguments}}
            ],
        }

    messages = [
        {"role": "user", "content": [{"type": "input_text", "text": ENVIRONMENT}]},
        {"role": "user", "content": [{"type": "input_text", "text": "Fix the failing home test"}]},
        call("c1", "git status --short"),
        {"role": "tool", "tool_call_id": "c1", "content": [{"type": "tool_output", "text": EXEC_OK}]},
        call("c2", "pytest -q tests/test_app.py"),
        {"role": "tool", "tool_call_id": "c2", "content": [{"type": "tool_output", "text": EXEC_FAILED}]},
        {"role": "assistant", "content": "The home test fails on the page title."},
    ]
    path = tmp_path / "codex-export.json"
    path.write_text(json.dumps({"session_id": "e1", "messages": messages}))
    return path


@pytest.mark.parametrize("write", [_codex_rollout, _codex_export], ids=["rollout", "messages-export"])
def test_codex_outputs_are_unwrapped_and_its_own_context_is_no_request(write, tmp_path):
    """Codex's ``exec_command`` output (a header of bookkeeping, then ``Output:``) reads as the output with its exit
    code, a ``tool_output`` block as its text (not the JSON ``{"text":"Command: …``), and its
    ``<environment_context>`` and AGENTS.md, written in the user's role, are no user request."""
    from amplifier_module_context_summarize.working_set import facts

    messages = load(write(tmp_path)).messages
    texts = "\n".join(message_text(m) for m in messages)
    assert '{"text"' not in texts and "Chunk ID" not in texts and "Wall time" not in texts
    assert "FAILED tests/test_app.py::test_home" in texts
    found = facts.extract(messages)
    assert {o.key: o.label for o in found.outcomes} == {
        "git status --short": "ok",
        "pytest -q tests/test_app.py": "failed (exit 1)",
    }
    notes = [m for m in messages if m["role"] == "developer"]
    assert notes and all("environment_context" in message_text(m) or "AGENTS.md" in message_text(m) for m in notes)
    requests, progress = _requests_and_progress(_summary_of(messages))
    assert requests == ["Fix the failing home test"]
    assert progress == ["The home test fails on the page title."]


def test_openhands_bookkeeping_is_neither_a_request_nor_progress(tmp_path):
    """OpenHands records a ``recall`` action in the user's name ("Retrieving content for: …") after each request and
    ``change_agent_state`` actions ("Agent state changed to awaiting_user_input"): no one said them to the model."""
    ask = "Add a --version flag to cli.py"
    events = [
        {
            "id": 0,
            "source": "agent",
            "message": "You are OpenHands agent.",
            "action": "system",
            "args": {"content": "You are OpenHands agent.", "tools": []},
        },
        {"id": 1, "source": "user", "message": ask, "action": "message", "args": {"content": ask}},
        {
            "id": 2,
            "source": "user",
            "message": f"Retrieving content for: {ask}",
            "action": "recall",
            "args": {"recall_type": "workspace_context", "query": ask, "thought": ""},
        },
        {
            "id": 3,
            "source": "agent",
            "message": "Agent state changed to running",
            "action": "change_agent_state",
            "args": {"agent_state": "running", "thought": ""},
        },
        {
            "id": 4,
            "source": "environment",
            "message": "Added workspace context",
            "cause": 2,
            "observation": "recall",
            "content": "Added workspace context",
            "extras": {"recall_type": "workspace_context"},
        },
        {
            "id": 5,
            "source": "agent",
            "message": "Running command: cat -n cli.py",
            "action": "run",
            "tool_call_metadata": {"function_name": "execute_bash", "tool_call_id": "t1"},
            "args": {"command": "cat -n cli.py", "thought": "Let me read the CLI first."},
        },
        {
            "id": 6,
            "source": "agent",
            "message": "Command executed",
            "cause": 5,
            "observation": "run",
            "tool_call_metadata": {"function_name": "execute_bash", "tool_call_id": "t1"},
            "content": "1 import argparse",
            "extras": {"command": "cat -n cli.py", "metadata": {"exit_code": 0}},
        },
        {
            "id": 7,
            "source": "agent",
            "message": "I added the flag.",
            "action": "message",
            "args": {"content": "I added the flag.", "wait_for_response": True},
        },
        {
            "id": 8,
            "source": "agent",
            "message": "Agent state changed to awaiting_user_input",
            "action": "change_agent_state",
            "args": {"agent_state": "awaiting_user_input", "thought": ""},
        },
        {
            "id": 9,
            "source": "environment",
            "message": "",
            "observation": "agent_state_changed",
            "content": "",
            "extras": {"agent_state": "awaiting_user_input"},
        },
    ]
    path = tmp_path / "openhands.json"
    path.write_text(json.dumps(events))
    messages = load(path).messages
    texts = "\n".join(message_text(m) for m in messages)
    assert "Retrieving content for" not in texts and "Agent state changed" not in texts
    requests, progress = _requests_and_progress(_summary_of(messages))
    assert requests == [ask]
    assert progress == ["I added the flag."]  # (its announcement "Let me read…" is left out as any is)


def test_a_file_an_agent_on_windows_names_both_ways_is_one_working_set_entry(tmp_path):
    """Aider on Windows reports ``backend\\db_adapters.py`` where the user's ``/add`` wrote ``backend/db_adapters.py``:
    one file, listed once (with its latest state), not twice."""
    from amplifier_module_context_summarize.core.tokens import text_counter
    from amplifier_module_context_summarize.working_set.fold import working_set_of
    from amplifier_module_context_summarize.working_set.layout import render

    history = (
        "\n# aider chat started at 2025-03-01 10:00:00\n\n> Aider v0.75.1\n\n#### /add backend/db_adapters.py\n\n"
        "> Added backend/db_adapters.py to the chat\n\n#### Make the sqlite adapter close its connection\n\n"
        "backend\\db_adapters.py\n```python\n<<<<<<< SEARCH\n    conn = connect(path)\n=======\n"
        "    with connect(path) as conn:\n>>>>>>> REPLACE\n```\n\n> Applied edit to backend\\db_adapters.py\n"
    )
    path = tmp_path / ".aider.chat.history.md"
    path.write_text(history)
    shown = render(working_set_of(load(path).messages), 1_000, text_counter())
    listed = [line for line in shown.splitlines() if "db_adapters" in line]
    assert listed == ["- backend/db_adapters.py — edited"], shown
