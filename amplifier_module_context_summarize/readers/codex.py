"""OpenAI Codex CLI sessions: rollout files, ``codex exec --json`` streams and trajectory exports.

* Rollout (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``): lines ``{"timestamp", "type", "payload"}`` with
  ``type`` ``session_meta``, ``turn_context``, ``event_msg``, ``compacted`` or ``response_item``. Only
  ``response_item`` payloads are the conversation: ``message {role, content: [input_text|output_text]}``,
  ``function_call {name, arguments, call_id}``, ``function_call_output {call_id, output}``,
  ``custom_tool_call {name, input, call_id}`` / ``custom_tool_call_output``, ``local_shell_call``, ``reasoning``
  (dropped). Older rollouts write the payloads directly, one per line, after a ``{"id", "timestamp"}`` header.
* ``codex exec --json``: events ``thread.started``, ``turn.started``, ``item.started`` / ``item.completed`` with
  ``item.type`` ``agent_message``, ``reasoning``, ``command_execution {command, aggregated_output, exit_code}``,
  ``file_change {changes}``, ``mcp_tool_call`` ...
* Trajectory export (ATIF, ``{"schema_version": "ATIF-v1.x", "steps": [{"source", "message", "tool_calls":
  [{"tool_call_id", "function_name", "arguments"}], "observation": {"results": [{"source_call_id",
  "content"}]}}]}``), as Harbor writes for Codex and other agents.

The exit code a shell result records (``metadata.exit_code``, ``Exit code: N``, ``exit_code``, ``Process exited with
code N``) is kept. An ``exec_command`` output's header (``Command:``, ``Chunk ID:``, ``Wall time:``, ``Original token
count:`` ... ``Output:``) is read for its exit code and left out: the call names the command, the rest is bookkeeping.

Codex writes its own context in the user's role: ``<environment_context>`` (the cwd, sandbox and shell), the
repository's ``AGENTS.md`` (``# AGENTS.md instructions for DIR`` or ``<user_instructions>``). Such a message becomes a
``developer`` message: kept for the model, never listed as a request of the user's.
"""

from __future__ import annotations

import re
from typing import Any

from ._common import Builder, Message, as_text, loads_or

NAME = "codex"
LABEL = "Codex CLI rollout JSONL, codex exec --json stream and ATIF trajectory export"
_ROLLOUT_TYPES = {"session_meta", "turn_context", "event_msg", "response_item", "compacted"}
_ITEM_TYPES = {
    "message",
    "function_call",
    "function_call_output",
    "reasoning",
    "custom_tool_call",
    "custom_tool_call_output",
    "local_shell_call",
    "local_shell_call_output",
}
_EXIT = re.compile(r"^Exit code: (-?\d{1,9})(?!\d)", re.MULTILINE)
_HEADER_EXIT = re.compile(r"^Process exited with code (-?\d{1,9})$")
EXEC_HEADER = (
    "Command: ",
    "Chunk ID: ",
    "Wall time: ",
    "Process exited with code ",
    "Process running with session ID ",
    "Original token count: ",
    "Total output lines: ",
)
HARNESS_NOTES = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions for ")
"""How the context Codex writes in the user's role opens."""


def is_harness_note(text: str) -> bool:
    """Text Codex wrote in the user's role (its environment context, AGENTS.md), not the user's words."""
    return text.lstrip().startswith(HARNESS_NOTES)


def detect(data: Any, kind: str) -> bool:
    if kind == "json" and isinstance(data, dict):
        return str(data.get("schema_version", "")).startswith("ATIF") and isinstance(data.get("steps"), list)
    if kind != "jsonl":
        return False
    records = [r for r in data if isinstance(r, dict)]
    if not records:
        return False
    if all(r.get("type") in _ROLLOUT_TYPES and "payload" in r for r in records[:20]):
        return True
    if any(str(r.get("type", "")).startswith(("thread.", "item.", "turn.")) for r in records[:5]):
        return True
    items = [r for r in records if r.get("type") in _ITEM_TYPES]
    return bool(items) and all(
        r.get("type") in _ITEM_TYPES
        or "record_type" in r
        or "instructions" in r
        or set(r) <= {"id", "timestamp", "instructions", "git"}
        for r in records
    )


def convert(data: Any, kind: str) -> tuple[list[Message], None]:
    if kind == "json":
        return _atif(data), None
    if any(str(r.get("type", "")).startswith(("thread.", "item.", "turn.")) for r in data[:5] if isinstance(r, dict)):
        return _exec_json(data), None
    b = Builder()
    for r in data:
        if not isinstance(r, dict):
            continue
        payload = r.get("payload") if "payload" in r else r
        if "payload" in r and r.get("type") != "response_item":
            continue
        if isinstance(payload, dict):
            _item(b, payload)
    return b.result(), None


