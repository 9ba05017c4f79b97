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
import shlex
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..core.blocks import ATTACHMENT_TYPES, TEXT_FIELDS
from ..core.messages import RESULT_BLOCK_TYPE, Message, block_text, is_user_turn, message_calls, parse_embedded_json
from .definitions import changed_names

ERROR_MAX_CHARS = 200
KEY_MAX_CHARS = 200
"""Longest command or tool key kept (a one-line command is rarely longer; a script pasted inline is)."""
HITS_PER_SEARCH = 50
"""Files a single search result may add (a search listing thousands of files adds its first ones)."""

WRITE, EDIT, READ, USE, DELETE, MOVE = "write", "edit", "read", "use", "delete", "move"
"""File actions: ``write`` creates or overwrites, ``use`` names a file in a command (``git add``, ``pytest``)."""

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
_SHELLS = frozenset({"bash", "sh", "zsh", "/bin/bash", "/bin/sh", "/bin/zsh", "/usr/bin/bash"})
_NOT_FILES = frozenset({".", "..", "/", "~", "./", "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin"})
# Bare names (no slash) count as files only with one of these extensions, so ``foo.bar`` modules
# and ``example.com`` hosts stay out.
# fmt: off
_FILE_EXTENSIONS = frozenset({
    "py", "pyi", "ipynb", "js", "jsx", "ts", "tsx", "mjs", "cjs", "json", "jsonl", "yaml", "yml",
    "toml", "ini", "cfg", "conf", "env", "lock", "txt", "md", "rst", "csv", "tsv", "html", "htm", "css",
    "scss", "xml", "sql", "sh", "bash", "zsh", "ps1", "go", "rs", "java", "kt", "scala", "c", "h", "cc",
    "cpp", "hpp", "cs", "rb", "php", "swift", "lua", "r", "log", "patch", "diff", "proto", "graphql",
    "tf", "dockerfile", "gradle", "mk", "pem", "ps", "svg", "png", "jpg", "jpeg", "gif", "pdf", "zip",
    "gz", "tar", "ex", "exs", "heex", "eex", "erl", "hs", "ml", "vue", "svelte", "dart", "lockb",
})
# Commands whose output is what they read: error words in it are data (unless the command itself failed).
_READERS = frozenset({
    "cat", "head", "tail", "less", "more", "bat", "nl", "wc", "grep", "egrep", "fgrep", "rg", "ag", "ack",
    "sed", "awk", "cut", "sort", "uniq", "diff", "cmp", "file", "stat", "ls", "tree", "find", "pwd", "cd",
    "echo", "printf", "jq", "yq", "xxd", "od", "strings", "column", "tr", "true",
    "Get-Content", "gc", "type", "Select-String", "Get-ChildItem", "dir",
})
# fmt: on
_GIT_READERS = frozenset({"show", "log", "diff", "blame", "grep", "status"})
# Programs whose operands are files whatever their names (``vim LICENSE``, ``cat src/main``, ``cp .env.example
# .env``); with ``-r`` / ``-R`` an operand of cp, rm, chmod may be a folder, so the strict test applies then.
# fmt: off
_FILE_PROGRAMS = frozenset({
    "cat", "head", "tail", "less", "more", "bat", "nl", "wc", "vim", "vi", "nvim", "nano", "emacs", "code", "touch",
    "tee", "cp", "mv", "rm", "unlink", "sed", "perl", "source", "chmod", "dos2unix", "git add", "git rm", "git mv",
})
# Files people name without an extension; bare names count as files only with one of the extensions below or
# as one of these (or a dotfile, for the programs above).
_BARE_FILES = frozenset({
    "Dockerfile", "Containerfile", "Makefile", "GNUmakefile", "makefile", "LICENSE", "LICENCE", "COPYING", "NOTICE",
    "README", "CHANGELOG", "AUTHORS", "CODEOWNERS", "Procfile", "Gemfile", "Rakefile", "Vagrantfile",
    "Jenkinsfile", "Justfile", "justfile", "Brewfile", "Pipfile", "Caddyfile", "Earthfile", "Tiltfile", "VERSION",
})
# fmt: on
_DOTFILE = re.compile(r"^\.[A-Za-z0-9_][\w.-]*$")
_NOT_DOTFILES = frozenset({".git", ".github", ".venv", ".vscode", ".idea", ".cache", ".next", ".tox", ".nuxt"})
_REV_RANGE = re.compile(r"[^/.]\.{2,3}[^/.]")
"""``origin/main...HEAD``, ``a..b``: git revision ranges, not paths."""
_SEARCHERS = frozenset({"grep", "egrep", "fgrep", "rg", "ag", "ack", "git grep"})
_COMMAND_PREFIXES = frozenset({"sudo", "time", "nohup", "env", "command", "exec"})
_SEPARATORS = frozenset({"&&", "||", ";", "|", "&", ";;", "|&", "(", ")"})
_PATH_TOKEN = re.compile(r"^(?:[A-Za-z]:)?[\w.~+@/\\-]+$")  # a Windows path keeps its backslashes
_EXTENSION = re.compile(r"\.([A-Za-z][A-Za-z0-9]{0,9})$")
_LINE_REF = re.compile(r"(?<=\.\w)(?::\d+){1,2}$|(?<=\w):\d+(?::\d+)?$")
_ASSIGNMENT = re.compile(r"^\w+=")
_OUTPUT_WINDOW = re.compile(r"(?:\s+2>&1)?\s*\|\s*(?:head|tail)(?:\s+(?:-n\s*\+?\d+|-\d+|-c\s*\d+|--lines=\d+))*\s*$")
"""A trailing ``| head -N`` / ``| tail -N`` (after an optional ``2>&1``): which part of the output was shown."""
_OUTPUT_WINDOWS = 4
"""Most trailing windows taken off one command: each pass scans the whole command, so a command of thousands
of ``| head`` would otherwise cost a pass per window (quadratic)."""
_GIT_HISTORY = re.compile(r"\bgit (?:log|rev-parse|show|reflog)\b")
_LEADING_SHA = re.compile(r"([0-9a-f]{7,40})(?:\s|$)")
_FIND_PATTERNS = frozenset({"-name", "-iname", "-path", "-ipath", "-wholename", "-regex", "-iregex", "-newer"})
"""``find`` options whose value is a pattern (or a reference file), not a file the command acts on."""
_PATCH_HEADER = re.compile(r"^\*\*\* (Add|Update|Delete) File: (\S+)|^\*\*\* Move to: (\S+)|^(---|\+\+\+) (\S+)")
_URL = re.compile(r"https?://[^\s<>\"'`\\)\]}]+")
_URL_TRAILING = ".,;:!?*"
_JSON_FIELD = re.compile(r'"(\w+)"\s*:\s*"((?:[^"\\]|\\.)*)(?:"|$)')

