"""``Source.of`` reads a transcript with its regexes run once each and its words set-built in C (issue 48: 9.5 s of
a cold first request went to reading each ask's transcript a match at a time). The source it builds must be the one
the match-at-a-time reading built, on any text: the reference below is that reading, kept verbatim."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from amplifier_module_context_summarize.summarizer import grounding as g
from amplifier_module_context_summarize.summarizer.grounding import Source, check


def reference_of(*texts: str | None) -> Source:
    """``Source.of`` as it was before issue 48 (a set add per regex match)."""
    readings = [g._nfc(text) for text in texts if text]
    atoms: set[str] = set()
    tokens: set[str] = set()

    def read(text: str) -> None:
        for match in g._ATOM.finditer(text):
            word = match.group()
            atoms.add(word.lower())
            if "_" in word:
                atoms.update(part.lower() for part in word.split("_") if part)
            if not word.islower():
                atoms.update(part.lower() for part in g._CAMEL_PART.findall(word))
        for match in g._TOKEN.finditer(text):
            token = match.group().strip(".-~").lower()
            if token:
                tokens.add(token)

    for text in readings:
        read(text)
        if "\\" in text and (unescaped := g._unescaped(text)) != text:
            read(unescaped)
    squashed = {g._squash(t) for t in tokens} | {g._squash(a) for a in atoms}
    said: Counter[str] = Counter(
        key
        for text in readings
        for line in text.splitlines()
        for sentence in g._SENTENCE_END.split(line)
        if (key := g._repeat_key(sentence)) is not None
    )
    repeated = {key: n for key, n in said.items() if n > 1}
    markers = {match.group().lower() for text in readings for match in g._STATE_MARKERS.finditer(text)}
    entries = {
        g._entry_key(m) for text in readings for m in g._ENTRY_REF.finditer(text) if not g._is_header_line(text, m)
    }
    return Source(
        frozenset(atoms), frozenset(tokens), frozenset(squashed), repeated, frozenset(markers), frozenset(entries)
    )


VARIED = [
    "",
    "plain prose. Said twice. Said twice. said twice!  Done.",
    "[#1 USER]\nFix `src/app.py` and ./tests/test_app.py; run $ pytest -q --maxfail=1\n\n[#2 ASSISTANT]\nOK.",
    'args {"path": "C:\\\\Users\\\\Zoë\\\\报告.md", "text": "line\\nnext \\u62a5\\u544a \\ud83d\\ude00 \\"q\\""}',
    "lone surrogates \ud800 and \udfff mid-word a\udc80b, then a pair \ud83d\ude00",
    "camelCase PascalCaseNameHere HTTPServerError snake_case_name __dunder__ _lead trail_ a__b x_1_y",
    "Café e\u0301t\u00e9 (decomposed) Ｆｕｌｌｗｉｄｔｈ ǅungla ß straße İstanbul ﬁle.py K\u212a",
    "~/.config/app.toml /api/v1/hooks ../up.one .hidden- -flag --long-flag ~tilde~ a.b.c Port.open",
    "lines\r\nwith\rcarriage\x0breturns\x0cand\x1cseps\x85next\u2028line\u2029para. End!\tTabbed? Yes.",
    "[CONTEXT SUMMARY] and [context truncated: 3 messages] then [#41 USER] mid-line \\[#7 USER] escaped",
    '[tool call call_1] read_file({"path": "a.py"})\n[tool result call_1] 1\timport os\n   2\tdef f(): pass',
    "repeat this long sentence here.\nrepeat this long sentence here.\n- Repeat this long sentence here",
    "\\\\n stays \\\\u0041 literal \\u0041 \\uD83D\\uDE00 \\ud800 \\/ \\b \\f \\t",
]

# fmt: off
_PIECES = [
    "a", "Z", "_", "-", ".", "~", "/", "\\", "\\n", "\\u00e9", "\\ud83d", "\\ude00", '\\"', " ", "\t", "\n", "\r\n",
    "\r", "\u2028", "\x85", ". ", "! ", "? ", "é", "e\u0301", "报", "\ud800", "\udfff", "K", "İ", "ß", "ﬁ", "0", "42",
    "fooBar", "FooBarBaz", "snake_case", "HTTPError", "src/app.py", "`code`", "[#3 USER]", "[CONTEXT SUMMARY]",
    "- ", "1. ", "repeat me here", "[tool call x]",
]
# fmt: on


def _random_text(rng: random.Random) -> str:
    return "".join(rng.choice(_PIECES) for _ in range(rng.randrange(0, 120)))


@pytest.mark.parametrize("text", VARIED)
def test_source_of_equals_the_match_at_a_time_reading(text: str) -> None:
    assert Source.of(text) == reference_of(text)
    assert Source.of(text, "previous: fooBar.", None, text[::-1]) == reference_of(
        text, "previous: fooBar.", None, text[::-1]
    )


def test_source_of_equals_the_reference_on_random_mixtures() -> None:
    rng = random.Random(48)
    for _ in range(400):
        texts = [_random_text(rng) for _ in range(rng.randrange(1, 4))]
        assert Source.of(*texts) == reference_of(*texts), texts


def test_verdicts_on_a_source_are_unchanged() -> None:
    """A check against the new source gives the verdict a check against the reference gives."""
    span = "\n".join(VARIED)
    answer = "Edited `src/app.py` and fooBar; ran pytest. Invented `ghost_module.py`. repeat this long sentence here."
    assert check(answer, Source.of(span)) == check(answer, reference_of(span))
