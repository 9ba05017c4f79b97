"""Cline task histories (``tasks/<id>/api_conversation_history.json`` and ``ui_messages.json``).

* ``api_conversation_history.json``: the Anthropic messages Cline sent, ``[{"role", "content": [blocks]}]``;
  blocks may carry bookkeeping keys. Tool calls are ``tool_use`` blocks or, in older versions, XML tags in the
  assistant text (``<read_file><path>…</path></read_file>``, made ``tool_use`` blocks here). Cline answers them
  with text blocks in the next user message, ``[read_file for 'src/a.ts'] Result:`` and the output: those become
  ``tool_result`` blocks paired with their call (Cline's ``<environment_details>`` report after them left out), so the
  working set sees the files and the results are not taken for user requests. Claimed before our own format.
* ``ui_messages.json``: what the task view shows, ``[{"ts", "type": "say"|"ask", "say"|"ask": kind, "text"}]``.
  ``task`` / ``user_feedback`` become user turns, ``text`` / ``completion_result`` assistant turns,
  ``command`` (ask) a shell call and the ``command_output`` that follows its result; ``tool`` asks (a JSON
  text naming ``tool`` and ``path``) become calls of that tool. ``api_req_*`` bookkeeping is dropped.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ._common import Builder, Message, as_text

NAME = "cline"
LABEL = "Cline task history (api_conversation_history.json, ui_messages.json)"
_BLOCK_KEYS = {
    "type",
    "text",
    "id",
    "name",
    "input",
    "tool_use_id",
    "content",
    "is_error",
    "source",
    "thinking",
    "signature",
    "data",
}


_RESULT_HEAD = re.compile(r"^\[(?P<name>[A-Za-z_][\w-]*)(?: for (?P<what>.*?))?\] (?P<how>Result|Error):?", re.DOTALL)
"""How Cline answers a tool call: a text block ``[read_file for 'src/a.ts'] Result:`` (the output after it, in the
same block or the next ones) in the next user message, not a ``tool_result`` block."""
_FEEDBACK = re.compile(r"<feedback>\s*(.*?)\s*</feedback>", re.DOTALL)
_FAILED = ("The tool execution failed", "[ERROR]", "Error executing")
_TOOLS = (
    "execute_command", "read_file", "write_to_file", "replace_in_file", "search_files", "list_files",
    "list_code_definition_names", "browser_action", "use_mcp_tool", "access_mcp_resource", "ask_followup_question",
    "attempt_completion", "plan_mode_respond", "new_task", "apply_diff", "insert_content", "search_and_replace",
    "web_fetch", "load_mcp_documentation", "new_rule", "condense", "summarize_task", "report_bug",
)  # fmt: skip
_XML_CALL = re.compile(r"<(?P<tool>" + "|".join(_TOOLS) + r")>(?P<body>.*?)</(?P=tool)>", re.DOTALL)
_XML_PARAM = re.compile(r"<(?P<key>[a-z_]+)>\n?(?P<value>.*?)\n?</(?P=key)>", re.DOTALL)


def detect(data: Any, kind: str) -> bool:
    if kind != "json" or not isinstance(data, list) or not data:
        return False
    first = [e for e in data[:20] if isinstance(e, dict)]
    if first and all("ts" in e and e.get("type") in ("say", "ask") for e in first):
        return True
    return (
        bool(first)
        and all(e.get("role") in ("user", "assistant") and isinstance(e.get("content"), list | str) for e in first)
        and any(set(e) - {"role", "content"} for e in first)
    )


def claims(data: Any, kind: str) -> bool:
    """Cline's API history before our own format: Anthropic messages whose user turns carry Cline's text answers
    to tool calls (``[tool for 'x'] Result:``), its ``<task>`` or its ``<environment_details>``."""
    if kind != "json" or not isinstance(data, list) or not data:
        return False
    entries = [e for e in data if isinstance(e, dict)]
    if len(entries) != len(data) or not all(e.get("role") in ("user", "assistant") for e in entries):
        return False
    for e in entries[:50]:
        if e["role"] != "user":
            continue
        for text in _texts(e.get("content")):
            head = text.lstrip()
            if _RESULT_HEAD.match(head) or head.startswith(("<task>", "<environment_details>")):
                return True
    return False


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)]
    return []


def convert(data: Any, kind: str) -> tuple[list[Message], None]:
    if all("ts" in e for e in data if isinstance(e, dict)) and any("say" in e or "ask" in e for e in data):
        return _ui(data), None
    out: list[Message] = []
    pending: list[tuple[str, str]] = []  # (id, tool name) of the last assistant turn's calls not yet answered
    for n, e in enumerate(data):
        if not isinstance(e, dict):
            continue
        content = e.get("content")
        if isinstance(content, list):
            content = [{k: v for k, v in b.items() if k in _BLOCK_KEYS} if isinstance(b, dict) else b for b in content]
        if e["role"] == "assistant":
            content = _xml_calls(content, n)
            pending = (
                [(b["id"], str(b.get("name"))) for b in content or [] if _is_call(b)]
                if isinstance(content, list)
                else []
            )
            out.append({"role": "assistant", "content": content})
            continue
        if pending and isinstance(content, list | str):
            content = _answers(content if isinstance(content, list) else [{"type": "text", "text": content}], pending)
        pending = []
        out.append({"role": "user", "content": content})
    return out, None


def _is_call(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") == "tool_use" and bool(block.get("id"))


def _xml_calls(content: Any, n: int) -> Any:
    """Older Cline: the call is XML in the assistant text (``<read_file><path>x</path></read_file>``); it becomes
    a ``tool_use`` block after the text, so its ``Result:`` answer pairs with it."""
    texts = _texts(content)
    if isinstance(content, list) and any(_is_call(b) for b in content):
        return content
    calls = []
    for text in texts:
        for k, found in enumerate(_XML_CALL.finditer(text)):
            params = {m.group("key"): m.group("value") for m in _XML_PARAM.finditer(found.group("body"))}
            calls.append({"type": "tool_use", "id": f"cline_{n}_{k}", "name": found.group("tool"), "input": params})
    if not calls:
        return content
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
    kept = []
    for block in blocks:  # the XML is the call now: the text keeps what was said around it
        if isinstance(block, dict) and isinstance(block.get("text"), str):
            text = _XML_CALL.sub("", block["text"]).strip()
            if text:
                kept.append({**block, "text": text})
        else:
            kept.append(block)
    return kept + calls


def _answers(blocks: list[Any], pending: list[tuple[str, str]]) -> list[Any]:
    """The user message answering ``pending`` calls: each ``[tool ...] Result:`` text (and the text blocks after it
    up to the next head) as a ``tool_result`` block for the call of that tool, in order; the rest of the message
    (environment details, the user's own words) after them."""
    results: list[dict[str, Any]] = []
    rest: list[Any] = []
    open_result: dict[str, Any] | None = None
    unanswered = list(pending)
    for block in blocks:
        text = block.get("text") if isinstance(block, dict) and block.get("type") == "text" else None
        head = _RESULT_HEAD.match(text.lstrip()) if isinstance(text, str) else None
        if head and unanswered:
            name = head.group("name")
            call = next((c for c in unanswered if c[1] == name), unanswered[0])
            unanswered.remove(call)
            body = _without_details(text.lstrip()[head.end() :].lstrip("\n"))
            failed = head.group("how") == "Error" or body.lstrip().startswith(_FAILED)
            # Cline records no exit status: ``is_error`` is set only when it said the call failed (false would
            # claim a clean exit, as Claude Code's flag does).
            open_result = {"type": "tool_result", "tool_use_id": call[0], "content": body}
            if failed:
                open_result["is_error"] = True
            results.append(open_result)
            continue
        if open_result is not None and isinstance(text, str) and not _bookkeeping(text):
            text = _without_details(text)
            joined = f"{open_result['content']}\n{text}" if open_result["content"] else text
            open_result["content"] = joined
            if text.lstrip().startswith(_FAILED):
                open_result["is_error"] = True
            continue
        open_result = None
        rest.append(block)
    if not results:
        return blocks
    # The user's answer to a completion or a question rides in a result as <feedback>: it is their words, a turn.
    said = [{"type": "text", "text": f.group(1).strip()} for r in results for f in _FEEDBACK.finditer(r["content"])]
    # Cline's environment report (visible files, open tabs, time, mode) after every result is its bookkeeping,
    # not the user's words nor the tool's output: left out, so it is neither a request nor an error a tool printed.
    return results + said + [b for b in rest if not (isinstance(b, dict) and _bookkeeping(str(b.get("text", ""))))]


def _without_details(text: str) -> str:
    cut = text.find("<environment_details>")
    return text if cut < 0 else text[:cut].rstrip()


def _bookkeeping(text: str) -> bool:
    return not text.strip() or text.lstrip().startswith(("<environment_details>", "# task_progress"))


def _ui(data: list[Any]) -> list[Message]:
    b = Builder()
    pending: str | None = None
    for e in data:
        if not isinstance(e, dict):
            continue
        kind = e.get("say") or e.get("ask")
        text = e.get("text") or ""
        if kind in ("task", "user_feedback"):
            b.text("user", text)
        elif kind in ("text", "completion_result", "reasoning"):
            b.text("assistant", text)
        elif kind == "command":
            pending = b.new_id()
            b.tool_call(pending, "execute_command", {"command": text})
        elif kind == "command_output" and pending:
            b.tool_result(pending, text)
            pending = None
        elif kind == "tool":
            try:
                args = json.loads(text)
            except ValueError:
                args = {"text": text}
            call_id = b.new_id()
            name = args.pop("tool", "tool") if isinstance(args, dict) else "tool"
            content = args.pop("content", "") if isinstance(args, dict) else ""
            b.tool_call(call_id, name, args)
            b.tool_result(call_id, as_text(content) or "ok")
    return b.result()
