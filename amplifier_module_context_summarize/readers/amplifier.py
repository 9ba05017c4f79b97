"""Amplifier CLI sessions: ``~/.amplifier/projects/<project>/sessions/<id>/transcript.jsonl``.

One message per line, as the context held it (``system`` and ``developer`` messages are left out by the CLI):
assistant messages carry content blocks (``text``, ``thinking`` with its ``signature``, ``tool_call``) next to
loop-basic's ``tool_calls`` array of ``{"id", "tool", "arguments"}``, the mark this reader claims a file by (our
own converted files use the OpenAI ``function`` shape); ``tool`` messages carry the result as one string.

That string is not always what the tool returned. With amplifier-core 2.0 any ``tool:post`` hook (the CLI always
registers one, the incremental save) hands the loop the result's ``str()``: the Python ``repr`` of a dict output
(``{'stdout': '…', 'returncode': 0}``), ``Failed`` for a failed result whose error has no message (a shell
command that exited non-zero: its output and exit code are not in the file), ``Error: MESSAGE`` for one with a
message. Without a hook a dict output is JSON and a failure is its bare message. So each result is read as:

* a ``repr`` dict or list: the same data as JSON text (what the model would have been sent without the hook);
* ``Failed``, ``Error: …``, the loop's own ``Error executing tool: …`` / ``Denied by hook: …``: a result flagged
  ``is_error``; the loop's ``{"error": "Tool execution was cancelled by user", "cancelled": true, "tool": NAME}``
  for each call a second Ctrl+C cut off is flagged too, its output that record, so the working set shows the call
  interrupted, not failed;
* a plain string from a tool whose every success is a dict (``bash``, ``read_file``, ``write_file``,
  ``edit_file``: their failures are bare messages such as ``File not found: x``): flagged the same way.

Everything else is kept as written; ``timestamp`` and ``turn`` keys are dropped as for our own files.
"""

from __future__ import annotations

import ast
import json
from typing import Any

from ._common import Message, loads_or

NAME = "amplifier"
LABEL = "Amplifier CLI transcript.jsonl (~/.amplifier/projects/*/sessions/*/transcript.jsonl)"
_FAILED = ("Error: ", "Error executing tool: ", "Denied by hook: ")
_DICT_TOOLS = frozenset({"bash", "read_file", "write_file", "edit_file"})
"""Amplifier tools (tool-bash, tool-filesystem) whose every success is a dict output: a bare string is a failure."""


def _records(data: Any, kind: str) -> list[Any] | None:
    if kind == "jsonl":
        return data if isinstance(data, list) else None  # a JSONL file parses as a list of its records
    if kind == "json" and isinstance(data, dict):  # a transcript of one line parses as one document
        return [data]
    return None


def _loop_calls(record: dict[str, Any]) -> list[dict[str, Any]]:
    """loop-basic's ``tool_calls`` entries of an assistant message: ``{"id", "tool", "arguments"}``."""
    calls = record.get("tool_calls") if record.get("role") == "assistant" else None
    if not isinstance(calls, list):
        return []
    return [c for c in calls if isinstance(c, dict) and "tool" in c and "arguments" in c and "function" not in c]


def claims(data: Any, kind: str) -> bool:
    """Every record a message with a role, and at least one assistant call in loop-basic's shape. Claimed before
    our own format is tried, since the messages are valid as ours but their results need reading."""
    records = _records(data, kind)
    if not records or not all(isinstance(r, dict) and isinstance(r.get("role"), str) for r in records):
        return False
    return any(_loop_calls(r) for r in records)


detect = claims


def convert(data: Any, kind: str) -> tuple[list[Message], None]:
    records = _records(data, kind) or []
    tools: dict[str, str] = {}
    out: list[Message] = []
    for record in records:
        for c in _loop_calls(record):
            if isinstance(c.get("id"), str) and isinstance(c.get("tool"), str):
                tools[c["id"]] = c["tool"]
        if record.get("role") == "tool" and isinstance(record.get("content"), str):
            record = _read_result(record, tools.get(str(record.get("tool_call_id"))))
        out.append(record)
    return out, None


def _read_result(message: Message, tool: str | None) -> Message:
    content: str = message["content"]
    data = _literal(content)
    if data is not None:
        cancelled = isinstance(data, dict) and data.get("cancelled") is True and isinstance(data.get("error"), str)
        if not cancelled:
            return {**message, "content": content if data is _JSON else json.dumps(data, ensure_ascii=False)}
        return _flagged(message, data)  # the record itself: its ``cancelled`` mark says the call was interrupted
    if content.strip() == "Failed" or content.startswith(_FAILED) or tool in _DICT_TOOLS:
        return _flagged(message, content)
    return message


def _flagged(message: Message, output: str | dict[str, Any]) -> Message:
    call_id = str(message["tool_call_id"])
    block = {"type": "tool_result", "tool_call_id": call_id, "output": output, "is_error": True}
    return {**message, "content": [block]}


_JSON = object()
"""Marks a result that already is JSON text: kept as written."""
_NOT_JSON = object()
"""What ``loads_or`` gives for text that is not JSON a reader can use (also JSON nested past the stack)."""


def _literal(text: str) -> Any:
    """The dict or list a result holds, as JSON (``_JSON``) or a Python ``repr`` (the value), else None."""
    stripped = text.strip()
    if (stripped[:1], stripped[-1:]) not in (("{", "}"), ("[", "]")):
        return None
    value = loads_or(stripped, _NOT_JSON)
    if value is not _NOT_JSON:
        if isinstance(value, dict) and value.get("cancelled") is True:
            return value
        return _JSON if isinstance(value, dict | list) else None
    try:  # literal_eval builds values only, never calls anything: safe on untrusted text, and linear in it
        value = ast.literal_eval(stripped)
        json.dumps(value)  # a set or bytes inside: not what a tool's JSON output holds, keep the text
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, dict | list) else None
