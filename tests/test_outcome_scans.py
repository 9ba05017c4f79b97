"""The failure and exit-code scanners with their cheap prechecks find exactly what their patterns find alone.

``outcomes._exit_codes`` and ``outcomes._passed`` search a text only when a word their pattern needs is in it
(lowered). The patterns are case-blind, and the regex engine takes characters for ``i`` and ``s`` that
``str.lower`` does not make ``i`` or ``s`` (İ, ı, ſ): texts holding them must still be searched.
"""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from amplifier_module_context_summarize.benchmark.coding import CodingSession
from amplifier_module_context_summarize.benchmark.synth import SMALL, TextSource
from amplifier_module_context_summarize.working_set.mentions import (
    _COMMIT,
    _CVE,
    _PR,
    _TICKET,
    _TICKET_HINT,
    _TICKET_NOT,
    _short_ids,
    identifiers_in,
)
from amplifier_module_context_summarize.working_set.outcomes import (
    _CUT_SHORT,
    _CUT_SHORT_SCAN,
    _EXIT_CODE,
    _PASSED,
    _cut_short,
    _exit_codes,
    _nonzero_exit,
    _passed,
    body_text,
    call_results,
    decode_json_object,
)
from amplifier_module_context_summarize.working_set.records import _TAG, output_lines

_PIECES = [
    *("exit", "Exit", "EXIT", "ex\u0130t", "ex\u0131t", "exited with", "eXiT"),
    *("code", "CODE", "status", "stat\u017fus", "return", "Return", "returncode", "RETURN_CODE", "return code"),
    *("passed", "PASSED", "pa\u017f\u017fed", "ok", "OK", "Ok", "\u212a", "failures", "failure", "all tests"),
    *(" ", " ", "  ", "_", ":", "=", ">", "=>", '"', "'", "\n", "\n", "\r\n", "\t"),
    *("0", "1", "2", "42", "-3", "1234567890", "x", "error:", "\u00e9", "\u4e2d"),
]
_PHRASES = (
    st.tuples(
        st.sampled_from(["exit", "Exit", "EXIT", "ex\u0130t", "ex\u0131t", "exited with", "return", "RETURN"]),
        st.sampled_from(["", " ", "_", "  "]),
        st.sampled_from(["code", "status", "stat\u017fus", "CODE"]),
        st.sampled_from(["", ":", " = ", ' "', ">"]),
        st.sampled_from(["0", "1", "-3", "42"]),
    ).map("".join)
    | st.tuples(
        st.sampled_from(["", "\n", " "]),
        st.sampled_from(["3 ", "0 ", "all tests "]),
        st.sampled_from(["passed", "PASSED", "pa\u017f\u017fed", "failures", "fa\u0130lures"]),
    ).map("".join)
    | st.sampled_from(["\nok", "\nOK", "OK", "\n\u212a"])
)
"""Whole findings (an exit status, a pass count) spelled in any case, some with the letters ``lower`` keeps apart."""
_CUT_PHRASES = st.tuples(
    st.sampled_from(["", "\n", "\n> ", "x"]),
    st.sampled_from(["", "the ", "error: ", "Command ", "COMMAND ", "request ", "[TASK RESUMPTION] This task was "]),
    st.sampled_from(
        [
            *("timed out", "TIMED OUT", "t\u0130med out", "has no new output", "ha\u017f no new output"),
            *("interrupted", "INTERRUPTED", "\u0131nterrupted", "was cancelled", "aborted"),
            "was automatically cancelled",
        ]
    ),
    st.sampled_from(["", " after 120s", " after 5", " by user", " by u\u017fer", " because it exceeded the timeout"]),
    st.sampled_from(["", "\n", ".", " output.", " Below"]),
).map("".join)
"""Reports of a command cut short, whole or in part, in any case, some with the letters ``lower`` keeps apart."""
_TEXTS = st.lists(st.sampled_from(_PIECES) | _PHRASES | _CUT_PHRASES, max_size=40).map("".join)


@given(_TEXTS)
def test_exit_codes_are_the_patterns_findings(text: str) -> None:
    assert _exit_codes(text) == _EXIT_CODE.findall(text)


@given(_TEXTS)
def test_passed_is_the_patterns_answer(text: str) -> None:
    assert _passed(text) == bool(_PASSED.search(text))


def test_case_blind_letters_lower_does_not_make() -> None:
    """The regex engine reads İ and ı as ``i`` and ſ as ``s``, case-blind; ``str.lower`` does not."""
    assert _cut_short("ok\nCommand t\u0130med out after 30s") == ("timed out", "Command t\u0130med out after 30s")
    assert _cut_short("\u0131nterrupted by user") == ("interrupted", "\u0131nterrupted by user")
    assert _cut_short("x\n" * 3_000 + "Command aborted by u\u017fer") == ("interrupted", "Command aborted by u\u017fer")
    assert _exit_codes("ex\u0130t code: 3") == ["3"] == _EXIT_CODE.findall("ex\u0130t code: 3")
    assert _exit_codes("ex\u0131t status 4") == ["4"]
    assert _nonzero_exit("process ex\u0130ted with code 2")
    assert _passed("===== 5 pa\u017f\u017fed in 0.1s =====")
    assert _passed("OK")
    assert _passed("tests\nok (3 tests)")
    assert not _passed("broken\n 0 passes")


