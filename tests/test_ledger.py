"""Artifact extraction finds planted paths, commands and outcomes, URLs, ids and errors in every tool-call shape."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from amplifier_module_context_summarize.testing import ORCHESTRATOR_SHAPES, tool_call, tool_result
from amplifier_module_context_summarize.working_set.facts import extract
from amplifier_module_context_summarize.working_set.records import (
    DELETE,
    EDIT,
    MOVE,
    NO_FACTS,
    READ,
    USE,
    WRITE,
    Facts,
    FileAction,
)

SHAPES = ("openai", "anthropic", "amplifier")
# ORCHESTRATOR_SHAPES (Amplifier's orchestrators, see the testing kit's builders) are tested beside these.
TRACEBACK = (
    "============================= test session starts ==============================\n"
    "Traceback (most recent call last):\n"
    '  File "tests/test_models.py", line 1, in <module>\n'
    "    import foo\n"
    "ModuleNotFoundError: No module named 'foo'\n"
    "Exit code: 1"
)


def session(shape: str) -> list[dict[str, Any]]:
    """One small debugging session with every kind of artifact planted (``mixed`` rotates the shapes)."""
    shapes = SHAPES if shape == "mixed" else (shape,) * 3
    a, b, c = shapes
    return [
        {
            "role": "user",
            "content": "Fix the import in src/app/models.py (ABC-123), see https://docs.example.com/guide#imports",
        },
        tool_call(a, "c1", "read_file", {"path": "src/app/models.py"}, text="Reading the model first."),
        tool_result(a, "c1", "import foo\n\nclass Model: ..."),
        tool_call(b, "c2", "bash", {"command": "pytest -x tests/test_models.py"}),
        tool_result(b, "c2", TRACEBACK),
        tool_call(c, "c3", "bash", {"command": "cat /etc/hosts"}),
        tool_result(c, "c3", "127.0.0.1 localhost"),
        tool_call(a, "c4", "edit_file", {"file_path": "src/app/models.py", "old": "import foo", "new": "import bar"}),
        tool_result(a, "c4", "ok"),
        tool_call(b, "c5", "bash", {"command": "git commit -am 'Fix import (ABC-123)'"}),
        tool_result(b, "c5", "[main 1a2b3c4] Fix import (ABC-123)\n 1 file changed, 1 insertion(+)"),
        {"role": "user", "content": "Great, now open a pull request for it."},
        {
            "role": "assistant",
            "content": "Opened PR #42 for ABC-123. The import now uses bar and the tests pass.",
        },
    ]


def paths(facts: Facts) -> list[str]:
    """Paths in first-seen order, each once."""
    return list(dict.fromkeys(f.path for f in facts.files))


def commands(facts: Facts) -> list[str]:
    return list(dict.fromkeys(o.key for o in facts.outcomes if o.command))


def errors(facts: Facts) -> list[str]:
    return [o.error for o in facts.outcomes if not o.ok]


@pytest.mark.parametrize("shape", [*SHAPES, *ORCHESTRATOR_SHAPES, "mixed"])
def test_finds_each_planted_item_in_its_kind(shape: str) -> None:
    facts = extract(session(shape))

    assert {"src/app/models.py", "/etc/hosts", "tests/test_models.py"} <= set(paths(facts))
    assert commands(facts) == [
        "pytest -x tests/test_models.py",
        "cat /etc/hosts",
        "git commit -am 'Fix import (ABC-123)'",
    ]
    assert list(dict.fromkeys(facts.urls)) == ["https://docs.example.com/guide#imports"]
    assert list(dict.fromkeys(facts.identifiers)) == ["ABC-123", "commit 1a2b3c4", "PR #42"]
    assert errors(facts) == ["ModuleNotFoundError: No module named 'foo'"]


@pytest.mark.parametrize("shape", [*SHAPES, *ORCHESTRATOR_SHAPES, "mixed"])
def test_file_actions_follow_the_tools(shape: str) -> None:
    actions = {(f.action, f.path) for f in extract(session(shape)).files}

    assert {(READ, "src/app/models.py"), (EDIT, "src/app/models.py"), (READ, "/etc/hosts")} <= actions
    assert (USE, "tests/test_models.py") in actions


def test_anthropic_is_error_result_is_an_error_even_without_error_words() -> None:
    messages = [
        tool_call("anthropic", "t1", "Write", {"file_path": "/etc/hosts", "content": "x"}),
        tool_result(
            "anthropic",
            "t1",
            [{"type": "text", "text": "<tool_use_error>/etc/hosts is read-only</tool_use_error>"}],
            True,
        ),
    ]

    facts = extract(messages)

    assert errors(facts) == ["/etc/hosts is read-only"]
    assert facts.files == (FileAction(USE, "/etc/hosts"),)  # the write failed: the file was only named


def test_plain_output_without_flag_or_failure_words_is_not_an_error() -> None:
    messages = [
        tool_call("openai", "c1", "bash", {"command": "ls"}),
        tool_result("openai", "c1", "/etc/hosts is read-only"),
    ]

    assert errors(extract(messages)) == []


def test_error_words_inside_read_file_content_are_data_not_failures() -> None:
    source = 'raise ValueError("Error: bad input")\nprint("FAILED")\n'
    messages = [
        tool_call("openai", "c1", "read_file", {"path": "src/app/checks.py"}),
        tool_result("openai", "c1", source),
        tool_call("openai", "c2", "bash", {"command": "cd /repo && cat src/app/checks.py | head -50"}),
        tool_result("openai", "c2", source),
    ]

    facts = extract(messages)

    assert errors(facts) == []
    assert [o.label for o in facts.outcomes] == ["ok", "ok"]


def test_grep_without_a_match_is_an_answer_not_a_failure() -> None:
    messages = [
        tool_call("anthropic", "g", "Bash", {"command": "grep -rn TODO src/"}),
        tool_result("anthropic", "g", "Exit code 1", True),
    ]

    assert [o.ok for o in extract(messages).outcomes] == [True]


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("built 3 targets\nlink step failed\nExit code: 2", ["link step failed"]),
        ("all good\nExit code: 0", []),
        (
            "tests/test_a.py F\nFAILED tests/test_a.py::test_x - assert 1 == 2\n=== 1 failed ===",
            ["FAILED tests/test_a.py::test_x - assert 1 == 2"],
        ),
        ("Compiling\nsrc/main.c:3: error: expected ';'", ["src/main.c:3: error: expected ';'"]),
        ("Finished in 0.1 seconds\n3 tests, 1 failure", ["3 tests, 1 failure"]),
        (
            "  ** (RuntimeError) LiveView requires lazy_html\n1 test, 1 failure",
            ["** (RuntimeError) LiveView requires lazy_html"],
        ),
        ("<returncode>2</returncode>\n<output>\nusage: tool [-h]\n</output>", ["usage: tool [-h]"]),
        ("bash: line 1: tree: command not found", ["bash: line 1: tree: command not found"]),
        (
            "python: can't open file 'x.py': [Errno 2] No such file",
            ["python: can't open file 'x.py': [Errno 2] No such file"],
        ),
        ("print('No module named foo') is a string in a log", []),
    ],
)
def test_failures_recognised_from_result_text(output: str, expected: list[str]) -> None:
    messages = [tool_call("openai", "c1", "bash", {"command": "make"}), tool_result("openai", "c1", output)]

    assert errors(extract(messages)) == expected


def test_a_recorded_exit_0_is_never_failed_but_an_error_it_printed_stays_in_its_label() -> None:
    """`python -m pytest 2>&1 | tail -50` exits 0 (the pipe's tail did): only its output says it never ran."""
    output = "<returncode>0</returncode>\n<output>\n/usr/bin/python: No module named pytest\n</output>"
    messages = [tool_call("openai", "c1", "bash", {"command": "python -m pytest 2>&1 | tail -50"})]
    messages.append(tool_result("openai", "c1", output))

    facts = extract(messages)
    assert errors(facts) == []
    assert [(o.ok, o.label) for o in facts.outcomes] == [
        (True, "exit 0, printed: /usr/bin/python: No module named pytest")
    ]


def test_outcome_labels_say_passed_failed_and_the_exit_code() -> None:
    messages = [
        tool_call("openai", "a", "bash", {"command": "pytest -q"}),
        tool_result("openai", "a", "FAILED tests/test_a.py::test_x\n1 failed, 3 passed\nExit code: 1"),
        tool_call("openai", "b", "bash", {"command": "pytest -q"}),
        tool_result("openai", "b", "4 passed in 0.1s"),
        tool_call("openai", "c", "bash", {"command": "make"}),
        tool_result("openai", "c", "done"),
    ]

    assert [(o.key, o.label) for o in extract(messages).outcomes] == [
        ("pytest -q", "failed (exit 1)"),
        ("pytest -q", "passed"),
        ("make", "ok"),
    ]


def test_amplifier_structured_output_with_non_zero_returncode() -> None:
    output = {"stdout": "", "stderr": "fatal: not a git repository (or any parent)\n", "returncode": 128}
    messages = [tool_call("amplifier", "a1", "bash", {"command": "git status"}), tool_result("amplifier", "a1", output)]

    assert errors(extract(messages)) == ["fatal: not a git repository (or any parent)"]


def test_stringified_structured_output_is_read_back() -> None:
    output = json.dumps({"success": False, "error": {"message": "Tool timed out after 30s"}})
    messages = [
        tool_call("openai", "c1", "web_fetch", {"url": "https://example.org/slow"}),
        tool_result("openai", "c1", output),
    ]

    facts = extract(messages)

    assert errors(facts) == ["Tool timed out after 30s"]
    assert facts.urls == ("https://example.org/slow",)


def test_error_lines_are_clipped() -> None:
    messages = [
        tool_call("openai", "c1", "bash", {"command": "run"}),
        tool_result("openai", "c1", "RuntimeError: " + "x" * 1000),
    ]

    [error] = errors(extract(messages))

    assert error.startswith("RuntimeError: x") and len(error) <= 200


def test_invalid_openai_arguments_are_tolerated_and_salvaged() -> None:
    truncated = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "bash", "arguments": '{"command": "cat /etc/hosts'},
            },
            {"id": "c2", "type": "function", "function": {"name": "bash", "arguments": "not json at all"}},
        ],
    }

    facts = extract([truncated, tool_result("openai", "c1", "127.0.0.1 localhost")])

    assert commands(facts) == ["cat /etc/hosts"]
    assert paths(facts) == ["/etc/hosts"]


