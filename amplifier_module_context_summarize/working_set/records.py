"""The records facts are made of (file actions, call outcomes, ``Facts``), the call being paired with its result,
and the two text helpers every part of the extraction uses."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

ERROR_MAX_CHARS = 200
KEY_MAX_CHARS = 200
"""Longest command or tool key kept (a one-line command is rarely longer; a script pasted inline is)."""

WRITE, EDIT, READ, USE, DELETE, MOVE = "write", "edit", "read", "use", "delete", "move"
"""File actions: ``write`` creates or overwrites, ``use`` names a file in a command (``git add``, ``pytest``)."""
_TAG = re.compile(r"</?[\w-]+>")


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
class Call:
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
    ``touch``) of commands that certainly ran (``shell_files``)."""
    after_cd: frozenset[int] = frozenset()
    """Likewise, of commands that ran unless a ``cd`` before them failed (``cd /repo && cat > x.py <<EOF``)."""


def clip(text: str, limit: int) -> str:
    """One line of at most ``limit`` characters, so one huge item cannot crowd out the rest."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: max(limit - 1, 0)].rstrip() + "…"


def output_lines(text: str) -> list[str]:
    """The output's non-empty lines without wrapper tags (mini-swe-agent's ``<returncode>``, Claude Code's)."""
    lines = text.splitlines()
    if "<" in text:  # (most outputs hold no tag: their lines are not searched for one)
        lines = [_TAG.sub("", line) for line in lines]
    return [line for line in (line.strip() for line in lines) if line]
