"""The ``context_recall`` tool: search and fetch the originals that the current view summarizes or masks.

Compaction never changes the stored history, so whatever a summary paraphrases or a placeholder or a clip
stands for can be given back on request. The tool reads only its own session's manager; a search reads only
the groups before the verbatim tail (``state.tail_start``) and the messages the view last sent shows clipped
(``RequestView.clipped``); a fetch takes a handle (as placeholders and clip markers print them) and pages the
original text. It costs no LLM call, and what it returns is data — excerpts,
text and where they come from — never instructions.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import regex
from amplifier_core.models import ToolResult

from ..config import RECALL_TOOL_NAME
from ..core.handles import HandleError, handle_for, resolve
from ..core.messages import RESULT_BLOCK_TYPE, Message, block_text, message_text, scrub_value

if TYPE_CHECKING:
    from ..manager import SummarizingContextManager

PAGE_CHARS = 8_000
"""Most text one fetch returns; ``next_offset`` says where the next page starts."""
SEARCH_OUTPUT_CHARS = 4_000
"""Most excerpt text one search returns, all hits together."""
EXCERPT_CONTEXT = 120
"""Characters kept either side of a hit."""
DEFAULT_RESULTS = 10
MAX_RESULTS = 50
MAX_QUERY_CHARS = 500
SEARCH_SECONDS = 1.0
"""Time budget of one search; a regex that runs past it stops the search with what was found so far."""
MAX_REPEAT = 1_000
"""Largest count a model's regex may give a repeat (``{n}``, ``{m,n}``)."""
MAX_PATTERN_COST = 20_000
"""Largest size of a model's regex once its counted repeats are unrolled (``(?:a{100}){200}`` is 20,000),
which is what ``regex.compile`` spends memory and time on before any budget applies: ``(?:a{65535}){65535}``,
19 characters, took over a gigabyte."""

DESCRIPTION = (
    "Recall the original text of earlier parts of this conversation that the context now shows only as a "
    "[CONTEXT SUMMARY] or as masked placeholders ('[tool output masked: …; handle m12.0-abc123]', "
    "'… [clipped: …; handle …]', '[... N characters clipped; … handle …]') or as a preview of a large output "
    "saved to a file ('[LARGE TOOL OUTPUT SAVED TO A FILE …]'). operation 'search': find a text "
    "(or a regex with regex: true, "
    "case-insensitive) in the summarized, masked, clipped or saved messages, tool calls and tool outputs; returns "
    "excerpts "
    "with their handles. operation 'fetch': the original message or tool output behind a handle, in pages "
    f"of up to {PAGE_CHARS:,} characters (pass next_offset as offset for the next page). Messages still shown "
    "in full need no recall. Read-only; returns data from this session's history only."
)

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "operation": {"type": "string", "enum": ["search", "fetch"], "description": "search or fetch"},
        "query": {
            "type": "string",
            "maxLength": MAX_QUERY_CHARS,
            "description": "search: the text to find (case-insensitive)",
        },
        "regex": {"type": "boolean", "default": False, "description": "search: treat query as a regular expression"},
        "max_results": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_RESULTS,
            "default": DEFAULT_RESULTS,
            "description": "search: most excerpts returned",
        },
        "handle": {"type": "string", "description": "fetch: a handle such as m12-3f9a1c or m12.0-07be55"},
        "offset": {"type": "integer", "minimum": 0, "default": 0, "description": "fetch: first character to return"},
    },
    "required": ["operation"],
}


class RecallError(ValueError):
    """Input the tool cannot act on; its message is returned to the model."""


@dataclass(frozen=True)
class Piece:
    """One searchable text of a hidden message: the message's own text, or one of its tool outputs."""

    handle: str
    index: int
    block: int | None
    text: str