def test_truncated_orchestrator_json_arguments_are_salvaged() -> None:
    message = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "c1", "tool": "bash", "arguments": '{"command": "cat /etc/hosts'},
            {"id": "c2", "tool": "read_file", "arguments": '{"path": "src/app.py"}'},
        ],
    }

    facts = extract([message, tool_result("orchestrator", "c1", "x"), tool_result("orchestrator", "c2", "y")])

    assert commands(facts) == ["cat /etc/hosts"]
    assert paths(facts) == ["/etc/hosts", "src/app.py"]


def test_argv_command_lists_and_shell_operators() -> None:
    messages = [
        tool_call(
            "openai",
            "c1",
            "shell",
            {"command": ["bash", "-lc", "pytest -x tests/test_models.py > out.log 2>&1"]},
        ),
        tool_result("openai", "c1", "ok"),
        tool_call(
            "openai",
            "c2",
            "run_shell_command",
            {"cmd": "git checkout -b feature/x origin/main && python -m app.cli"},
        ),
        tool_result("openai", "c2", "ok"),
    ]

    facts = extract(messages)

    assert commands(facts) == [
        "pytest -x tests/test_models.py > out.log 2>&1",
        "git checkout -b feature/x origin/main && python -m app.cli",
    ]
    assert [(f.action, f.path) for f in facts.files] == [(WRITE, "out.log"), (USE, "tests/test_models.py")]


