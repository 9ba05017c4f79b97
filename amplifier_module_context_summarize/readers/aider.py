"""Aider chat histories (``.aider.chat.history.md``).

Markdown: each run starts with ``# aider chat started at <time>``; the user's input lines start with ``#### ``;
aider's console output is quoted with ``> ``; everything else is the model's reply.

* ``#### `` lines are a user turn; a console command (``/model x``, ``/add f``, ``/multiline-mode``) is not a
  request and is left out, except the question of ``/ask`` / ``/code`` / ``/architect`` / ``/context`` / ``/help``
  (read once: aider logs ``#### /ask Q`` and then, as it sends it, ``#### Q`` again; for ``/help Q`` the message it
  sends, ``# Question: Q`` with the docs it retrieved, is aider's prompt, not the user's words). A command is
  matched as aider matches it: its first word (``/ask`` alone on a line of ``{`` multi-line input), or a unique
  prefix (``/as Q``); a bare ``/ask`` is a mode switch, not a request. The architect's reply, logged again as
  ``#### `` lines when aider hands it to its editor, and an empty input (``#### <blank>``) are not requests either.
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
# fmt: off
_COMMANDS = (
    *_ASKING, "/add", "/chat-mode", "/clear", "/commit", "/copy", "/copy-context", "/diff", "/drop", "/edit", "/editor",
    "/editor-model", "/exit", "/git", "/lint", "/load", "/ls", "/map", "/map-refresh", "/model", "/models",
    "/multiline-mode", "/ok", "/paste", "/quit", "/read-only", "/reasoning-effort", "/report", "/reset", "/run",
    "/save", "/settings", "/test", "/think-tokens", "/tokens", "/undo", "/voice", "/weak-model", "/web",
)
# fmt: on
"""Aider's commands (``Commands.get_commands``: every ``cmd_*`` method), so a prefix resolves as aider resolves it."""
_HELP_PROMPT = "# Question: "
_BLANK = "<blank>"
"""How ``InputOutput.user_input`` logs an empty input."""
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
    sent = ""  # what aider itself may log next as ``#### `` lines: an asking command's question, the architect's reply
    for n, (kind_now, lines) in enumerate(runs):
        if kind_now == "user":
            text = "\n".join(lines).strip()
            if _sent(text, sent):
                sent = ""
                continue
            command = _user_command(text)
            request = _request(text)
            sent = request if text.startswith("/") else ""
            if request:
                b.text("user", request, "\n")
        elif kind_now == "assistant":
            command = ""
            reply = "\n".join(lines).strip()
            sent = reply
            b.text("assistant", reply)
        elif kind_now == "console":
            if command:
                lines = [f"Running {command}", *lines]
                command = ""
            reply = "\n".join(runs[n - 1][1]) if n and runs[n - 1][0] == "assistant" else ""
            _console(b, lines, reply)
    return b.result(), None


def _user_command(text: str) -> str:
    if text.startswith("!"):
        return text[1:].strip()
    if not text.startswith("/"):
        return ""
    name, rest = _command(text)
    return rest if name in ("/run", "/test", "/lint") else ""


def _command(text: str) -> tuple[str, str]:
    """``(command, its arguments)`` as aider's ``Commands.matching_commands`` / ``run`` read a ``/`` input: the first
    word, whatever whitespace ends it, names the one command it is a prefix of, or the one it spells out; an unknown
    or ambiguous one is ``""`` (aider printed an error and ran nothing)."""
    head, *rest = text.split(None, 1)
    matches = [name for name in _COMMANDS if name.startswith(head)]
    name = matches[0] if len(matches) == 1 else head if head in matches else ""
    return name, rest[0].strip() if rest else ""


def _sent(text: str, sent: str) -> bool:
    """Whether a user run is aider's log of a message it sent itself (``Coder.run(with_message)`` logs it as ``#### ``
    lines): an asking command's question again, ``/help``'s ``# Question: Q`` prompt with the docs it found, or the
    architect's reply handed to its editor (``ArchitectCoder.reply_completed``). Not the user's words."""
    if not sent:
        return False
    flat, sent = " ".join(text.split()), " ".join(sent.split())
    return flat == sent or flat.startswith(f"{_HELP_PROMPT}{sent}")


def _runs(text: str) -> list[tuple[str, list[str]]]:
    """The file as (kind, lines) runs: ``user`` (``#### ``), ``console`` (``> ``) and ``assistant``."""
    runs: list[tuple[str, list[str]]] = []
    gap = False  # a blank line since the last line: the next ``#### `` line is another input
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
            gap = True  # a blank line ends the user's input (``InputOutput.user_input`` opens each with one)
            continue
        else:
            kind, body = "assistant", line
        body = body.rstrip()  # Markdown line breaks (two trailing spaces) are not text
        joined, gap = bool(runs) and runs[-1][0] == kind and not (gap and kind == "user"), False
        if joined:
            runs[-1][1].append(body)
        else:
            runs.append((kind, [body]))
    return runs


def _request(text: str) -> str:
    """The user's words in ``#### `` lines, without console commands."""
    if text.startswith("!") or text == _BLANK:
        return ""  # a shell command the user ran (its call says it), or an empty input
    if text.startswith("/"):
        name, rest = _command(text)
        return rest if name in _ASKING else ""
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
