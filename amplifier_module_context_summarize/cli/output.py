"""What the command line writes: files and standard output, each failure one line and exit status 2.

Every subcommand that writes goes through here (``convert -o``, ``inspect --html``, ``eval --out``, and what
they print), so a missing folder, a folder where a file belongs, a file where a folder belongs, or a path that
cannot be written ends in ``error: cannot write PATH (reason)`` instead of a traceback. Text is written as
stored text is sent to a provider: a lone surrogate (a cut emoji, a JSON ``\\ud83d`` escape) becomes U+FFFD in
prose, or its JSON escape in JSON lines, so the rest of a file is never refused for one.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import TextIO

from ..core.messages import encodable, scrub_text

_SURROGATE = re.compile("[\ud800-\udfff]")
EXIT_OUTPUT = 2
"""Exit status of a command whose output could not be written (as for unreadable input)."""


class OutputError(Exception):
    """An output that cannot be written; the message is the one line to print (no path bytes that are not
    UTF-8, no traceback)."""


def _fail(path: str | Path, reason: str) -> OutputError:
    return OutputError(f"cannot write {scrub_text(os.fspath(path))} ({reason})")


def check_file(path: str | Path) -> Path:
    """``path`` as an output file, or ``OutputError`` saying why it cannot be one. Called before the work that
    fills it, so a long run does not end in a wrong path: besides its shape, the file is opened for appending (an
    existing one is left as it was; a missing one is made and removed again), which is the only sure test of a
    folder that cannot be written (permissions, a read-only or virtual file system, root or not)."""
    path = _file_shape(path)
    existed = path.exists()
    try:
        with open(path, "ab"):
            pass
    except OSError as exc:
        raise _fail(path, _reason(exc)) from None
    if not existed:
        path.unlink(missing_ok=True)
    return path


def _file_shape(path: str | Path) -> Path:
    """``path`` unless it names a folder or its folder is missing or not one (no file system write)."""
    path = Path(path)
    if path.is_dir():
        raise _fail(path, "it is a folder; name a file")
    parent = path.parent
    if not parent.exists():
        raise _fail(path, f"the folder {scrub_text(os.fspath(parent))} does not exist")
    if not parent.is_dir():
        raise _fail(path, f"{scrub_text(os.fspath(parent))} is not a folder")
    return path


def check_folder(path: str | Path) -> Path:
    """``path`` as an output folder (made with its parents when missing), or ``OutputError``."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise _fail(path, "it is a file; name a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _fail(path, _reason(exc)) from None
    return path


def write_file(path: str | Path, text: str) -> None:
    """``text`` (lone surrogates as U+FFFD) into the file ``path``; ``OutputError`` when it cannot be."""
    write_bytes(path, scrub_text(text).encode("utf-8"))


def write_bytes(path: str | Path, data: bytes) -> None:
    path = _file_shape(path)  # opening it below is the writability test
    try:
        with open(path, "wb") as handle:
            handle.write(data)
    except OSError as exc:
        raise _fail(path, _reason(exc)) from None


def emit(text: str, stream: TextIO | None = None) -> None:
    """``text`` to standard output (or ``stream``) with lone surrogates as U+FFFD; a closed pipe is not an error
    worth a traceback either."""
    stream = sys.stdout if stream is None else stream
    try:
        stream.write(text if encodable(text) else scrub_text(text))
        stream.flush()
    except BrokenPipeError:
        raise OutputError("standard output was closed") from None
    except OSError as exc:
        raise OutputError(f"cannot write to standard output ({_reason(exc)})") from None


def json_line_safe(line: str) -> str:
    """A JSON text with every lone surrogate written as its ``\\uXXXX`` escape: still valid JSON, it reads back
    as the same string, and it can be encoded as UTF-8 (a surrogate can only stand inside a JSON string)."""
    if encodable(line):
        return line
    return _SURROGATE.sub(lambda found: f"\\u{ord(found.group()):04x}", line)


def report(error: OutputError, prefix: str = "error") -> int:
    """Print ``error`` as its one line on standard error; the exit status to return."""
    print(f"{prefix}: {error}", file=sys.stderr)
    return EXIT_OUTPUT


def _reason(exc: OSError) -> str:
    return scrub_text(exc.strerror or exc.__class__.__name__)
