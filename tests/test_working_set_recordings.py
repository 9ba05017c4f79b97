"""The working set is right about recorded sessions of other agents (issue 25, point 2)."""

from __future__ import annotations

import json
from pathlib import Path

from amplifier_module_context_summarize.readers.session_io import load_session as load
from amplifier_module_context_summarize.working_set import facts as ledger
from amplifier_module_context_summarize.working_set import records

FIXTURES = Path(__file__).parent / "fixtures" / "sessions"


def _shell(command: str, output: object) -> list[dict]:
    return [
        {"role": "assistant", "content": None, "tool_calls": [ledger_call(command)]},
        {"role": "tool", "tool_call_id": "c1", "content": output},
    ]


def ledger_call(command: str) -> dict:
    import json

    return {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": json.dumps({"command": command})}}


def _paths(messages) -> set[str]:
    return {f.path for f in ledger.extract(messages).files}


def test_windows_paths_keep_their_separators():
    assert "sessions\\bugfix-1.json" in _paths(_shell("type sessions\\bugfix-1.json", "{}"))
    assert "C:\\src\\app.py" in _paths(_shell("Get-Content C:\\src\\app.py", "x = 1"))


def test_every_file_of_a_command_with_several_heredocs():
    command = "cat > a.py <<'EOF'\nx = 1\nEOF\ncat > b.py <<EOF\ny = 2\nEOF\npython a.py"
    assert {"a.py", "b.py"} <= _paths(_shell(command, ""))


def test_recorded_exit_code_zero_is_never_shown_failed():
    output = "Command: npm run build\nDirectory: (root)\nOutput: error: 0 errors\nError: (none)\nExit Code: 0\n"
    (outcome,) = ledger.extract(_shell("npm run build", output)).outcomes
    assert outcome.ok
    output = output.replace("Exit Code: 0", "Exit Code: 2")
    (outcome,) = ledger.extract(_shell("npm run build", output)).outcomes
    assert not outcome.ok and "exit 2" in outcome.label


def test_gemini_chat_recording_outcomes_match_the_recorded_ones():
    outcomes = ledger.extract(load(FIXTURES / "gemini_chat.json").messages).outcomes
    assert [o.ok for o in outcomes] == [True, False]


def test_line_numbered_reads_are_reads():
    listing = "     1\timport sys\n     2\traise ValueError('bad input')\n"
    for command in ("cat -n main.py", "Get-Content main.py"):
        (outcome,) = ledger.extract(_shell(command, listing)).outcomes
        assert outcome.ok and outcome.reads, command


def test_git_show_rev_path_names_the_path():
    assert "pyproject.toml" in _paths(_shell("git show HEAD~1:pyproject.toml", "[project]"))


def _actions(command: str, output: object = "") -> set[tuple[str, str]]:
    return {(f.action, f.path) for f in ledger.extract(_shell(command, output)).files}


def test_files_without_extensions_named_in_shell_commands_are_recorded():
    """Issue 35 item 8: a redirect writes a file whatever its name; editors, sed -i, cp name files."""
    assert ("write", ".gitignore") in _actions("cat > .gitignore <<'EOF'\nnode_modules/\nEOF")
    assert ("write", "Dockerfile") in _actions("echo 'FROM python:3.12' > Dockerfile")
    assert ("write", "Makefile") in _actions("cat > Makefile")
    assert ("use", "LICENSE") in _actions("vim LICENSE")
    assert ("edit", ".bashrc") in _actions("sed -i 's/^alias ll=.*$//' .bashrc")
    assert _actions("cp .env.example .env") == {("read", ".env.example"), ("write", ".env")}
    assert ("read", "src/main") in _actions("cat src/main")
    assert ("move", "README") in {(f.action, f.path) for f in ledger.extract(_shell("mv README README.md", "")).files}


def test_clones_revision_ranges_and_folders_are_not_files():
    assert _actions("git clone https://x-access-token:abc@github.com/OpenHands/OpenHands.git OpenHands") == set()
    assert _actions("cd /workspace && git clone https://github.com/OpenHands/OpenHands.git") == set()
    assert _actions("git diff origin/main...HEAD") == set()
    assert _actions("git log --oneline origin/main..HEAD") == set()
    assert _actions("rm -rf build dist") == set()
    assert _actions("ls .github .venv") == set()
    assert _actions("sed -n 1,20p notes") == {("read", "notes")}  # the script is not a file


def test_a_command_cut_short_is_shown_as_such_with_its_own_line():
    timed_out = "Command timed out after 10s\nServer listening on :8080"
    (outcome,) = ledger.extract(_shell("npm run dev", timed_out)).outcomes
    assert (outcome.ok, outcome.label, outcome.error) == (False, "timed out", "Command timed out after 10s")
    openhands = "> vite\n\n[The command timed out after 10.0 seconds. You may wait longer to see additional output.]"
    (outcome,) = ledger.extract(_shell("npm run dev", openhands)).outcomes
    assert outcome.label == "timed out" and outcome.error.startswith("[The command timed out after 10.0 seconds.")
    (outcome,) = ledger.extract(_shell("pytest", "[Request interrupted by user for tool use]")).outcomes
    assert (outcome.ok, outcome.label) == (False, "interrupted")
    (outcome,) = ledger.extract(_shell("cat log.txt", "Command timed out after 10s")).outcomes
    assert outcome.ok  # a file that says so is data


def test_a_script_given_to_a_shell_as_one_string_is_read_for_its_files(tmp_path):
    """``codex exec --json`` records ``/usr/bin/zsh -lc "printf '…' > artifacts/text.md"``: the script inside
    the quotes writes the file (a quoted ``>`` in it is text, not a redirect)."""
    events = [
        {"type": "thread.started", "thread_id": "t1"},
        {"type": "turn.started"},
        {
            "type": "item.completed",
            "item": {
                "id": "item_1",
                "type": "command_execution",
                "command": "/usr/bin/zsh -lc \"printf '> a quote\\n\\n-- Psalm 23:1\\n' > artifacts/text.md\"",
                "aggregated_output": "",
                "exit_code": 0,
                "status": "completed",
            },
        },
        {
            "type": "item.completed",
            "item": {
                "id": "item_2",
                "type": "command_execution",
                "command": "bash -lc 'cat src/app.py && rm old.log'",
                "aggregated_output": "x = 1\n",
                "exit_code": 0,
                "status": "completed",
            },
        },
    ]
    path = tmp_path / "exec.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    files = ledger.extract(load(path).messages).files
    assert records.FileAction("write", "artifacts/text.md") in files
    assert records.FileAction("read", "src/app.py") in files
    assert records.FileAction("delete", "old.log") in files
    assert not any("quote" in f.path or "Psalm" in f.path for f in files)


def test_a_quoted_file_name_with_spaces_is_a_file():
    """A Codex rollout's ``["bash", "-lc", "cat 'LM Studio configuration.md'"]``: one quoted operand."""
    messages = _shell("cat 'LM Studio configuration.md' && echo ok > \"build notes.txt\"", "")
    assert {"LM Studio configuration.md", "build notes.txt"} <= _paths(messages)
    assert "Studio" not in _paths(messages)


def _mini_swe_agent(tmp_path: Path, commands: list[tuple[str, int, str]]) -> list[dict]:
    """A mini-swe-agent 1.1 ``*.traj.json``: each command a ``bash`` tool call, answered by a ``tool`` message holding
    its ``<returncode>`` and ``<output>`` (and the raw output and return code under ``extra``)."""
    messages: list[dict] = [
        {"role": "system", "content": "You are a helpful assistant that can interact with a computer."},
        {"role": "user", "content": "Fix the parser."},
    ]
    for n, (command, code, output) in enumerate(commands):
        call = {"index": 0, "id": f"call_{n}", "type": "function"}
        call["function"] = {"name": "bash", "arguments": json.dumps({"command": command})}
        messages.append({"role": "assistant", "content": "Next.", "tool_calls": [call], "function_call": None})
        extra = {"raw_output": output, "returncode": code, "exception_info": ""}
        content = f"<returncode>{code}</returncode>\n<output>\n{output}</output>"
        messages.append({"role": "tool", "tool_call_id": f"call_{n}", "content": content, "extra": extra})
    messages.append({"role": "exit", "content": "", "extra": {"exit_status": "Submitted"}})
    path = tmp_path / "run.traj.json"
    path.write_text(json.dumps({"info": {}, "messages": messages, "trajectory_format": "mini-swe-agent-1.1"}))
    return load(path).messages


def test_a_failed_line_keeps_the_writes_of_the_commands_that_certainly_ran(tmp_path):
    """``cat > x.py <<'EOF' … EOF`` then ``python x.py`` exiting 1: the heredoc's redirect took effect when cat ran,
    whatever python did, so x.py was created; a write after ``&&`` / ``||`` may never have run, so it stays used."""
    from amplifier_module_context_summarize.working_set.fold import working_set_of

    script = "cat > debug_parse.py <<'EOF'\nimport parser\nparser.parse('x')\nEOF\npython debug_parse.py"
    commands = [
        (script, 1, "Traceback (most recent call last):\nValueError: bad\n"),
        ("python gen.py > out.txt; echo done | tee log.md", 1, "ValueError: bad\ndone\n"),
        ("python check.py && cat > after.py <<'EOF'\nx = 1\nEOF", 1, "AssertionError\n"),
        ("make || echo x > fallback.txt; cat > later.py <<'EOF'\ny = 2\nEOF\nfalse", 1, ""),
        ("if true; then echo a > cond.txt; fi; false", 1, ""),
        ("(echo a > sub.txt; false)", 1, ""),
        ("cd /repo && cat > in_repo.py <<'EOF'\nx = 1\nEOF\npython in_repo.py", 1, "NameError: y\n"),
        ("cd /gone && cat > lost.py <<'EOF'\nx = 1\nEOF", 1, "bash: line 1: cd: /gone: No such file or directory\n"),
    ]
    states = {e.path: e.state for e in working_set_of(_mini_swe_agent(tmp_path, commands)).entries()}
    assert states["debug_parse.py"] == "created"
    assert states["out.txt"] == "created" and states["log.md"] == "created"
    assert states["after.py"] == "used"  # after && : python check.py failed, so cat never ran
    assert states["fallback.txt"] == "used" and states["later.py"] == "used"  # after || : unknown from then on
    assert states["cond.txt"] == "used"  # inside an if: may not have run
    assert states["sub.txt"] == "created"  # a subshell's first command ran
    # A cd that fails says so: when the output does not, the command after its && ran.
    assert states["in_repo.py"] == "created" and states["/gone/lost.py"] == "used"  # (shown under the root /repo)


def _gemini_chat(tmp_path: Path, calls: list[tuple[str, dict, str, str]]) -> list[dict]:
    """A Gemini CLI chat recording (``session-*.json``): each call a ``toolCalls`` entry of a ``gemini`` message,
    its result a ``functionResponse`` part."""
    messages: list[dict] = [{"id": "u0", "timestamp": "2025-10-01T10:00:00.000Z", "type": "user", "content": "Go."}]
    for n, (name, args, output, status) in enumerate(calls):
        call_id = f"{name}-17590000000{n:02d}-abc"
        response = {"functionResponse": {"id": call_id, "name": name, "response": {"output": output}}}
        call = {"id": call_id, "name": name, "args": args, "result": [response], "status": status}
        messages.append({"id": f"g{n}", "type": "gemini", "content": "", "toolCalls": [call], "model": "gemini-2.5"})
    path = tmp_path / "session-2025-10-01T10-00-abcd1234.json"
    path.write_text(json.dumps({"sessionId": "s1", "projectHash": "p", "messages": messages}))
    return load(path).messages


def _gemini_shell(command: str, directory: str, output: str, code: int) -> str:
    return (
        f"Command: {command}\nDirectory: {directory}\nOutput: {output}\nError: (none)\nExit Code: {code}\n"
        "Signal: (none)\nBackground PIDs: (none)\nProcess Group PGID: 4242"
    )


def test_gemini_tools_name_their_files_by_the_keys_each_version_uses(tmp_path):
    """Gemini CLI's ``read_file`` took ``absolute_path`` until November 2025 (``file_path`` since); a shell call's
    ``dir_path`` (``directory`` before) is the folder it ran in; ``list_directory`` / ``glob`` / ``grep_search`` name
    folders (``dir_path``, ``path`` before), and ``mkdir`` makes one: none of those is a file."""
    calls = [
        ("read_file", {"absolute_path": "/proj/src/old.ts"}, "export const a = 1;", "success"),
        ("read_file", {"file_path": "/proj/src/new.ts"}, "export const b = 2;", "success"),
        ("list_directory", {"dir_path": "/proj/src"}, "Directory listing for /proj/src:\nnew.ts\nold.ts", "success"),
        ("list_directory", {"path": "/proj/docs"}, "Directory listing for /proj/docs:\nguide.md", "success"),
        ("glob", {"pattern": "**/*.ts", "dir_path": "/proj"}, "Found 2 file(s)", "success"),
        ("run_shell_command", {"command": "cat package.json", "dir_path": "/proj"}, "", "success"),
        ("run_shell_command", {"command": "mkdir -p /proj/src/pages src/components"}, "", "success"),
    ]
    calls[-2] = (*calls[-2][:2], _gemini_shell("cat package.json", "/proj", "{}", 0), "success")
    calls[-1] = (*calls[-1][:2], _gemini_shell(calls[-1][1]["command"], "(root)", "(empty)", 0), "success")
    files = ledger.extract(_gemini_chat(tmp_path, calls)).files
    assert [(f.action, f.path) for f in files] == [
        ("read", "/proj/src/old.ts"),
        ("read", "/proj/src/new.ts"),
        ("read", "/proj/package.json"),
    ]


def test_a_failed_gemini_shell_call_shows_the_line_its_output_gives(tmp_path):
    """Gemini CLI frames what a command printed (``Command:``, ``Directory:``, ``Output:``, ``Error: (none)``,
    ``Exit Code:``, ``Signal:``, ``Process Group PGID:``; current versions drop the first two and the no-error line):
    the failure line comes from the output, never the empty ``Error`` field or a field's name."""
    pytest_out = "F.\nFAILED tests/test_api.py::test_get - KeyError: 'id'\n1 failed, 1 passed in 0.12s"
    old = _gemini_shell("pytest -q", "(root)", pytest_out, 1)
    pacman = _gemini_shell("pacman -Qi pam-u2f", "(root)", "error: package 'pam-u2f' was not found", 1)
    current = 'Output: npm error Missing script: "lint"\nExit Code: 1\nProcess Group PGID: 31337'
    spawn = "Output: (empty)\nError: spawn /bin/bash ENOENT\nExit Code: 1\nSignal: (none)"
    timeout = (
        "Command was automatically cancelled because it exceeded the timeout of 5.0 minutes without output. "
        "Below is the output before it was cancelled:\nwaiting for db"
    )
    calls = [
        ("run_shell_command", {"command": "pytest -q"}, old, "success"),
        ("run_shell_command", {"command": "pacman -Qi pam-u2f"}, pacman, "success"),
        ("run_shell_command", {"command": "npm run lint"}, current, "success"),
        ("run_shell_command", {"command": "make"}, spawn, "success"),
        ("run_shell_command", {"command": "docker compose up"}, timeout, "success"),
        ("run_shell_command", {"command": "npm -v"}, _gemini_shell("npm -v", "(root)", "11.6.4", 0), "success"),
    ]
    outcomes = [(o.label, o.error) for o in ledger.extract(_gemini_chat(tmp_path, calls)).outcomes]
    assert outcomes == [
        ("failed (exit 1)", "FAILED tests/test_api.py::test_get - KeyError: 'id'"),
        ("failed (exit 1)", "error: package 'pam-u2f' was not found"),
        ("failed (exit 1)", 'npm error Missing script: "lint"'),
        ("failed (exit 1)", "Error: spawn /bin/bash ENOENT"),
        ("timed out", timeout.split(" Below")[0]),
        ("ok", ""),
    ]