def output_and_exit(raw: Any) -> tuple[str, int | None]:
    """A function_call_output's text and its recorded exit code."""
    if isinstance(raw, dict):
        raw = raw.get("content", raw)
    text = as_text(raw)
    if text.lstrip().startswith("{"):
        decoded = loads_or(text, None)
        if isinstance(decoded, dict) and "output" in decoded:
            meta = decoded.get("metadata") or {}
            code = meta.get("exit_code") if isinstance(meta, dict) else None
            return as_text(decoded["output"]), code if isinstance(code, int) else None
    headed = exec_output(text)
    if headed is not None:
        return headed
    found = _EXIT.findall(text)
    return text, int(found[0]) if found else None


def exec_output(text: str) -> tuple[str, int | None] | None:
    """An ``exec_command`` output (header lines, then ``Output:`` and the output) as the output and its exit code;
    None when ``text`` does not open with that header. Reads only the header's lines: linear in the text."""
    if not text.startswith(EXEC_HEADER):
        return None
    code, at = None, 0
    while at < len(text):
        end = text.find("\n", at)
        end = len(text) if end < 0 else end
        line = text[at:end].rstrip("\r")
        if line == "Output:":
            return text[end + 1 :], code
        if not line.startswith(EXEC_HEADER):
            return None
        found = _HEADER_EXIT.match(line)
        code = int(found.group(1)) if found else code
        at = end + 1
    return text, code  # no output section: the header is all there is (a process still running)


def _item(b: Builder, item: dict[str, Any]) -> None:
    kind = item.get("type")
    if kind == "message":
        role = item.get("role")
        text = as_text(item.get("content"))
        if role == "user" and is_harness_note(text):
            b.messages.append({"role": "developer", "content": text})
        elif role in ("user", "assistant"):
            b.text(role, text)
        elif role in ("developer", "system") and text.strip():
            b.messages.append({"role": "system" if role == "system" else "developer", "content": text})
    elif kind in ("function_call", "custom_tool_call"):
        args = item.get("arguments") if kind == "function_call" else {"input": item.get("input")}
        b.tool_call(str(item.get("call_id") or item.get("id") or b.new_id()), item.get("name"), args)
    elif kind == "local_shell_call":
        action = item.get("action") or {}
        b.tool_call(str(item.get("call_id") or item.get("id") or b.new_id()), "shell", action)
    elif kind in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
        text, code = output_and_exit(item.get("output"))
        b.tool_result(str(item.get("call_id")), text, code)


def _exec_json(events: list[Any]) -> list[Message]:
    b = Builder()
    for e in events:
        item = e.get("item") if isinstance(e, dict) else None
        if not isinstance(item, dict) or e.get("type") != "item.completed":
            continue
        kind = item.get("type") or item.get("item_type")
        call_id = str(item.get("id") or b.new_id())
        if kind == "agent_message":
            b.text("assistant", item.get("text"))
        elif kind == "command_execution":
            b.tool_call(call_id, "shell", {"command": item.get("command")})
            code = item.get("exit_code")
            b.tool_result(call_id, item.get("aggregated_output"), code if isinstance(code, int) else None)
        elif kind == "file_change":
            b.tool_call(call_id, "apply_patch", {"changes": item.get("changes")})
            b.tool_result(call_id, item.get("status", ""), None, item.get("status") == "failed")
        elif kind in ("mcp_tool_call", "web_search"):
            b.tool_call(call_id, item.get("tool") or kind, item.get("arguments") or {"query": item.get("query")})
            b.tool_result(call_id, item.get("result") or item.get("error") or "")
    return b.result()


def _atif(data: dict[str, Any]) -> list[Message]:
    b = Builder()
    for step in data["steps"]:
        if not isinstance(step, dict):
            continue
        source = step.get("source")
        if source == "system":
            if as_text(step.get("message")).strip():
                b.messages.append({"role": "system", "content": as_text(step.get("message"))})
            continue
        role = "user" if source == "user" else "assistant"
        if role == "user" and is_harness_note(as_text(step.get("message"))):
            b.messages.append({"role": "developer", "content": as_text(step.get("message"))})
        else:
            b.text(role, step.get("message"))
        for call in step.get("tool_calls") or []:
            b.tool_call(str(call.get("tool_call_id") or b.new_id()), call.get("function_name"), call.get("arguments"))
        observation = step.get("observation") or {}
        for result in observation.get("results") or [] if isinstance(observation, dict) else []:
            if isinstance(result, dict) and result.get("source_call_id"):
                text, code = output_and_exit(result.get("content"))
                b.tool_result(str(result["source_call_id"]), text, code)
    return b.result()
