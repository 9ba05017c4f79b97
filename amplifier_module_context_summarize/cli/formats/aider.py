"""Aider chat histories (``.aider.chat.history.md``).

Markdown: each run starts with ``# aider chat started at <time>``; the user's input lines start with ``#### ``;
aider's console output is quoted with ``> ``; everything else is the model's reply.

* ``#### `` lines are a user turn; a console command (``/model x``, ``/add f``, ``/multiline-mode``) is not a
  request and is left out, except the question of ``/ask`` / ``/code`` / ``/architect``.
* What aider did is read from its console lines as tool calls of the reply before them, so the working set
  holds it: ``> Applied edit to PATH`` an edit (with the whole-file or SEARCH/REPLACE block the reply gave for
  PATH; a write when aider asked ``Create new file?`` for it), ``> Commit 0c5878a message`` a commit,
  ``> Added PATH to the chat`` a read, ``> Running CMD`` (a command the user let run) and ``#### /run CMD``
  a shell call with the output lines after it.
* Every other console line (the banner, ``Tokens: …``, prompts, provider retries) is aider's own talk, seen by
  neither the model nor the task: left out, so it is never a user request.
"""

from __future__ import annotations

import re
from typing import Any

from ._common import Builder, Message

NAME = "aider"
LABEL = "Aider chat history (.aider.chat.history.md)"
_APPLIED = re.compile(r"^Applied edit to (?P<path>.+?)\s*$")
_COMMIT = re.compile(r"^Commit (?P<sha>[0-9a-f]{7,40}) (?P<message>.*?)\s*$")
_ADDED = re.compile(r"^Added (?P<path>\S+?) to the chat(?: \(read-only\))?\.?\s*$")
_RUNNING = re.compile(r"^Running (?P<command>.+?)\s*$")
_CREATE = re.compile(r"^Create new file\?")
_ASKING = ("/ask", "/code", "/architect", "/context", "/help")
_FENCE = re.compile(r"^(```|<source>|</source>)")
_CONSOLE_END = re.compile(r"^(Add command output to the chat\?|Added \d+ lines? of output|You can use /undo|Tokens: )")


def detect(data: Any, kind: str) -> bool:
    return kind == "text" and any(
        line.startswith("# aider chat started at") for line in str(data).lstrip().splitlines()[:5]
    )


def convert(text: Any, kind: str) -> tuple[list[Message], None]:
    b = Builder()
    runs = _runs(str(text))
    command = ""  # a command the user ran (``/run CMD``, ``/test CMD``, ``!CMD``): the console after is its output
    for n, (kind_now, lines) in enumerate(runs):
        if kind_now == "user":
            command = _user_command(lines)
            request = _request(lines)
            if request:
                b.text("user", request, "\n")
        elif kind_now == "assistant":
            command = ""
            b.text("assistant", "\n".join(lines).strip())
        elif kind_now == "console":
            if command:
                lines = [f"Running {command}", *lines]
                command = ""
            reply = "\n".join(runs[n - 1][1]) if n and runs[n - 1][0] == "assistant" else ""
            _console(b, lines, reply)
    return b.result(), None


def _user_command(lines: list[str]) -> str:
    text = "\n".join(lines).strip()
    if text.startswith("!"):
        return text[1:].strip()
    head, _, rest = text.partition(" ")
    return rest.strip() if head in ("/run", "/test", "/lint") else ""


def _runs(text: str) -> list[tuple[str, list[str]]]:
    """The file as (kind, lines) runs: ``user`` (``#### ``), ``console`` (``> ``) and ``assistant``."""
    runs: list[tuple[str, list[str]]] = []
    fenced = False  # inside a code block of the reply, ``>`` and ``#`` lines are code (``>>>>>>> REPLACE``)
    for line in text.splitlines():
        if fenced or (line.startswith("```") and runs and runs[-1][0] == "assistant"):
            if line.startswith("```"):
                fenced = not fenced
            runs[-1][1].append(line.rstrip())
            continue
        if line.startswith("# aider chat started at"):
            runs.append(("start", []))
            continue
        if line.startswith("####"):
            kind, body = "user", line[5:] if line.startswith("#### ") else line[4:]
        elif line.startswith(">"):
            kind, body = "console", line[2:] if line.startswith("> ") else line[1:]
        elif not line.strip() and runs and runs[-1][0] != "assistant":
            continue  # a blank line ends the user's input or aider's output; what follows starts a new run
        else:
            kind, body = "assistant", line
        body = body.rstrip()  # Markdown line breaks (two trailing spaces) are not text
        if runs and runs[-1][0] == kind:
            runs[-1][1].append(body)
        else:
            runs.append((kind, [body]))
    return runs


def _request(lines: list[str]) -> str:
    """The user's words in ``#### `` lines, without console commands."""
    text = "\n".join(lines).strip()
    if text.startswith("!"):
        return ""  # a shell command the user ran: its call says it
    if text.startswith("/"):
        command, _, rest = text.partition(" ")
        return rest.strip() if command in _ASKING else ""
    return text


def _console(b: Builder, lines: list[str], reply: str) -> None:
    """Calls for what aider did in one block of console lines (``reply``: the model's reply before it)."""
    created: set[str] = set()
    calls: list[tuple[str, str, dict[str, Any], str]] = []
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        if _CREATE.match(line) and i and lines[i - 1].strip():
            created.add(lines[i - 1].strip())
        if found := _APPLIED.match(line):
            path = found.group("path")
            args = {"path": path, **_edit_block(reply, path)}
            name = "write_file" if path in created else "edit_file"
            calls.append((b.new_id("aider"), name, args, line))
        elif found := _COMMIT.match(line):
            command = f"git commit -m {found.group('message')!r}"
            calls.append((b.new_id("aider"), "git_commit", {"command": command}, line))
        elif found := _ADDED.match(line):
            calls.append((b.new_id("aider"), "read_file", {"path": found.group("path")}, line))
        elif found := _RUNNING.match(line):
            output = []
            while i + 1 < len(lines) and not _CONSOLE_END.match(lines[i + 1].strip()):
                i += 1
                output.append(lines[i])
            calls.append((b.new_id("aider"), "shell", {"command": found.group("command")}, "\n".join(output)))
        i += 1
    for call_id, name, args, _ in calls:
        b.tool_call(call_id, name, args)
    for call_id, _, _, result in calls:
        b.tool_result(call_id, result or "(no output)")


def _edit_block(reply: str, path: str) -> dict[str, str]:
    """The new text the reply gave for ``path``: a SEARCH/REPLACE block's two sides, or a whole-file block."""
    lines = reply.splitlines()
    for start in range(len(lines) - 2, -1, -1):
        name = lines[start].strip().strip("*`:").strip()
        if name != path or not _FENCE.match(lines[start + 1].strip()):
            continue
        body: list[str] = []
        for line in lines[start + 2 :]:
            if _FENCE.match(line.strip()):
                break
            body.append(line)
        text = "\n".join(body)
        if "<<<<<<< SEARCH" in text and "=======" in text:
            old, _, new = text.partition("<<<<<<< SEARCH")[2].partition("=======")
            return {"old_string": old.strip("\n"), "new_string": new.partition(">>>>>>> REPLACE")[0].strip("\n")}
        return {"content": text + "\n"}
    return {}
