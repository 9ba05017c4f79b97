"""Reads of one file, folded per file: ``sed -n '95,115p' a.py`` and ``grep -n x a.py`` become one line for ``a.py``.

An agent exploring code runs dozens of reads (``sed -n``, ``grep -n … -B5 -A20``, ``head``), most of which
succeed; each on a line of its own repeats the path and the outcome. The working set lists the successful
ones per file instead (``- astroid/builder.py — read (ok): `sed -n '95,115p'` · `grep -n "x" -B5` ``):
the line names the file once and every read by the rest of its command, so nothing is lost and a session's
exploration costs about half the room. ``named_reads`` is the other half of the contract: a command counts
as named by such a line (``artifacts_kept``, the evaluation's retention), as a file counts as named on its
folder's line.

Only what is surely one read of one file is folded: a simple command (no pipe, list, redirection,
substitution or heredoc) of a known reader, whose operands after its pattern or script are a single path.
"""

from __future__ import annotations

import posixpath
import re

READ_GROUP = " — read (ok): "
"""Joins a file to its folded reads on a working-set line; ``named_reads`` looks for it."""
_SEARCHES = ("grep", "egrep", "fgrep", "rg")
_PATTERN_FIRST = frozenset({"sed", *_SEARCHES})
"""Readers whose first operand is a pattern or script, not a file (unless ``-e``/``-f`` gave it)."""
_READERS = _PATTERN_FIRST | {"cat", "head", "tail", "nl", "wc"}
_SEARCH_VALUES = frozenset({"-A", "-B", "-C", "-m", "-e", "-f", "-g", "-t", "--max-count", "--context"})
_VALUE_FLAGS = {
    "head": frozenset({"-n", "-c"}),
    "tail": frozenset({"-n", "-c"}),
    "sed": frozenset({"-e", "-f"}),
    **dict.fromkeys(_SEARCHES, _SEARCH_VALUES),
}
"""Per reader, the flags that take the next word as their value when written apart (``-A 20``, ``head -n 40``)."""
_NOT_SIMPLE = re.compile(r"[|&;<>()`$\n]")
_WORD = re.compile(r"""(?:[^\s'"\\]|\\.|'[^']*'|"(?:[^"\\]|\\.)*")+""")
_GLOB = re.compile(r"[*?\[\]{}]")
_PATH = re.compile(r"^[\w.~+@/-]+$")


def read_form(command: str) -> tuple[str, str] | None:
    """``(path, the command without it)`` for a simple read of one file, else None.

    The path is as written (``working_set.canonical`` spells it), the rest keeps its own quoting with
    whitespace collapsed: ``grep -n "x" a.py -B5`` gives ``("a.py", 'grep -n "x" -B5')``.
    """
    if _NOT_SIMPLE.search(command):
        return None
    words = _WORD.findall(command)
    if len(words) < 2 or " ".join(words) != " ".join(command.split()):  # an unbalanced quote: not surely one read
        return None
    program = posixpath.basename(words[0])
    if program not in _READERS or (program == "sed" and any(w.startswith("-i") for w in words[1:])):
        return None
    pattern_given = program in _PATTERN_FIRST and any(w in ("-e", "-f") or w.startswith("--regexp") for w in words)
    operands: list[int] = []
    after_flag = False
    for i, word in enumerate(words[1:], start=1):
        if after_flag:
            after_flag = False
        elif word.startswith("-") and word != "-":
            after_flag = word in _VALUE_FLAGS.get(program, ())
        else:
            operands.append(i)
    if program in _PATTERN_FIRST and not pattern_given:
        operands = operands[1:]
    if len(operands) != 1:
        return None
    path = words[operands[0]]
    if not _PATH.match(path) or _GLOB.search(path) or path in (".", "/") or path.endswith("/"):
        return None
    rest = " ".join(w for i, w in enumerate(words) if i != operands[0])
    return path, rest


def named_reads(text: str, commands: list[tuple[str, str, str]], match_chars: int) -> set[str]:
    """Which ``(key, path, rest)`` commands ``text`` names on a folded read line: its path and its rest on one line.

    ``path`` is spelled as the line spells it and ``rest`` comes from ``read_form``; both are compared with
    whitespace collapsed and lower-cased, ``rest`` on its first ``match_chars`` characters (lines clip).
    """
    if not commands:
        return set()
    lines = [" ".join(line.split()).lower() for line in text.lower().splitlines() if READ_GROUP.strip() in line]
    found = set()
    for key, path, rest in commands:
        spelled = f"- {path.lower()}{READ_GROUP}"
        wanted = f"`{' '.join(rest.split()).lower()[:match_chars]}"
        if any(line.startswith(spelled) and wanted in line for line in lines):
            found.add(key)
    return found