def test_shell_commands_create_edit_delete_and_move_files() -> None:
    command = (
        "cd /repo && touch new.py && sed -i 's/a/b/' src/a.py && rm old.py && git mv src/b.py lib/b.py"
        " && mv x.txt y.txt && cat README.md"
    )
    messages = [tool_call("openai", "c", "bash", {"command": command}), tool_result("openai", "c", "")]

    facts = extract(messages)

    assert [(f.action, f.path, f.target) for f in facts.files] == [
        (WRITE, "/repo/new.py", ""),
        (EDIT, "/repo/src/a.py", ""),
        ("delete", "/repo/old.py", ""),
        (MOVE, "/repo/src/b.py", "/repo/lib/b.py"),
        (MOVE, "/repo/x.txt", "/repo/y.txt"),
        (READ, "/repo/README.md", ""),
    ]
    assert facts.workdirs == ("/repo",)


def test_a_search_pattern_is_not_a_file() -> None:
    messages = [
        tool_call("openai", "c", "bash", {"command": "grep -rn src/app.py docs/ && rg -e main.py -- lib/x.py"}),
        tool_result("openai", "c", ""),
    ]

    assert paths(extract(messages)) == ["lib/x.py"]


def test_workdir_arguments_resolve_relative_paths() -> None:
    messages = [
        tool_call("openai", "c", "exec_command", {"cmd": "pytest tests/test_a.py", "workdir": "/work/proj"}),
        tool_result("openai", "c", "1 passed"),
    ]

    facts = extract(messages)

    assert paths(facts) == ["/work/proj/tests/test_a.py"]
    assert facts.workdirs == ("/work/proj",)