class RecallTool:
    """An amplifier-core Tool over one manager's history (the mounted session's, and nothing else)."""

    name = RECALL_TOOL_NAME
    description = DESCRIPTION

    def __init__(self, manager: SummarizingContextManager, *, search_seconds: float = SEARCH_SECONDS) -> None:
        self.manager = manager
        self.search_seconds = search_seconds

    @property
    def input_schema(self) -> dict[str, Any]:
        return INPUT_SCHEMA

    async def execute(self, input: dict[str, Any]) -> Any:
        try:
            if not isinstance(input, dict):
                raise RecallError("input must be an object")
            operation = input.get("operation")
            if operation == "search":
                output = self.search(input)
            elif operation == "fetch":
                output = self.fetch(input)
            else:
                raise RecallError(f"operation must be 'search' or 'fetch', got {operation!r}")
        except (RecallError, HandleError) as exc:
            return ToolResult(success=False, error={"message": scrub_value(str(exc))})
        except (MemoryError, RecursionError) as exc:  # a last resort: the input is bounded so that neither happens
            message = f"the search ran out of resources ({type(exc).__name__})"
            return ToolResult(success=False, error={"message": message})
        # Stored text may hold lone surrogates (a cut emoji): what goes back to the model must serialize.
        return ToolResult(success=True, output=scrub_value(output))

    # ------------------------------------------------------------------ operations

    def search(self, input: dict[str, Any]) -> dict[str, Any]:
        query = input.get("query")
        if not isinstance(query, str) or not query.strip():
            raise RecallError("search needs a non-empty 'query'")
        if len(query) > MAX_QUERY_CHARS:
            raise RecallError(f"query is {len(query):,} characters; at most {MAX_QUERY_CHARS} are allowed")
        limit = _integer(input, "max_results", DEFAULT_RESULTS, 1, MAX_RESULTS)
        use_regex = input.get("regex", False)
        if not isinstance(use_regex, bool):
            raise RecallError("'regex' must be true or false")
        if use_regex:
            problem = pattern_problem(query)
            if problem:
                raise RecallError(f"regular expression refused: {problem}")
        try:
            pattern = regex.compile(query if use_regex else regex.escape(query), SEARCH_FLAGS)
        except (regex.error, ValueError) as exc:
            raise RecallError(f"invalid regular expression: {exc}") from None
        except (MemoryError, RecursionError, OverflowError):
            raise RecallError("regular expression refused: too large to compile") from None

        deadline = time.perf_counter() + self.search_seconds
        results: list[dict[str, Any]] = []
        used, complete, timed_out, clipped = 0, True, False, False
        for piece in self._hidden_pieces():
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                timed_out = True
                break
            try:
                for match in pattern.finditer(piece.text, timeout=remaining):
                    if len(results) >= limit:
                        complete = False
                        break
                    excerpt = _excerpt(piece.text, match.start(), match.end())
                    if used + len(excerpt) > SEARCH_OUTPUT_CHARS:
                        clipped, complete = True, False
                        break
                    used += len(excerpt)
                    results.append({**self._where(piece.index, piece.block, piece.handle), "excerpt": excerpt})
            except (TimeoutError, MemoryError, RecursionError):
                timed_out = True
                break
            if not complete:
                break
        output: dict[str, Any] = {
            "operation": "search",
            "query": query,
            "regex": use_regex,
            "results": results,
            "complete": complete and not timed_out,
        }
        if timed_out:
            output["note"] = f"search stopped after its {self.search_seconds:g}s time budget; results are partial"
        elif clipped:
            output["note"] = f"excerpts stopped at the {SEARCH_OUTPUT_CHARS:,}-character output budget"
        elif not complete:
            output["note"] = f"stopped at max_results={limit}; narrow the query for others"
        if not results and not timed_out:
            output["note"] = "no match in the summarized, masked or clipped part of the conversation"
        return output

    def fetch(self, input: dict[str, Any]) -> dict[str, Any]:
        text_handle = input.get("handle")
        if not isinstance(text_handle, str):
            raise RecallError("fetch needs a 'handle' (as printed in a placeholder, e.g. m12.0-3f9a1c)")
        offset = _integer(input, "offset", 0, 0, None)
        messages = self.manager.history.messages
        handle, target = resolve(messages, text_handle)
        text = block_text(target) if handle.block is not None else message_text(target)
        if offset > len(text):
            raise RecallError(f"offset {offset:,} is past the end ({len(text):,} characters)")
        page = text[offset : offset + PAGE_CHARS]
        end = offset + len(page)
        return {
            "operation": "fetch",
            **self._where(handle.message, handle.block, text_handle.strip()),
            "total_chars": len(text),
            "offset": offset,
            "text": page,
            "next_offset": end if end < len(text) else None,
        }

    # ------------------------------------------------------------------ the hidden part

    def hidden_end(self) -> int:
        """Messages before this index belong to groups the view does not show verbatim."""
        manager = self.manager
        tail = manager.state.tail_start
        groups = manager.history.groups
        return groups[tail - 1].end if tail > 0 and tail <= len(groups) else 0

    def _hidden_pieces(self) -> Iterator[Piece]:
        """The groups before the verbatim tail, then the newer messages the last view sent showed clipped."""
        history = self.manager.history
        messages = history.messages
        system = set(history.system)
        end = self.hidden_end()
        for index in range(end):
            if index in system:
                continue
            yield from _pieces(messages, index)
        for index in self._clipped():
            if index >= end and index not in system:
                yield from _pieces(messages, index)

    def _clipped(self) -> tuple[int, ...]:
        """Stored indices the view last sent shows clipped (the newest group larger than the budget) or with a
        spilled output's preview."""
        history = self.manager.history
        shown_in_part = sorted(set(self.manager.view.clipped).union(history.spilled))
        return tuple(i for i in shown_in_part if 0 <= i < len(history.messages))

    def _where(self, index: int, block: int | None, handle: str) -> dict[str, Any]:
        history, state = self.manager.history, self.manager.state
        message = history.messages[index]
        group = _group_of(history.groups, index)
        if index in set(history.system):
            shown = "system"
        elif index in self._clipped():
            verbatim = group is not None and group >= state.tail_start
            shown = "spilled" if verbatim and index in history.spilled else "clipped"
        elif group is None or group >= state.tail_start:
            shown = "verbatim"
        elif group >= state.boundary:
            shown = "masked"
        elif group < state.summarized_end:
            shown = "summarized"
        else:
            shown = "truncated"
        where: dict[str, Any] = {"handle": handle, "message": index, "role": message.get("role"), "group": group}
        if block is not None:
            where["block"] = block
        where["shown"] = shown
        return where


