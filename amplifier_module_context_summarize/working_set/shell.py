"""The shell parser: what a command line reads, writes and runs, read without running it (words, heredocs,
redirects, nested shells, ``cd``), and the one-line key a command is known by."""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .patches import patch_changes
from .paths import join_path, looks_like_file, looks_like_path, names_bare_file, names_file, path_operand, quoted_ok
from .records import DELETE, EDIT, MOVE, READ, USE, WRITE, Definitions, FileAction

_SHELLS = frozenset({"bash", "sh", "zsh", "/bin/bash", "/bin/sh", "/bin/zsh", "/usr/bin/bash"})
# Commands whose output is what they read: error words in it are data (unless the command itself failed).
_READERS = frozenset(
    {
        "cat",
        "head",
        "tail",
        "less",
        "more",
        "bat",
        "nl",
        "wc",
        "grep",
        "egrep",
        "fgrep",
        "rg",
        "ag",
        "ack",
        "sed",
        "awk",
        "cut",
        "sort",
        "uniq",
        "diff",
        "cmp",
        "file",
        "stat",
        "ls",
        "tree",
        "find",
        "pwd",
        "cd",
        "echo",
        "printf",
        "jq",
        "yq",
        "xxd",
        "od",
        "strings",
        "column",
        "tr",
        "true",
        "Get-Content",
        "gc",
        "type",
        "Select-String",
        "Get-ChildItem",
        "dir",
    }
)
# fmt: on
_GIT_READERS = frozenset({"show", "log", "diff", "blame", "grep", "status"})
# Programs whose operands are files whatever their names (``vim LICENSE``, ``cat src/main``, ``cp .env.example
# .env``); with ``-r`` / ``-R`` an operand of cp, rm, chmod may be a folder, so the strict test applies then.
# fmt: off
_FILE_PROGRAMS = frozenset({
    "cat", "head", "tail", "less", "more", "bat", "nl", "wc", "vim", "vi", "nvim", "nano", "emacs", "code", "touch",
    "tee", "cp", "mv", "rm", "unlink", "sed", "perl", "source", "chmod", "dos2unix", "git add", "git rm", "git mv",
})
_SEARCHERS = frozenset({"grep", "egrep", "fgrep", "rg", "ag", "ack", "git grep"})
_COMMAND_PREFIXES = frozenset({"sudo", "time", "nohup", "env", "command", "exec"})
_SEPARATORS = frozenset({"&&", "||", ";", "|", "&", ";;", "|&", "(", ")"})
_ASSIGNMENT = re.compile(r"^\w+=")
_OUTPUT_WINDOW = re.compile(r"(?:\s+2>&1)?\s*\|\s*(?:head|tail)(?:\s+(?:-n\s*\+?\d+|-\d+|-c\s*\d+|--lines=\d+))*\s*$")
"""A trailing ``| head -N`` / ``| tail -N`` (after an optional ``2>&1``): which part of the output was shown."""
_OUTPUT_WINDOWS = 4
"""Most trailing windows taken off one command: each pass scans the whole command, so a command of thousands
of ``| head`` would otherwise cost a pass per window (quadratic)."""
_FIND_PATTERNS = frozenset({"-name", "-iname", "-path", "-ipath", "-wholename", "-regex", "-iregex", "-newer"})
"""``find`` options whose value is a pattern (or a reference file), not a file the command acts on."""