def test_move_tools_and_grep_hits() -> None:
    messages = [
        tool_call("anthropic", "m", "move_file", {"source": "a/old.py", "destination": "b/new.py"}),
        tool_result("anthropic", "m", "moved"),
        tool_call("anthropic", "g", "Grep", {"pattern": "TODO", "path": "src"}),
        tool_result("anthropic", "g", "src/one.py:3:# TODO\nsrc/two.py:9:# TODO\nNo more"),
    ]

    facts = extract(messages)

    assert facts.files == (
        FileAction(MOVE, "a/old.py", "b/new.py"),
        FileAction(READ, "src/one.py"),
        FileAction(READ, "src/two.py"),
    )


def test_patch_and_diff_headers_name_the_files() -> None:
    patch = (
        "*** Begin Patch\n*** Update File: src/app/views.py\n@@\n-a\n+b\n"
        "*** Add File: docs/notes.md\n+hi\n*** Delete File: old.md\n*** End Patch"
    )
    diff = "--- a/src/app/urls.py\n+++ b/src/app/urls.py\n@@ -1 +1 @@\n-x\n+y\n"
    messages = [
        tool_call("amplifier", "p1", "apply_patch", {"input": patch}),
        tool_call("anthropic", "p2", "patch", {"diff": diff}),
    ]

    assert [(f.action, f.path) for f in extract(messages).files] == [
        (EDIT, "src/app/views.py"),
        (WRITE, "docs/notes.md"),
        ("delete", "old.md"),
        (EDIT, "src/app/urls.py"),
    ]


def test_command_argument_of_a_non_shell_tool_is_not_a_command() -> None:
    messages = [
        tool_call("anthropic", "t1", "str_replace_based_edit_tool", {"command": "view", "path": "src/app/models.py"}),
        tool_call("anthropic", "t2", "str_replace_based_edit_tool", {"command": "create", "path": "src/new.py"}),
    ]

    facts = extract(messages)

    assert commands(facts) == []
    assert [(f.action, f.path) for f in facts.files] == [(READ, "src/app/models.py"), (WRITE, "src/new.py")]


def test_identifiers_stay_conservative() -> None:
    noise = "UTF-8 and SHA-256 via pre-commit on x86-64, ISO-8601 dates; sha 1a2b3c4d5e in a log; issue #12"
    planted = "Tracked in spotter-a0y and bd-a3f8e9.1, also CVE-2021-44228; pull request #7"
    messages = [
        {"role": "user", "content": noise},
        tool_call("openai", "c1", "bash", {"command": "git log -1"}),
        tool_result("openai", "c1", noise),
        {"role": "assistant", "content": planted},
    ]

    assert extract(messages).identifiers == ("spotter-a0y", "bd-a3f8e9.1", "CVE-2021-44228", "PR #7")


def test_urls_lose_trailing_punctuation() -> None:
    messages = [{"role": "user", "content": "Read https://example.com/a_b?x=1. And (https://example.com/c)."}]

    assert extract(messages).urls == ("https://example.com/a_b?x=1", "https://example.com/c")


def test_nothing_to_extract_gives_the_shared_empty_facts() -> None:
    assert extract([{"role": "user", "content": "hello"}]) is NO_FACTS


def test_extraction_is_deterministic() -> None:
    assert extract(session("mixed")) == extract(session("mixed"))


def test_heredoc_commands_keep_only_their_opening_line():
    script = "cat > reproduce.py << 'EOF'\nimport os\nprint(os.getcwd())  # see notes.md\nEOF\npython reproduce.py"
    messages = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "h",
                    "type": "function",
                    "function": {"name": "bash", "arguments": json.dumps({"command": script})},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "h", "content": ""},
    ]
    facts = extract(messages)
    assert commands(facts) == ["cat > reproduce.py << 'EOF' …"]
    assert paths(facts) == ["reproduce.py"]  # the body (and what follows it) is file content, not commands


def test_a_command_is_keyed_without_the_output_window_it_was_piped_through() -> None:
    """``| tail -50`` or ``2>&1 | head -100`` only choose which part of the output is shown: one command."""
    runs = [
        ("mix test --seed 0 2>&1 | head -100", "** (BadMapError) expected a map\n1 test, 1 failure"),
        ("mix test --seed 0 2>&1 | tail -50", "12 tests, 0 failures"),
        ("pytest -x > out.log 2>&1", "ok"),
        ("git log --oneline | head -n 5 | tail -2", "abc1234 fix"),
    ]
    messages = []
    for i, (command, output) in enumerate(runs):
        messages += [tool_call("openai", f"c{i}", "bash", {"command": command}), tool_result("openai", f"c{i}", output)]

    facts = extract(messages)

    assert [o.key for o in facts.outcomes] == [
        "mix test --seed 0",
        "mix test --seed 0",
        "pytest -x > out.log 2>&1",
        "git log --oneline",
    ]
    assert [o.ok for o in facts.outcomes] == [False, True, True, True]


