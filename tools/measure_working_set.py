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

from amplifier_module_context_summarize.cli.session_io import load_session as load  # noqa: E402
from amplifier_module_context_summarize.working_set import facts as ledger  # noqa: E402

RAW = REPO.parent / "shared" / "corpus" / "raw"  # the shared raw recordings, beside the checkout
_RETURNCODE = re.compile(r"<returncode>(-?\d+)</returncode>")


def recorded_ok(body, flagged: bool, fmt: str) -> bool | None:
    """The outcome the recording itself holds, or None when it holds none."""
    code = ledger._recorded_exit(ledger._decode_json_object(body))
    found = _RETURNCODE.match(body) if isinstance(body, str) else None
    if code is None and found:
        code = int(found.group(1))
    if code is not None:
        return code == 0
    if fmt == "claude-code":
        return not flagged
    return None


def code_of(body) -> int | None:
    found = _RETURNCODE.match(body) if isinstance(body, str) else None
    return int(found.group(1)) if found else ledger._recorded_exit(ledger._decode_json_object(body))


def measure(path: Path) -> tuple[str, int, int, int, int]:
    loaded = load(path)
    messages = loaded.messages
    facts = ledger.extract(messages)
    files = {f.path for f in facts.files}
    waiting: dict[str, object] = {}
    workdirs: list[str] = []
    matched = total = no_match = 0
    for message in messages:
        for call_id, name, args in ledger._calls(message):
            if call_id:
                waiting[call_id] = ledger._read_call(name, args, workdirs)
        for ref, body, flagged in ledger._results(message):
            call = waiting.pop(ref, None)
            if call is None:
                continue
            expected = recorded_ok(body, flagged, loaded.format)
            if expected is None:
                continue
            decoded = ledger._decode_json_object(body)
            outcome = ledger._outcome(call, decoded, ledger._body_text(decoded), flagged)
            total += 1
            matched += outcome.ok == expected
            # grep and kin exit 1 for "no match": the working set shows that as ok on purpose
            no_match += outcome.ok != expected and call.reader and code_of(body) == 1
    return loaded.format, len(messages), len(files), matched, total, no_match


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or sorted((REPO / "tests" / "fixtures" / "sessions").iterdir()) + sorted(
        p for p in RAW.glob("*/*") if p.is_file()
    )
    print(f"{'session':<58} {'format':<12} {'msgs':>5} {'files':>5} {'outcomes matching':>18}")
    all_matched = all_total = all_no_match = 0
    for path in paths:
        fmt, n, files, matched, total, no_match = measure(path)
        all_matched, all_total, all_no_match = all_matched + matched, all_total + total, all_no_match + no_match
        share = f"{matched}/{total}" if total else "-"
        print(f"{path.name[:58]:<58} {fmt:<12} {n:>5} {files:>5} {share:>18}")
    if all_total:
        print(f"outcome accuracy: {all_matched}/{all_total} = {100 * all_matched / all_total:.1f}%")
        fair = all_matched + all_no_match
        print(
            f"counting a search's exit 1 shown as ok (no match) as matching: {fair}/{all_total} = "
            f"{100 * fair / all_total:.1f}%"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