_TICKET = re.compile(r"(?<![\w/.-])([A-Z][A-Z0-9]{1,9})-([1-9]\d{0,6})(?![\w-])")
# fmt: off
_TICKET_NOT = frozenset({
    "UTF", "SHA", "ISO", "PEP", "GPT", "RFC", "AES", "RSA", "MD", "HTTP", "TLS", "SSL", "IPV", "CP",
    "WIN", "ECMA", "ES", "HS", "RS", "PS", "LATIN", "KOI", "COVID", "DDR", "USB",
})
# fmt: on
_TICKET_HINT = re.compile(r"[A-Z0-9]-[1-9]")
_CVE = re.compile(r"(?<![\w-])CVE-\d{4}-\d{4,7}(?![\w-])")
# Beads-style ids (``spotter-a0y``, ``bd-a3f8e9.1``): the suffix must mix letters and digits,
# which keeps ordinary hyphenated words (``pre-commit``) out.
_SHORT_ID_SUFFIX = re.compile(r"-(?=[a-z0-9]*\d)(?=[a-z0-9]*[a-z])[a-z0-9]{3,8}(?:\.\d+)*(?![\w-]|\.\w)")
"""A beads id from its hyphen on (the whole id: a letter, 1-15 more letters or digits, the hyphen, then this, with
no path or word character before it). A pattern led by a literal is searched for that character, where one led
by a class is tried at every position of a long output: ``_short_ids`` finds the head going back."""
_SHORT_ID_HEAD = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_PR = re.compile(r"(?i:\bPR\b|\bpull request\b)\s*#(\d+)\b")
_COMMIT = re.compile(
    r"\b(?i:commit(?:ted)?)\b(?:\s+(?i:as|to|id|hash|sha))?[\s:=#]+([0-9a-f]{7,40})\b"
    r"|^\[[^\]\s]+(?: \([^)\n]*\))? ([0-9a-f]{7,40})\]",
    re.MULTILINE,
)

_CANNOT_START_LINE = (
    r"^\S+: (?:No module named \S+|can't open file .*|(?:line \d+: )?\S+: command not found|command not found: \S+)$"
)
"""What a shell or Python prints when a command cannot even start (``python: No module named pytest``,
``bash: line 1: tree: command not found``): the exit status often hides it (``cmd 2>&1 | tail -50`` exits
with tail's), so a recorded exit 0 stands and the line is kept in the call's label."""
_CANNOT_START = re.compile(_CANNOT_START_LINE, re.MULTILINE)
_FAILURE_PARTS = (
    (("Traceback (most recent call last)",), re.compile(r"Traceback \(most recent call last\)")),
    (("rror:",), re.compile(r"(?:\b|(?<=[a-z]))[Ee]rror:")),
    (("ERROR:",), re.compile("ERROR:")),
    (("FAILED",), re.compile(r"\bFAILED\b")),
    (("fatal:",), re.compile(r"\bfatal:")),
    ((" fail",), re.compile(r"\b[1-9]\d* (?:failed|failures?)\b")),
    (("No module named", "open file", "not found"), _CANNOT_START),
)
"""The kinds of failure line, each with substrings all its lines contain: an output is searched only for the
kinds whose substrings it holds (most hold none), and never with one pattern of every kind tried at each of its
characters."""
_PASSED = re.compile(r"\b\d+ passed\b|\b0 failures\b|^OK\b|\ball tests passed\b", re.IGNORECASE | re.MULTILINE)
_EXIT_CODE = re.compile(
    r"(?i)\b(?:exit(?:ed with)?[ _]?(?:code|status)|return[ _]?code|returncode)\b[\"']?\s*+(?:[:=>]\s*+)?"
    r"(-?\d{1,9})(?!\d)"
)
"""The runs of blanks are possessive: two optional runs around an optional ``:`` tried every split of a long
run of spaces against each other (16,000 spaces after "exit code" took seconds)."""
_EXCEPTION_LINE = re.compile(
    r"^(?:E\s+|\*\* \()?(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure)\b(?:\)? .*|:.*)?$"
)
_FAILED_LINE = re.compile(r"\bFAILED\b")
_FAILURE_COUNT = re.compile(r"\b[1-9]\d* (?:failed|failures?)\b")
_ERROR_LINE = re.compile(r"(?:\b|(?<=[a-z]))(?:[Ee]rror|ERROR|fatal)\b[:!]")
_TAG = re.compile(r"</?[\w-]+>")
_OUTPUT_KEYS = ("error", "message", "stderr", "stdout", "output", "content", "result")
_EXIT_KEYS = ("returncode", "return_code", "exit_code", "exitCode")


class FileAction(NamedTuple):
    """``action`` on ``path`` (as written, joined to the folder the call ran in); a move names its ``target``.

    Facts are named tuples: tens of thousands are made when a long session is resumed (a frozen dataclass costs a
    call per field to build), and a tuple of strings is one the garbage collector stops tracking."""

    action: str
    path: str
    target: str = ""


class CallOutcome(NamedTuple):
    """How one tool call ended. ``key`` is the one-line command for shell calls, else the tool and its path."""

    key: str
    command: bool
    ok: bool
    label: str
    """``passed`` (a test run said so), ``ok``, the answer an exit 1 gives (``no match`` of a search, ``differs``
    of diff or cmp, ``false`` of test), ``exit 0, printed: …`` (an error a successful call printed), ``failed``
    or ``failed (exit N)`` (any other non-zero status, a read's too: ``cat`` of a missing file failed)."""
    error: str = ""
    """The most telling line of a failure."""
    reads: bool = False
    """The call only read (a file viewer, ``cat``, ``grep``): what it read is in the files."""


Definitions = tuple[str, tuple[str, ...], tuple[str, ...]]
"""(path, names written, names removed) of one change, names in the order the text defines them."""


class Facts(NamedTuple):
    """Everything one run of messages (usually one group) contributes to the working set, in order."""

    files: tuple[FileAction, ...] = ()
    outcomes: tuple[CallOutcome, ...] = ()
    urls: tuple[str, ...] = ()
    identifiers: tuple[str, ...] = ()
    workdirs: tuple[str, ...] = ()
    """Absolute folders commands ran in (``cd /x && ...``, a ``cwd`` argument): evidence of the workspace root."""
    definitions: tuple[Definitions, ...] = ()
    """Per successful write or edit of a code file: what it defined and what it removed (``definitions.py``)."""


NO_FACTS = Facts()


@dataclass(slots=True)
class _Call:
    key: str
    command: bool
    reader: bool
    files: list[FileAction]
    search: bool = False
    definitions: tuple[Definitions, ...] = ()
    answer: str = ""
    """What the command line's exit status 1 answers (``no match``, ``differs``, ``false``), or "" when 1 is a
    failure like any other non-zero status."""
    certain: frozenset[int] = frozenset()
    """Indexes in ``files`` of the actions that took effect even if the line failed: the redirects (and ``tee`` /
    ``touch``) of commands that certainly ran (``_shell_files``)."""
    after_cd: frozenset[int] = frozenset()
    """Likewise, of commands that ran unless a ``cd`` before them failed (``cd /repo && cat > x.py <<EOF``)."""


