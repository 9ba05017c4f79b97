"""Gemini CLI sessions, in the three forms it writes.

* ``Content[]`` (a ``trajectory.json`` or API history): ``[{"role": "user"|"model", "parts": [...]}]`` with
  ``text`` (``thought: true`` for thinking), ``functionCall {id, name, args}`` and
  ``functionResponse {id, name, response}`` parts. Converted to Amplifier blocks, as the bundled corpus is.
* Chat recordings (``~/.gemini/tmp/<project>/chats/session-*.json``): ``{"sessionId", "messages": [{"type":
  "user"|"gemini"|"info"|"error"|"warning", "content", "toolCalls": [{"id", "name", "args", "result",
  "status"}]}]}``. Current versions write ``session-*.jsonl`` instead (and migrate a resumed ``.json`` to it): a
  metadata line (``sessionId``, ``projectHash``), then each message record appended as it changes (a record whose
  ``id`` was seen replaces it in place: a reply gains its ``toolCalls`` and ``tokens`` that way), ``{"$rewindTo":
  id}`` dropping that message and all after it, and ``{"$set": {...}}`` updates (``messages`` replacing them all).
  Folded as the CLI folds them when it resumes, in one pass.
* ``--output-format stream-json``: JSONL events (in any order: a saved transcript may start anywhere) ``init``,
  ``message {role, content, delta}``, ``tool_use
  {tool_name, tool_id, parameters}``, ``tool_result {tool_id, status, output, error}`` and ``result``.

A call's ``id`` is optional in Gemini's API (gemini-cli makes one when it is missing): a call recorded without one
gets one here, unique in the file, and a response without one answers the first unanswered call of its name in the
turn before it (in stream-json, the first unanswered call), as the API pairs them.

A shell result's ``Exit Code: N`` line is the recorded exit status: it is kept so the working set shows it.
"""

from __future__ import annotations

import re
from collections import deque
from typing import Any

from ._common import Builder, Message, as_text

NAME = "gemini-cli"
LABEL = "Gemini CLI (Content[] trajectory, chat recording session-*.json / .jsonl, stream-json)"
_EXIT = re.compile(r"^Exit Code: (-?\d{1,9})\s*$", re.MULTILINE)


def detect(data: Any, kind: str) -> bool:
    if kind == "json" and isinstance(data, list) and data:
        return all(isinstance(e, dict) and e.get("role") in ("user", "model") and "parts" in e for e in data[:20])
    if kind == "json" and isinstance(data, dict) and isinstance(data.get("messages"), list):
        msgs = [m for m in data["messages"] if isinstance(m, dict)]
        return bool(msgs) and all(m.get("type") in ("user", "gemini", "info", "error", "warning") for m in msgs[:20])
    return claims(data, kind) or _is_chat_jsonl(data, kind)


_CHAT_TYPES = ("user", "gemini", "info", "error", "warning")


def _is_chat_jsonl(data: Any, kind: str) -> bool:
    """A ``session-*.jsonl`` chat recording: every record its metadata, a ``$set`` / ``$rewindTo``, or a message
    with an ``id`` and a chat ``type``; and at least one message."""
    if kind != "jsonl" or not data or not all(isinstance(r, dict) for r in data):
        return False
    messages = [r for r in data if isinstance(r.get("id"), str)]
    others = [r for r in data if not isinstance(r.get("id"), str)]
    return (
        bool(messages)
        and all(r.get("type") in _CHAT_TYPES for r in messages)
        and all("sessionId" in r or "$set" in r or "$rewindTo" in r for r in others)
    )


