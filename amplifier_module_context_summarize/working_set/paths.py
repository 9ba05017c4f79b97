"""What names a file: the tests that tell a path from a word, a folder, a revision range or a number, and how a
path is joined to the folder a call ran in."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable

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
_PATH_TOKEN = re.compile(r"^(?:[A-Za-z]:)?[\w.~+@/\\-]+$")  # a Windows path keeps its backslashes
_EXTENSION = re.compile(r"\.([A-Za-z][A-Za-z0-9]{0,9})$")
_LINE_REF = re.compile(r"(?<=\.\w)(?::\d+){1,2}$|(?<=\w):\d+(?::\d+)?$")


def is_path_value(value: str) -> bool:
    value = value.strip()
    return bool(value) and value not in _NOT_FILES and "\n" not in value and len(value) <= 300


def join_path(base: str | None, path: str) -> str:
    """``path`` as seen from the folder the call ran in (kept relative when that folder is unknown)."""
    if path.startswith(("/", "~")) or not base:
        return posixpath.normpath(path) if path.startswith("/") else path
    return posixpath.normpath(posixpath.join(base, path))


def names_bare_file(token: str) -> bool:
    """A path whose last part is a file people name without an extension (``Makefile``) or a dotfile with a
    further part (``.env.local.example``)."""
    name = token.rstrip("/").rsplit("/", 1)[-1]
    return name in _BARE_FILES or _dotted_dotfile(name)


def _dotted_dotfile(name: str) -> bool:
    """``.env.local``, ``.env.local.example``: a dotfile with a further part names a file, not a folder."""
    return bool(_DOTFILE.match(name)) and "." in name[1:] and name not in _NOT_DOTFILES


def path_operand(token: str, loose: bool = False) -> str:
    """``token`` as a file path when it looks like one (``--out=x.py``, ``tests/a.py::test_b``, ``a.py:12``);
    ``loose``: an operand of a program that takes files (``vim LICENSE``), any name that can be a path."""
    if token.startswith("-"):
        if loose:
            return ""
        token = token.partition("=")[2]
    token = _LINE_REF.sub("", token.split("::", 1)[0].rstrip(":,;"))
    return token if quoted_ok(token, names_file if loose else looks_like_path) else ""


def quoted_ok(token: str, check: Callable[[str], bool]) -> bool:
    """``check`` of a shell word; one with spaces was quoted (``cat 'LM Studio notes.md'``) and is one name."""
    return check(token.replace(" ", "_")) if " " in token.strip() else check(token)


def looks_like_path(token: str) -> bool:
    if token in _NOT_FILES or not _PATH_TOKEN.match(token) or _REV_RANGE.search(token):
        return False
    name = re.split(r"[/\\]", token)[-1]
    if name in _BARE_FILES or name.startswith(("Dockerfile.", "Containerfile.")) or _dotted_dotfile(name):
        return True
    extension = _EXTENSION.search(name)
    if "/" in token or "\\" in token:
        return bool(extension) or token.startswith(("/", "./", "../", "~/", ".\\", "..\\"))
    return extension is not None and extension.group(1).lower() in _FILE_EXTENSIONS


def names_file(token: str) -> bool:
    """A word that names a file where a file is expected (a redirect's target, ``vim``'s operand): any path-like
    word but a folder name we know, a revision range or a number."""
    if looks_like_path(token):
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


def looks_like_file(token: str) -> bool:
    """A path naming a file, not a folder: its last part has an extension."""
    return looks_like_path(token) and bool(_EXTENSION.search(token.rstrip("/").rsplit("/", 1)[-1]))