def clip(text: str, limit: int) -> str:
    """One line of at most ``limit`` characters, so one huge item cannot crowd out the rest."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: max(limit - 1, 0)].rstrip() + "…"


def extract(messages: list[Message]) -> Facts:
    """The facts of ``messages`` (calls paired with their results by id), in any of the tool-call shapes."""
    files: list[FileAction] = []
    outcomes: list[CallOutcome] = []
    urls: list[str] = []
    ids: list[str] = []
    workdirs: list[str] = []
    definitions: list[Definitions] = []
    waiting: dict[str, _Call] = {}
    for message in messages:
        role = message.get("role")
        if is_user_turn(message) or role == "assistant":
            text = authored_text(message)
            if text:
                urls += _urls(text)
                ids += _identifiers(text, commits=role == "assistant")
        for call_id, name, raw in message_calls(message) if role == "assistant" else ():
            args = _parse_args(raw)
            call = _read_call(name, args, workdirs)
            for text in _strings(args):
                urls += _urls(text)
                ids += _identifiers(text, commits=False)
            if call_id and call_id not in waiting:
                waiting[call_id] = call
            else:
                files += call.files
                definitions += call.definitions
        for ref, body, flagged in _results(message):
            body = _decode_json_object(body)
            text = _body_text(body)
            urls += _urls(text)
            ids += _identifiers(text, commits=True)
            answered = waiting.pop(ref, None)
            if answered is None:
                continue
            call = answered
            outcome = _outcome(call, body, text, flagged)
            outcomes.append(outcome)
            if outcome.ok and call.command and _GIT_HISTORY.search(call.key):
                ids += _first_commit(text)
            if outcome.ok:
                files += call.files
                definitions += call.definitions
                if call.search:
                    files += _search_hits(text)
            else:  # a failed call read or changed nothing, but what a command that certainly ran wrote was written
                kept = call.certain if _CD_FAILED.search(text) else call.certain | call.after_cd
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


# ---------------------------------------------------------------------------------------------- calls


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


def _read_call(name: str, args: Any, workdirs: list[str]) -> _Call:
    kind = _tool_kind(name)
    reader = any(part in name.lower() for part in _READ_NAME_PARTS)
    if not isinstance(args, dict):
        return _Call(clip(name, KEY_MAX_CHARS), False, reader, [])
    folders = _SHELL_WORKDIR_KEYS if kind == "shell" else _WORKDIR_KEYS
    base = next((v.strip() for k in folders if isinstance(v := args.get(k), str) and v.strip()), None)
    if base and base.startswith("/"):
        workdirs.append(posixpath.normpath(base))
    command = next((c for c in (_command_text(args.get(k)) for k in _COMMAND_KEYS) if c), "")
    argv = args.get("command")
    if isinstance(argv, list) and len(argv) == 2 and str(argv[0]).rsplit("/", 1)[-1] in _PATCH_PROGRAMS:
        patched, defined = _patch(str(argv[1]), base)  # Codex's ``["apply_patch", "*** Begin Patch…"]``
        key = clip(_command_key(command), KEY_MAX_CHARS)
        return _Call(key, True, False, patched, definitions=tuple(d for d in defined if d[1] or d[2]))
    if kind == "shell" and command:
        shell = _shell_files(command, base, workdirs)
        found = tuple(d for d in shell.definitions if d[1] or d[2])
        key = clip(_command_key(command), KEY_MAX_CHARS)
        return _Call(
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
            if isinstance(old, str) and isinstance(new, str) and _is_path_value(old) and _is_path_value(new):
                files.append(FileAction(MOVE, _join(base, old.strip()), _join(base, new.strip())))
    else:
        keys = keys | {"old_path", "new_path"}
    paths = [p.strip() for key in sorted(keys.intersection(args)) for p in _strings(args[key])]
    if kind in ("search", "list"):
        paths = [p for p in paths if _looks_like_file(p)]
    if kind != "list":
        action = READ if kind == "search" else kind if kind in (READ, WRITE, EDIT, DELETE) else USE
        files += [FileAction(action, _join(base, p)) for p in paths if _is_path_value(p)]
    files += _listed_changes(args.get("changes"), base)
    target = next((p for p in paths if _is_path_value(p)), "")
    changes: list[Definitions] = []
    if kind in (EDIT, WRITE):
        for text in _strings(args):
            if "\n" in text:
                patched, defined = _patch(text, base)
                files += patched
                changes += defined
        if target:
            changes.append(_edit_definitions(_join(base, target), args))
    key = f"{name} {target}" if target else name
    search = kind == "search" and ("grep" in name.lower() or any(k in args for k in ("pattern", "regex")))
    found = tuple(c for c in changes if c[1] or c[2])
    return _Call(clip(key, KEY_MAX_CHARS), False, reader, files, search, found)


def _edit_definitions(path: str, args: dict[str, Any]) -> Definitions:
    """What a write or edit call's new text defines for ``path``, and what the old text it replaces did."""
    new: list[str] = []
    old: list[str] = []
    for part in [args, *(e for e in args.get("edits") or () if isinstance(e, dict))]:
        new += [v for k in _NEW_TEXT_KEYS if isinstance(v := part.get(k), str)]
        old += [v for k in _OLD_TEXT_KEYS if isinstance(v := part.get(k), str)]
    return (path, *changed_names(path, new, old))


def _is_path_value(value: str) -> bool:
    value = value.strip()
    return bool(value) and value not in _NOT_FILES and "\n" not in value and len(value) <= 300


def _join(base: str | None, path: str) -> str:
    """``path`` as seen from the folder the call ran in (kept relative when that folder is unknown)."""
    if path.startswith(("/", "~")) or not base:
        return posixpath.normpath(path) if path.startswith("/") else path
    return posixpath.normpath(posixpath.join(base, path))


def _command_text(value: Any) -> str:
    """A shell command as one string; argv lists like ``["bash", "-lc", "cmd"]`` give their script."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        if len(value) >= 3 and value[0] in _SHELLS and value[1] in ("-c", "-lc", "-ic"):
            script: str = value[2]
            return script.strip()
        return shlex.join(value)
    return ""


def _command_key(command: str) -> str:
    """The command as the working set keys it: on one line, without the output window it was piped through.

    ``pytest -x 2>&1 | tail -50`` and ``pytest -x | head -100`` run the same tests and only show another part
    of the output: one command with a run count, a latest outcome and whether a later run passed. A heredoc's
    body (file content, not commands) is left out: its first line is kept, then ``…``.
    """
    lines = command.splitlines()
    heredoc = next((i for i, line in enumerate(lines) if _HEREDOC.search(_heredoc_line(line))), None)
    if heredoc is None:
        key = " ".join(command.split())
    else:
        key = " ".join("\n".join(lines[: heredoc + 1]).split()) + (" …" if heredoc + 1 < len(lines) else "")
    for _ in range(_OUTPUT_WINDOWS):
        trimmed = _OUTPUT_WINDOW.sub("", key).rstrip()
        if trimmed == key or not trimmed:
            return key
        key = trimmed
    return key


_PATH_BACKSLASH = re.compile(r"(?<=[\w.:~-])\\(?=[\w.~-])")
"""A backslash between path characters (``sessions\\bugfix-1.json``, ``C:\\src``) is a Windows separator,
not a shell escape: the lexer would drop it."""
_HEREDOC = re.compile(r"(?<!<)<<(-?)(?!<)\s*(['\"]?)([\w.-]+)\2")
"""A heredoc operator and its delimiter (a ``<<<`` here-string has no body)."""
_ARITHMETIC = re.compile(r"\(\(|\)\)|<")


def _heredoc_line(line: str) -> str:
    """``line`` with every ``<`` that cannot open a heredoc replaced by its stand-in (``_word`` puts it back): inside
    quotes or a comment, escaped, or in arithmetic (``python3 -c "print(1 << 20)"``, ``echo $((1 << 20))``). Read
    as a heredoc, such a ``<<`` took every later line of the command for its body, and the ``git rm`` there with it.
    One pass over the line's quoting, then one over each unquoted part."""
    if "<<" not in line:
        return line
    out: list[str] = []
    depth = 0  # how many ``((`` are open
    for part in (m.group(0) for m in _QUOTING.finditer(line)):
        if part[:1] in ("'", '"', "\\", "#"):
            out.append(part.replace("<", _OPERATOR_STAND_INS["<"]))
            continue
        at = 0
        for m in _ARITHMETIC.finditer(part):
            token = m.group(0)
            if token == "((":
                depth += 1
            elif token == "))":
                depth = max(depth - 1, 0)
            elif depth:
                out.append(part[at : m.start()] + _OPERATOR_STAND_INS["<"])
                at = m.end()
        out.append(part[at:])
    return "".join(out)