def _folded(records: list[Any]) -> list[Any]:
    """The messages a ``session-*.jsonl`` holds once its updates, rewinds and ``$set`` lines are applied. Each id
    enters and leaves the order at most once per appearance, so the fold is linear in the records."""
    order: list[str] = []
    position: dict[str, int] = {}
    latest: dict[str, Any] = {}

    def add(record: dict[str, Any]) -> None:
        ident = record["id"]
        if ident not in position:
            position[ident] = len(order)
            order.append(ident)
        latest[ident] = record

    for r in records:
        if isinstance(r.get("$rewindTo"), str):
            cut = position.get(r["$rewindTo"], 0)  # an unknown id: the CLI drops everything
            for ident in order[cut:]:
                del position[ident], latest[ident]
            del order[cut:]
        elif isinstance(r.get("$set"), dict) and isinstance(r["$set"].get("messages"), list):
            order.clear()
            position.clear()
            latest.clear()
            for m in r["$set"]["messages"]:
                if isinstance(m, dict) and isinstance(m.get("id"), str):
                    add(m)
        elif isinstance(r.get("id"), str):
            add(r)
    return [latest[ident] for ident in order]


_STREAM_TYPES = {"init", "message", "tool_use", "tool_result", "result", "error"}


def claims(data: Any, kind: str) -> bool:
    """stream-json, whatever record comes first (a transcript cut from a longer run starts with a ``message``):
    every record an event of its kinds and at least one a message with a role. Claimed before our own format is
    tried, since its ``message`` events carry a ``role`` and would otherwise read as messages, the rest refused."""
    if kind != "jsonl" or not data:
        return False
    return all(isinstance(r, dict) and r.get("type") in _STREAM_TYPES for r in data) and any(
        r.get("type") == "message" and r.get("role") in ("user", "assistant") for r in data
    )


def convert(data: Any, kind: str) -> tuple[list[Message], None]:
    if kind == "jsonl" and not claims(data, kind):
        return _recording({"messages": _folded(data)}), None
    if kind == "jsonl":
        return _stream_json(data), None
    if isinstance(data, dict):
        return _recording(data), None
    return _contents(data), None


def exit_code(output: Any) -> int | None:
    """The ``Exit Code: N`` a Gemini shell result records, if any."""
    found = _EXIT.findall(as_text(output))
    return int(found[-1]) if found else None


def _flush_user_texts(texts: list[str], out: list[Message]) -> None:
    """Emit pending user text parts as one user message (a string when there is only one part)."""
    if texts:
        content: Any = texts[0] if len(texts) == 1 else [{"type": "text", "text": t} for t in texts]
        out.append({"role": "user", "content": content})
        texts.clear()


class _CallIds:
    """Ids for calls recorded without one, and the call each id-less response answers."""

    def __init__(self, taken: set[str]) -> None:
        self._taken = taken
        self._count = 0
        self._unanswered: dict[str, deque[str]] = {}

    def new_turn(self) -> None:
        """A model turn's calls are answered in the turn after it: older id-less calls are no longer waited on."""
        self._unanswered.clear()

    def of_call(self, call: dict[str, Any], name: str) -> str:
        recorded = call.get("id")
        if recorded is not None and recorded != "":
            return str(recorded)
        made = self._make(name)
        self._unanswered.setdefault(name, deque()).append(made)
        return made

    def of_response(self, response: dict[str, Any]) -> str | None:
        recorded = response.get("id")
        if recorded is not None and recorded != "":
            return str(recorded)
        waiting = self._unanswered.get(str(response.get("name") or "tool"))
        return waiting.popleft() if waiting else None

    def _make(self, name: str) -> str:
        while True:  # gemini-cli's own ids are NAME-TIME-RANDOM; these are deterministic, so resumes match
            self._count += 1
            made = f"{name}-{self._count}"
            if made not in self._taken:
                self._taken.add(made)
                return made


def _recorded_ids(contents: list[Any]) -> set[str]:
    """Every call id the history records, so a made one never repeats it."""
    found: set[str] = set()
    for entry in contents:
        for part in entry.get("parts") or []:
            fc = part.get("functionCall") if isinstance(part, dict) else None
            if isinstance(fc, dict) and fc.get("id") is not None:
                found.add(str(fc["id"]))
    return found


