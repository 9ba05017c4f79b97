"""The artifact ledger: files, commands, URLs, ids and errors pulled verbatim from a span.

Summaries paraphrase; the exact strings an agent needs to carry on (a path, the failing command,
the ticket id, the last error) must survive compaction unchanged. Everything here is plain pattern
matching so the ledger is the same for the same messages, with or without an LLM.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, fields
from typing import Any

from .messages import RESULT_BLOCK_TYPE, Message, block_text, is_user_turn, message_calls

ITEM_MAX_CHARS = 200
ERROR_MAX_CHARS = 200

_HEADINGS = {
    "files": "Files:",
    "commands": "Commands:",
    "urls": "URLs:",
    "identifiers": "Identifiers:",
    "errors": "Errors:",
}

# Shell-like tools are recognised by name fragments, so MCP-prefixed names (``mcp__x__bash``) count too.
_SHELL_NAME_PARTS = ("bash", "shell", "terminal", "exec", "run_command", "powershell")
# Outputs of these tools are file or page contents: error words in them are data, not failures.
_READ_NAME_PARTS = ("read", "view", "grep", "glob", "search", "fetch", "find", "list")
_PATH_KEYS = frozenset(
    {"path", "paths", "file", "files", "file_path", "filepath", "filename", "target_file", "notebook_path"}
    | {"old_path", "new_path"}
)
_COMMAND_KEYS = ("command", "cmd")
_SHELLS = frozenset({"bash", "sh", "zsh", "/bin/bash", "/bin/sh", "/bin/zsh", "/usr/bin/bash"})
_NOT_FILES = frozenset({".", "..", "/", "~", "./", "/dev/null", "/dev/stdout", "/dev/stderr"})
# Bare names (no slash) count as files only with one of these extensions, so ``foo.bar`` modules
# and ``example.com`` hosts stay out.
# fmt: off
_FILE_EXTENSIONS = frozenset({
    "py", "pyi", "ipynb", "js", "jsx", "ts", "tsx", "mjs", "cjs", "json", "jsonl", "yaml", "yml",
    "toml", "ini", "cfg", "conf", "env", "lock", "txt", "md", "rst", "csv", "tsv", "html", "htm", "css",
    "scss", "xml", "sql", "sh", "bash", "zsh", "ps1", "go", "rs", "java", "kt", "scala", "c", "h", "cc",
    "cpp", "hpp", "cs", "rb", "php", "swift", "lua", "r", "log", "patch", "diff", "proto", "graphql",
    "tf", "dockerfile", "gradle", "mk", "pem", "ps", "svg", "png", "jpg", "jpeg", "gif", "pdf", "zip",
    "gz", "tar",
})
# fmt: on
_PATH_TOKEN = re.compile(r"^[\w.~+@/-]+$")
_EXTENSION = re.compile(r"\.([A-Za-z][A-Za-z0-9]{0,9})$")
_PATCH_PATH = re.compile(
    r"^(?:\*\*\* (?:Add|Update|Delete) File: |\*\*\* Move to: |(?:---|\+\+\+) (?:[ab]/)?)(\S+)",
    re.MULTILINE,
)
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
_CVE = re.compile(r"(?<![\w-])CVE-\d{4}-\d{4,7}(?![\w-])")
# Beads-style ids (``spotter-a0y``, ``bd-a3f8e9.1``): the suffix must mix letters and digits,
# which keeps ordinary hyphenated words (``pre-commit``) out.
_SHORT_ID = re.compile(
    r"(?<![\w/.@:-])[a-z][a-z0-9]{1,15}-(?=[a-z0-9]*\d)(?=[a-z0-9]*[a-z])[a-z0-9]{3,8}(?:\.\d+)*(?![\w-]|\.\w)"
)
_PR = re.compile(r"(?i:\bPR\b|\bpull request\b)\s*#(\d+)\b")
_COMMIT = re.compile(
    r"\b(?i:commit(?:ted)?)\b(?:\s+(?i:as|to|id|hash|sha))?[\s:=#]+([0-9a-f]{7,40})\b"
    r"|^\[[^\]\s]+(?: \([^)]*\))? ([0-9a-f]{7,40})\]",
    re.MULTILINE,
)

# Substrings every ``_FAILURE`` match contains: a cheap test that spares the regex on most outputs.
_FAILURE_HINTS = ("Traceback", "rror:", "ERROR:", "FAILED", "fatal:")
_FAILURE = re.compile(r"Traceback \(most recent call last\)|(?:\b|(?<=[a-z]))[Ee]rror:|ERROR:|\bFAILED\b|\bfatal:")
_EXIT_CODE = re.compile(
    r"(?i)\b(?:exit(?:ed with)?[ _]?(?:code|status)|return[ _]?code|returncode)\b[\"']?\s*[:=]?\s*(-?\d+)"
)
_EXCEPTION_LINE = re.compile(
    r"^(?:E\s+)?(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure)\b(?::.*)?$"
)
_FAILED_LINE = re.compile(r"\bFAILED\b")
_ERROR_LINE = re.compile(r"(?:\b|(?<=[a-z]))(?:[Ee]rror|ERROR|fatal)\b[:!]")
_TAG = re.compile(r"</?[\w-]+>")
_OUTPUT_KEYS = ("error", "message", "stderr", "stdout", "output", "content", "result")
_EXIT_KEYS = ("returncode", "return_code", "exit_code", "exitCode")


@dataclass
class Ledger:
    """Artifacts of a span, each kind de-duplicated in first-seen order."""

    files: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    urls: list[str] = field(default_factory=list)
    identifiers: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def merge(self, other: Ledger) -> Ledger:
        """The ledger of two consecutive spans (summaries are built segment by segment)."""
        return Ledger(**{f.name: _dedup([*getattr(self, f.name), *getattr(other, f.name)]) for f in fields(self)})

    def render(self, max_items_per_kind: int = 25, max_chars: int = 4000) -> str:
        """Compact Markdown; over a cap, the oldest items go first because the latest state matters most."""
        everything = {f.name: getattr(self, f.name) for f in fields(self)}
        low, high = 0, min(max(max_items_per_kind, 0), max(map(len, everything.values())))
        while low < high:  # the largest per-kind cap whose rendering fits
            middle = (low + high + 1) // 2
            if len(_format(everything, middle)) <= max_chars:
                low = middle
            else:
                high = middle - 1
        return _format(everything, low)


def _format(everything: dict[str, list[str]], cap: int) -> str:
    lines: list[str] = []
    for kind, items in everything.items():
        shown = items[max(len(items) - cap, 0) :]
        if not shown:
            continue
        lines.append(_HEADINGS[kind])
        if len(items) > len(shown):
            lines.append(f"- (+{len(items) - len(shown)} more)")
        lines.extend(f"- {clip(item, ITEM_MAX_CHARS)}" for item in shown)
    return "\n".join(["### Artifacts", *lines]) if lines else ""


def clip(text: str, limit: int) -> str:
    """One line of at most ``limit`` characters, so one huge item cannot crowd out the rest."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: max(limit - 1, 0)].rstrip() + "…"


