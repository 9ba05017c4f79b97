"""Whether a summary stays with what it summarizes: no invented names, no loops, no forged markup.

A small model asked to summarize an agent session answers with files and functions that appear nowhere in it
(``Todo_filterables``, ``toggle_filters()``), one line repeated a dozen times, or copies of the transcript's own
markup (``[tool call …]``, ``[tool output masked: …]``). Such a summary would be cached and shown to the agent as
the record of its work. ``check`` finds these problems and cuts the answer to the sentences that have none:

* **Names.** A name is what a summary cannot paraphrase: the content of a backticked span or a fenced code block
  (each word in it), a file-like token (a dot-extension or a slash: ``src/app.py``, ``/api/hooks``), an identifier
  in snake_case, camelCase or PascalCase of three or more humps (``toggle_filters``, ``assertEqual``,
  ``ActiveSessionRegistry``), a word glued to ``(`` (``render(``), a ``--flag``, a recall handle, and the
  command after a ``$`` prompt. Plain English words are never names, whatever their case
  (``compiled/tested/committed`` neither).
  A name is grounded when the span, the previous summary or the user's guidance (``summary_instructions``, the
  compaction's focus: the model was given them too) has it, compared as the model reads it: without case, in one
  Unicode normal form (NFC: macOS writes file names decomposed), with a JSON string's escapes read as the characters
  they stand for (``\\u62a5``, ``\\n``) as well as as written, as a path suffix
  (``app.py`` for ``src/app.py``), with ``_`` and ``-`` ignored (``session_end`` for ``session-end``); a dotted
  name that is not a file (``Port.open``) also when each of its parts is there, and a path when each of its
  components is.
* **Loops.** A sentence (three or more words, or 16 characters) said ``REPEAT_LIMIT`` times or more (more than
  the span itself says it), repeats
  that make up ``REPEAT_SHARE`` of the text, one line of any length (a heading too) said ``REPEAT_LIMIT`` times in a
  row, or one word said ``WORD_RUN_LIMIT`` times in a row. A strong model's
  summary repeats short lines ("Committed and pushed") a few times; a looping model repeats one line 7-20 times.
* **Markup.** The module's own markup written as text where the span has none like it: ``[CONTEXT SUMMARY]`` or
  ``[CONTEXT TRUNCATED]`` where the span never says that marker, a ``[tool call X]`` / ``[tool result X]`` /
  ``TOOL RESULT X:`` line whose id is not the span's, a ``[tool output masked: …]`` or ``[clipped: …]`` placeholder
  without one of the span's handles, and a transcript entry header (``[#41 USER]``, ``[#729 #9FBQ…]``: the
  numbered header lines ``prompts.render_transcript`` writes) that the span's words do not hold. In the view they
  would pass for real ones: spliced into the summary message, a header makes what follows it speak as a turn of
  its own. The transcript's own header lines are the module's structure, not the span's words, so copying one
  (real number and role included) is forged; a header the span's text itself holds (mid-line, or escaped as
  ``\\[#7 USER]``) is an echo, as is a line copied from the span with its real id, and inside backticks markup
  is a quote (its names are checked like any others). The sentence carrying forged markup is cut, not stripped of
  it: after a forged header the words are the model's invented turn, not a summary. The transcript fences are
  neutralised wherever a summary is fenced again (``prompts.fence_safe``), so they are not markup here.

Everything here is linear in the text: the source is read once into sets of tokens, the summary once into
sentences, and every pattern is a bounded character class or a literal.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..backends.base import Fault
from ..core.state import SUMMARY_MARKER, TRUNCATION_MARKER

REPEAT_LIMIT = 5
"""A sentence said this many times makes the summary a loop."""
REPEAT_SHARE = 0.3
"""Repeated copies of sentences making up this share of the text also do."""
WORD_RUN_LIMIT = 8
"""One word said this many times in a row does ("HEREBY HEREBY HEREBY …")."""
CUT_KEEP_SHARE = 0.5
"""A faulty answer is accepted cut to its sound sentences when they keep at least this share of its text."""
_EXTENSIONS = (
    "py pyi ipynb js jsx mjs cjs ts tsx vue svelte ex exs erl heex eex rb go rs java kt kts scala c h cc cpp hpp cs "
    "swift m mm php pl lua r sql sh bash zsh fish ps1 bat md rst txt json jsonl yaml yml toml ini cfg conf env lock "
    "xml html htm css scss sass less svg png jpg jpeg gif csv tsv log db sqlite gradle mk cmake dockerfile proto "
    "graphql tf patch diff"
)
FILE_EXTENSIONS = frozenset(_EXTENSIONS.split(" "))
"""Extensions that make a dotted token a file, checked whole; other dotted names (``Port.open``) part by part."""

_STATE_MARKERS = re.compile(
    "|".join(re.escape(m) for m in (SUMMARY_MARKER, TRUNCATION_MARKER.split("{", 1)[0].strip())), re.IGNORECASE
)
"""Markers only the module writes into a view: a summary never has a reason to."""
_TOOL_REF = re.compile(
    r"\[tool (?:call|result)[ \t]{1,4}([^\]\s]{1,120})|^[ \t>*-]{0,8}TOOL RESULT[ \t]{1,4}([\w.:-]{1,120}):"
)
"""A transcript's tool-call line: forged when its id is not the span's."""
_PLACEHOLDER = re.compile(r"\[(?:tool output masked|clipped):([^\]\n]{0,600})", re.IGNORECASE)
"""A masked or clipped placeholder: forged unless it carries a handle of the span."""
_ENTRY_REF = re.compile(r"\[#(\d{1,9})[ \t]+([^\[\]\n]{1,120})\](?!\()")
"""A transcript entry header (``[#41 USER]``), anywhere in a line: forged unless the span's words hold it. A bare
``[#41]`` (an issue) or a Markdown link ``[#41 Fix login](…)`` is not one."""
_JSON_ESCAPE = re.compile(r'\\(?:u([0-9a-fA-F]{4})(?:\\u([dD][c-fC-F][0-9a-fA-F]{2}))?|(["\\/bfnrt]))')
_JSON_SIMPLE = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_ESCAPED_LINE = re.compile(r"^[^\n\\]*\\[^\n]*", re.MULTILINE)
"""A line holding a backslash (anchored at the line start: linear)."""
_HANDLE_IN = re.compile(r"\bm\d{1,9}(?:\.\d{1,6})?-[0-9a-f]{6}\b")
_ATOM = re.compile(r"[A-Za-z0-9_]+")
_TOKEN = re.compile(r"[\w.~-]+")
_PIECE = re.compile(r"[\w./~-]+")
_CAMEL_PART = re.compile(r"[A-Z]{2,}(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_CODE_SPAN = re.compile(r"`([^`\n]{1,400})`")
_FENCE_LINE = re.compile(r"^[ \t]{0,8}(?:```|~~~)")
_SENTENCE_END = re.compile(r"(?<=[.!?])[ \t]+")
_SENTENCE_OR_LINE = re.compile(r"\r\n|[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]|(?<=[.!?])[ \t]+")
"""Where a text's lines (``str.splitlines``) and their sentences (``_SENTENCE_END``) end, in one split."""
_LEAD = re.compile(r"^[\s>*+#-]*(?:\d{1,3}[.)][ \t]+)?")
_SPACES = re.compile(r"\s+")
_HANDLE = re.compile(r"^m\d{1,9}(?:\.\d{1,6})?-[0-9a-f]{6}$")
_PROMPT = re.compile(r"(?:^|[\s(])\$[ \t]+([\w./~-]+)")
_CAMEL = re.compile(r"[a-z][A-Z]")
_PASCAL_HUMPS = re.compile(r"[A-Z][a-z0-9]+")


@dataclass(frozen=True)
class Source:
    """What a summary may name: the tokens of its span and of the summary before it."""

    atoms: frozenset[str]
    """Lower-cased ``[A-Za-z0-9_]`` runs, with their snake and camel parts."""
    tokens: frozenset[str]
    """Lower-cased ``[\\w.~-]`` runs (dotted and hyphenated names whole; a path's components)."""
    squashed: frozenset[str]
    """``tokens`` and ``atoms`` with ``_`` and ``-`` removed."""
    repeated: dict[str, int] = field(default_factory=dict)
    """Sentences the source itself says more than once, and how often: a summary echoing them is not looping."""
    markers: frozenset[str] = frozenset()
    """The view markers (``[context summary]``, lower-cased) the source's words say: a summary may name them too."""
    entries: frozenset[str] = frozenset()
    """Entry headers the source's words hold (``_entry_key``), not its own header lines: a summary may echo them."""

    @classmethod
    def of(cls, *texts: str | None) -> Source:
        """The source of a span's transcript and what else the model was given with it (the previous summary, the
        user's guidance). Each text is read as written and its lines holding a backslash once more with their JSON
        escapes read; both in NFC."""
        readings = [_nfc(text) for text in texts if text]
        atoms: set[str] = set()
        tokens: set[str] = set()
        for text in readings:
            _read_tokens(text, atoms, tokens)
            if "\\" in text:  # only lines with an escape read differently (none spans a line, nor does a token)
                escaped = "\n".join(_ESCAPED_LINE.findall(text))
                if (unescaped := _unescaped(escaped)) != escaped:
                    _read_tokens(unescaped, atoms, tokens)
        squashed = _squashed(tokens) | _squashed(atoms)
        said: Counter[str] = Counter()
        for piece, n in Counter(piece for text in readings for piece in _SENTENCE_OR_LINE.split(text)).items():
            if (key := _repeat_key(piece)) is not None:
                said[key] += n
        repeated = {key: n for key, n in said.items() if n > 1}
        markers = {match.group().lower() for text in readings for match in _STATE_MARKERS.finditer(text)}
        entries = {
            _entry_key(m) for text in readings for m in _ENTRY_REF.finditer(text) if not _is_header_line(text, m)
        }
        return cls(
            frozenset(atoms), frozenset(tokens), frozenset(squashed), repeated, frozenset(markers), frozenset(entries)
        )

    def has(self, name: str) -> bool:
        """Whether ``name`` (a name as ``names_in`` gives it) appears here, up to case and the variations above."""
        lowered = _nfc(name).lower().strip(".-~")
        if not lowered:
            return True
        if lowered in self.tokens or lowered in self.atoms or _squash(lowered) in self.squashed:
            return True
        if "/" in lowered:
            return all(self.has(part) for part in lowered.split("/") if part.strip(".~"))
        if "." in lowered and not _is_file(lowered):
            return all(part.lower() in self.atoms for part in _ATOM.findall(lowered))
        return False


@dataclass(frozen=True)
class Check:
    """The verdict on one answer: ``problem`` is None, ``UNGROUNDED`` or ``DEGENERATE``; ``kept`` is the answer
    cut to its sound sentences and ``kept_share`` how much of its text that is."""

    problem: Fault | None
    kept: str
    kept_share: float
    invented: tuple[str, ...] = ()
    repeated: tuple[str, ...] = ()
    markup: int = 0
    cut: int = 0
    """Sentences the cut left out."""

    @property
    def usable_cut(self) -> bool:
        """Whether the cut answer may stand for the span: most of it survived and it says something."""
        return self.kept_share >= CUT_KEEP_SHARE and any(
            line.strip() and not line.lstrip().startswith("#") for line in self.kept.splitlines()
        )


@dataclass
class _Sentence:
    text: str
    code: bool
    names: list[str] = field(default_factory=list)


def check(summary: str, source: Source) -> Check:
    """Read ``summary`` against ``source`` once: its invented names, loops and forged markup, and the cut (in NFC,
    as the source is read; an accepted answer is returned as written)."""
    written, summary = summary, _nfc(summary)
    lines = _lines(summary)
    counts: Counter[str] = Counter()
    keys: list[list[str | None]] = []
    for sentences in lines:
        row: list[str | None] = []
        for sentence in sentences:
            key = None if sentence.code else _repeat_key(sentence.text)
            if key is not None:
                counts[key] += 1
            row.append(key)
        keys.append(row)
    for key in counts:  # a sentence the span says n times may be said n times
        counts[key] -= source.repeated.get(key, 1) - 1
    total = sum(len(s.text) for sentences in lines for s in sentences) or 1
    repeated_chars = 0.0
    for sentences, row in zip(lines, keys, strict=True):
        for sentence, key in zip(sentences, row, strict=True):
            if key is not None and counts[key] > 1:
                repeated_chars += len(sentence.text) * (counts[key] - 1) / counts[key]
    looping = [k for k, n in counts.items() if n >= REPEAT_LIMIT]
    degenerate = bool(looping) or repeated_chars / total >= REPEAT_SHARE or _word_run(summary) or _line_run(summary)

    invented: dict[str, None] = {}
    markup = 0
    kept_lines: list[str] = []
    kept_chars = 0
    cut = 0
    seen: Counter[str] = Counter()
    for sentences, row in zip(lines, keys, strict=True):
        kept: list[str] = []
        for sentence, key in zip(sentences, row, strict=True):
            bad = [n for n in sentence.names if not source.has(n)]
            invented.update(dict.fromkeys(bad))
            forged = _forges(sentence.text, source)
            markup += forged
            again = key is not None and counts[key] > 1 and seen[key] >= source.repeated.get(key, 1)
            if key is not None:
                seen[key] += 1
            if bad or forged or again or (degenerate and _word_run(sentence.text)):
                cut += 1
                continue
            kept.append(sentence.text)
            kept_chars += len(sentence.text)
        line = " ".join(kept)
        if degenerate and line and kept_lines and _line_key(line) == _line_key(kept_lines[-1]):
            cut += 1  # a line said again right below itself: the loop's copies go, one stays
            continue
        if kept or not sentences:
            kept_lines.append(line)
    problem = Fault.DEGENERATE if degenerate or markup else Fault.UNGROUNDED if invented else None
    text = "\n".join(kept_lines).strip() if problem else written
    return Check(
        problem,
        _drop_empty_sections(text) if problem else text,
        kept_chars / total if problem else 1.0,
        tuple(invented),
        tuple(looping),
        markup,
        cut if problem else 0,
    )


def names_in(text: str) -> list[str]:
    """The names ``text`` uses (see the module docstring), in order, with repeats."""
    return [name for sentences in _lines(text) for sentence in sentences for name in sentence.names]


# ---------------------------------------------------------------- reading the source


def _nfc(text: str) -> str:
    """One spelling for what renders the same: a decomposed ``é`` (macOS file names) or Hangul syllable is composed."""
    return text if text.isascii() or unicodedata.is_normalized("NFC", text) else unicodedata.normalize("NFC", text)


def _unescaped(text: str) -> str:
    """``text`` with a JSON string's escapes read (``\\u62a5`` → 报, a surrogate pair → one character, ``\\n`` → a line
    break), as a model reads tool-call arguments sent as JSON with ``ensure_ascii``; left to right, so ``\\\\n``
    stays a backslash and an ``n``. Linear."""
    return _nfc(_JSON_ESCAPE.sub(_json_char, text))


def _json_char(match: re.Match[str]) -> str:
    high, low, simple = match.groups()
    if simple is not None:
        return _JSON_SIMPLE[simple]
    code = int(high, 16)
    if low is None:
        return chr(code)
    if 0xD800 <= code < 0xDC00:
        return chr(0x10000 + ((code - 0xD800) << 10) + (int(low, 16) - 0xDC00))
    return chr(code) + chr(int(low, 16))


def _read_tokens(text: str, atoms: set[str], tokens: set[str]) -> None:
    """Add the text's atoms and tokens (see ``Source``). The regexes run over the text once each and the words are
    set-built in C; only each distinct word is looked at in Python (a long transcript repeats most of its words)."""
    words = set(_ATOM.findall(text))
    atoms.update(map(str.lower, words))
    for word in words:
        if "_" in word:
            atoms.update(part.lower() for part in word.split("_") if part)
        if not word.islower():
            atoms.update(part.lower() for part in _CAMEL_PART.findall(word))
    found = {token.strip(".-~") for token in set(_TOKEN.findall(text))}
    found.discard("")
    tokens.update(map(str.lower, found))


def _squashed(words: set[str]) -> set[str]:
    """``_squash`` of every word, in C: the words hold no line break (``_ATOM``, ``_TOKEN``), so they are joined by
    one, squashed at once and split again."""
    return set(_squash("\n".join(words)).split("\n")) if words else set()


def _entry_key(match: re.Match[str]) -> str:
    """An entry header as compared: its number and its label, case and spacing aside."""
    return f"{int(match.group(1))} {' '.join(match.group(2).split()).lower()}"


def _is_header_line(text: str, match: re.Match[str]) -> bool:
    """Whether the match is a whole line: a transcript's own header (a body's header-like line is escaped)."""
    start, end = match.span()
    return (start == 0 or text[start - 1] == "\n") and (end == len(text) or text[end] == "\n")


# ---------------------------------------------------------------- reading the summary


def _lines(text: str) -> list[list[_Sentence]]:
    """The summary's lines, each as its sentences with their names; a fenced code block's lines are code."""
    out: list[list[_Sentence]] = []
    in_code = False
    for line in text.splitlines():
        if _FENCE_LINE.match(line):
            in_code = not in_code
            out.append([])
            continue
        if in_code:
            out.append([_Sentence(line, True, _code_names(line))] if line.strip() else [])
            continue
        sentences = [s for s in _SENTENCE_END.split(line) if s.strip()]
        out.append([_Sentence(s, False, _prose_names(s)) for s in sentences])
    return out


def _code_names(code: str) -> list[str]:
    """Every word of code is a name (two or more characters, a letter among them)."""
    names = []
    for match in _PIECE.finditer(code):
        piece = match.group().strip(".-~")
        if len(piece) >= 2 and any(c.isalpha() for c in piece) and not _is_flag_only(piece):
            names.append(piece)
    return names


def _prose_names(sentence: str) -> list[str]:
    names: list[str] = []
    plain_parts: list[str] = []
    last = 0
    for match in _CODE_SPAN.finditer(sentence):
        plain_parts.append(sentence[last : match.start()])
        names += _code_names(match.group(1))
        last = match.end()
    plain_parts.append(sentence[last:])
    for plain in plain_parts:
        for match in _PROMPT.finditer(plain):
            names.append(match.group(1))
        for match in _PIECE.finditer(plain):
            piece = match.group()
            glued_call = plain[match.end() : match.end() + 1] == "("
            piece = piece.strip(".~")
            if piece and (glued_call and _identifier_like(piece) or _is_name(piece)):
                names.append(piece)
    return names


def _is_name(piece: str) -> bool:
    if piece.startswith("--") and len(piece) > 3 and piece[2].isalpha():
        return True
    piece = piece.strip("-")
    if not piece or not any(c.isalpha() for c in piece):
        return False
    if _HANDLE.match(piece):
        return True
    if "/" in piece:
        parts = [p for p in piece.split("/") if p]
        if not parts:
            return False
        rooted = piece.startswith(("/", "./", "~/")) and len(parts) >= 2
        return _is_file(parts[-1]) or rooted or any(_is_identifier(p) or "." in p.strip(".") for p in parts)
    if "." in piece:
        parts = [p for p in piece.split(".") if p]
        if len(parts) < 2 or not any(sum(c.isalpha() for c in p) >= 2 for p in parts):
            return False
        if _is_file(piece):
            return True
        return any(_is_identifier(p) for p in parts) or all(_ATOM.fullmatch(p) for p in parts) and len(parts[0]) > 1
    return any(_is_identifier(part) for part in piece.split("-"))


def _is_identifier(word: str) -> bool:
    """snake_case, camelCase or PascalCase of 3+ humps (a hash or ``utf8`` is not: models write versions and
    digests in prose)."""
    if not word or not _ATOM.fullmatch(word):
        return False
    letters = sum(c.isalpha() for c in word)
    if "_" in word.strip("_") and letters >= 2:
        return True
    if word.startswith("__") and word.endswith("__") and letters >= 2:
        return True
    if _CAMEL.search(word) and not word[0].isupper():
        return True
    return word[0].isupper() and len(_PASCAL_HUMPS.findall(word)) >= 3


def _identifier_like(word: str) -> bool:
    return bool(word) and (word[0].isalpha() or word[0] == "_") and all(c.isalnum() or c in "_." for c in word)


def _is_file(token: str) -> bool:
    stem, dot, extension = token.rpartition(".")
    return bool(dot and stem.strip(".") and extension.lower() in FILE_EXTENSIONS)


def _is_flag_only(piece: str) -> bool:
    return piece.strip("-") == ""


def _squash(word: str) -> str:
    return word.replace("_", "").replace("-", "")


def _repeat_key(sentence: str) -> str | None:
    """The sentence as compared for repeats (bullets, numbering, case and spacing ignored); None when too short to
    be a loop (``Done.``)."""
    key = _SPACES.sub(" ", _LEAD.sub("", sentence)).strip().rstrip(".!?;:,").lower()
    return key if len(key) >= 16 or len(key.split()) >= 3 else None


def _has_run(keys: Iterable[str | None], limit: int) -> bool:
    """``limit`` equal keys in a row; a None key breaks the run."""
    run, previous = 0, None
    for key in keys:
        run = 0 if key is None else run + 1 if key == previous else 1
        previous = key
        if run >= limit:
            return True
    return False


def _word_run(text: str) -> bool:
    """One word said ``WORD_RUN_LIMIT`` times in a row; rows of numbers or rules in echoed output are not words."""
    words = (word.strip(".,;:!?\"'()[]*").lower() for word in text.split())
    return _has_run((w if any(c.isalpha() for c in w) else None for w in words), WORD_RUN_LIMIT)


def _line_key(line: str) -> str:
    return _SPACES.sub(" ", line).strip().lower()


def _line_run(text: str) -> bool:
    """One line, however short (a heading, "Done."), said ``REPEAT_LIMIT`` times in a row: blank lines between
    the copies do not break the run, any other line does."""
    keys = (_line_key(line) for line in text.splitlines())
    return _has_run((key for key in keys if key), REPEAT_LIMIT)


def _forges(sentence: str, source: Source) -> int:
    """The module's own markup in the sentence that the span does not hold: a view marker the span never says, a
    tool-call line whose id is not the span's, a placeholder without one of its handles, an entry header the span's
    words do not hold. Inside backticks markup is a quote (its names are still checked); a line copied from the
    span with its real id is an echo, not a forgery."""
    bare = _CODE_SPAN.sub(" ", sentence)
    found = sum(match.group().lower() not in source.markers for match in _STATE_MARKERS.finditer(bare))
    found += sum(_entry_key(match) not in source.entries for match in _ENTRY_REF.finditer(bare))
    for match in _TOOL_REF.finditer(bare):
        found += not source.has(match.group(1) or match.group(2))
    for match in _PLACEHOLDER.finditer(bare):
        handle = _HANDLE_IN.search(match.group(1))
        found += handle is None or not source.has(handle.group())
    return found


def _drop_empty_sections(text: str) -> str:
    """A heading whose lines were all cut goes too (read from the end: linear)."""
    lines = text.splitlines()
    kept: list[str] = []
    next_is_content = False  # the next non-blank line below is not a heading
    for line in reversed(lines):
        stripped = line.strip()
        if stripped.startswith("#"):
            if not next_is_content:
                continue
            next_is_content = False
        elif stripped:
            next_is_content = True
        kept.append(line)
    return "\n".join(reversed(kept)).strip()