def test_find_patterns_are_not_files() -> None:
    messages = [
        tool_call("openai", "c1", "bash", {"command": 'find pydicom -name "valuerep.py" -newer setup.py | xargs ls'}),
        tool_result("openai", "c1", "pydicom/valuerep.py"),
    ]

    assert paths(extract(messages)) == []


# ---------------------------------------------------------------------------------------------- definitions

ELIXIR = """defmodule Spotter.Renderer do
  @moduledoc "Renders transcripts."
  @default_visible_lines 10

  def render(lines), do: Enum.map(lines, &line/1)

  defp compute_groups(lines) do
    lines
  end
end
"""


def definitions(facts: Facts) -> list[tuple[str, tuple[str, ...], tuple[str, ...]]]:
    return list(facts.definitions)


def test_a_write_or_edit_of_code_says_what_it_defined_and_removed() -> None:
    edit = {
        "file_path": "/repo/lib/live.ex",
        "old_string": "  defp row_classes(line), do: line.classes\n  def mount(_, _, socket), do: socket",
        "new_string": "  def mount(_, _, socket), do: assign(socket, :rows, [])",
    }
    messages = [
        *(tool_call("anthropic", "w", "Write", {"file_path": "/repo/lib/renderer.ex", "content": ELIXIR}),),
        tool_result("anthropic", "w", "File created"),
        tool_call("anthropic", "e", "Edit", edit),
        tool_result("anthropic", "e", "The file has been updated."),
        tool_call("anthropic", "d", "Write", {"file_path": "/repo/README.md", "content": "# def nothing\n"}),
        tool_result("anthropic", "d", "File created"),
        tool_call("anthropic", "f", "Edit", {**edit, "file_path": "/repo/lib/other.ex"}),
        tool_result("anthropic", "f", "String to replace not found in file.", True),
    ]

    assert definitions(extract(messages)) == [
        ("/repo/lib/renderer.ex", ("Spotter.Renderer", "@default_visible_lines", "render", "compute_groups"), ()),
        ("/repo/lib/live.ex", ("mount",), ("row_classes",)),
    ]  # Markdown defines nothing; the failed edit changed nothing


@pytest.mark.parametrize(
    ("path", "code", "names"),
    [
        ("a.py", "class Store:\n    def __init__(self): ...\n    async def get(self, key): ...\n", ("Store", "get")),
        (
            "a.ts",
            "export const load = async (id: string) => {}\nexport interface Row {}\nconst n = 1\n",
            ("load", "Row"),
        ),
        ("a.go", "func (s *Server) Handle() {}\ntype Config struct {}\n", ("Handle", "Config")),
        ("a.rs", "pub(crate) async fn run() {}\nstruct Job;\n", ("run", "Job")),
        ("a.sh", "spotter_rand_hex() {\n  echo\n}\nfunction cleanup {\n}\n", ("spotter_rand_hex", "cleanup")),
        ("A.java", "public class A {\n  private static int count(String s) {\n  return f(x);\n", ("A", "count")),
        ("a.rb", "module Billing\n  def self.charge!(x)\n", ("Billing", "charge!")),
        ("notes.txt", "def not_code():\n", ()),
    ],
)
def test_definitions_are_read_by_the_files_language(path: str, code: str, names: tuple[str, ...]) -> None:
    messages = [
        tool_call("openai", "w", "write_file", {"path": path, "content": code}),
        tool_result("openai", "w", "ok"),
    ]

    assert definitions(extract(messages)) == ([(path, names, ())] if names else [])


def test_multi_edits_editor_commands_and_patches_give_definitions() -> None:
    multi = {
        "file_path": "src/a.py",
        "edits": [
            {"old_string": "def old_name():", "new_string": "def new_name():"},
            {"old_string": "x", "new_string": "y"},
        ],
    }
    patch = "*** Begin Patch\n*** Update File: src/b.py\n@@\n-def gone():\n+def kept():\n+class Added:\n*** End Patch\n"
    diff = "--- a/src/c.go\n+++ b/src/c.go\n@@ -1 +1 @@\n-func Old() {}\n+func New() {}\n"
    messages = [
        tool_call("anthropic", "m", "MultiEdit", multi),
        tool_result("anthropic", "m", "ok"),
        tool_call(
            "openai",
            "s",
            "str_replace_based_edit_tool",
            {"command": "create", "path": "src/d.py", "file_text": "def d():\n"},
        ),
        tool_result("openai", "s", "ok"),
        tool_call("openai", "p", "apply_patch", {"input": patch}),
        tool_result("openai", "p", "Done"),
        tool_call("openai", "g", "edit_file", {"path": "src/c.go", "diff": diff}),
        tool_result("openai", "g", "ok"),
    ]

    assert definitions(extract(messages)) == [
        ("src/a.py", ("new_name",), ("old_name",)),
        ("src/d.py", ("d",), ()),
        ("src/b.py", ("kept", "Added"), ("gone",)),
        ("src/c.go", ("New",), ("Old",)),
    ]