def _heredoc_bodies(command: str) -> tuple[str, list[str]]:
    """The command with every heredoc's body left out, so the commands after each heredoc are still seen, and the
    bodies in the order their ``<<`` appear (what ``apply_patch <<'PATCH'`` or ``git apply <<EOF`` is fed). A
    ``<<`` that opens no heredoc (``_heredoc_line``) is kept masked, so the lexer does not read it as one either."""
    lines = command.splitlines()
    kept: list[str] = []
    bodies: list[str] = []
    i = 0
    while i < len(lines):
        line = _heredoc_line(lines[i])
        kept.append(line)
        i += 1
        for dash, _, delimiter in _HEREDOC.findall(line):
            first = i
            while i < len(lines) and (lines[i].lstrip("\t") if dash else lines[i]).strip() != delimiter:
                i += 1
            bodies.append("\n".join(lines[first:i]))
            i += 1  # the delimiter line
    return "\n".join(kept), bodies


SHELL_SCAN_CHARS = 20_000
"""The head of a shell line (heredoc bodies already left out) that is tokenized: ``shlex`` grows each token a
character at a time, which is super-linear in a token's length, and a model may write a command of any size."""


_PLAIN_WORDS = re.compile(r"[();<>|&]+|[^ \t\r\n();<>|&]+")
"""The lexer's tokens of a line without quotes, escapes or comments: runs of its punctuation, and runs of
anything else but whitespace. Most shell lines are such, and ``shlex`` reads a character at a time in Python."""
_LEXED_ONLY = frozenset("'\"\\#")
_QUOTING = re.compile(r"'[^']*'?|\"(?:[^\"\\]|\\.)*\"?|\\.?|(?P<comment>(?<![^\s;&|()])#[^\n]*)|[^'\"\\#]+|#")
"""A shell line's quoted strings, escapes, comments (a ``#`` that starts a word, to the end of its line) and the
rest, in one left-to-right pass (the alternatives start with different characters, so nothing is tried twice)."""
_OPERATOR_STAND_INS = {c: chr(0xE000 + n) for n, c in enumerate(";&|()<>")}
_MASK_OPERATORS = str.maketrans(_OPERATOR_STAND_INS)
_UNMASK_OPERATORS = str.maketrans({v: k for k, v in _OPERATOR_STAND_INS.items()})


def _for_lexer(script: str) -> str:
    """``script`` as the lexer reads it: comments left out, and the operator characters inside quotes replaced by
    private-use stand-ins. The lexer drops the quotes, so a quoted ``";;"`` or ``">"`` (``grep -n ";;" a.py``) would
    read as a separator or a redirect: the words are read back with ``_word`` once the operators are told apart.
    The lexer is given the lines joined by `` ; ``, so a comment it read itself would run to the end of the command
    (``# install`` on the first line took every command after it)."""
    return "".join(
        "" if m.lastgroup == "comment" else part.translate(_MASK_OPERATORS) if part[:1] in ("'", '"') else part
        for m in _QUOTING.finditer(script)
        for part in (m.group(0),)
    )


def _word(token: str) -> str:
    """A token as the command sees it: quoted operator characters back in place."""
    return token.translate(_UNMASK_OPERATORS)