def command_text(value: Any) -> str:
    """A shell command as one string; argv lists like ``["bash", "-lc", "cmd"]`` give their script."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        if len(value) >= 3 and value[0] in _SHELLS and value[1] in ("-c", "-lc", "-ic"):
            script: str = value[2]
            return script.strip()
        return shlex.join(value)
    return ""


def command_key(command: str) -> str:
    """The command as the working set keys it: on one line, without the output window it was piped through.

    ``pytest -x 2>&1 | tail -50`` and ``pytest -x | head -100`` run the same tests and only show another part
    of the output: one command with a run count, a latest outcome and whether a later run passed. A heredoc's
    body (file content, not commands) is left out: its first line is kept, then ``…``.
    """
    lines = command.splitlines()
    heredoc = next((i for i, line in enumerate(lines) if _HEREDOC.search(_heredoc_line(line))), None)
    if heredoc is None:
        key = " ".join(command.split())
    else:
        key = " ".join("\n".join(lines[: heredoc + 1]).split()) + (" …" if heredoc + 1 < len(lines) else "")
    for _ in range(_OUTPUT_WINDOWS):
        trimmed = _OUTPUT_WINDOW.sub("", key).rstrip()
        if trimmed == key or not trimmed:
            return key
        key = trimmed
    return key


_PATH_BACKSLASH = re.compile(r"(?<=[\w.:~-])\\(?=[\w.~-])")
"""A backslash between path characters (``sessions\\bugfix-1.json``, ``C:\\src``) is a Windows separator,
not a shell escape: the lexer would drop it."""
_HEREDOC = re.compile(r"(?<!<)<<(-?)(?!<)\s*(['\"]?)([\w.-]+)\2")
"""A heredoc operator and its delimiter (a ``<<<`` here-string has no body)."""
_ARITHMETIC = re.compile(r"\(\(|\)\)|<")


def _heredoc_line(line: str) -> str:
    """``line`` with every ``<`` that cannot open a heredoc replaced by its stand-in (``_word`` puts it back): inside
    quotes or a comment, escaped, or in arithmetic (``python3 -c "print(1 << 20)"``, ``echo $((1 << 20))``). Read
    as a heredoc, such a ``<<`` took every later line of the command for its body, and the ``git rm`` there with it.
    One pass over the line's quoting, then one over each unquoted part."""
    if "<<" not in line:
        return line
    out: list[str] = []
    depth = 0  # how many ``((`` are open
    for part in (m.group(0) for m in _QUOTING.finditer(line)):
        if part[:1] in ("'", '"', "\\", "#"):
            out.append(part.replace("<", _OPERATOR_STAND_INS["<"]))
            continue
        at = 0
        for m in _ARITHMETIC.finditer(part):
            token = m.group(0)
            if token == "((":
                depth += 1
            elif token == "))":
                depth = max(depth - 1, 0)
            elif depth:
                out.append(part[at : m.start()] + _OPERATOR_STAND_INS["<"])
                at = m.end()
        out.append(part[at:])
    return "".join(out)


def _heredoc_bodies(command: str) -> tuple[str, list[str]]:
    """The command with every heredoc's body left out, so the commands after each heredoc are still seen, and the
    bodies in the order their ``<<`` appear (what ``apply_patch <<'PATCH'`` or ``git apply <<EOF`` is fed). A
    ``<<`` that opens no heredoc (``_heredoc_line``) is kept masked, so the lexer does not read it as one either."""
    lines = command.splitlines()
    kept: list[str] = []
    bodies: list[str] = []
    i = 0
    while i < len(lines):
        line = _heredoc_line(lines[i])
        kept.append(line)
        i += 1
        for dash, _, delimiter in _HEREDOC.findall(line):
            first = i
            while i < len(lines) and (lines[i].lstrip("\t") if dash else lines[i]).strip() != delimiter:
                i += 1
            bodies.append("\n".join(lines[first:i]))
            i += 1  # the delimiter line
    return "\n".join(kept), bodies


SHELL_SCAN_CHARS = 20_000
"""The head of a shell line (heredoc bodies already left out) that is tokenized: ``shlex`` grows each token a
character at a time, which is super-linear in a token's length, and a model may write a command of any size."""


_PLAIN_WORDS = re.compile(r"[();<>|&]+|[^ \t\r\n();<>|&]+")
"""The lexer's tokens of a line without quotes, escapes or comments: runs of its punctuation, and runs of
anything else but whitespace. Most shell lines are such, and ``shlex`` reads a character at a time in Python."""
_LEXED_ONLY = frozenset("'\"\\#")
_QUOTING = re.compile(r"'[^']*'?|\"(?:[^\"\\]|\\.)*\"?|\\.?|(?P<comment>(?<![^\s;&|()])#[^\n]*)|[^'\"\\#]+|#")
"""A shell line's quoted strings, escapes, comments (a ``#`` that starts a word, to the end of its line) and the
rest, in one left-to-right pass (the alternatives start with different characters, so nothing is tried twice)."""
_OPERATOR_STAND_INS = {c: chr(0xE000 + n) for n, c in enumerate(";&|()<>")}
_MASK_OPERATORS = str.maketrans(_OPERATOR_STAND_INS)
_UNMASK_OPERATORS = str.maketrans({v: k for k, v in _OPERATOR_STAND_INS.items()})


