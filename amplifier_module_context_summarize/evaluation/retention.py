"""Artifact retention: of the files, commands and errors a view no longer shows verbatim, the share it still names.

Measured on the view of every request that compacted. The groups before the view's verbatim tail (summarized,
masked or dropped) are read for artifacts with the module's own ledger (``working_set.facts.extract``), each group
once; an artifact counts as retained when the view's text names it anywhere (summary, placeholder, pinned
request or tail). Artifacts the verbatim tail itself contains are left out: the tail shows them as they are.

Each artifact is filed by the compactions run since it was last seen verbatim, the compaction that took its
last occurrence out of the tail being the first: after 1, 2, 3–4, 5–7 and 8+ compactions.

Matching: paths in the one spelling the working set gives them (``working_set.canonical``: relative to the
session's project root, normalised; Claude Code mixes absolute and relative forms of one file), and named
either whole or by file name on a line that names its folder (``working_set.named_files``: how the working
set lists a folded folder, ``- lib/x/ — edited: a.ex, b.ex``; the compaction's own ``artifacts_kept`` count
reads it the same way); a one-file read like ``sed -n '95,115p' a.py`` either whole or by the rest of its
command on its file's line of folded reads (``reads.named_reads``: ``- a.py — read (ok): `sed -n '95,115p'` ``);
all items and the view with whitespace collapsed and lower-cased; commands and
errors on their first ``MATCH_CHARS`` characters, since the ledger, summaries and masking placeholders clip
long ones; a command that ran in the project root without its ``cd <root> &&``, as the working set shows it.
The view is searched as written and with JSON string escapes undone, since call arguments and
placeholder lines are JSON (a command's quotes show as ``\\"`` there).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..core.history import History
from ..core.messages import Message
from ..working_set.facts import extract
from ..working_set.fold import WorkingSet, canonical, command_in_root, named_files
from ..working_set.reads import named_reads, read_form
from .scoring import view_text

KINDS = ("files", "commands", "errors")
BUCKETS = ("1", "2", "3-4", "5-7", "8+")
MATCH_CHARS = 80
"""Commands and errors are matched on this head: masking keeps 80 characters of a clipped argument."""
MISSING_KEPT = 30
"""Artifacts missing from the last measured view that the results list."""

Artifact = tuple[str, str]
"""(kind, matching key)."""
_ESCAPE = re.compile(r'\\(["\\/bfnrt]|u[0-9a-fA-F]{4})')
_UNESCAPED = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def bucket(compactions: int) -> str:
    if compactions <= 2:
        return str(max(compactions, 1))
    if compactions <= 4:
        return "3-4"
    if compactions <= 7:
        return "5-7"
    return "8+"


@dataclass
class Tally:
    named: int = 0
    total: int = 0

    def add(self, named: bool) -> None:
        self.named += named
        self.total += 1

    @property
    def share(self) -> float | None:
        return self.named / self.total if self.total else None

    def as_dict(self) -> dict[str, Any]:
        return {"named": self.named, "total": self.total, "share": self.share}


def flatten(text: str) -> str:
    return " ".join(text.split()).lower()


def unescape(text: str) -> str:
    """``text`` with JSON string escapes undone (one level)."""

    def one(match: re.Match[str]) -> str:
        code = match.group(1)
        return chr(int(code[1:], 16)) if code[0] == "u" else _UNESCAPED.get(code, code)

    return _ESCAPE.sub(one, text)


def searchable(view: list[Message]) -> str:
    """The view's text as retention looks artifacts up in it: flattened, as written and unescaped."""
    text = view_text(view)
    return f"{flatten(text)}\n{flatten(unescape(text))}"


def artifact_key(kind: str, item: str, root: str | None) -> str:
    """The form an artifact is looked for in a view's (flattened, lower-cased) text; "" to skip it."""
    if kind == "files":
        path = canonical(item, root)
        if item.endswith("/") or path in (".", "/"):
            return ""
        return flatten(path)
    if kind == "commands":
        item = command_in_root(item, root)
    return flatten(item).removesuffix("…").strip()[:MATCH_CHARS]


def artifacts_of(messages: list[Message]) -> dict[str, list[str]]:
    """Files (moves name both paths), commands and error lines the ledger finds in ``messages``."""
    facts = extract(messages)
    files = [p for f in facts.files for p in (f.path, f.target) if p]
    commands = [o.key for o in facts.outcomes if o.command]
    errors = [o.error for o in facts.outcomes if o.error]
    return {"files": files, "commands": commands, "errors": errors}


