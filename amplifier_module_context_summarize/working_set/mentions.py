"""Ids and URLs an agent's text or a tool's output mentions: tickets, CVEs, PRs, commits, beads-style ids."""

from __future__ import annotations

import re

from .records import output_lines

_LEADING_SHA = re.compile(r"([0-9a-f]{7,40})(?:\s|$)")
_URL = re.compile(r"https?://[^\s<>\"'`\\)\]}]+")
_URL_TRAILING = ".,;:!?*"

_TICKET = re.compile(r"(?<![\w/.-])([A-Z][A-Z0-9]{1,9})-([1-9]\d{0,6})(?![\w-])")
# fmt: off
_TICKET_NOT = frozenset({
    "UTF", "SHA", "ISO", "PEP", "GPT", "RFC", "AES", "RSA", "MD", "HTTP", "TLS", "SSL", "IPV", "CP",
    "WIN", "ECMA", "ES", "HS", "RS", "PS", "LATIN", "KOI", "COVID", "DDR", "USB",
})
# fmt: on
_TICKET_HINT = re.compile(r"-(?<=[A-Z0-9]-)[1-9]")
"""``[A-Z0-9]-[1-9]`` somewhere (``_TICKET`` needs it), found from the hyphen: a pattern led by a literal is searched
for that character in C, one led by a class is tried at every position (7 times slower over a session's outputs)."""
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


def first_commit(text: str) -> list[str]:
    """The commit a ``git log --oneline`` / ``git rev-parse`` output starts with (``41dd7fe7 Subject``): the full
    format's ``commit <sha>`` lines are read as identifiers anyway, the one-line format's are not."""
    for line in output_lines(text):
        if not line.isdigit():  # (a wrapper's ``<returncode>0</returncode>`` line)
            match = _LEADING_SHA.match(line)
            return [f"commit {match.group(1)}"] if match and any(c.isdigit() for c in match.group(1)) else []
    return []


def urls_in(text: str) -> list[str]:
    return [url.rstrip(_URL_TRAILING) for url in _URL.findall(text)]


def identifiers_in(text: str, commits: bool) -> list[str]:
    """Ticket, beads, PR and (when ``commits``) commit ids, in the order they appear in ``text``.

    Each pattern runs only where a plain substring (or a simpler pattern) it needs is present: tool outputs
    are long, and most hold none of them.
    """
    commits = commits and ("ommit" in text or "OMMIT" in text or "[" in text)
    if not commits and "-" not in text and "#" not in text:  # every other kind needs one (most texts hold none)
        return []
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
    if commits:
        for match in _COMMIT.finditer(text):
            sha = match.group(1) or match.group(2)
            if any(c.isdigit() for c in sha):
                found.append((match.start(), f"commit {sha}"))
    if len(found) < 2:
        return [item for _, item in found]
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
