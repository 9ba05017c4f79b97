"""The artifact ledger finds planted paths, commands, URLs, ids and errors in every tool-call shape."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amplifier_module_context_summarize.ledger import Ledger, build_ledger
from amplifier_module_context_summarize.testing import ORCHESTRATOR_SHAPES, tool_call, tool_result

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


@pytest.mark.parametrize("shape", [*SHAPES, *ORCHESTRATOR_SHAPES, "mixed"])
def test_finds_each_planted_item_in_its_kind(shape: str) -> None:
    ledger = build_ledger(session(shape))

    assert {"src/app/models.py", "/etc/hosts", "tests/test_models.py"} <= set(ledger.files)
    assert ledger.commands == [
        "pytest -x tests/test_models.py",
        "cat /etc/hosts",
        "git commit -am 'Fix import (ABC-123)'",
    ]
    assert ledger.urls == ["https://docs.example.com/guide#imports"]
    assert ledger.identifiers == ["ABC-123", "commit 1a2b3c4", "PR #42"]
    assert ledger.errors == ["ModuleNotFoundError: No module named 'foo'"]


@pytest.mark.parametrize("shape", [*SHAPES, *ORCHESTRATOR_SHAPES, "mixed"])
def test_repeats_are_kept_once_in_first_seen_order(shape: str) -> None:
    ledger = build_ledger(session(shape) + session(shape))

    assert ledger.files.count("src/app/models.py") == 1
    assert ledger.files.index("src/app/models.py") < ledger.files.index("/etc/hosts")
    assert ledger.identifiers.count("ABC-123") == 1
    assert len(ledger.commands) == len(set(ledger.commands)) == 3


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

    assert build_ledger(messages).errors == ["/etc/hosts is read-only"]


def test_plain_output_without_flag_or_failure_words_is_not_an_error() -> None:
    messages = [
        tool_call("openai", "c1", "bash", {"command": "ls"}),
        tool_result("openai", "c1", "/etc/hosts is read-only"),
    ]

    assert build_ledger(messages).errors == []


def test_error_words_inside_read_file_content_are_data_not_failures() -> None:
    source = 'raise ValueError("Error: bad input")\nprint("FAILED")\n'
    messages = [
        tool_call("openai", "c1", "read_file", {"path": "src/app/checks.py"}),
        tool_result("openai", "c1", source),
    ]

    assert build_ledger(messages).errors == []


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
    ],
)
def test_failures_recognised_from_result_text(output: str, expected: list[str]) -> None:
    messages = [tool_call("openai", "c1", "bash", {"command": "make"}), tool_result("openai", "c1", output)]

    assert build_ledger(messages).errors == expected


def test_amplifier_structured_output_with_non_zero_returncode() -> None:
    output = {"stdout": "", "stderr": "fatal: not a git repository (or any parent)\n", "returncode": 128}
    messages = [tool_call("amplifier", "a1", "bash", {"command": "git status"}), tool_result("amplifier", "a1", output)]

    assert build_ledger(messages).errors == ["fatal: not a git repository (or any parent)"]


def test_stringified_structured_output_is_read_back() -> None:
    output = json.dumps({"success": False, "error": {"message": "Tool timed out after 30s"}})
    messages = [
        tool_call("openai", "c1", "web_fetch", {"url": "https://example.org/slow"}),
        tool_result("openai", "c1", output),
    ]

    ledger = build_ledger(messages)

    assert ledger.errors == ["Tool timed out after 30s"]
    assert ledger.urls == ["https://example.org/slow"]


def test_error_lines_are_clipped() -> None:
    messages = [
        tool_call("openai", "c1", "bash", {"command": "run"}),
        tool_result("openai", "c1", "RuntimeError: " + "x" * 1000),
    ]

    [error] = build_ledger(messages).errors

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

    ledger = build_ledger([truncated])

    assert ledger.commands == ["cat /etc/hosts"]
    assert ledger.files == ["/etc/hosts"]


def test_truncated_orchestrator_json_arguments_are_salvaged() -> None:
    message = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "c1", "tool": "bash", "arguments": '{"command": "cat /etc/hosts'},
            {"id": "c2", "tool": "read_file", "arguments": '{"path": "src/app.py"}'},
        ],
    }

    ledger = build_ledger([message])

    assert ledger.commands == ["cat /etc/hosts"]
    assert ledger.files == ["/etc/hosts", "src/app.py"]


def test_argv_command_lists_and_shell_operators() -> None:
    messages = [
        tool_call(
            "openai",
            "c1",
            "shell",
            {"command": ["bash", "-lc", "pytest -x tests/test_models.py > out.log 2>&1"]},
        ),
        tool_call(
            "openai",
            "c2",
            "run_shell_command",
            {"cmd": "git checkout -b feature/x origin/main && python -m app.cli"},
        ),
    ]

    ledger = build_ledger(messages)

    assert ledger.commands == [
        "pytest -x tests/test_models.py > out.log 2>&1",
        "git checkout -b feature/x origin/main && python -m app.cli",
    ]
    assert ledger.files == ["tests/test_models.py", "out.log"]


def test_patch_and_diff_headers_name_the_files() -> None:
    patch = (
        "*** Begin Patch\n*** Update File: src/app/views.py\n@@\n-a\n+b\n"
        "*** Add File: docs/notes.md\n+hi\n*** End Patch"
    )
    diff = "--- a/src/app/urls.py\n+++ b/src/app/urls.py\n@@ -1 +1 @@\n-x\n+y\n"
    messages = [
        tool_call("amplifier", "p1", "apply_patch", {"input": patch}),
        tool_call("anthropic", "p2", "patch", {"diff": diff}),
    ]

    assert build_ledger(messages).files == ["src/app/views.py", "docs/notes.md", "src/app/urls.py"]


def test_command_argument_of_a_non_shell_tool_is_not_a_command() -> None:
    messages = [
        tool_call("anthropic", "t1", "str_replace_based_edit_tool", {"command": "view", "path": "src/app/models.py"})
    ]

    ledger = build_ledger(messages)

    assert ledger.commands == []
    assert ledger.files == ["src/app/models.py"]


def test_identifiers_stay_conservative() -> None:
    noise = "UTF-8 and SHA-256 via pre-commit on x86-64, ISO-8601 dates; sha 1a2b3c4d5e in a log; issue #12"
    planted = "Tracked in spotter-a0y and bd-a3f8e9.1, also CVE-2021-44228; pull request #7"
    messages = [
        {"role": "user", "content": noise},
        tool_call("openai", "c1", "bash", {"command": "git log -1"}),
        tool_result("openai", "c1", noise),
        {"role": "assistant", "content": planted},
    ]

    assert build_ledger(messages).identifiers == ["spotter-a0y", "bd-a3f8e9.1", "CVE-2021-44228", "PR #7"]


def test_short_and_full_commit_sha_fold_together() -> None:
    full = "3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f"
    messages = [
        tool_call("openai", "c1", "bash", {"command": "git log -1"}),
        tool_result("openai", "c1", f"commit {full}\nAuthor: A <a@example.com>"),
        {"role": "assistant", "content": "Committed as 3f2a9c1."},
    ]

    assert build_ledger(messages).identifiers == [f"commit {full}"]


def test_urls_lose_trailing_punctuation() -> None:
    messages = [{"role": "user", "content": "Read https://example.com/a_b?x=1. And (https://example.com/c)."}]

    assert build_ledger(messages).urls == ["https://example.com/a_b?x=1", "https://example.com/c"]


def test_render_headings_in_order_and_empty_kinds_omitted() -> None:
    text = build_ledger(session("mixed")).render()
    lines = text.splitlines()

    assert lines[0] == "### Artifacts"
    headings = [line for line in lines if not line.startswith("- ")]
    assert headings == ["### Artifacts", "Files:", "Commands:", "URLs:", "Identifiers:", "Errors:"]
    assert "- ModuleNotFoundError: No module named 'foo'" in lines
    assert "URLs:" not in Ledger(files=["a.py"]).render()


def test_render_of_empty_ledger_is_empty() -> None:
    assert Ledger().render() == ""
    assert build_ledger([{"role": "user", "content": "hello"}]).render() == ""


def test_render_caps_each_kind_keeping_the_most_recent() -> None:
    ledger = Ledger(files=[f"src/pkg/module_{i:02d}.py" for i in range(40)], commands=["make"])

    text = ledger.render(max_items_per_kind=10)

    assert "- (+30 more)" in text
    assert "src/pkg/module_39.py" in text and "src/pkg/module_30.py" in text
    assert "src/pkg/module_29.py" not in text
    assert "- make" in text


def test_render_clips_long_items() -> None:
    text = Ledger(commands=["echo " + "y" * 5000]).render()

    assert max(len(line) for line in text.splitlines()) <= 205
    assert text.endswith("…")


def test_render_stays_under_max_chars_dropping_oldest_first() -> None:
    ledger = Ledger(
        files=[f"src/pkg/module_{i:02d}.py" for i in range(25)],
        errors=[f"ValueError: case {i}" for i in range(25)],
    )

    text = ledger.render(max_chars=500)

    assert 0 < len(text) <= 500
    assert "module_24.py" in text and "case 24" in text
    assert "module_00.py" not in text


@given(
    st.lists(st.text(min_size=1, max_size=300), max_size=30),
    st.lists(st.text(min_size=1, max_size=300), max_size=30),
    st.integers(min_value=0, max_value=40),
    st.integers(min_value=0, max_value=3000),
)
def test_render_never_exceeds_max_chars(files: list[str], errors: list[str], per_kind: int, max_chars: int) -> None:
    text = Ledger(files=files, errors=errors).render(max_items_per_kind=per_kind, max_chars=max_chars)

    assert len(text) <= max_chars
    assert text == "" or text.startswith("### Artifacts")


def test_merge_dedups_and_keeps_order() -> None:
    first = Ledger(files=["a.py", "b.py"], commands=["make"], errors=["E1"])
    second = Ledger(files=["b.py", "c.py"], commands=["make", "make test"], urls=["https://x.dev"])

    merged = first.merge(second)

    assert merged == Ledger(
        files=["a.py", "b.py", "c.py"], commands=["make", "make test"], urls=["https://x.dev"], errors=["E1"]
    )
    assert first.files == ["a.py", "b.py"]


def test_merge_of_segment_ledgers_equals_ledger_of_whole_span() -> None:
    messages = session("mixed")

    assert build_ledger(messages[:7]).merge(build_ledger(messages[7:])) == build_ledger(messages)


def test_build_is_deterministic() -> None:
    assert build_ledger(session("mixed")).render() == build_ledger(session("mixed")).render()


def test_heredoc_commands_keep_only_their_opening_line():
    script = "cat > reproduce.py << 'EOF'\nimport os\nprint(os.getcwd())\nEOF"
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
    ledger = build_ledger(messages)
    assert ledger.commands == ["cat > reproduce.py << 'EOF' …"]
    assert "reproduce.py" in ledger.files