def _shell_tokens(script: str) -> list[str]:
    script = script[:SHELL_SCAN_CHARS]
    if _LEXED_ONLY.isdisjoint(script):
        return _PLAIN_WORDS.findall(script.replace("\n", " ; "))
    script = _PATH_BACKSLASH.sub(r"\\\\", script)
    lexer = shlex.shlex(_for_lexer(script).replace("\n", " ; "), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""  # comments are already left out; a ``#`` inside a word (``a#b``) is part of it
    try:
        return list(lexer)
    except ValueError:  # an unbalanced quote (its operators unmasked): plain words are still worth reading
        return script.replace("\n", " ; ").split()


_NESTED_SHELLS = 2
"""How deep ``bash -lc "…"`` scripts inside scripts are read (each level lexes its script again)."""
_PATCH_PROGRAMS = frozenset({"apply_patch", "applypatch", "git apply", "patch"})
"""Programs fed a patch (Codex's ``apply_patch`` envelope or a unified diff) on their standard input."""
_ANSWERS = {
    **dict.fromkeys(_SEARCHERS, "no match"),
    **dict.fromkeys(("diff", "cmp", "git diff", "colordiff"), "differs"),
    **dict.fromkeys(("test", "[", "[["), "false"),
}
"""Programs whose exit status 1 is an answer, not a failure: a search found nothing, the files differ, the
condition is false (2 and up are their errors)."""


@dataclass(slots=True)
class _ShellRead:
    """What a shell line does to files, whether it only reads, what its exit status 1 answers, and what the
    patches it applies define."""

    files: list[FileAction]
    reader: bool = True
    answer: str = ""
    definitions: list[Definitions] = field(default_factory=list)
    certain: set[int] = field(default_factory=set)
    """Indexes in ``files`` of the writes that took effect whatever the line's exit status: a redirect opens its
    file when its command starts (``cat > x.py <<EOF`` created x.py even if a later ``python x.py`` failed)."""
    after_cd: set[int] = field(default_factory=set)
    """Likewise, of writes by commands that ran unless a ``cd`` before them failed."""
    running: int = 2
    """How surely the simple command being recorded ran: ``_RAN``, ``_RAN_IF_CD`` or ``_MAY_NOT_HAVE_RUN``."""

    def took_effect(self, indexes: Iterable[int], running: int | None = None) -> None:
        """Mark ``files[i]`` for each index as done whatever the exit status, as surely as the command ran."""
        running = self.running if running is None else running
        if running == _RAN:
            self.certain.update(indexes)
        elif running == _RAN_IF_CD:
            self.after_cd.update(indexes)


_RAN, _RAN_IF_CD, _MAY_NOT_HAVE_RUN = 2, 1, 0
"""How surely a command of a line ran: the first always does; see ``_RUNS_ON`` for the rest."""


_RUNS_ON = frozenset({";", "|", "&", "|&", "("})
"""Separators after which the next command runs whenever the one before it ran (a list goes on, a pipeline's
members all start, a subshell's first command runs); after ``&&`` / ``||`` it depends on an exit status, but a
``cd`` that fails says so (``bash: cd: /x: No such file or directory``, zsh's ``cd: no such file…``, dash's
``cd: can't cd to``): when the output does not, ``cd /repo && cat > x.py <<EOF`` ran its ``cat``."""
_CD_FAILED = re.compile(r"\bcd: ")
_CONTROL_WORDS = frozenset({"if", "then", "elif", "else", "while", "until", "do", "for", "case", "select", "function"})
"""Words that open a condition, a branch or a loop body: what follows may never run."""


def _shell_files(command: str, base: str | None, workdirs: list[str], depth: int = 0) -> _ShellRead:
    """The files each simple command of a shell line acts on, whether the line only reads, and what its exit 1
    answers: the last command's answer, when its status is the line's (after a pipe, or every command reads)."""
    script, bodies = _heredoc_bodies(command)
    feeds = iter(bodies)
    read = _ShellRead([])
    words: list[str] = []
    piped = False
    running = _RAN  # how surely the command being read runs: the line's first does, then see _RUNS_ON
    redirected = False
    tokens = _shell_tokens(script)
    i = 0
    while i <= len(tokens):
        token = tokens[i] if i < len(tokens) else ";"
        i += 1
        if token in _SEPARATORS:
            read.running = _MAY_NOT_HAVE_RUN if words and words[0] in _CONTROL_WORDS else running
            if words:
                base, reads, answer = _simple_command(words, base, read, workdirs, depth)
                read.answer = answer if piped or read.reader else ""  # the commands before it only read
                read.reader = read.reader and reads
            if token in _RUNS_ON and not (token == "(" and words):  # ``name (`` defines a function
                running = read.running
            elif token == "&&" and words == ["cd", *words[1:2]] and not redirected:  # its failure would show
                running = min(read.running, _RAN_IF_CD)
            else:
                running = _MAY_NOT_HAVE_RUN
            piped = token == "|"
            words = []
            redirected = False
        elif token and set(token) <= set("<>&|") and ">" in token:  # a redirection: the next word is written
            target = _word(tokens[i]) if i < len(tokens) else ""
            i += 1
            redirected = True
            if not token.endswith("&") and _quoted_ok(target, _names_file):  # a redirect writes a file, any name
                if not (words and words[0] in _CONTROL_WORDS):
                    read.took_effect((len(read.files),), running)
                read.files.append(FileAction(WRITE, _join(base, target)))
                read.reader = False
        elif token in ("<<", "<<<", "<<-"):
            i += 1  # the heredoc delimiter or here-string
            body = next(feeds, None) if token != "<<<" else None
            if body is not None and _program(words) in _PATCH_PROGRAMS:
                patched, defined = _patch(body, base)
                read.files += patched
                read.definitions += defined
        elif token == "<":
            target = _word(tokens[i]) if i < len(tokens) else ""
            i += 1
            if _looks_like_path(target):
                read.files.append(FileAction(READ, _join(base, target)))
        else:
            words.append(_word(token))
    return read


def _program(words: list[str]) -> str:
    """The program a simple command runs (``git apply`` for git's subcommands), past assignments and prefixes."""
    at = 0
    while at < len(words) and (_ASSIGNMENT.match(words[at]) or words[at] in _COMMAND_PREFIXES):
        at += 1
    if at == len(words):
        return ""
    program = posixpath.basename(words[at])
    return f"git {words[at + 1]}" if program == "git" and at + 1 < len(words) else program


def _simple_command(
    words: list[str], base: str | None, read: _ShellRead, workdirs: list[str], depth: int = 0
) -> tuple[str | None, bool, str]:
    """Record what one simple command does to files; return the folder the next one runs in, whether it only
    reads, and what its exit status 1 answers (``_ANSWERS``)."""
    files = read.files
    while words and (_ASSIGNMENT.match(words[0]) or words[0] in _COMMAND_PREFIXES):
        words = words[1:]
    if not words:
        return base, True, ""
    program, args = posixpath.basename(words[0]), words[1:]
    if program in _SHELLS and len(args) >= 2 and args[0] in ("-c", "-lc", "-ic") and depth < _NESTED_SHELLS:
        # ``zsh -lc "printf '…' > out.md"`` as one string (codex exec): the script is the command
        nested = _shell_files(args[1], base, workdirs, depth + 1)
        read.took_effect([len(files) + n for n in nested.certain])
        read.took_effect([len(files) + n for n in nested.after_cd], min(read.running, _RAN_IF_CD))
        files += nested.files
        read.definitions += nested.definitions
        return base, nested.reader, nested.answer
    if program == "cd":
        target = next((a for a in args if not a.startswith("-")), "")
        if not target or target.startswith("~"):
            return None, True, ""
        base = _join(base, target)
        if base.startswith("/"):
            workdirs.append(base)
        return base, True, ""
    if program == "git" and args:
        program, args = f"git {args[0]}", args[1:]
        if program == "git show":  # ``git show REV:path`` shows path
            args = [a.split(":", 1)[1] if ":" in a and not a.startswith("-") else a for a in args]
    if program in ("git clone", "mkdir", "rmdir"):  # a repository URL, the folders made or removed: no file
        return base, False, ""
    answer = _ANSWERS.get(program, "")
    recursive = program in ("rg", "ag", "ack") or (program in _SEARCHERS and any(map(_recurses, args)))
    if program in _SEARCHERS:
        args = _without_pattern(args)
    elif program == "find":
        args = [a for i, a in enumerate(args) if not (i and args[i - 1] in _FIND_PATTERNS)]
    elif program in ("sed", "perl"):  # the script is no file: ``sed -i 's/a/b/' .bashrc``, ``sed -e X -i f``
        args = _without_script(args)
    loose = program in _FILE_PROGRAMS and not any(a in ("-r", "-R", "-rf", "-fr", "-a") for a in args)
    operands = [a for a in (_path_operand(a, loose) for a in args) if a]
    if recursive or program in _FOLDER_READERS:  # their operands are folders unless named like files
        operands = [a for a in operands if _looks_like_file(a) or _names_bare_file(a)]
    if program in ("rm", "unlink", "git rm"):
        files += [FileAction(DELETE, _join(base, p)) for p in operands]
    elif program in ("mv", "git mv", "cp") and len(operands) >= 2:
        *sources, destination = operands
        for source in sources:
            target = destination
            if len(sources) > 1 or destination.endswith("/"):
                target = posixpath.join(destination, posixpath.basename(source))
            if program == "cp":
                files += [FileAction(READ, _join(base, source)), FileAction(WRITE, _join(base, target))]
            else:
                files.append(FileAction(MOVE, _join(base, source), _join(base, target)))
    elif program in ("touch", "tee"):  # they open their files as they start, as a redirect does
        read.took_effect(range(len(files), len(files) + len(operands)))
        files += [FileAction(WRITE, _join(base, p)) for p in operands]
    elif program in ("sed", "perl") and any(a.startswith("-i") or a.startswith("-pi") for a in args):
        files += [FileAction(EDIT, _join(base, p)) for p in operands]
    elif program in ("git checkout", "git restore") and (operands or "--" in args):
        # ``git checkout -- a.py`` / ``git restore a.py`` put the files back as committed: a change to each
        files += [FileAction(EDIT, _join(base, p)) for p in operands]
    elif program in _READERS or (program.startswith("git ") and program[4:] in _GIT_READERS):
        files += [FileAction(READ, _join(base, p)) for p in operands]
        return base, True, answer
    else:  # ``git apply``, ``patch``, ``pytest``: the files named are used
        files += [FileAction(USE, _join(base, p)) for p in operands]
    return base, False, answer


def _recurses(option: str) -> bool:
    """A search option that makes it recurse into folders (``-r``, ``-rn``, ``-Rl``, ``--recursive``)."""
    if option.startswith("--"):
        return option in ("--recursive", "--dereference-recursive")
    return option.startswith("-") and ("r" in option or "R" in option)


_FOLDER_READERS = frozenset({"ls", "find", "tree", "du", "dir", "Get-ChildItem"})
"""Listers, and searches that recurse (``grep -r``, ``rg``): an operand is a folder unless it is named like a
file (``grep -r X /testbed`` reads no file called ``testbed``)."""


def _names_bare_file(token: str) -> bool:
    """A path whose last part is a file people name without an extension (``Makefile``) or a dotfile with a
    further part (``.env.local.example``)."""
    name = token.rstrip("/").rsplit("/", 1)[-1]
    return name in _BARE_FILES or _dotted_dotfile(name)


def _dotted_dotfile(name: str) -> bool:
    """``.env.local``, ``.env.local.example``: a dotfile with a further part names a file, not a folder."""
    return bool(_DOTFILE.match(name)) and "." in name[1:] and name not in _NOT_DOTFILES


def _without_pattern(args: list[str]) -> list[str]:
    """A search's arguments without its pattern (``-e PATTERN``, else the first operand): it names no file."""
    if any(a in ("-e", "--regexp") for a in args):
        return [
            a
            for i, a in enumerate(args)
            if a not in ("-e", "--regexp") and args[i - 1 : i] not in (["-e"], ["--regexp"])
        ]
    if any(a in ("-f", "--file") or a.startswith("--regexp=") for a in args):
        return args
    pattern = next((i for i, a in enumerate(args) if not a.startswith("-")), None)
    return args if pattern is None else args[:pattern] + args[pattern + 1 :]


def _path_operand(token: str, loose: bool = False) -> str:
    """``token`` as a file path when it looks like one (``--out=x.py``, ``tests/a.py::test_b``, ``a.py:12``);
    ``loose``: an operand of a program that takes files (``vim LICENSE``), any name that can be a path."""
    if token.startswith("-"):
        if loose:
            return ""
        token = token.partition("=")[2]
    token = _LINE_REF.sub("", token.split("::", 1)[0].rstrip(":,;"))
    return token if _quoted_ok(token, _names_file if loose else _looks_like_path) else ""


def _quoted_ok(token: str, check: Callable[[str], bool]) -> bool:
    """``check`` of a shell word; one with spaces was quoted (``cat 'LM Studio notes.md'``) and is one name."""
    return check(token.replace(" ", "_")) if " " in token.strip() else check(token)


def _looks_like_path(token: str) -> bool:
    if token in _NOT_FILES or not _PATH_TOKEN.match(token) or _REV_RANGE.search(token):
        return False
    name = re.split(r"[/\\]", token)[-1]
    if name in _BARE_FILES or name.startswith(("Dockerfile.", "Containerfile.")) or _dotted_dotfile(name):
        return True
    extension = _EXTENSION.search(name)
    if "/" in token or "\\" in token:
        return bool(extension) or token.startswith(("/", "./", "../", "~/", ".\\", "..\\"))
    return extension is not None and extension.group(1).lower() in _FILE_EXTENSIONS


def _names_file(token: str) -> bool:
    """A word that names a file where a file is expected (a redirect's target, ``vim``'s operand): any path-like
    word but a folder name we know, a revision range or a number."""
    if _looks_like_path(token):
        return True
    if token in _NOT_FILES or not _PATH_TOKEN.match(token) or _REV_RANGE.search(token) or token.isdigit():
        return False
    name = token.rstrip("/\\").rsplit("/", 1)[-1]
    return (
        not token.endswith(("/", "\\"))
        and name not in _NOT_DOTFILES
        and "@" not in token
        and (bool(_DOTFILE.match(name)) or name[:1].isalpha())
    )


def _without_script(args: list[str]) -> list[str]:
    """sed / perl arguments without the script (``-e SCRIPT``, else the first operand, unless ``-f`` names it)."""
    if any(a in ("-e", "--expression") for a in args):
        return [
            a
            for i, a in enumerate(args)
            if a not in ("-e", "--expression") and args[i - 1 : i] not in (["-e"], ["--expression"])
        ]
    script = next((i for i, a in enumerate(args) if not a.startswith("-")), None)
    return args if script is None else args[:script] + args[script + 1 :]


def _looks_like_file(token: str) -> bool:
    """A path naming a file, not a folder: its last part has an extension."""
    return _looks_like_path(token) and bool(_EXTENSION.search(token.rstrip("/").rsplit("/", 1)[-1]))


def _patch(text: str, base: str | None) -> tuple[list[FileAction], list[Definitions]]:
    """Files an ``apply_patch`` envelope or a unified diff adds, changes, deletes or moves, and what each file
    gains (``+`` lines) and loses (``-``)."""
    files: list[FileAction] = []
    sides: dict[str, tuple[list[str], list[str]]] = {}
    current: tuple[list[str], list[str]] | None = None
    updating = old = ""
    for line in text.splitlines():
        match = _PATCH_HEADER.match(line)
        if not match:
            if current is not None and line[:1] in ("+", "-"):
                current[line[0] == "-"].append(line[1:])
            continue
        verb, path, moved, marker, diff_path = match.groups()
        if verb:
            updating = path if verb == "Update" else ""
            files.append(FileAction({"Add": WRITE, "Update": EDIT, "Delete": DELETE}[verb], _join(base, path)))
            current = sides.setdefault(_join(base, path), ([], [])) if verb != "Delete" else None
        elif moved and updating:
            files.append(FileAction(MOVE, _join(base, updating), _join(base, moved)))
        elif marker == "---":
            old = "" if diff_path == "/dev/null" else _strip_diff_prefix(diff_path)
        elif marker == "+++":
            if diff_path == "/dev/null":
                if old:
                    files.append(FileAction(DELETE, _join(base, old)))
            else:
                files.append(FileAction(EDIT if old else WRITE, _join(base, _strip_diff_prefix(diff_path))))
                current = sides.setdefault(_join(base, _strip_diff_prefix(diff_path)), ([], []))
            old = ""
    return files, [(path, *changed_names(path, ["\n".join(a)], ["\n".join(r)])) for path, (a, r) in sides.items()]


_CHANGE_KINDS = {"add": WRITE, "create": WRITE, "update": EDIT, "modify": EDIT, "delete": DELETE, "remove": DELETE}


def _listed_changes(changes: Any, base: str | None) -> list[FileAction]:
    """Files a list of changes names (``codex exec``'s ``file_change``: ``[{"path", "kind"}]``, the kind a word or
    ``{"type", "move_path"}``)."""
    found: list[FileAction] = []
    for change in changes if isinstance(changes, list) else ():
        path = change.get("path") if isinstance(change, dict) else None
        if not isinstance(path, str) or not _is_path_value(path):
            continue
        kind = change.get("kind")
        moved = kind.get("move_path") if isinstance(kind, dict) else None
        kind = kind.get("type") if isinstance(kind, dict) else kind
        action = _CHANGE_KINDS.get(kind.lower(), EDIT) if isinstance(kind, str) else EDIT
        found.append(FileAction(action, _join(base, path.strip())))
        if isinstance(moved, str) and _is_path_value(moved):
            found.append(FileAction(MOVE, _join(base, path.strip()), _join(base, moved.strip())))
    return found


def _strip_diff_prefix(path: str) -> str:
    return path[2:] if path.startswith(("a/", "b/")) else path


def _search_hits(text: str) -> list[FileAction]:
    """Files a search result names at the start of its lines (``path`` or ``path:line:match``)."""
    hits: list[FileAction] = []
    seen: set[str] = set()
    for line in text.splitlines():
        candidate = line.strip().split(":", 1)[0].strip()
        if candidate not in seen and _looks_like_file(candidate):
            seen.add(candidate)
            hits.append(FileAction(READ, candidate))
            if len(hits) >= HITS_PER_SEARCH:
                break
    return hits


# ---------------------------------------------------------------------------------------------- text


def _first_commit(text: str) -> list[str]:
    """The commit a ``git log --oneline`` / ``git rev-parse`` output starts with (``41dd7fe7 Subject``): the full
    format's ``commit <sha>`` lines are read as identifiers anyway, the one-line format's are not."""
    for line in _lines(text):
        if not line.isdigit():  # (a wrapper's ``<returncode>0</returncode>`` line)
            match = _LEADING_SHA.match(line)
            return [f"commit {match.group(1)}"] if match and any(c.isdigit() for c in match.group(1)) else []
    return []


def _urls(text: str) -> list[str]:
    return [url.rstrip(_URL_TRAILING) for url in _URL.findall(text)]


def _identifiers(text: str, commits: bool) -> list[str]:
    """Ticket, beads, PR and (when ``commits``) commit ids, in the order they appear in ``text``.

    Each pattern runs only where a plain substring (or a simpler pattern) it needs is present: tool outputs
    are long, and most hold none of them.
    """
    found: list[tuple[int, str]] = []
    if _TICKET_HINT.search(text):
        for match in _TICKET.finditer(text):
            if match.group(1) not in _TICKET_NOT:
                found.append((match.start(), match.group(0)))
    if "CVE-" in text:
        found += [(m.start(), m.group(0)) for m in _CVE.finditer(text)]
    found += _short_ids(text)
    if "#" in text:
        found += [(m.start(), f"PR #{m.group(1)}") for m in _PR.finditer(text)]
    if commits and ("ommit" in text or "OMMIT" in text or "[" in text):
        for match in _COMMIT.finditer(text):
            sha = match.group(1) or match.group(2)
            if any(c.isdigit() for c in sha):
                found.append((match.start(), f"commit {sha}"))
    return [item for _, item in sorted(found, key=lambda pair: pair[0])]


def _short_ids(text: str) -> list[tuple[int, str]]:
    """``(start, id)`` of each beads id in ``text``, left to right: the head before a matching suffix can only be
    the whole run of ``[a-z0-9]`` before its hyphen (the character before the head is not a word character)."""
    found = []
    for match in _SHORT_ID_SUFFIX.finditer(text):
        dash = start = match.start()
        while start > 0 and dash - start <= 16 and text[start - 1] in _SHORT_ID_HEAD:
            start -= 1
        if not 2 <= dash - start <= 16 or not "a" <= text[start] <= "z":
            continue
        before = text[start - 1] if start else ""
        if before and (before.isalnum() or before in "_/.@:-"):
            continue
        found.append((start, text[start : match.end()]))
    return found


# ---------------------------------------------------------------------------------------------- results


def _results(message: Message) -> Iterator[tuple[str, Any, bool | None]]:
    """(call id, raw result body, the error flag as recorded) for each result a message carries: ``None`` when
    the result has no ``is_error`` field."""
    content = message.get("content")
    blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
    tool_message = message.get("role") == "tool" and message.get("tool_call_id")
    if tool_message and not (len(blocks) == 1 and blocks[0].get("type") == RESULT_BLOCK_TYPE):
        yield str(message["tool_call_id"]), content, None
        return
    for block in blocks:  # a tool message's one block: Amplifier's, inside
        if block.get("type") == RESULT_BLOCK_TYPE:
            ref = message["tool_call_id"] if tool_message else block.get("tool_use_id") or block.get("tool_call_id")
            flag = block.get("is_error")
            body = block["content"] if "content" in block else block.get("output")
            yield str(ref or ""), body, flag if isinstance(flag, bool) else None


_CUT_SHORT = (
    (
        "timed out",
        re.compile(
            r"(?im)^\W{0,3}(?:the )?command (?:timed out|has no new output) after\b.*$"
            r"|^\W{0,3}(?:error: )?(?:command )?timed out after \d[^\n]*$|^Command timed out\b.*$"
            r"|^Command was automatically cancelled because it exceeded the timeout\b[^\n]*?(?:output\.|(?= Below)|$)"
        ),
    ),
    (
        "interrupted",
        re.compile(
            r"(?im)^\W{0,3}(?:request )?interrupted by user\b.*$"
            r"|^\W{0,3}Command (?:was )?(?:cancelled|aborted) by user\b.*$"
            r"|^\[TASK RESUMPTION\] This task was interrupted\b[^.\n]*"
        ),
    ),
)
"""How a shell tool reports a command it cut short (Claude Code, Codex, OpenHands, Gemini CLI; Cline's resumption
notice answers the call it cut off): the outcome is that, not the exit status or an error line of what it printed
before."""
_CUT_SHORT_SCAN = 2_000
"""Characters at each end of an output searched for those reports (they lead or end it; the middle is output)."""
_OPERATION_CANCELLED = "[Operation Cancelled]"
"""How Gemini CLI's scheduler answers a call the user cancelled or denied (``[Operation Cancelled] Reason: …``)."""


_LOOP_CANCELLED_KEYS = frozenset({"error", "cancelled", "tool"})
"""All loop-basic's record holds: a JSON file a tool read that merely has a ``cancelled`` field is content."""


def _cancelled(body: Any, text: str) -> str:
    """The line saying the agent's framework cancelled the call, whatever the tool: loop-basic's
    ``{"error": "Tool execution was cancelled by user", "cancelled": true}``, Gemini CLI's ``[Operation Cancelled]``
    result; else "". Written in place of the tool's output, so never data the tool read."""
    if isinstance(body, dict) and body.get("cancelled") is True and body.keys() <= _LOOP_CANCELLED_KEYS:
        return str(body.get("error") or "cancelled")
    if text.startswith(_OPERATION_CANCELLED):
        return text.split("\n", 1)[0]
    return ""


def _outcome(call: _Call, body: Any, text: str, flag: bool | None) -> CallOutcome:
    """Failed when flagged, a non-zero exit is recorded or reported, or (outside reads) the output shows a
    failure. A shell result that says ``is_error: false`` recorded its exit as 0: Claude Code sets the flag
    from the exit status."""
    flagged = flag is True or _structured_failure(body)
    if cancelled := _cancelled(body, text):
        return CallOutcome(call.key, call.command, False, "interrupted", clip(cancelled, ERROR_MAX_CHARS), call.reader)
    if call.command and not call.reader:  # a command cut short says so in its own output: that line is the outcome
        for label, pattern in _CUT_SHORT:
            if found := pattern.search(text[:_CUT_SHORT_SCAN]) or pattern.search(text[-_CUT_SHORT_SCAN:]):
                return CallOutcome(call.key, call.command, False, label, clip(found.group(0).strip(), ERROR_MAX_CHARS))
    # A read's exit code leads its output, and so does a non-shell tool's failure: further down is the
    # content it read, wrote or was told (a file echoed after an edit, a sub-agent's report).
    scope = text.split("\n", 2)[:2] if call.reader or not call.command else [text]
    codes = [int(code) for part in scope for code in _EXIT_CODE.findall(part)]
    code = next((c for c in reversed(codes) if c), 0)
    recorded = _recorded_exit(body)
    if recorded is None and flag is False and call.command:
        recorded = 0
    printed_text = _shell_report(text) if call.command else text  # what the command printed, without a frame
    shown = printed_text if call.command and not call.reader else "\n".join(scope)
    textual = not call.reader and _reads_failed(shown)
    if recorded == 0 and not flagged:  # exited 0 as recorded: never failed, but an error it printed (a script
        printed = textual or (not call.reader and _nonzero_exit(shown))  # catching its own exception, a pipe
        if printed or _CANNOT_START.search(text):  # hiding a command that failed or never started) is kept
            label = f"exit 0, printed: {clip(error_line(printed_text), ERROR_MAX_CHARS)}"
            return CallOutcome(call.key, call.command, True, label)
    else:
        code = code if recorded is None else recorded  # a recorded exit status is the outcome
        if call.command and call.answer and code == 1:  # grep, diff, test: 1 says "no match", "differs", "false"
            return CallOutcome(call.key, call.command, True, call.answer, reads=call.reader)
        if flagged or code or textual:
            label = f"failed (exit {code})" if code else "failed"
            error = clip(error_line(printed_text), ERROR_MAX_CHARS)
            return CallOutcome(call.key, call.command, False, label, error, call.reader)
    passed = call.command and not call.reader and bool(_PASSED.search(text))
    return CallOutcome(call.key, call.command, True, "passed" if passed else "ok", reads=call.reader)


_SHELL_FRAME_TAIL = re.compile(
    r"(?:Error: \(none\)|Exit Code: -?\d{1,9}|Signal: .*|Background PIDs: .*|Process Group PGID: .*|\s*"
    r"|(?:returncode|return_code|exit_code|exitCode): -?\d{1,9})"
)
"""The fields Gemini CLI's shell tool ends its result with, after what the command printed (and its error, when
it had one: ``Error: (none)`` is the older versions' "none"); and the recorded status ``_body_text`` adds."""
_SHELL_FRAME_TAIL_FIELDS = 10
"""At most these many lines end the frame (its five fields, a recorded status, and blank lines between)."""


def _shell_report(text: str) -> str:
    """What a shell result says the command printed: Gemini CLI's frame (``Command: …``, ``Directory: …``,
    ``Output: …``, ``Error: …``, ``Exit Code: N``, ``Signal: …``, ``Background PIDs: …``, ``Process Group PGID: …``;
    current versions start at ``Output:`` and write ``Error:`` only for an error) taken off: its output, then its
    error when it had one. Any other text as it is."""
    if text.startswith("Command: "):
        directory = text.find("\nDirectory: ")
        start = text.find("\nOutput: ", directory) + 1 if directory > 0 else 0
    else:
        start = 0
    if not text.startswith("Output: ", start):
        return text
    lines = text[start + len("Output: ") :].split("\n")
    end = len(lines)
    while end > 1 and len(lines) - end < _SHELL_FRAME_TAIL_FIELDS and _SHELL_FRAME_TAIL.fullmatch(lines[end - 1]):
        end -= 1
    if end == len(lines) and start == 0:  # "Output: …" and no field after it: not Gemini's frame
        return text
    if lines[0] == "(empty)":
        lines[0] = ""
    return "\n".join(lines[:end])


def _lines(text: str) -> list[str]:
    """The output's non-empty lines without wrapper tags (mini-swe-agent's ``<returncode>``, Claude Code's)."""
    return [line for line in (_TAG.sub("", line).strip() for line in text.splitlines()) if line]


def _says_more(line: str) -> bool:
    """The line holds more than an exit status."""
    return not _EXIT_CODE.fullmatch(line) and not line.isdigit()


def _nonzero_exit(text: str) -> bool:
    """The output reports a non-zero exit of its own (``cmd | tail`` after ``Halting VM with exit status 2``)."""
    return any(int(code) for code in _EXIT_CODE.findall(text))


def _decode_json_object(body: Any) -> Any:
    """Some providers stringify structured tool output; read it back so its fields can be inspected."""
    if isinstance(body, str) and body.lstrip().startswith("{"):
        try:
            decoded = parse_embedded_json(body)
        except ValueError:
            return body
        return decoded if isinstance(decoded, dict) else body
    return body


def _body_text(body: Any) -> str:
    """Readable text of a result; a dict contributes its message-like fields rather than its JSON."""
    if isinstance(body, dict) and body.get("type") is None:
        parts = [_body_text(body[key]) for key in _OUTPUT_KEYS if body.get(key)]
        parts += [f"{key}: {body[key]}" for key in _EXIT_KEYS if isinstance(body.get(key), int) and body[key]]
        if parts:
            return "\n".join(p for p in parts if p)
    if isinstance(body, list):
        return "\n".join(block_text(b) for b in body)
    return "" if body is None else block_text(body)


_RECORDED_EXIT = re.compile(r"^Exit Code: (-?\d{1,9})\s*$", re.MULTILINE)
"""How Gemini CLI's shell tool records the exit status (after ``Error: (none)`` when there was none)."""


_RETURNCODE = re.compile(r"<returncode>(-?\d{1,9})</returncode>")
"""An exit status has at most 9 digits: a longer run is not one (and ``int`` refuses past 4,300 digits)."""


def _recorded_exit(body: Any) -> int | None:
    """The exit status a result records as a field (``exit_code``) or as Gemini's ``Exit Code: N`` line."""
    if isinstance(body, dict):
        found: list[int] = [
            body[key] for key in _EXIT_KEYS if isinstance(body.get(key), int) and not isinstance(body[key], bool)
        ]
        if found:
            return found[0]
        body = body.get("output")
    if isinstance(body, str) and "Exit Code: " in body:
        codes = _RECORDED_EXIT.findall(body)
        return int(codes[-1]) if codes else None
    if isinstance(body, str) and body.startswith("<returncode>"):  # mini-swe-agent's observation
        code = _RETURNCODE.match(body)
        return int(code.group(1)) if code else None
    return None


def _structured_failure(body: Any) -> bool:
    if not isinstance(body, dict):
        return False
    if body.get("success") is False or body.get("is_error") is True:
        return True
    return any(isinstance(body.get(key), int) and body[key] != 0 for key in _EXIT_KEYS)


def error_line(text: str) -> str:
    """The line of a failed output that says most about the failure: a traceback's last exception, else a
    FAILED, error or failure-count line, else the last one."""
    lines = _lines(text)
    exceptions = [line for line in lines if _EXCEPTION_LINE.match(line)]
    if exceptions:
        return exceptions[-1]
    for pattern in (_FAILED_LINE, _ERROR_LINE, _FAILURE_COUNT):
        for line in lines:
            if pattern.search(line):
                return line
    return next((line for line in reversed(lines) if _says_more(line)), "")


def looks_failed(text: str) -> bool:
    """Text that reads as a failure (a traceback, an error line, a non-zero exit code)."""
    return _nonzero_exit(text) or _reads_failed(text)


def _reads_failed(text: str) -> bool:
    """``text`` holds a failure line of any kind (``_FAILURE_PARTS``)."""
    return any(any(hint in text for hint in hints) and part.search(text) for hints, part in _FAILURE_PARTS)