def test_scans_agree_on_a_generated_sessions_outputs() -> None:
    """Outputs shaped like a coding session's (test runs, tracebacks, shell output) find the same."""
    history = CodingSession(SMALL, seed=7, text=TextSource()).history(1_500)
    outputs = [body_text(decode_json_object(body)) for m in history for _, body, _ in call_results(m)]
    assert len(outputs) > 300
    for text in outputs:
        assert _cut_short(text) == _cut_short_alone(text)
        assert _exit_codes(text) == _EXIT_CODE.findall(text)
        assert _passed(text) == bool(_PASSED.search(text))
    assert any(_passed(text) for text in outputs)


@given(st.lists(_PHRASES, min_size=1, max_size=4).map(" ".join))
def test_findings_alone_are_found(text: str) -> None:
    assert _exit_codes(text) == _EXIT_CODE.findall(text)
    assert _passed(text) == bool(_PASSED.search(text))


def _cut_short_alone(text: str) -> tuple[str, str] | None:
    """``outcome_of``'s search for a cut-short report as it was, every pattern on both ends."""
    for label, _, pattern in _CUT_SHORT:
        if found := pattern.search(text[:_CUT_SHORT_SCAN]) or pattern.search(text[-_CUT_SHORT_SCAN:]):
            return label, found.group(0).strip()
    return None


@given(st.lists(_CUT_PHRASES | st.sampled_from(_PIECES), min_size=1, max_size=12).map("".join))
def test_cut_short_reports_are_the_patterns_findings(text: str) -> None:
    assert _cut_short(text) == _cut_short_alone(text)


@given(st.integers(0, 5_000), st.integers(0, 5_000), _CUT_PHRASES)
def test_cut_short_reports_at_either_end(before: int, after: int, phrase: str) -> None:
    text = "x\n" * before + phrase + "\ny" * after
    assert _cut_short(text) == _cut_short_alone(text)


_TICKET_TEXT = st.text(st.sampled_from("AZ09-19a_ .\n"), max_size=30)


@given(_TICKET_TEXT)
def test_ticket_hint_finds_what_its_class_led_form_finds(text: str) -> None:
    assert bool(_TICKET_HINT.search(text)) == bool(re.search(r"[A-Z0-9]-[1-9]", text))


@given(st.lists(st.sampled_from(["<returncode>", "</output>", "<a-b>", "<", ">", "x", " ", "\n", "\r", "\r\n", "0"])))
def test_output_lines_are_each_lines_untagged(pieces: list[str]) -> None:
    text = "".join(pieces)
    expected = [line for line in (_TAG.sub("", line).strip() for line in text.splitlines()) if line]
    assert output_lines(text) == expected


def _identifiers_every_pattern(text: str, commits: bool) -> list[str]:
    """``identifiers_in`` as it was: every pattern's own check, no shared precheck."""
    found: list[tuple[int, str]] = []
    if _TICKET_HINT.search(text):
        found += [(m.start(), m.group(0)) for m in _TICKET.finditer(text) if m.group(1) not in _TICKET_NOT]
    if "CVE-" in text:
        found += [(m.start(), m.group(0)) for m in _CVE.finditer(text)]
    found += _short_ids(text)
    if "#" in text:
        found += [(m.start(), f"PR #{m.group(1)}") for m in _PR.finditer(text)]
    if commits and ("ommit" in text or "OMMIT" in text or "[" in text):
        for match in _COMMIT.finditer(text):
            sha = match.group(1) or match.group(2)
            if any(c.isdigit() for c in sha):
                found.append((match.start(), f"commit {sha}"))
    return [item for _, item in sorted(found, key=lambda pair: pair[0])]


_ID_PIECES = [
    *("PROJ-12", "AB-1", "UTF-8", "CVE-2024-12345", "bd-a3f8e9.1", "spotter-a0y", "pre-commit", "PR #12", "#7"),
    *("pull request #3", "commit 41dd7fe7", "Committed as abc1234", "[main 1a2b3c4] msg", "COMMIT 1234567", "-"),
    *(" ", "\n", "x", "[", "]", "#", "ommit", "a1b2c3d", "/", ".", "_"),
]


@given(st.lists(st.sampled_from(_ID_PIECES), max_size=20).map("".join), st.booleans())
def test_identifiers_are_every_patterns_findings(text: str, commits: bool) -> None:
    assert identifiers_in(text, commits) == _identifiers_every_pattern(text, commits)


def test_identifiers_agree_on_a_generated_sessions_texts() -> None:
    history = CodingSession(SMALL, seed=5, text=TextSource()).history(1_500)
    texts = [body_text(decode_json_object(body)) for m in history for _, body, _ in call_results(m)]
    texts += [m["content"] for m in history if isinstance(m.get("content"), str)]
    found = [identifiers_in(text, commits) for text in texts for commits in (False, True)]
    assert found == [_identifiers_every_pattern(text, commits) for text in texts for commits in (False, True)]
    assert sum(map(bool, found)) > 10