def test_the_commit_a_git_history_command_starts_with_is_an_identifier() -> None:
    """The full format's ``commit <sha>`` lines were ids already; the one-line format's first sha is too."""
    messages = [
        tool_call("openai", "a", "bash", {"command": "cd /testbed && git log --oneline | head -5"}),
        tool_result(
            "openai", "a", "<returncode>0</returncode>\n<output>\n41dd7fe7 SWE-bench\nd2a5b3c7 Fix a typo\n</output>"
        ),
        tool_call("openai", "b", "bash", {"command": "git rev-parse HEAD"}),
        tool_result("openai", "b", "0123abc9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9\n"),
        tool_call("openai", "c", "bash", {"command": "cat notes.txt"}),
        tool_result("openai", "c", "deadbeef1 is not a commit here\n"),
        tool_call("openai", "d", "bash", {"command": "git log --oneline"}),
        tool_result("openai", "d", "fatal: not a git repository\nExit code: 128"),
    ]

    assert extract(messages).identifiers == ("commit 41dd7fe7", "commit 0123abc9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9")


def outcome_of(name: str, args: dict[str, Any], output: Any, is_error: bool | None = None) -> tuple[bool, str]:
    messages = [tool_call("anthropic", "t1", name, args), tool_result("anthropic", "t1", output, is_error)]
    (outcome,) = extract(messages).outcomes
    return outcome.ok, outcome.label


PIPED_TESTS = "  14 doctests, 297 tests, 11 failures\nRandomized with seed 0"


def test_a_shell_result_flagged_no_error_exited_0_and_keeps_what_it_printed() -> None:
    # Claude Code sets is_error from the exit status: `cmd | tail` exits 0 whatever cmd did.
    assert outcome_of("Bash", {"command": "mix test | tail -3"}, PIPED_TESTS, False) == (
        True,
        "exit 0, printed: 14 doctests, 297 tests, 11 failures",
    )
    halted = "  done (warnings were emitted)\nHalting VM with exit status 2"
    assert outcome_of("Bash", {"command": "mix dialyzer | tail -2"}, halted, False) == (
        True,
        "exit 0, printed: Halting VM with exit status 2",
    )
    # Without the field nothing is recorded, and the output decides.
    assert outcome_of("Bash", {"command": "mix test | tail -3"}, PIPED_TESTS) == (False, "failed")


def test_a_tool_s_failure_leads_its_output_and_what_follows_is_content() -> None:
    snippet = ["defmodule Hook do", *(["  # ..."] * 46), '    |> json(%{error: "pane_id is required"})', "end"]
    echoed = "The file lib/hook.ex has been updated. Result of `cat -n` on a snippet:\n" + "\n".join(
        f"{n:>6}→{line}" for n, line in enumerate(snippet, 1)
    )
    assert outcome_of("Write", {"file_path": "lib/hook.ex", "content": "x"}, echoed) == (True, "ok")
    report = "Here is what the hooks documentation says.\n\n" + "A hook that returns exit code 2 blocks the call.\n" * 5
    assert outcome_of("Task", {"prompt": "Research the hook contract"}, report) == (True, "ok")
    refused = "Error: String to replace not found in file.\nString: import foo"
    assert outcome_of("Edit", {"file_path": "lib/hook.ex", "old_string": "import foo"}, refused)[0] is False


def test_a_search_that_found_nothing_shows_its_exit_1_as_no_match() -> None:
    assert outcome_of("Bash", {"command": "grep -rn NamedTemporaryFile src"}, "Exit code 1", True) == (True, "no match")
    assert (
        outcome_of("Bash", {"command": "grep -rn NamedTemporaryFile src"}, "Exit code 2\ngrep: src: No such file")[0]
        is False
    )
    differ = "Exit code 1\n3c3\n< a = 1\n---\n> a = 2"
    assert outcome_of("Bash", {"command": "diff old.py new.py"}, differ, True) == (True, "differs")


