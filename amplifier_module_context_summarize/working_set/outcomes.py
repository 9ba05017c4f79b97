"""How a tool call ended: its result found in any tool-call shape, then classified (passed, ok, the answer an exit
1 gives, failed) with its most telling error line."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ..core.messages import RESULT_BLOCK_TYPE, Message, block_text, parse_embedded_json
from .records import ERROR_MAX_CHARS, Call, CallOutcome, clip, output_lines

_CANNOT_START_LINE = (
    r"^\S+: (?:No module named \S+|can't open file .*|(?:line \d+: )?\S+: command not found|command not found: \S+)$"
)
"""What a shell or Python prints when a command cannot even start (``python: No module named pytest``,
``bash: line 1: tree: command not found``): the exit status often hides it (``cmd 2>&1 | tail -50`` exits
with tail's), so a recorded exit 0 stands and the line is kept in the call's label."""
_CANNOT_START = re.compile(_CANNOT_START_LINE, re.MULTILINE)
_FAILURE_PARTS = (
    (("Traceback (most recent call last)",), re.compile(r"Traceback \(most recent call last\)")),
    (("rror:",), re.compile(r"(?:\b|(?<=[a-z]))[Ee]rror:")),
    (("ERROR:",), re.compile("ERROR:")),
    (("FAILED",), re.compile(r"\bFAILED\b")),
    (("fatal:",), re.compile(r"\bfatal:")),
    ((" fail",), re.compile(r"\b[1-9]\d* (?:failed|failures?)\b")),
    (("No module named", "open file", "not found"), _CANNOT_START),
)
"""The kinds of failure line, each with substrings all its lines contain: an output is searched only for the
kinds whose substrings it holds (most hold none), and never with one pattern of every kind tried at each of its
characters."""
_PASSED = re.compile(r"\b\d+ passed\b|\b0 failures\b|^OK\b|\ball tests passed\b", re.IGNORECASE | re.MULTILINE)
_EXIT_CODE = re.compile(
    r"(?i)\b(?:exit(?:ed with)?[ _]?(?:code|status)|return[ _]?code|returncode)\b[\"']?\s*+(?:[:=>]\s*+)?"
    r"(-?\d{1,9})(?!\d)"
)
"""The runs of blanks are possessive: two optional runs around an optional ``:`` tried every split of a long
run of spaces against each other (16,000 spaces after "exit code" took seconds)."""
_FOLDS_APART = ("\u0130", "\u0131", "\u017f")
"""The characters a case-blind pattern takes for ``i`` or ``s`` that ``str.lower`` does not turn into them (İ, ı, ſ):
a text holding one is searched without the word prechecks below."""


def _exit_codes(text: str) -> list[str]:
    """``_EXIT_CODE``'s findings in ``text``. Case-blind, the pattern has no literal start for the regex engine
    to look for, so it is tried at every character; it needs "exit" or "return" in some case, which
    ``str.lower`` and a substring test find in C (most outputs hold neither)."""
    lowered = text.lower()
    if "exit" in lowered or "return" in lowered or any(c in text for c in _FOLDS_APART):
        return _EXIT_CODE.findall(text)
    return []


def _passed(text: str) -> bool:
    """``_PASSED`` holds in ``text``: searched only where one of its words can be (``_exit_codes``' reason)."""
    lowered = text.lower()
    if (
        " passed" in lowered
        or "0 failures" in lowered
        or lowered.startswith("ok")
        or "\nok" in lowered
        or any(c in text for c in _FOLDS_APART)
    ):
        return bool(_PASSED.search(text))
    return False


_EXCEPTION_LINE = re.compile(
    r"^(?:E\s+|\*\* \()?(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure)\b(?:\)? .*|:.*)?$"
)
_FAILED_LINE = re.compile(r"\bFAILED\b")
_FAILURE_COUNT = re.compile(r"\b[1-9]\d* (?:failed|failures?)\b")
_ERROR_LINE = re.compile(r"(?:\b|(?<=[a-z]))(?:[Ee]rror|ERROR|fatal)\b[:!]")
_OUTPUT_KEYS = ("error", "message", "stderr", "stdout", "output", "content", "result")
_EXIT_KEYS = ("returncode", "return_code", "exit_code", "exitCode")


def call_results(message: Message) -> Iterator[tuple[str, Any, bool | None]]:
    """(call id, raw result body, the error flag as recorded) for each result a message carries: ``None`` when
    the result has no ``is_error`` field."""
    content = message.get("content")
    blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
    tool_message = message.get("role") == "tool" and message.get("tool_call_id")
    if tool_message and not (len(blocks) == 1 and blocks[0].get("type") == RESULT_BLOCK_TYPE):
        yield str(message["tool_call_id"]), content, None
        return
    for block in blocks:  # a tool message's one block: Amplifier's, inside
        if block.get("type") == RESULT_BLOCK_TYPE:
            ref = message["tool_call_id"] if tool_message else block.get("tool_use_id") or block.get("tool_call_id")
            flag = block.get("is_error")
            body = block["content"] if "content" in block else block.get("output")
            yield str(ref or ""), body, flag if isinstance(flag, bool) else None


_CUT_SHORT = (
    (
        "timed out",
        ("timed out", "no new output", "automatically cancelled"),
        re.compile(
            r"(?im)^\W{0,3}(?:the )?command (?:timed out|has no new output) after\b.*$"
            r"|^\W{0,3}(?:error: )?(?:command )?timed out after \d[^\n]*$|^Command timed out\b.*$"
            r"|^Command was automatically cancelled because it exceeded the timeout\b[^\n]*?(?:output\.|(?= Below)|$)"
        ),
    ),
    (
        "interrupted",
        ("interrupted", "by user"),
        re.compile(
            r"(?im)^\W{0,3}(?:request )?interrupted by user\b.*$"
            r"|^\W{0,3}Command (?:was )?(?:cancelled|aborted) by user\b.*$"
            r"|^\[TASK RESUMPTION\] This task was interrupted\b[^.\n]*"
        ),
    ),
)
"""How a shell tool reports a command it cut short (Claude Code, Codex, OpenHands, Gemini CLI; Cline's resumption
notice answers the call it cut off): the outcome is that, not the exit status or an error line of what it printed
before. With each, words one of its lines must hold (lowered): the case-blind patterns are searched only in an
end of an output that holds one (``_exit_codes``' reason)."""
_CUT_SHORT_SCAN = 2_000
"""Characters at each end of an output searched for those reports (they lead or end it; the middle is output)."""
_OPERATION_CANCELLED = "[Operation Cancelled]"
"""How Gemini CLI's scheduler answers a call the user cancelled or denied (``[Operation Cancelled] Reason: …``)."""


_LOOP_CANCELLED_KEYS = frozenset({"error", "cancelled", "tool"})
"""All loop-basic's record holds: a JSON file a tool read that merely has a ``cancelled`` field is content."""


def _cancelled(body: Any, text: str) -> str:
    """The line saying the agent's framework cancelled the call, whatever the tool: loop-basic's
    ``{"error": "Tool execution was cancelled by user", "cancelled": true}``, Gemini CLI's ``[Operation Cancelled]``
    result; else "". Written in place of the tool's output, so never data the tool read."""
    if isinstance(body, dict) and body.get("cancelled") is True and body.keys() <= _LOOP_CANCELLED_KEYS:
        return str(body.get("error") or "cancelled")
    if text.startswith(_OPERATION_CANCELLED):
        return text.split("\n", 1)[0]
    return ""


def _cut_short(text: str) -> tuple[str, str] | None:
    """The label and line of the first ``_CUT_SHORT`` report in either end of ``text``, else None."""
    ends = (text[:_CUT_SHORT_SCAN], text[-_CUT_SHORT_SCAN:])
    lowered = [end.lower() for end in ends]
    apart = any(c in end for end in ends for c in _FOLDS_APART)
    for label, words, pattern in _CUT_SHORT:
        for end, low in zip(ends, lowered, strict=True):
            if (apart or any(word in low for word in words)) and (found := pattern.search(end)):
                return label, found.group(0).strip()
    return None


def outcome_of(call: Call, body: Any, text: str, flag: bool | None) -> CallOutcome:
    """Failed when flagged, a non-zero exit is recorded or reported, or (outside reads) the output shows a
    failure. A shell result that says ``is_error: false`` recorded its exit as 0: Claude Code sets the flag
    from the exit status."""
    flagged = flag is True or _structured_failure(body)
    if cancelled := _cancelled(body, text):
        return CallOutcome(call.key, call.command, False, "interrupted", clip(cancelled, ERROR_MAX_CHARS), call.reader)
    # a command cut short says so in its own output: that line is the outcome
    if call.command and not call.reader and (cut := _cut_short(text)):
        return CallOutcome(call.key, call.command, False, cut[0], clip(cut[1], ERROR_MAX_CHARS))
    # A read's exit code leads its output, and so does a non-shell tool's failure: further down is the
    # content it read, wrote or was told (a file echoed after an edit, a sub-agent's report).
    scope = text.split("\n", 2)[:2] if call.reader or not call.command else [text]
    codes = [int(code) for part in scope for code in _exit_codes(part)]
    code = next((c for c in reversed(codes) if c), 0)
    recorded = _recorded_exit(body)
    if recorded is None and flag is False and call.command:
        recorded = 0
    printed_text = _shell_report(text) if call.command else text  # what the command printed, without a frame
    shown = printed_text if call.command and not call.reader else "\n".join(scope)
    textual = not call.reader and _reads_failed(shown)
    if recorded == 0 and not flagged:  # exited 0 as recorded: never failed, but an error it printed (a script
        printed = textual or (not call.reader and _nonzero_exit(shown))  # catching its own exception, a pipe
        if printed or _CANNOT_START.search(text):  # hiding a command that failed or never started) is kept
            label = f"exit 0, printed: {clip(error_line(printed_text), ERROR_MAX_CHARS)}"
            return CallOutcome(call.key, call.command, True, label)
    else:
        code = code if recorded is None else recorded  # a recorded exit status is the outcome
        if call.command and call.answer and code == 1:  # grep, diff, test: 1 says "no match", "differs", "false"
            return CallOutcome(call.key, call.command, True, call.answer, reads=call.reader)
        if flagged or code or textual:
            label = f"failed (exit {code})" if code else "failed"
            error = clip(error_line(printed_text), ERROR_MAX_CHARS)
            return CallOutcome(call.key, call.command, False, label, error, call.reader)
    passed = call.command and not call.reader and _passed(text)
    return CallOutcome(call.key, call.command, True, "passed" if passed else "ok", reads=call.reader)


_SHELL_FRAME_TAIL = re.compile(
    r"(?:Error: \(none\)|Exit Code: -?\d{1,9}|Signal: .*|Background PIDs: .*|Process Group PGID: .*|\s*"
    r"|(?:returncode|return_code|exit_code|exitCode): -?\d{1,9})"
)
"""The fields Gemini CLI's shell tool ends its result with, after what the command printed (and its error, when
it had one: ``Error: (none)`` is the older versions' "none"); and the recorded status ``body_text`` adds."""
_SHELL_FRAME_TAIL_FIELDS = 10
"""At most these many lines end the frame (its five fields, a recorded status, and blank lines between)."""


def _shell_report(text: str) -> str:
    """What a shell result says the command printed: Gemini CLI's frame (``Command: …``, ``Directory: …``,
    ``Output: …``, ``Error: …``, ``Exit Code: N``, ``Signal: …``, ``Background PIDs: …``, ``Process Group PGID: …``;
    current versions start at ``Output:`` and write ``Error:`` only for an error) taken off: its output, then its
    error when it had one. Any other text as it is."""
    if text.startswith("Command: "):
        directory = text.find("\nDirectory: ")
        start = text.find("\nOutput: ", directory) + 1 if directory > 0 else 0
    else:
        start = 0
    if not text.startswith("Output: ", start):
        return text
    lines = text[start + len("Output: ") :].split("\n")
    end = len(lines)
    while end > 1 and len(lines) - end < _SHELL_FRAME_TAIL_FIELDS and _SHELL_FRAME_TAIL.fullmatch(lines[end - 1]):
        end -= 1
    if end == len(lines) and start == 0:  # "Output: …" and no field after it: not Gemini's frame
        return text
    if lines[0] == "(empty)":
        lines[0] = ""
    return "\n".join(lines[:end])


def _says_more(line: str) -> bool:
    """The line holds more than an exit status."""
    return not _EXIT_CODE.fullmatch(line) and not line.isdigit()


def _nonzero_exit(text: str) -> bool:
    """The output reports a non-zero exit of its own (``cmd | tail`` after ``Halting VM with exit status 2``)."""
    return any(int(code) for code in _exit_codes(text))


def decode_json_object(body: Any) -> Any:
    """Some providers stringify structured tool output; read it back so its fields can be inspected."""
    if isinstance(body, str) and body.lstrip().startswith("{"):
        try:
            decoded = parse_embedded_json(body)
        except ValueError:
            return body
        return decoded if isinstance(decoded, dict) else body
    return body


def body_text(body: Any) -> str:
    """Readable text of a result; a dict contributes its message-like fields rather than its JSON."""
    if isinstance(body, dict) and body.get("type") is None:
        parts = [body_text(body[key]) for key in _OUTPUT_KEYS if body.get(key)]
        parts += [f"{key}: {body[key]}" for key in _EXIT_KEYS if isinstance(body.get(key), int) and body[key]]
        if parts:
            return "\n".join(p for p in parts if p)
    if isinstance(body, list):
        return "\n".join(block_text(b) for b in body)
    return "" if body is None else block_text(body)


_RECORDED_EXIT = re.compile(r"^Exit Code: (-?\d{1,9})\s*$", re.MULTILINE)
"""How Gemini CLI's shell tool records the exit status (after ``Error: (none)`` when there was none)."""


_RETURNCODE = re.compile(r"<returncode>(-?\d{1,9})</returncode>")
"""An exit status has at most 9 digits: a longer run is not one (and ``int`` refuses past 4,300 digits)."""


def _recorded_exit(body: Any) -> int | None:
    """The exit status a result records as a field (``exit_code``) or as Gemini's ``Exit Code: N`` line."""
    if isinstance(body, dict):
        found: list[int] = [
            body[key] for key in _EXIT_KEYS if isinstance(body.get(key), int) and not isinstance(body[key], bool)
        ]
        if found:
            return found[0]
        body = body.get("output")
    if isinstance(body, str) and "Exit Code: " in body:
        codes = _RECORDED_EXIT.findall(body)
        return int(codes[-1]) if codes else None
    if isinstance(body, str) and body.startswith("<returncode>"):  # mini-swe-agent's observation
        code = _RETURNCODE.match(body)
        return int(code.group(1)) if code else None
    return None


def _structured_failure(body: Any) -> bool:
    if not isinstance(body, dict):
        return False
    if body.get("success") is False or body.get("is_error") is True:
        return True
    return any(isinstance(body.get(key), int) and body[key] != 0 for key in _EXIT_KEYS)


def error_line(text: str) -> str:
    """The line of a failed output that says most about the failure: a traceback's last exception, else a
    FAILED, error or failure-count line, else the last one."""
    lines = output_lines(text)
    exceptions = [line for line in lines if _EXCEPTION_LINE.match(line)]
    if exceptions:
        return exceptions[-1]
    for pattern in (_FAILED_LINE, _ERROR_LINE, _FAILURE_COUNT):
        for line in lines:
            if pattern.search(line):
                return line
    return next((line for line in reversed(lines) if _says_more(line)), "")


def looks_failed(text: str) -> bool:
    """Text that reads as a failure (a traceback, an error line, a non-zero exit code). The failure lines are
    looked for first: their substring prechecks settle most outputs, where an exit code is searched for wherever
    "return" or "exit" appears (code listings hold them), by a pattern tried at every character."""
    return _reads_failed(text) or _nonzero_exit(text)


def _reads_failed(text: str) -> bool:
    """``text`` holds a failure line of any kind (``_FAILURE_PARTS``)."""
    return any(any(hint in text for hint in hints) and part.search(text) for hints, part in _FAILURE_PARTS)
