"""Files a patch or a change list names (``apply_patch``, unified diffs, structured edit lists), and the files a
search's output lists."""

from __future__ import annotations

import re
from typing import Any

from .definitions import changed_names
from .paths import is_path_value, join_path, looks_like_file
from .records import DELETE, EDIT, MOVE, READ, WRITE, Definitions, FileAction

HITS_PER_SEARCH = 50
"""Files a single search result may add (a search listing thousands of files adds its first ones)."""
_PATCH_HEADER = re.compile(r"^\*\*\* (Add|Update|Delete) File: (\S+)|^\*\*\* Move to: (\S+)|^(---|\+\+\+) (\S+)")


def patch_changes(text: str, base: str | None) -> tuple[list[FileAction], list[Definitions]]:
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
            files.append(FileAction({"Add": WRITE, "Update": EDIT, "Delete": DELETE}[verb], join_path(base, path)))
            current = sides.setdefault(join_path(base, path), ([], [])) if verb != "Delete" else None
        elif moved and updating:
            files.append(FileAction(MOVE, join_path(base, updating), join_path(base, moved)))
        elif marker == "---":
            old = "" if diff_path == "/dev/null" else _strip_diff_prefix(diff_path)
        elif marker == "+++":
            if diff_path == "/dev/null":
                if old:
                    files.append(FileAction(DELETE, join_path(base, old)))
            else:
                files.append(FileAction(EDIT if old else WRITE, join_path(base, _strip_diff_prefix(diff_path))))
                current = sides.setdefault(join_path(base, _strip_diff_prefix(diff_path)), ([], []))
            old = ""
    return files, [(path, *changed_names(path, ["\n".join(a)], ["\n".join(r)])) for path, (a, r) in sides.items()]


_CHANGE_KINDS = {"add": WRITE, "create": WRITE, "update": EDIT, "modify": EDIT, "delete": DELETE, "remove": DELETE}


def listed_changes(changes: Any, base: str | None) -> list[FileAction]:
    """Files a list of changes names (``codex exec``'s ``file_change``: ``[{"path", "kind"}]``, the kind a word or
    ``{"type", "move_path"}``)."""
    found: list[FileAction] = []
    for change in changes if isinstance(changes, list) else ():
        path = change.get("path") if isinstance(change, dict) else None
        if not isinstance(path, str) or not is_path_value(path):
            continue
        kind = change.get("kind")
        moved = kind.get("move_path") if isinstance(kind, dict) else None
        kind = kind.get("type") if isinstance(kind, dict) else kind
        action = _CHANGE_KINDS.get(kind.lower(), EDIT) if isinstance(kind, str) else EDIT
        found.append(FileAction(action, join_path(base, path.strip())))
        if isinstance(moved, str) and is_path_value(moved):
            found.append(FileAction(MOVE, join_path(base, path.strip()), join_path(base, moved.strip())))
    return found


def _strip_diff_prefix(path: str) -> str:
    return path[2:] if path.startswith(("a/", "b/")) else path


def search_hits(text: str) -> list[FileAction]:
    """Files a search result names at the start of its lines (``path`` or ``path:line:match``)."""
    hits: list[FileAction] = []
    seen: set[str] = set()
    for line in text.splitlines():
        candidate = line.strip().split(":", 1)[0].strip()
        if candidate not in seen and looks_like_file(candidate):
            seen.add(candidate)
            hits.append(FileAction(READ, candidate))
            if len(hits) >= HITS_PER_SEARCH:
                break
    return hits
