"""Artifact extraction: what a run of messages says about files, commands and their outcomes, URLs and ids.

Summaries paraphrase; the exact strings an agent needs to carry on (a path, the failing command, the
ticket id, the last error) must survive compaction unchanged. Everything here is plain pattern matching
over the tool calls (in any of the shapes ``core/messages.py`` lists), their results and the authored text, so
the same messages always give the same ``Facts``. ``fold.py`` folds them group by group into the
working set the summary message ends with.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from ..core.blocks import ATTACHMENT_TYPES, TEXT_FIELDS
from ..core.messages import Message, block_text, is_user_turn, message_calls, parse_embedded_json
from .definitions import changed_names
from .mentions import first_commit, identifiers_in, urls_in
from .outcomes import body_text, call_results, decode_json_object, outcome_of
from .patches import listed_changes, patch_changes, search_hits
from .paths import is_path_value, join_path, looks_like_file
from .records import (
    DELETE,
    EDIT,
    KEY_MAX_CHARS,
    MOVE,
    NO_FACTS,
    READ,
    USE,
    WRITE,
    Call,
    CallOutcome,
    Definitions,
    Facts,
    FileAction,
    clip,
)
from .shell import CD_FAILED, PATCH_PROGRAMS, command_key, command_text, shell_files

__all__ = ["ATTACHMENT_CHARS", "Facts", "authored_text", "extract"]
"""``Facts``: the type ``extract`` returns (defined with the other records in ``records.py``)."""

# Shell-like tools are recognised by name fragments, so MCP-prefixed names (``mcp__x__bash``) count too.
_SHELL_NAME_PARTS = ("bash", "shell", "terminal", "exec", "run_command", "powershell")
# Outputs of these tools are file or page contents: error words in them are data, not failures.
_READ_NAME_PARTS = ("read", "view", "grep", "glob", "search", "fetch", "find", "list")
_PATH_KEYS = frozenset(
    {
        "path",
        "paths",
        "file",
        "files",
        "file_path",
        "filepath",
        "filename",
        "target_file",
        "notebook_path",
        "absolute_path",  # Gemini CLI's read_file until November 2025 (``file_path`` since)
    }
)
_MOVE_KEYS = (
    ("old_path", "new_path"),
    ("source", "destination"),
    ("src", "dst"),
    ("source_path", "destination_path"),
    ("from", "to"),
)
_WORKDIR_KEYS = ("cwd", "workdir", "working_dir", "working_directory", "directory")
_SHELL_WORKDIR_KEYS = (*_WORKDIR_KEYS, "dir_path")
"""Gemini CLI's ``run_shell_command`` runs in ``dir_path`` (``directory`` before November 2025); its other tools'
``dir_path`` is the folder they list or search, not where they run."""
_COMMAND_KEYS = ("command", "cmd")
_NEW_TEXT_KEYS = (
    "content",
    "contents",
    "file_text",
    "new_string",
    "new_str",
    "new_text",
    "text",
    "code",
    "insert_text",
)
_OLD_TEXT_KEYS = ("old_string", "old_str", "old_text")
_EDITOR_COMMANDS = {"view": READ, "create": WRITE, "str_replace": EDIT, "insert": EDIT, "undo_edit": EDIT}
"""``str_replace_based_edit_tool`` and its kin: one tool, the action named by its ``command`` argument."""
_GIT_HISTORY = re.compile(r"\bgit (?:log|rev-parse|show|reflog)\b")
_JSON_FIELD = re.compile(r'"(\w+)"\s*:\s*"((?:[^"\\]|\\.)*)(?:"|$)')


def extract(messages: list[Message]) -> Facts:
    """The facts of ``messages`` (calls paired with their results by id), in any of the tool-call shapes."""
    files: list[FileAction] = []
    outcomes: list[CallOutcome] = []
    urls: list[str] = []
    ids: list[str] = []
    workdirs: list[str] = []
    definitions: list[Definitions] = []
    waiting: dict[str, Call] = {}
    for message in messages:
        role = message.get("role")
        if is_user_turn(message) or role == "assistant":
            text = authored_text(message)
            if text:
                urls += urls_in(text)
                ids += identifiers_in(text, commits=role == "assistant")
        for call_id, name, raw in message_calls(message) if role == "assistant" else ():
            args = _parse_args(raw)
            call = _read_call(name, args, workdirs)
            for text in _strings(args):
                urls += urls_in(text)
                ids += identifiers_in(text, commits=False)
            if call_id and call_id not in waiting:
                waiting[call_id] = call
            else:
                files += call.files
                definitions += call.definitions
        for ref, body, flagged in call_results(message):
            body = decode_json_object(body)
            text = body_text(body)
            urls += urls_in(text)
            ids += identifiers_in(text, commits=True)
            answered = waiting.pop(ref, None)
            if answered is None:
                continue
            call = answered
            outcome = outcome_of(call, body, text, flagged)
            outcomes.append(outcome)
            if outcome.ok and call.command and _GIT_HISTORY.search(call.key):
                ids += first_commit(text)
            if outcome.ok:
                files += call.files
                definitions += call.definitions
                if call.search:
                    files += search_hits(text)
            else:  # a failed call read or changed nothing, but what a command that certainly ran wrote was written
                kept = call.certain if CD_FAILED.search(text) else call.certain | call.after_cd
                files += [f if n in kept else FileAction(USE, f.path) for n, f in enumerate(call.files)]
    for call in waiting.values():  # calls without a result (only in raw spans: a view drops them)
        files += call.files
        definitions += call.definitions
    if not (files or outcomes or urls or ids or workdirs or definitions):
        return NO_FACTS
    return Facts(tuple(files), tuple(outcomes), tuple(urls), tuple(ids), tuple(workdirs), tuple(definitions))


ATTACHMENT_CHARS = 300
"""How much of an attached document, file or search result a user or assistant turn's text shows (its label
and the opening of its text): the summary names the attachment without letting it crowd out the request."""


def authored_text(message: Message) -> str:
    """What a user or assistant wrote, leaving out tool traffic and hidden reasoning; attachments (a document,
    a file, a search result) are named with the opening of their text."""
    content = message.get("content")
    if isinstance(content, str):
        return content.strip()
    parts: list[str] = []
    for block in content or []:
        kind = block.get("type") if isinstance(block, dict) else None
        if isinstance(block, str) or kind in TEXT_FIELDS:
            parts.append(block_text(block))
        elif kind in ATTACHMENT_TYPES:
            parts.append(clip(block_text(block)[: ATTACHMENT_CHARS * 8], ATTACHMENT_CHARS))
    return "\n".join(parts).strip()


def _parse_args(raw: Any) -> Any:
    """Arguments as a dict when possible; broken JSON (e.g. a truncated stream) keeps its string fields."""
    if not isinstance(raw, str):
        return raw if raw is not None else {}
    try:
        return parse_embedded_json(raw)
    except ValueError:
        salvaged: dict[str, str] = {}
        for key, value in _JSON_FIELD.findall(raw):
            try:
                salvaged.setdefault(key, json.loads(f'"{value}"'))
            except ValueError:
                salvaged.setdefault(key, value)
        return salvaged or raw


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


@lru_cache(maxsize=1024)
def _name_kind(name: str) -> tuple[str, bool]:
    """``_tool_kind`` and whether the tool's output is read data: worked out once per name, since a session calls
    the same few tools thousands of times (a cold resume extracts every call of the history at once)."""
    return _tool_kind(name), any(part in name.lower() for part in _READ_NAME_PARTS)


def _tool_kind(name: str) -> str:
    """What a tool does, from its name (the part after an MCP ``server__`` prefix)."""
    lowered = name.lower().rsplit("__", 1)[-1]
    if any(part in lowered for part in _SHELL_NAME_PARTS):
        return "shell"
    if "move" in lowered or "rename" in lowered or lowered == "mv":
        return MOVE
    if "delete" in lowered or "remove" in lowered or lowered in ("rm", "unlink"):
        return DELETE
    if any(part in lowered for part in ("edit", "replace", "patch", "insert", "diff")):
        return EDIT
    if "write" in lowered or "create" in lowered or lowered == "touch":
        return WRITE
    if "grep" in lowered or "search" in lowered:
        return "search"
    if any(part in lowered for part in ("glob", "find", "list", "tree")) or lowered == "ls":
        return "list"
    if "read" in lowered or "view" in lowered or lowered == "cat":
        return READ
    return USE


def _read_call(name: str, args: Any, workdirs: list[str]) -> Call:
    kind, reader = _name_kind(name)
    if not isinstance(args, dict):
        return Call(clip(name, KEY_MAX_CHARS), False, reader, [])
    folders = _SHELL_WORKDIR_KEYS if kind == "shell" else _WORKDIR_KEYS
    base = next((v.strip() for k in folders if isinstance(v := args.get(k), str) and v.strip()), None)
    if base and base.startswith("/"):
        workdirs.append(posixpath.normpath(base))
    command = next((c for c in (command_text(args.get(k)) for k in _COMMAND_KEYS) if c), "")
    argv = args.get("command")
    if isinstance(argv, list) and len(argv) == 2 and str(argv[0]).rsplit("/", 1)[-1] in PATCH_PROGRAMS:
        patched, defined = patch_changes(str(argv[1]), base)  # Codex's ``["apply_patch", "*** Begin Patch…"]``
        key = clip(command_key(command), KEY_MAX_CHARS)
        return Call(key, True, False, patched, definitions=tuple(d for d in defined if d[1] or d[2]))
    if kind == "shell" and command:
        shell = shell_files(command, base, workdirs)
        found = tuple(d for d in shell.definitions if d[1] or d[2])
        key = clip(command_key(command), KEY_MAX_CHARS)
        return Call(
            key,
            True,
            shell.reader,
            shell.files,
            definitions=found,
            answer=shell.answer,
            certain=frozenset(shell.certain),
            after_cd=frozenset(shell.after_cd),
        )
    if kind != "shell" and isinstance(args.get("command"), str) and args["command"] in _EDITOR_COMMANDS:
        kind = _EDITOR_COMMANDS[args["command"]]
    files: list[FileAction] = []
    keys = _PATH_KEYS
    if kind == MOVE:
        for old_key, new_key in _MOVE_KEYS:
            old, new = args.get(old_key), args.get(new_key)
            if isinstance(old, str) and isinstance(new, str) and is_path_value(old) and is_path_value(new):
                files.append(FileAction(MOVE, join_path(base, old.strip()), join_path(base, new.strip())))
    else:
        keys = keys | {"old_path", "new_path"}
    paths = [p.strip() for key in sorted(keys.intersection(args)) for p in _strings(args[key])]
    if kind in ("search", "list"):
        paths = [p for p in paths if looks_like_file(p)]
    if kind != "list":
        action = READ if kind == "search" else kind if kind in (READ, WRITE, EDIT, DELETE) else USE
        files += [FileAction(action, join_path(base, p)) for p in paths if is_path_value(p)]
    files += listed_changes(args.get("changes"), base)
    target = next((p for p in paths if is_path_value(p)), "")
    changes: list[Definitions] = []
    if kind in (EDIT, WRITE):
        for text in _strings(args):
            if "\n" in text:
                patched, defined = patch_changes(text, base)
                files += patched
                changes += defined
        if target:
            changes.append(_edit_definitions(join_path(base, target), args))
    key = f"{name} {target}" if target else name
    search = kind == "search" and ("grep" in name.lower() or any(k in args for k in ("pattern", "regex")))
    found = tuple(c for c in changes if c[1] or c[2])
    return Call(clip(key, KEY_MAX_CHARS), False, reader, files, search, found)


def _edit_definitions(path: str, args: dict[str, Any]) -> Definitions:
    """What a write or edit call's new text defines for ``path``, and what the old text it replaces did."""
    new: list[str] = []
    old: list[str] = []
    for part in [args, *(e for e in args.get("edits") or () if isinstance(e, dict))]:
        new += [v for k in _NEW_TEXT_KEYS if isinstance(v := part.get(k), str)]
        old += [v for k in _OLD_TEXT_KEYS if isinstance(v := part.get(k), str)]
    return (path, *changed_names(path, new, old))