def _contents(contents: list[Any]) -> list[Message]:
    out: list[Message] = []
    called: set[str] = set()
    ids = _CallIds(_recorded_ids(contents))
    for entry in contents:
        role = entry.get("role")
        parts = entry.get("parts") or []
        if role == "model":
            ids.new_turn()
            blocks: list[dict[str, Any]] = []
            for part in parts:
                if "functionCall" in part:
                    fc = part["functionCall"]
                    name = str(fc.get("name") or "tool")
                    call_id = ids.of_call(fc, name)
                    called.add(call_id)
                    blocks.append({"type": "tool_call", "id": call_id, "name": name, "input": fc.get("args", {})})
                elif part.get("thought"):
                    blocks.append({"type": "thinking", "thinking": part.get("text", "")})
                elif "text" in part:
                    blocks.append({"type": "text", "text": part["text"]})
            out.append({"role": "assistant", "content": blocks})
            continue
        texts: list[str] = []
        for part in parts:
            if "functionResponse" in part:
                _flush_user_texts(texts, out)
                fr = part["functionResponse"]
                answers = ids.of_response(fr)
                if answers not in called:
                    continue  # a result whose call is not in the log
                response = fr.get("response")
                output = response["output"] if isinstance(response, dict) and "output" in response else response
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": answers,
                        "content": [{"type": "tool_result", "tool_call_id": answers, "output": output}],
                    }
                )
            elif "text" in part:
                texts.append(part["text"])
        _flush_user_texts(texts, out)
    return out


def _recording(data: dict[str, Any]) -> list[Message]:
    b = Builder()
    for m in data["messages"]:
        if not isinstance(m, dict):
            continue
        kind = m.get("type")
        if kind == "user":
            b.text("user", m.get("content"))
        elif kind == "gemini":
            b.text("assistant", m.get("content"))
            results = []
            for tc in m.get("toolCalls") or []:
                if not isinstance(tc, dict):
                    continue
                call_id = str(tc.get("id") or b.new_id())
                b.tool_call(call_id, tc.get("name"), tc.get("args"))
                results.append((call_id, tc))
            for call_id, tc in results:
                output = _recorded_output(tc.get("result"))
                status = tc.get("status")
                b.tool_result(call_id, output, exit_code(output), None if status is None else status != "success")
    return b.result()


def _recorded_output(result: Any) -> Any:
    """The text of a recorded ``result`` (a list of ``functionResponse`` parts, or anything else)."""
    if isinstance(result, list):
        texts = []
        for part in result:
            fr = part.get("functionResponse") if isinstance(part, dict) else None
            if isinstance(fr, dict):
                response = fr.get("response")
                texts.append(as_text(response.get("output", response) if isinstance(response, dict) else response))
            else:
                texts.append(as_text(part))
        return "\n".join(texts)
    return result


def _stream_json(events: list[Any]) -> list[Message]:
    b = Builder()
    unanswered: deque[str] = deque()  # calls recorded without a tool_id, in order: a result without one answers
    for e in events:
        if not isinstance(e, dict):
            continue
        kind = e.get("type")
        if kind == "message" and e.get("role") in ("user", "assistant"):
            b.text(
                e["role"], e.get("content"), "" if e.get("delta") else "\n\n"
            )  # deltas of one reply join into one message
        elif kind == "tool_use":
            call_id = e.get("tool_id")
            if not call_id:
                call_id = b.new_id()
                unanswered.append(call_id)
            b.tool_call(str(call_id), e.get("tool_name"), e.get("parameters"))
        elif kind == "tool_result":
            output = e.get("output")
            if output is None and e.get("error") is not None:
                output = e["error"]
            status = e.get("status")
            answers = e.get("tool_id") or (unanswered.popleft() if unanswered else None)
            b.tool_result(str(answers), output, exit_code(output), None if status is None else status != "success")
    return b.result()