def _for_lexer(script: str) -> str:
    """``script`` as the lexer reads it: comments left out, and the operator characters inside quotes replaced by
    private-use stand-ins. The lexer drops the quotes, so a quoted ``";;"`` or ``">"`` (``grep -n ";;" a.py``) would
    read as a separator or a redirect: the words are read back with ``_word`` once the operators are told apart.
    The lexer is given the lines joined by `` ; ``, so a comment it read itself would run to the end of the command
    (``# install`` on the first line took every command after it)."""
    return "".join(
        "" if m.lastgroup == "comment" else part.translate(_MASK_OPERATORS) if part[:1] in ("'", '"') else part
        for m in _QUOTING.finditer(script)
        for part in (m.group(0),)
    )


def _word(token: str) -> str:
    """A token as the command sees it: quoted operator characters back in place."""
    return token.translate(_UNMASK_OPERATORS)


def _shell_tokens(script: str) -> list[str]:
    script = script[:SHELL_SCAN_CHARS]
    if _LEXED_ONLY.isdisjoint(script):
        return _PLAIN_WORDS.findall(script.replace("\n", " ; "))
    script = _PATH_BACKSLASH.sub(r"\\\\", script)
    lexer = shlex.shlex(_for_lexer(script).replace("\n", " ; "), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""  # comments are already left out; a ``#`` inside a word (``a#b``) is part of it
    try:
        return list(lexer)
    except ValueError:  # an unbalanced quote (its operators unmasked): plain words are still worth reading
        return script.replace("\n", " ; ").split()


_NESTED_SHELLS = 2
"""How deep ``bash -lc "…"`` scripts inside scripts are read (each level lexes its script again)."""
PATCH_PROGRAMS = frozenset({"apply_patch", "applypatch", "git apply", "patch"})
"""Programs fed a patch (Codex's ``apply_patch`` envelope or a unified diff) on their standard input."""
_ANSWERS = {
    **dict.fromkeys(_SEARCHERS, "no match"),
    **dict.fromkeys(("diff", "cmp", "git diff", "colordiff"), "differs"),
    **dict.fromkeys(("test", "[", "[["), "false"),
}
"""Programs whose exit status 1 is an answer, not a failure: a search found nothing, the files differ, the
condition is false (2 and up are their errors)."""


@dataclass(slots=True)
class _ShellRead:
    """What a shell line does to files, whether it only reads, what its exit status 1 answers, and what the
    patches it applies define."""

    files: list[FileAction]
    reader: bool = True
    answer: str = ""
    definitions: list[Definitions] = field(default_factory=list)
    certain: set[int] = field(default_factory=set)
    """Indexes in ``files`` of the writes that took effect whatever the line's exit status: a redirect opens its
    file when its command starts (``cat > x.py <<EOF`` created x.py even if a later ``python x.py`` failed)."""
    after_cd: set[int] = field(default_factory=set)
    """Likewise, of writes by commands that ran unless a ``cd`` before them failed."""
    running: int = 2
    """How surely the simple command being recorded ran: ``_RAN``, ``_RAN_IF_CD`` or ``_MAY_NOT_HAVE_RUN``."""

    def took_effect(self, indexes: Iterable[int], running: int | None = None) -> None:
        """Mark ``files[i]`` for each index as done whatever the exit status, as surely as the command ran."""
        running = self.running if running is None else running
        if running == _RAN:
            self.certain.update(indexes)
        elif running == _RAN_IF_CD:
            self.after_cd.update(indexes)


_RAN, _RAN_IF_CD, _MAY_NOT_HAVE_RUN = 2, 1, 0
"""How surely a command of a line ran: the first always does; see ``_RUNS_ON`` for the rest."""


_RUNS_ON = frozenset({";", "|", "&", "|&", "("})
"""Separators after which the next command runs whenever the one before it ran (a list goes on, a pipeline's
members all start, a subshell's first command runs); after ``&&`` / ``||`` it depends on an exit status, but a
``cd`` that fails says so (``bash: cd: /x: No such file or directory``, zsh's ``cd: no such file…``, dash's
``cd: can't cd to``): when the output does not, ``cd /repo && cat > x.py <<EOF`` ran its ``cat``."""
CD_FAILED = re.compile(r"\bcd: ")
_CONTROL_WORDS = frozenset({"if", "then", "elif", "else", "while", "until", "do", "for", "case", "select", "function"})
"""Words that open a condition, a branch or a loop body: what follows may never run."""


def shell_files(command: str, base: str | None, workdirs: list[str], depth: int = 0) -> _ShellRead:
    """The files each simple command of a shell line acts on, whether the line only reads, and what its exit 1
    answers: the last command's answer, when its status is the line's (after a pipe, or every command reads)."""
    script, bodies = _heredoc_bodies(command)
    feeds = iter(bodies)
    read = _ShellRead([])
    words: list[str] = []
    piped = False
    running = _RAN  # how surely the command being read runs: the line's first does, then see _RUNS_ON
    redirected = False
    tokens = _shell_tokens(script)
    i = 0
    while i <= len(tokens):
        token = tokens[i] if i < len(tokens) else ";"
        i += 1
        if token in _SEPARATORS:
            read.running = _MAY_NOT_HAVE_RUN if words and words[0] in _CONTROL_WORDS else running
            if words:
                base, reads, answer = _simple_command(words, base, read, workdirs, depth)
                read.answer = answer if piped or read.reader else ""  # the commands before it only read
                read.reader = read.reader and reads
            if token in _RUNS_ON and not (token == "(" and words):  # ``name (`` defines a function
                running = read.running
            elif token == "&&" and words == ["cd", *words[1:2]] and not redirected:  # its failure would show
                running = min(read.running, _RAN_IF_CD)
            else:
                running = _MAY_NOT_HAVE_RUN
            piped = token == "|"
            words = []
            redirected = False
        elif token and set(token) <= set("<>&|") and ">" in token:  # a redirection: the next word is written
            target = _word(tokens[i]) if i < len(tokens) else ""
            i += 1
            redirected = True
            if not token.endswith("&") and quoted_ok(target, names_file):  # a redirect writes a file, any name
                if not (words and words[0] in _CONTROL_WORDS):
                    read.took_effect((len(read.files),), running)
                read.files.append(FileAction(WRITE, join_path(base, target)))
                read.reader = False
        elif token in ("<<", "<<<", "<<-"):
            i += 1  # the heredoc delimiter or here-string
            body = next(feeds, None) if token != "<<<" else None
            if body is not None and _program(words) in PATCH_PROGRAMS:
                patched, defined = patch_changes(body, base)
                read.files += patched
                read.definitions += defined
        elif token == "<":
            target = _word(tokens[i]) if i < len(tokens) else ""
            i += 1
            if looks_like_path(target):
                read.files.append(FileAction(READ, join_path(base, target)))
        else:
            words.append(_word(token))
    return read


def _program(words: list[str]) -> str:
    """The program a simple command runs (``git apply`` for git's subcommands), past assignments and prefixes."""
    at = 0
    while at < len(words) and (_ASSIGNMENT.match(words[at]) or words[at] in _COMMAND_PREFIXES):
        at += 1
    if at == len(words):
        return ""
    program = posixpath.basename(words[at])
    return f"git {words[at + 1]}" if program == "git" and at + 1 < len(words) else program


def _simple_command(
    words: list[str], base: str | None, read: _ShellRead, workdirs: list[str], depth: int = 0
) -> tuple[str | None, bool, str]:
    """Record what one simple command does to files; return the folder the next one runs in, whether it only
    reads, and what its exit status 1 answers (``_ANSWERS``)."""
    files = read.files
    while words and (_ASSIGNMENT.match(words[0]) or words[0] in _COMMAND_PREFIXES):
        words = words[1:]
    if not words:
        return base, True, ""
    program, args = posixpath.basename(words[0]), words[1:]
    if program in _SHELLS and len(args) >= 2 and args[0] in ("-c", "-lc", "-ic") and depth < _NESTED_SHELLS:
        # ``zsh -lc "printf '…' > out.md"`` as one string (codex exec): the script is the command
        nested = shell_files(args[1], base, workdirs, depth + 1)
        read.took_effect([len(files) + n for n in nested.certain])
        read.took_effect([len(files) + n for n in nested.after_cd], min(read.running, _RAN_IF_CD))
        files += nested.files
        read.definitions += nested.definitions
        return base, nested.reader, nested.answer
    if program == "cd":
        target = next((a for a in args if not a.startswith("-")), "")
        if not target or target.startswith("~"):
            return None, True, ""
        base = join_path(base, target)
        if base.startswith("/"):
            workdirs.append(base)
        return base, True, ""
    if program == "git" and args:
        program, args = f"git {args[0]}", args[1:]
        if program == "git show":  # ``git show REV:path`` shows path
            args = [a.split(":", 1)[1] if ":" in a and not a.startswith("-") else a for a in args]
    if program in ("git clone", "mkdir", "rmdir"):  # a repository URL, the folders made or removed: no file
        return base, False, ""
    answer = _ANSWERS.get(program, "")
    recursive = program in ("rg", "ag", "ack") or (program in _SEARCHERS and any(map(_recurses, args)))
    if program in _SEARCHERS:
        args = _without_pattern(args)
    elif program == "find":
        args = [a for i, a in enumerate(args) if not (i and args[i - 1] in _FIND_PATTERNS)]
    elif program in ("sed", "perl"):  # the script is no file: ``sed -i 's/a/b/' .bashrc``, ``sed -e X -i f``
        args = _without_script(args)
    loose = program in _FILE_PROGRAMS and not any(a in ("-r", "-R", "-rf", "-fr", "-a") for a in args)
    operands = [a for a in (path_operand(a, loose) for a in args) if a]
    if recursive or program in _FOLDER_READERS:  # their operands are folders unless named like files
        operands = [a for a in operands if looks_like_file(a) or names_bare_file(a)]
    if program in ("rm", "unlink", "git rm"):
        files += [FileAction(DELETE, join_path(base, p)) for p in operands]
    elif program in ("mv", "git mv", "cp") and len(operands) >= 2:
        *sources, destination = operands
        for source in sources:
            target = destination
            if len(sources) > 1 or destination.endswith("/"):
                target = posixpath.join(destination, posixpath.basename(source))
            if program == "cp":
                files += [FileAction(READ, join_path(base, source)), FileAction(WRITE, join_path(base, target))]
            else:
                files.append(FileAction(MOVE, join_path(base, source), join_path(base, target)))
    elif program in ("touch", "tee"):  # they open their files as they start, as a redirect does
        read.took_effect(range(len(files), len(files) + len(operands)))
        files += [FileAction(WRITE, join_path(base, p)) for p in operands]
    elif program in ("sed", "perl") and any(a.startswith("-i") or a.startswith("-pi") for a in args):
        files += [FileAction(EDIT, join_path(base, p)) for p in operands]
    elif program in ("git checkout", "git restore") and (operands or "--" in args):
        # ``git checkout -- a.py`` / ``git restore a.py`` put the files back as committed: a change to each
        files += [FileAction(EDIT, join_path(base, p)) for p in operands]
    elif program in _READERS or (program.startswith("git ") and program[4:] in _GIT_READERS):
        files += [FileAction(READ, join_path(base, p)) for p in operands]
        return base, True, answer
    else:  # ``git apply``, ``patch``, ``pytest``: the files named are used
        files += [FileAction(USE, join_path(base, p)) for p in operands]
    return base, False, answer


def _recurses(option: str) -> bool:
    """A search option that makes it recurse into folders (``-r``, ``-rn``, ``-Rl``, ``--recursive``)."""
    if option.startswith("--"):
        return option in ("--recursive", "--dereference-recursive")
    return option.startswith("-") and ("r" in option or "R" in option)


_FOLDER_READERS = frozenset({"ls", "find", "tree", "du", "dir", "Get-ChildItem"})
"""Listers, and searches that recurse (``grep -r``, ``rg``): an operand is a folder unless it is named like a
file (``grep -r X /testbed`` reads no file called ``testbed``)."""


def _without_pattern(args: list[str]) -> list[str]:
    """A search's arguments without its pattern (``-e PATTERN``, else the first operand): it names no file."""
    if any(a in ("-e", "--regexp") for a in args):
        return [
            a
            for i, a in enumerate(args)
            if a not in ("-e", "--regexp") and args[i - 1 : i] not in (["-e"], ["--regexp"])
        ]
    if any(a in ("-f", "--file") or a.startswith("--regexp=") for a in args):
        return args
    pattern = next((i for i, a in enumerate(args) if not a.startswith("-")), None)
    return args if pattern is None else args[:pattern] + args[pattern + 1 :]


def _without_script(args: list[str]) -> list[str]:
    """sed / perl arguments without the script (``-e SCRIPT``, else the first operand, unless ``-f`` names it)."""
    if any(a in ("-e", "--expression") for a in args):
        return [
            a
            for i, a in enumerate(args)
            if a not in ("-e", "--expression") and args[i - 1 : i] not in (["-e"], ["--expression"])
        ]
    script = next((i for i, a in enumerate(args) if not a.startswith("-")), None)
    return args if script is None else args[:script] + args[script + 1 :]