SEARCH_FLAGS = regex.IGNORECASE | regex.V0
"""How a search compiles its pattern; the cost check parses with the same flags."""
_COUNTED_REPEAT = regex.compile(r"\{(\d*)(?:,(\d*))?\}")
_SUBROUTINE = regex.compile(r"\(\?(?:R|&|P>|[+-]?\d)")
_NO_RECURSION = "recursion and subroutine calls ((?R), (?1), (?&name), \\g<name>) are not allowed"
_NO_FUZZY = "fuzzy matching ({e<=n}) is not allowed"
_REFUSED_NODES = {"CallGroup": _NO_RECURSION, "CallRef": _NO_RECURSION, "Fuzzy": _NO_FUZZY}
"""Node kinds of the parsed pattern whose memory grows with the text searched, by class name."""


class _TooCostly(Exception):
    """Why the parsed pattern is refused (raised from deep in the walk)."""


def pattern_problem(pattern: str) -> str | None:
    """Why a regex written by the model could cost more than a search may spend, or None.

    The search's time budget bounds matching only; compiling unrolls counted repeats, and recursion or
    subroutine calls (``(?R)``, ``(?1)``, ``(?&name)``) and fuzzy matching can exhaust memory while matching,
    before any timeout is checked. So repeats are bounded in count and in their nested product (the size the
    compiled pattern unrolls to), and the constructs whose memory grows with the text are refused.

    All of it is judged on the tree the engine itself parses, not on the pattern's spelling: in verbose mode
    a space, a newline or a ``# comment`` may stand between a group and its ``{n}``, and so may an inline
    ``(?#…)`` comment, and ``(?x)`` may come last yet apply to the whole pattern. A spelling that calls
    another group (``\\g<name>``, ``(?R)``) is refused even where the engine would read a backreference.
    """
    if "\\g" in pattern or _SUBROUTINE.search(pattern):
        return _NO_RECURSION
    counts = [int(n) for found in _COUNTED_REPEAT.finditer(pattern) for n in found.groups() if n]
    if max(counts, default=0) > MAX_REPEAT:  # spelled so: the engine may refuse it (too big) or unroll it
        return f"a repeat count of {max(counts):,} is over the {MAX_REPEAT:,} allowed"
    try:
        tree = _parsed(pattern)
    except regex.error:
        return None  # the compile that follows reports it, with its position
    except ValueError as exc:  # incompatible flags ((?V1) here) are a ValueError, not a regex.error
        return f"invalid flags ({exc})"
    except RecursionError:
        return "it nests too deeply"
    except (AttributeError, TypeError, ImportError):  # the engine's parser changed shape: judge nothing unseen
        return "its cost cannot be judged with this version of the regex module"
    try:
        cost = _cost(tree)
    except _TooCostly as exc:
        return str(exc)
    except RecursionError:
        return "it nests too deeply"
    if cost > MAX_PATTERN_COST:
        return f"its repeats unroll to more than {MAX_PATTERN_COST:,} items"
    return None