class GroupArtifacts:
    """The artifacts of each closed group of one session, worked out once for all the strategies replaying it.

    Every strategy's history groups the same messages the same way, so group ``g`` holds the same artifacts
    whichever manager asks. ``root`` is the project root of the whole session, so that every measurement
    normalises paths alike.
    """

    def __init__(self, root: str | None) -> None:
        self.root = root
        self._known: dict[int, dict[Artifact, str]] = {}

    @classmethod
    def of_session(cls, messages: list[Message]) -> GroupArtifacts:
        working_set = WorkingSet()
        working_set.add(extract(messages))
        return cls(working_set.root())

    def group(self, history: History, g: int) -> dict[Artifact, str]:
        """Artifacts of group ``g`` (matching key → display form); the newest group may still grow: not kept."""
        known = self._known.get(g)
        if known is not None:
            return known
        group = history.groups[g]
        found = self._artifacts(artifacts_of(history.messages[group.start : group.end]))
        if g < len(history.groups) - 1:
            self._known[g] = found
        return found

    def read_form(self, command: str) -> tuple[str, str] | None:
        """A one-file read's file (in the working set's spelling) and the rest of the command, else None."""
        form = read_form(command_in_root(command, self.root))
        return None if form is None else (canonical(form[0], self.root), form[1])

    def _artifacts(self, artifacts: dict[str, list[str]]) -> dict[Artifact, str]:
        found: dict[Artifact, str] = {}
        for kind in KINDS:
            for item in artifacts[kind]:
                key = artifact_key(kind, item, self.root)
                if key:
                    found.setdefault((kind, key), item)
        return found


@dataclass
class Retention:
    """Tallies of one run (or a sum of runs): overall, per kind, per bucket."""

    measurements: int = 0
    overall: Tally = field(default_factory=Tally)
    kinds: dict[str, Tally] = field(default_factory=lambda: {k: Tally() for k in KINDS})
    buckets: dict[str, Tally] = field(default_factory=lambda: {b: Tally() for b in BUCKETS})
    missing: list[dict[str, Any]] = field(default_factory=list)
    """Artifacts the last measured view did not name, in the order first seen (at most ``MISSING_KEPT``)."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "measurements": self.measurements,
            "overall": self.overall.as_dict(),
            "kinds": {k: t.as_dict() for k, t in self.kinds.items()},
            "buckets": {b: t.as_dict() for b, t in self.buckets.items()},
            "missing": self.missing,
        }


def combine(parts: Iterable[dict[str, Any] | None]) -> dict[str, Any] | None:
    """The sum of several runs' ``Retention.as_dict()`` (None when none was measured)."""
    total, seen = Retention(), False
    for part in parts:
        if not part:
            continue
        seen = True
        total.measurements += part["measurements"]
        for tally, counts in [
            (total.overall, part["overall"]),
            *((total.kinds[k], part["kinds"][k]) for k in KINDS),
            *((total.buckets[b], part["buckets"][b]) for b in BUCKETS),
        ]:
            tally.named += counts["named"]
            tally.total += counts["total"]
    if not seen:
        return None
    data = total.as_dict()
    data.pop("missing")
    return data


class RetentionTracker:
    """Follows one replay: where the verbatim tail stood after each compaction, and what left it when."""

    def __init__(self, artifacts: GroupArtifacts) -> None:
        self.artifacts = artifacts
        self.result = Retention()
        self._tail = 0
        """Groups before this have left the verbatim tail."""
        self._left_at: list[int] = []
        """Compaction (1-based) at which each group left the verbatim tail."""
        self._last_seen: dict[Artifact, tuple[int, str]] = {}
        """Artifacts of the groups that left the tail: the last such group holding each, and its display form."""
        self._read_forms: dict[str, tuple[str, str] | None] = {}
        """Per command key, its file and the rest when it is a one-file read (``reads.read_form``)."""

    def measure(self, history: History, tail_start: int, compactions: int, view: list[Message]) -> None:
        """Tally the view of the request that ran compaction ``compactions``; its tail starts at ``tail_start``."""
        for g in range(self._tail, tail_start):
            self._left_at.append(compactions)
            for artifact, item in self.artifacts.group(history, g).items():
                self._last_seen[artifact] = (g, item)
                if artifact[0] == "commands" and artifact[1] not in self._read_forms:
                    self._read_forms[artifact[1]] = self.artifacts.read_form(item)
        self._tail = max(self._tail, tail_start)
        in_tail: set[Artifact] = set()
        for g in range(self._tail, len(history.groups)):
            in_tail.update(self.artifacts.group(history, g))
        text = searchable(view)
        gone = [a for a in self._last_seen if a not in in_tail]
        folded = [key for kind, key in gone if kind == "files" and key not in text]
        by_folder = set(named_files(view_text(view), folded)) if folded else set()
        reads = [
            (key, *form)
            for kind, key in gone
            if kind == "commands" and key not in text and (form := self._read_forms.get(key))
        ]
        by_file = named_reads(view_text(view), reads, MATCH_CHARS) if reads else set()
        result = self.result
        result.measurements += 1
        missing: list[dict[str, Any]] = []
        for artifact in gone:
            g, item = self._last_seen[artifact]
            named = artifact[1] in text or artifact[1] in (by_folder if artifact[0] == "files" else by_file)
            age = compactions - self._left_at[g] + 1
            result.overall.add(named)
            result.kinds[artifact[0]].add(named)
            result.buckets[bucket(age)].add(named)
            if not named and len(missing) < MISSING_KEPT:
                missing.append({"kind": artifact[0], "artifact": item, "compactions": age})
        result.missing = missing
