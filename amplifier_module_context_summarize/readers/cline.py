"""Cline task histories (``tasks/<id>/api_conversation_history.json`` and ``ui_messages.json``).

* ``api_conversation_history.json``: the Anthropic messages Cline sent, ``[{"role", "content": [blocks]}]``;
  blocks may carry bookkeeping keys. Tool calls are ``tool_use`` blocks or, in older versions, XML tags in the
  assistant text (``<read_file><path>…</path></read_file>``, made ``tool_use`` blocks here). Cline answers them
  with text blocks in the next user message, ``[read_file for 'src/a.ts'] Result:`` and the output: those become
  ``tool_result`` blocks paired with their call, so the working set sees the files. Cline's own notes in the user's
  role (``[TASK RESUMPTION]``, ``[ERROR] You did not use a tool …``, ``<environment_details>``) become a
  ``developer`` message, and the user's words (``<task>``, ``<user_message>``, ``<feedback>``) a user message of
  their own: only those are requests. Claimed before our own format.
* ``ui_messages.json``: what the task view shows, ``[{"ts", "type": "say"|"ask", "say"|"ask": kind, "text"}]``.
  ``task`` / ``user_feedback`` become user turns, ``text`` / ``completion_result`` assistant turns,
  ``command`` (ask) a shell call and the ``command_output`` that follows its result; ``tool`` asks (a JSON
  text naming ``tool`` and ``path``) become calls of that tool. ``api_req_*`` bookkeeping is dropped.
"""

from __future__ import annotations

import re
from typing import Any

from ._common import Builder, Message, Tagged, as_text, loads_or, tagged, without

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
_FEEDBACK = ("feedback", "answer")
"""Tags around the user's words inside an answer to a call (a completion's feedback, a question's answer)."""
_CONTINUATION = "New instructions for task continuation"
_NEW_MESSAGE = re.compile(r"New message to respond to with \w+ tool")
"""Cline's lead-ins to a ``<user_message>``, on the line before it (ended by an optional colon)."""
_FAILED = ("The tool execution failed", "[ERROR]", "Error executing", "The user denied this operation")
_DENIED = ("The user denied this operation", "The user provided the following feedback")
"""A call the user turned down, in newer Cline without the ``[tool] Result:`` head."""
_NOT_RUN = re.compile(r"^Tool \[(?P<name>[A-Za-z_][\w-]*)\] was not executed\b")
_EXIT_STATUS = re.compile(r"Command (?:executed successfully \(|failed with )exit code (-?\d+)\b")
"""Newer Cline records a command's exit status in its answer: ``Command executed successfully (exit code 0).``,
``Command failed with exit code 1.`` (older ones say only ``Command executed.``)."""
_RESUMPTION = "[TASK RESUMPTION]"
_NOTES = (
    _RESUMPTION,
    "[ERROR] You did not use a tool",
    "(The user did not provide a new message",
    "New instructions for task continuation",
    "New message to respond to with",
    "<environment_details>",
    "# task_progress",
    "# TODO LIST UPDATE REQUIRED",
    "[NOTE]",
)
"""How Cline's own notes to the model open: its resumption notice and nags, and its per-turn reports."""
_TOOLS = (
    "execute_command", "read_file", "write_to_file", "replace_in_file", "search_files", "list_files",
    "list_code_definition_names", "browser_action", "use_mcp_tool", "access_mcp_resource", "ask_followup_question",
    "attempt_completion", "plan_mode_respond", "new_task", "apply_diff", "insert_content", "search_and_replace",
    "web_fetch", "load_mcp_documentation", "new_rule", "condense", "summarize_task", "report_bug",
)  # fmt: skip
_PARAM_NAME = re.compile(r"[a-z_]+")


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
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        out += _user_side(content, pending) if isinstance(content, list) else [{"role": "user", "content": content}]
        pending = []
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
        for k, found in enumerate(tagged(text, _TOOLS.__contains__)):
            body = found.inner(text)
            params = {p.name: _param_value(p.inner(body)) for p in tagged(body, _is_param_name)}
            calls.append({"type": "tool_use", "id": f"cline_{n}_{k}", "name": found.name, "input": params})
    if not calls:
        return content
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
    kept = []
    for block in blocks:  # the XML is the call now: the text keeps what was said around it
        if isinstance(block, dict) and isinstance(block.get("text"), str):
            text = block["text"]
            text = without(text, [(c.start, c.end) for c in tagged(text, _TOOLS.__contains__)]).strip()
            if text:
                kept.append({**block, "text": text})
        else:
            kept.append(block)
    return kept + calls