def _parsed(pattern: str) -> Any:
    """The tree ``regex.compile(pattern, SEARCH_FLAGS)`` builds from, parsed as it parses it (a flag such as
    ``(?x)`` set anywhere but at the start applies to the whole pattern: the parse starts again with it)."""
    from regex import _regex_core as core  # the engine's own parser: what it compiles is what is judged

    flags = SEARCH_FLAGS
    for _ in range(8):  # each pass can only add global flags, and there are few
        source = core.Source(pattern)  # type: ignore[attr-defined]  # types-regex stubs omit the private parser
        info = core.Info(flags, source.char_type, {})  # type: ignore[attr-defined]  # types-regex stubs omit the private parser
        info.guess_encoding = core.UNICODE
        source.ignore_space = bool(info.flags & core.VERBOSE)
        try:
            return core._parse_pattern(source, info)  # type: ignore[attr-defined]  # types-regex stubs omit the private parser
        except core._UnscopedFlagSet:  # type: ignore[attr-defined]  # types-regex stubs omit the private parser
            flags = info.global_flags
    raise ValueError("its inline flags do not settle")


def _cost(node: Any) -> int:
    """Items ``node`` unrolls to: leaves count one, sequences and alternatives add, a counted repeat
    multiplies its body by its largest count (an unbounded ``*``/``+`` loops over one copy)."""
    from regex._regex_core import RegexBase  # type: ignore[attr-defined]  # types-regex stubs omit the private parser

    kind = type(node).__name__
    if kind in _REFUSED_NODES:
        raise _TooCostly(_REFUSED_NODES[kind])
    children = [
        child
        for value in vars(node).values()
        for child in (value if isinstance(value, list | tuple) else (value,))
        if isinstance(child, RegexBase)
    ]
    body = sum(_cost(child) for child in children) if children else 1
    if hasattr(node, "min_count") and hasattr(node, "max_count"):
        counts = [n for n in (node.min_count, node.max_count) if isinstance(n, int)]
        count = max(counts, default=1)
        if count > MAX_REPEAT:
            raise _TooCostly(f"a repeat count of {count:,} is over the {MAX_REPEAT:,} allowed")
        body = max(body, 1) * max(count, 1)
    if body > MAX_PATTERN_COST:
        raise _TooCostly(f"its repeats unroll to more than {MAX_PATTERN_COST:,} items")
    return body


def _pieces(messages: Sequence[Message], index: int) -> Iterator[Piece]:
    message = messages[index]
    content = message.get("content")
    blocks: list[Any] = content if isinstance(content, list) else []
    results = [i for i, b in enumerate(blocks) if isinstance(b, dict) and b.get("type") == RESULT_BLOCK_TYPE]
    own = message if not results else {**message, "content": [b for i, b in enumerate(blocks) if i not in results]}
    text = message_text(own)
    if text:
        yield Piece(handle_for(messages, index), index, None, text)
    for i in results:
        text = block_text(blocks[i])
        if text:
            yield Piece(handle_for(messages, index, i), index, i, text)


def _group_of(groups: Sequence[Any], index: int) -> int | None:
    low, high = 0, len(groups)
    while low < high:
        mid = (low + high) // 2
        if groups[mid].end <= index:
            low = mid + 1
        else:
            high = mid
    return low if low < len(groups) and groups[low].start <= index < groups[low].end else None


def _excerpt(text: str, start: int, end: int) -> str:
    end = min(end, start + 2 * EXCERPT_CONTEXT)  # a long match is shown by its head
    left, right = max(start - EXCERPT_CONTEXT, 0), min(end + EXCERPT_CONTEXT, len(text))
    return ("…" if left else "") + text[left:right] + ("…" if right < len(text) else "")


def _integer(input: dict[str, Any], key: str, default: int, low: int, high: int | None) -> int:
    value = input.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
        bounds = f">= {low}" + (f" and <= {high}" if high is not None else "")
        raise RecallError(f"'{key}' must be an integer {bounds}, got {value!r}")
    return value
