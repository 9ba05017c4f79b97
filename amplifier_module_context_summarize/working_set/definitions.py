"""Definitions a file change adds, rewrites or removes: the functions, classes and constants an agent wrote.

A summary that says "edited lib/x.ex" leaves the agent to re-read the file to find what it wrote there; the
names of what it defined (``compute_expand_groups``, ``@default_visible_lines``, ``spotter_generate_traceparent``)
are the exact strings it carries on with. They are read from the text a write or edit call sends (the new
content, and the old one an edit replaces), by the file's extension, with one line-start pattern per kind of
definition in the common languages; files of other kinds (Markdown, JSON, YAML) have none. Plain pattern
matching like the rest of the ledger: the same call always gives the same names.
"""

from __future__ import annotations

import posixpath
import re

MAX_PER_TEXT = 40
"""Names one text may give (a whole generated module gives its first ones)."""

_PY = (r"^\s*(?:async\s+)?def\s+([A-Za-z_]\w*)", r"^\s*class\s+([A-Za-z_]\w*)")
_JS = (
    r"^\s*(?:export\s+)?(?:default\s+)?(?:async\s+)?function\s*(?:\*\s*)?([A-Za-z_$][\w$]*)",
    r"^\s*(?:export\s+)?(?:default\s+)?(?:declare\s+)?(?:abstract\s+)?(?:class|interface|enum|type)\s+([A-Za-z_$][\w$]*)",
    r"^\s*(?:export\s+)?(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*(?::[^=]+)?=\s*(?:async\s*)?"
    r"(?:function\b|\([^)]*\)\s*(?::[^=]+)?=>|[A-Za-z_$][\w$]*\s*=>)",
)
_ELIXIR = (
    r"^\s*(?:def|defp|defmacro|defmacrop|defguard|defguardp|defdelegate)\s+([a-z_][\w]*[?!]?)",
    r"^\s*(?:defmodule|defprotocol|defimpl)\s+([A-Z][\w.]*)",
    r"^\s*@([a-z_]\w*)\s+[^\s]",
)
_ELIXIR_NOT = frozenset(
    {
        "moduledoc", "doc", "spec", "impl", "type", "typep", "opaque", "typedoc", "callback", "macrocallback",
        "behaviour", "derive", "enforce_keys", "deprecated", "dialyzer", "compile", "on_load", "before_compile",
        "after_compile", "external_resource", "vsn", "file", "optional_callbacks", "tag", "moduletag",
        "describetag", "endpoint", "router", "params", "requirements", "shortdoc", "preferred_cli_env",
    }
)  # fmt: skip
"""Module attributes that annotate rather than define (docs, specs, test tags)."""
_RUBY = (r"^\s*def\s+(?:self\.)?([A-Za-z_]\w*[?!=]?)", r"^\s*(?:class|module)\s+([A-Z][\w:]*)")
_GO = (r"^func\s+(?:\([^)]*\)\s*)?([A-Za-z_]\w*)", r"^type\s+([A-Za-z_]\w*)")
_RUST = (
    r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?fn\s+([A-Za-z_]\w*)",
    r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:struct|enum|trait|type|mod|union)\s+([A-Za-z_]\w*)",
)
_SHELL = (r"^\s*(?:function\s+)?([A-Za-z_][\w:.-]*)\s*\(\)\s*(?:\{\s*)?$", r"^\s*function\s+([A-Za-z_][\w:.-]*)")
_MODIFIERS = (
    r"(?:(?:public|private|protected|internal|fileprivate|static|final|abstract|sealed|open|data|override"
    r"|suspend|inline|async|virtual|partial)\s+)*"
)
_JVM = (
    rf"^\s*{_MODIFIERS}(?:class|interface|enum|record|struct|object|trait|protocol|extension)\s+([A-Za-z_]\w*)",
    rf"^\s*{_MODIFIERS}(?:fun|func|def)\s+(?:<[^>]*>\s*)?(?:[\w.]+\.)?([A-Za-z_]\w*)",
    r"^\s*(?:(?:public|private|protected|static|final|synchronized|abstract|override|async|virtual)\s+)++"
    r"[\w<>\[\],.? ]+[ \t]([A-Za-z_]\w*)[ \t]*\(",
)
_C = (r"^\s*#\s*define\s+([A-Za-z_]\w*)", r"^\s*(?:typedef\s+)?(?:struct|enum|union|class)\s+([A-Za-z_]\w*)\s*[{:]")
_PHP = (
    r"^\s*(?:(?:public|private|protected|static|abstract|final)\s+)*function\s+([A-Za-z_]\w*)",
    r"^\s*(?:abstract\s+|final\s+)?(?:class|interface|trait|enum)\s+([A-Za-z_]\w*)",
)

_COMPILED = {
    extension: re.compile("|".join(f"(?:{p})" for p in patterns))
    for extensions, patterns in (
        (("py", "pyi"), _PY),
        (("js", "jsx", "ts", "tsx", "mjs", "cjs", "vue", "svelte"), _JS),
        (("ex", "exs"), _ELIXIR),
        (("rb",), _RUBY),
        (("go",), _GO),
        (("rs",), _RUST),
        (("sh", "bash", "zsh"), _SHELL),
        (("java", "kt", "kts", "scala", "cs", "swift", "dart"), _JVM),
        (("c", "h", "cc", "cpp", "hpp"), _C),
        (("php",), _PHP),
    )
    for extension in extensions
}
"""Per file extension, one pattern: its language's line-start patterns as alternatives."""
MAX_LINE_CHARS = 400
"""Longest part of one line the patterns read: a definition's name comes early in its line.

The patterns run on one line at a time, each from the line's start, so no pattern can scan from one line
into the next (``^\\s*`` over thousands of blank lines did, once per line: quadratic), and each of them is
linear in the line it reads; the cap keeps a single huge line cheap too. A definition whose head spans
lines (a multi-line parameter list) is therefore not read."""


def language_of(path: str) -> str:
    """The key of ``path``'s definition patterns ("" when its kind has none)."""
    name = posixpath.basename(path)
    extension = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    return extension if extension in _COMPILED else ""


def names_in(text: str, path: str) -> list[str]:
    """The names ``text`` defines, in order, once each, as code of ``path``'s kind."""
    language = language_of(path)
    if not language or not text:
        return []
    found: dict[str, None] = {}
    pattern = _COMPILED[language]
    for line in text.splitlines():
        match = pattern.match(line[:MAX_LINE_CHARS]) if line and not line.isspace() else None
        if match is None:
            continue
        name = next((g for g in match.groups() if g), "")
        if not name or (name.startswith("__") and name.endswith("__")):
            continue
        if language in ("ex", "exs") and match.group(0).lstrip().startswith("@"):
            if name in _ELIXIR_NOT:
                continue
            name = "@" + name
        found.setdefault(name, None)
        if len(found) >= MAX_PER_TEXT:
            break
    return list(found)


def changed_names(path: str, new: list[str], old: list[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(names written, names removed) by a change of ``path`` from the texts ``old`` to ``new`` (an edit's two sides).

    Every name the new text defines was written (added, or its definition line rewritten); a name only the old
    text defines was removed.
    """
    written = tuple(dict.fromkeys(n for text in new for n in names_in(text, path)))
    kept = set(written)
    return written, tuple(n for n in dict.fromkeys(n for text in old for n in names_in(text, path)) if n not in kept)