def _user_side(blocks: list[Any], pending: list[tuple[str, str]]) -> list[Message]:
    """What one user-role message of Cline's holds, as what each part is.

    * Each ``[tool ...] Result:`` text (and the text blocks after it up to the next part), ``Tool [x] was not
      executed ...`` and a denial are ``tool_result`` blocks for the calls of ``pending``, in order.
    * Cline's own notes to the model (``[TASK RESUMPTION]``, ``[ERROR] You did not use a tool ...``, its
      ``<environment_details>`` and task-progress reminders) are one ``developer`` message: kept in the history
      as the model saw them, but never a request (only user turns are), nor output a tool printed. The
      ``developer`` role is the harness's voice in the OpenAI messages this reads into (the Codex reader keeps
      Codex's the same way); a ``system`` message would be pinned and may only lead the conversation.
    * A call the resumption cut off is answered by that note, so it is shown interrupted, not left unpaired.
    * The user's words (``<task>``, ``<user_message>``, the ``<feedback>`` or ``<answer>`` a result carries,
      attachments) are a user message of their own after the results, so they are a request.
    """
    results: list[dict[str, Any]] = []
    words: list[Any] = []
    notes: list[str] = []
    open_result: dict[str, Any] | None = None
    unanswered = list(pending)
    for block in blocks:
        text = block.get("text") if isinstance(block, dict) and block.get("type") == "text" else None
        if not isinstance(text, str):
            open_result = None
            words.append(block)
            continue
        body, details = _split_details(text.strip())
        if details:
            notes.append(details)
        if not body:
            continue
        answer = _answer_head(body) if unanswered else None
        if answer is not None:
            name, body, failed = answer
            call = next((c for c in unanswered if c[1] == name), unanswered[0])
            unanswered.remove(call)
            # ``is_error`` false claims a clean exit (as Claude Code's flag does): set only when Cline recorded one.
            open_result = {"type": "tool_result", "tool_use_id": call[0], "content": body}
            status = _EXIT_STATUS.match(body)
            if failed or status:  # the status Cline recorded, else only a failure it reported
                open_result["is_error"] = failed or (status is not None and status.group(1) != "0")
            results.append(open_result)
            continue
        if body.startswith(_NOTES) or _RESULT_HEAD.match(body):  # (an answer to no call left is Cline's too)
            open_result = None
            messages = _user_messages(body)
            words += [{"type": "text", "text": s} for s in (m.inner(body).strip() for m in messages) if s]
            cuts = [(_lead_in(body, m, i and messages[i - 1].end), m.end) for i, m in enumerate(messages)]
            note = without(body, cuts).strip()
            if note and unanswered and note.startswith(_RESUMPTION):
                # The call never got its answer: the resumption is what happened to it.
                results += [{"type": "tool_result", "tool_use_id": c[0], "content": note} for c in unanswered]
                unanswered = []
            elif note:
                notes.append(note)
            continue
        if open_result is not None:
            open_result["content"] = f"{open_result['content']}\n{body}" if open_result["content"] else body
            if body.startswith(_FAILED):
                open_result["is_error"] = True
            continue
        said = [m.inner(body).strip() for m in _user_messages(body)]
        words.append({**block, "text": "\n\n".join(said)} if said else {**block, "text": body})
    if not results and not notes:
        return [{"role": "user", "content": words or blocks}]
    # The user's answer to a completion, a question or a denied call rides in a result: their words, a turn.
    answered = [
        {"type": "text", "text": words_said}
        for r in results
        for found in tagged(r["content"], _FEEDBACK.__contains__)
        if (words_said := found.inner(r["content"]).strip())
    ]
    out: list[Message] = []
    if results:
        out.append({"role": "user", "content": results})
    if answered or words:
        out.append({"role": "user", "content": answered + words})
    if notes:
        out.append({"role": "developer", "content": "\n\n".join(notes)})
    return out


def _is_param_name(name: str) -> bool:
    return _PARAM_NAME.fullmatch(name) is not None


def _param_value(inner: str) -> str:
    """A parameter's value: its text less one newline after the open tag and one before the close."""
    inner = inner[1:] if inner.startswith("\n") else inner
    return inner[:-1] if inner.endswith("\n") else inner


def _user_messages(text: str) -> list[Tagged]:
    return tagged(text, "user_message".__eq__)


def _lead_in(text: str, message: Tagged, after: int) -> int:
    """Where Cline's lead-in to ``message`` starts (``New instructions for task continuation:``), or where the tag
    does: only the text since the previous message is read, so all messages cost one pass."""
    before = text[after : message.start].rstrip()
    before = before[:-1] if before.endswith(":") else before
    line = after + before.rfind("\n") + 1
    found = _NEW_MESSAGE.search(text, line, after + len(before))
    starts = [found.start()] if found else []
    if before.endswith(_CONTINUATION):
        starts.append(after + len(before) - len(_CONTINUATION))
    return min(starts, default=message.start)


def _answer_head(text: str) -> tuple[str, str, bool] | None:
    """(tool name or "", output, failed) when ``text`` opens Cline's answer to a call, else None."""
    head = _RESULT_HEAD.match(text)
    if head:
        body = text[head.end() :].lstrip("\n ")
        return head.group("name"), body, head.group("how") == "Error" or body.startswith(_FAILED)
    skipped = _NOT_RUN.match(text)
    if skipped:
        return skipped.group("name"), text, True
    if text.startswith(_DENIED):
        return "", text, True
    return None


def _split_details(text: str) -> tuple[str, str]:
    """(the text before Cline's ``<environment_details>`` report, the report)."""
    cut = text.find("<environment_details>")
    return (text, "") if cut < 0 else (text[:cut].rstrip(), text[cut:].strip())


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
            args = loads_or(text, None)
            if args is None:
                args = {"text": text}
            call_id = b.new_id()
            name = args.pop("tool", "tool") if isinstance(args, dict) else "tool"
            content = args.pop("content", "") if isinstance(args, dict) else ""
            b.tool_call(call_id, name, args)
            b.tool_result(call_id, as_text(content) or "ok")
    return b.result()