def test_a_read_that_exits_non_zero_failed_with_its_exit_code() -> None:
    # Only a status that is itself an answer (a search found nothing, files differ, a test is false) is not a failure.
    missing = "Exit code 1\ncat: notes.md: No such file or directory"
    assert outcome_of("Bash", {"command": "cat notes.md"}, missing, True) == (False, "failed (exit 1)")
    assert outcome_of("Bash", {"command": "type notes.md"}, "Exit code 1", True) == (False, "failed (exit 1)")
    assert outcome_of("Bash", {"command": "head -5 a.py"}, "Exit code 1\nhead: a.py: not found", True)[0] is False
    assert outcome_of("Bash", {"command": "cmp a.bin b.bin"}, "Exit code 1\na.bin b.bin differ", True) == (
        True,
        "differs",
    )
    assert outcome_of("Bash", {"command": "test -f a.py"}, "Exit code 1", True) == (True, "false")
    assert outcome_of("Bash", {"command": "[ -f a.py ]"}, "Exit code 1", True) == (True, "false")
    assert outcome_of("Bash", {"command": "cmp a.bin b.bin"}, "Exit code 2\ncmp: a.bin: No such file", True)[0] is False


def test_exit_1_is_the_answer_of_the_command_whose_status_the_line_returns() -> None:
    # A pipe returns its last command's status; after && a 1 may be the first command's failure.
    assert outcome_of("Bash", {"command": "make lint 2>&1 | grep -A5 error:"}, "Exit code 1", True) == (
        True,
        "no match",
    )
    assert outcome_of("Bash", {"command": "cd /repo && grep -n x a.py"}, "Exit code 1", True) == (True, "no match")
    assert outcome_of("Bash", {"command": "grep -q x a.py && make"}, "Exit code 1", True) == (False, "failed (exit 1)")
    assert outcome_of("Bash", {"command": "python t.py && grep x a.py"}, "Exit code 1", True) == (
        False,
        "failed (exit 1)",
    )
    assert outcome_of("shell", {"command": ["bash", "-lc", "rg -n OLLAMA"]}, "Exit code 1", True) == (True, "no match")


def test_quoted_operators_are_words_not_separators_or_redirects() -> None:
    facts = extract([tool_call("openai", "c", "bash", {"command": 'grep -n ";;" test/linter_test.py -B2'})])
    assert facts.files == (FileAction(READ, "test/linter_test.py"),)
    facts = extract([tool_call("openai", "c", "bash", {"command": "grep -c '>' notes.md && echo '|' done.txt"})])
    assert facts.files == (FileAction(READ, "notes.md"), FileAction(READ, "done.txt"))
    answer = outcome_of("Bash", {"command": 'grep -n ";;" test/linter_test.py'}, "Exit code 1", True)
    assert answer == (True, "no match")


def test_folders_given_to_listers_and_recursive_searches_are_not_files() -> None:
    def files(command: str) -> list[str]:
        return paths(extract([tool_call("openai", "c", "bash", {"command": command})]))

    assert files('grep -r "ExpressionWrapper" /testbed/django --include="*.py"') == []
    assert files("find /testbed -type f -name '*.py'") == []
    assert files("ls /testbed/tests") == []
    assert files("grep -rn x /srv/app/settings.py") == ["/srv/app/settings.py"]
    assert files("rg -n LMSTUDIO -n '.env.local.example'") == [".env.local.example"]
    assert files("grep -n x /etc/hosts") == ["/etc/hosts"]


def test_git_checkout_of_files_puts_them_back_as_a_change() -> None:
    facts = extract(
        [tool_call("openai", "c", "bash", {"command": "git checkout src/a.py src/b.py 2>/dev/null || true"})]
    )
    assert facts.files == (FileAction(EDIT, "src/a.py"), FileAction(EDIT, "src/b.py"))
    facts = extract([tool_call("openai", "c", "bash", {"command": "git restore -- lib/x.ts && git checkout main"})])
    assert facts.files == (FileAction(EDIT, "lib/x.ts"),)


PATCH_BODY = """*** Begin Patch
*** Update File: src/app.py
@@
-def old():
+def new():
     pass
*** Add File: src/extra.py
+X = 1
*** Delete File: src/gone.py
*** End Patch"""


def test_a_patch_fed_to_apply_patch_in_a_shell_names_its_files() -> None:
    heredoc = f"cd /repo && apply_patch <<'PATCH'\n{PATCH_BODY}\nPATCH\n"
    expected = {
        FileAction(EDIT, "/repo/src/app.py"),
        FileAction(WRITE, "/repo/src/extra.py"),
        FileAction(DELETE, "/repo/src/gone.py"),
    }
    for args in (
        {"command": ["bash", "-lc", heredoc]},  # Codex's shell tool
        {"command": ["apply_patch", PATCH_BODY], "workdir": "/repo"},  # its argv form
    ):
        messages = [tool_call("openai", "p", "shell", args), tool_result("openai", "p", "Success. Updated files")]
        facts = extract(messages)
        assert set(facts.files) == expected, args
        assert ("/repo/src/app.py", ("new",), ("old",)) in facts.definitions
    diff = "git apply <<'EOF'\n--- a/lib/x.py\n+++ b/lib/x.py\n@@\n-a\n+b\nEOF\nmake test"
    assert extract([tool_call("openai", "d", "bash", {"command": diff})]).files == (FileAction(EDIT, "lib/x.py"),)