def _dedup(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def build_ledger(messages: list[Message]) -> Ledger:
    """Extract the artifacts of a span in any of the tool-call shapes (or a mix)."""
    ledger = Ledger()
    tool_names: dict[str, str] = {}
    for message in messages:
        role = message.get("role")
        if is_user_turn(message) or role == "assistant":
            text = authored_text(message)
            ledger.urls += _urls(text)
            ledger.identifiers += _identifiers(text, commits=role == "assistant")
        for call_id, name, args in _calls(message):
            tool_names[call_id] = name
            _add_call(ledger, name, args)
        for ref, body, flagged in _results(message):
            _add_result(ledger, tool_names.get(ref, ""), body, flagged)
    return Ledger(
        files=_dedup(ledger.files),
        commands=_dedup(ledger.commands),
        urls=_dedup(ledger.urls),
        identifiers=_dedup_ids(ledger.identifiers),
        errors=_dedup(ledger.errors),
    )


def authored_text(message: Message) -> str:
    """What a user or assistant wrote, leaving out tool traffic and hidden reasoning."""
    content = message.get("content")
    if isinstance(content, str):
        return content.strip()
    return "\n".join(
        block_text(b) for b in content or [] if isinstance(b, str) or (isinstance(b, dict) and b.get("type") == "text")
    ).strip()


def _calls(message: Message) -> Iterator[tuple[str, str, Any]]:
    """(id, tool name, parsed arguments) of each call, whichever shape carries it."""
    if message.get("role") != "assistant":
        return
    for call_id, name, raw in message_calls(message):
        yield call_id, name, _parse_args(raw)


def _parse_args(raw: Any) -> Any:
    """Arguments as a dict when possible; broken JSON (e.g. a truncated stream) keeps its string fields."""
    if not isinstance(raw, str):
        return raw if raw is not None else {}
    try:
        return json.loads(raw)
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


def _add_call(ledger: Ledger, name: str, args: Any) -> None:
    if isinstance(args, dict):
        for key in _PATH_KEYS.intersection(args):
            ledger.files += [p.strip() for p in _strings(args[key]) if _is_path_value(p)]
        if _is_shell(name):
            for key in _COMMAND_KEYS:
                command = _command_text(args.get(key))
                if command:
                    ledger.commands.append(_command_summary(command))
                    ledger.files += _command_paths(command)
    for text in _strings(args):
        ledger.files += [p for p in _PATCH_PATH.findall(text) if p not in _NOT_FILES]
        ledger.urls += _urls(text)
        ledger.identifiers += _identifiers(text, commits=False)


def _is_shell(name: str) -> bool:
    lowered = name.lower()
    return any(part in lowered for part in _SHELL_NAME_PARTS)


def _is_path_value(value: str) -> bool:
    value = value.strip()
    return bool(value) and value not in _NOT_FILES and "\n" not in value and len(value) <= 300


def _command_summary(command: str) -> str:
    """The command on one line; a heredoc's body is file content, so only its opening line is kept."""
    first, _, rest = command.partition("\n")
    if "<<" in first and rest:
        return " ".join(first.split()) + " …"
    return " ".join(command.split())


def _command_text(value: Any) -> str:
    """A shell command as one string; argv lists like ``["bash", "-lc", "cmd"]`` give their script."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        if len(value) >= 3 and value[0] in _SHELLS and value[1] in ("-c", "-lc", "-ic"):
            return value[2].strip()
        return shlex.join(value)
    return ""


def _command_paths(command: str) -> list[str]:
    """Path-like words of a command; a heredoc body is data, so only its first line is read."""
    if "<<" in command:
        command = command.splitlines()[0]
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:
        tokens = command.split()
    paths = []
    for token in tokens:
        if token.startswith("-"):
            token = token.partition("=")[2]
        token = token.rstrip(":,;")
        if _looks_like_path(token):
            paths.append(token)
    return paths


def _looks_like_path(token: str) -> bool:
    if token in _NOT_FILES or not _PATH_TOKEN.match(token):
        return False
    extension = _EXTENSION.search(token.rsplit("/", 1)[-1])
    if "/" in token:
        return bool(extension) or token.startswith(("/", "./", "../", "~/"))
    return bool(extension) and extension.group(1).lower() in _FILE_EXTENSIONS


def _urls(text: str) -> list[str]:
    return [url.rstrip(_URL_TRAILING) for url in _URL.findall(text)]


def _identifiers(text: str, commits: bool) -> list[str]:
    """Ticket, beads, PR and (when ``commits``) commit ids, in the order they appear in ``text``."""
    found: list[tuple[int, str]] = []
    for match in _TICKET.finditer(text):
        if match.group(1) not in _TICKET_NOT:
            found.append((match.start(), match.group(0)))
    found += [(m.start(), m.group(0)) for m in _CVE.finditer(text)]
    found += [(m.start(), m.group(0)) for m in _SHORT_ID.finditer(text)]
    found += [(m.start(), f"PR #{m.group(1)}") for m in _PR.finditer(text)]
    if commits:
        for match in _COMMIT.finditer(text):
            sha = match.group(1) or match.group(2)
            if any(c.isdigit() for c in sha):
                found.append((match.start(), f"commit {sha}"))
    return [item for _, item in sorted(found, key=lambda pair: pair[0])]


def _dedup_ids(items: list[str]) -> list[str]:
    """Like ``_dedup``, also folding a short commit SHA into a longer one already seen (or vice versa)."""
    kept: list[str] = []
    for item in _dedup(items):
        if item.startswith("commit ") and any(
            k.startswith("commit ") and (k.startswith(item) or item.startswith(k)) for k in kept
        ):
            continue
        kept.append(item)
    return kept


def _results(message: Message) -> Iterator[tuple[str, Any, bool]]:
    """(call id, raw result body, flagged as an error by the provider) for each result a message carries."""
    if message.get("role") == "tool" and message.get("tool_call_id"):
        yield str(message["tool_call_id"]), message.get("content"), False
        return
    content = message.get("content")
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("type") == RESULT_BLOCK_TYPE:
            ref = block.get("tool_use_id") or block.get("tool_call_id") or ""
            body = block["content"] if "content" in block else block.get("output")
            yield str(ref), body, block.get("is_error") is True


def _add_result(ledger: Ledger, tool: str, body: Any, flagged: bool) -> None:
    body = _decode_json_object(body)
    text = _body_text(body)
    ledger.urls += _urls(text)
    ledger.identifiers += _identifiers(text, commits=True)
    flagged = flagged or _structured_failure(body)
    exit_codes = [int(code) for code in _EXIT_CODE.findall(text)]
    textual = any(exit_codes) or (any(h in text for h in _FAILURE_HINTS) and bool(_FAILURE.search(text)))
    if flagged or (textual and not any(part in tool.lower() for part in _READ_NAME_PARTS)):
        line = _error_line(text)
        if line:
            ledger.errors.append(clip(line, ERROR_MAX_CHARS))


def _decode_json_object(body: Any) -> Any:
    """Some providers stringify structured tool output; read it back so its fields can be inspected."""
    if isinstance(body, str) and body.lstrip().startswith("{"):
        try:
            decoded = json.loads(body)
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


def _structured_failure(body: Any) -> bool:
    if not isinstance(body, dict):
        return False
    if body.get("success") is False or body.get("is_error") is True:
        return True
    return any(isinstance(body.get(key), int) and body[key] != 0 for key in _EXIT_KEYS)


def _error_line(text: str) -> str:
    """The most telling line: a traceback's last exception, else a FAILED or error line, else the last one."""
    lines = [_TAG.sub("", line).strip() for line in text.splitlines()]
    lines = [line for line in lines if line]
    exceptions = [line for line in lines if _EXCEPTION_LINE.match(line)]
    if exceptions:
        return exceptions[-1]
    for pattern in (_FAILED_LINE, _ERROR_LINE):
        for line in lines:
            if pattern.search(line):
                return line
    meaningful = [line for line in lines if not _EXIT_CODE.fullmatch(line)]
    return (meaningful or lines or [""])[-1]


def looks_failed(text: str) -> bool:
    """Text that reads as a failure (a traceback, an error line, a non-zero exit code)."""
    if any(int(code) for code in _EXIT_CODE.findall(text)):
        return True
    return any(h in text for h in _FAILURE_HINTS) and bool(_FAILURE.search(text))


def error_line(text: str) -> str:
    """The line of a failed output that says most about the failure."""
    return _error_line(text)
