#!/usr/bin/env python3
"""How right the working set is about recorded sessions of each format: files named, and outcome accuracy.

Usage::

    python tools/measure_working_set.py [SESSION ...]   # default: tests/fixtures/sessions/* and, when present,
                                                        # ../shared/corpus/raw/*/* beside the checkout (real recordings)

For every shell/tool call whose result records its outcome (an exit code field, Gemini's ``Exit Code: N``,
mini-swe-agent's ``<returncode>N</returncode>``, Claude Code's ``is_error``), the outcome the working set
shows (``ledger``) is compared with the recorded one. Prints one row per session and the overall share.
Maintainer tooling: not in the wheel.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if __name__ == "__main__":
    sys.path.insert(0, str(REPO))

from amplifier_module_context_summarize.core.messages import message_calls  # noqa: E402
from amplifier_module_context_summarize.readers.session_io import load_session as load  # noqa: E402
from amplifier_module_context_summarize.working_set import facts as ledger  # noqa: E402
from amplifier_module_context_summarize.working_set import outcomes  # noqa: E402

RAW = REPO.parent / "shared" / "corpus" / "raw"  # the shared raw recordings, beside the checkout
_RETURNCODE = re.compile(r"<returncode>(-?\d+)</returncode>")


def recorded_exit(body, flag: bool | None, fmt: str) -> int | None:
    """The exit status the recording itself holds (Claude Code's ``is_error`` as 1 or 0), or None."""
    code = outcomes._recorded_exit(outcomes.decode_json_object(body))
    found = _RETURNCODE.match(body) if isinstance(body, str) else None
    if code is None and found:
        code = int(found.group(1))
    if code is None and fmt == "claude-code":
        code = int(flag is True)
    return code


def matches(outcome, code: int, exact: bool = True) -> bool:
    """The shown outcome matches the recorded one: ok for exit 0, else failed with that exit code (or cut short);
    or the answer an exit 1 gives (a search's ``no match``, diff's ``differs``, test's ``false``). ``exact``: the
    recording holds the status itself, not only a flag."""
    if code == 0:
        return outcome.ok
    if code == 1 and outcome.label in ("no match", "differs", "false"):
        return True
    if not exact:  # Claude Code records a flag, not the status: failed is all it says
        return not outcome.ok
    return not outcome.ok and (f"exit {code}" in outcome.label or outcome.label in ("timed out", "interrupted"))


def measure(path: Path) -> tuple[str, int, int, int, int]:
    loaded = load(path)
    messages = loaded.messages
    facts = ledger.extract(messages)
    files = {f.path for f in facts.files}
    waiting: dict[str, object] = {}
    workdirs: list[str] = []
    matched = total = 0
    for message in messages:
        for call_id, name, raw in message_calls(message) if message.get("role") == "assistant" else ():
            if call_id:
                waiting[call_id] = ledger._read_call(name, ledger._parse_args(raw), workdirs)
        for ref, body, flag in outcomes.call_results(message):
            call = waiting.pop(ref, None)
            if call is None:
                continue
            code = recorded_exit(body, flag, loaded.format)
            if code is None:
                continue
            decoded = outcomes.decode_json_object(body)
            total += 1
            outcome = outcomes.outcome_of(call, decoded, outcomes.body_text(decoded), flag)
            matched += matches(outcome, code, exact=loaded.format != "claude-code")
    return loaded.format, len(messages), len(files), matched, total


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or sorted((REPO / "tests" / "fixtures" / "sessions").iterdir()) + sorted(
        p for p in RAW.glob("*/*") if p.is_file()
    )
    print(f"{'session':<58} {'format':<12} {'msgs':>5} {'files':>5} {'outcomes matching':>18}")
    all_matched = all_total = 0
    for path in paths:
        fmt, n, files, matched, total = measure(path)
        all_matched, all_total = all_matched + matched, all_total + total
        share = f"{matched}/{total}" if total else "-"
        print(f"{path.name[:58]:<58} {fmt:<12} {n:>5} {files:>5} {share:>18}")
    if all_total:
        print(f"outcome accuracy: {all_matched}/{all_total} = {100 * all_matched / all_total:.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