def test_codex_exec_file_changes_name_their_files() -> None:
    changes = [
        {"path": "/w/src/a.py", "kind": "update"},
        {"path": "/w/notes.md", "kind": "add"},
        {"path": "/w/old.txt", "kind": "delete"},
        {"path": "/w/b.py", "kind": {"type": "update", "move_path": "/w/c.py"}},
    ]
    facts = extract([tool_call("openai", "f", "apply_patch", {"changes": changes})])
    assert facts.files == (
        FileAction(EDIT, "/w/src/a.py"),
        FileAction(WRITE, "/w/notes.md"),
        FileAction(DELETE, "/w/old.txt"),
        FileAction(EDIT, "/w/b.py"),
        FileAction(MOVE, "/w/b.py", "/w/c.py"),
    )


@pytest.mark.parametrize(
    "make",
    [
        lambda n: 'grep ";;" ' * (n // 10),  # quoted operators, masked and read back
        lambda n: "echo '" + "|" * n,  # one unclosed quote of operators
        lambda n: "apply_patch <<'P'\n" + "*** Update File: a.py\n+x\n" * (n // 25) + "P",  # a long patch fed in
        lambda n: "grep -rn x " + "d/ " * (n // 3),  # folders of a recursive search
    ],
    ids=["quoted separators", "unclosed quote", "apply_patch body", "recursive operands"],
)
def test_reading_shell_lines_is_linear(make: Any) -> None:
    def run(command: str) -> float:
        start = time.perf_counter()
        extract([tool_call("openai", "c", "bash", {"command": command})])
        return time.perf_counter() - start

    small, large = make(25_000), make(100_000)
    run(small)
    # Interleaved, best of five each: a busy moment of a shared machine then slows both sizes alike, not one.
    pairs = [(run(small), run(large)) for _ in range(5)]
    t_small, t_large = min(p[0] for p in pairs), min(p[1] for p in pairs)
    assert t_large < 1.0 and t_large < 6 * t_small + 0.02, f"{t_small:.4f}s at 25 KB, {t_large:.4f}s at 100 KB"


def test_a_heredoc_inside_a_quoted_script_still_names_the_file_it_writes() -> None:
    # codex exec: the whole script is one quoted argument, its heredoc's closing line ends the quote
    command = '/usr/bin/zsh -lc "cat > artifacts/info.json <<\'EOF\'\n{\n  \\"book\\": 1\n}\nEOF"'
    facts = extract([tool_call("openai", "c", "shell", {"command": command})])
    assert facts.files == (FileAction(WRITE, "artifacts/info.json"),)


def test_a_call_its_framework_cancelled_was_interrupted_whatever_the_tool() -> None:
    """loop-basic answers each call a second Ctrl+C cut off with ``{"error": "Tool execution was cancelled by user",
    "cancelled": true, "tool": NAME}``; Gemini CLI's scheduler with ``[Operation Cancelled] Reason: …``."""
    loop_basic = '{"error": "Tool execution was cancelled by user", "cancelled": true, "tool": "bash"}'
    for name, args in (("bash", {"command": "make clean"}), ("read_file", {"file_path": "a.py"})):
        messages = [tool_call("openai", "t1", name, args), tool_result("openai", "t1", loop_basic)]
        ((ok, label, error),) = [(o.ok, o.label, o.error) for o in extract(messages).outcomes]
        assert (ok, label, error) == (False, "interrupted", "Tool execution was cancelled by user")
    gemini = "[Operation Cancelled] Reason: User cancelled the operation."
    assert outcome_of("run_shell_command", {"command": "pytest -x"}, gemini, True) == (False, "interrupted")
    assert outcome_of("write_file", {"file_path": "a.py", "content": "x"}, gemini, True) == (False, "interrupted")
    # A file that holds such text is data.
    assert outcome_of("read_file", {"file_path": "notes.md"}, "cancelled: true\n" + gemini) == (True, "ok")
    order = '{"id": 7, "cancelled": true, "error": "card declined"}'
    assert outcome_of("Bash", {"command": "cat order.json"}, order, False) == (True, "ok")
