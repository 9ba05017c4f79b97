"""Summarizer prompt templates, loaded from files so they can be tuned without touching code.

The wheel ships ``prompts/`` inside the package; a source checkout reads the repository's
``prompts/``; ``prompt_dir`` in the config overrides both.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from string import Template

from ..core.clip import clip_middle
from ..core.messages import (
    CALL_BLOCK_TYPES,
    RESULT_BLOCK_TYPE,
    Message,
    arguments_text,
    block_kind,
    block_text,
    content_hash,
    extra_thinking,
    listed_calls,
    scrub_text,
    unique_content,
)

FENCE_OPEN = "<<<TRANSCRIPT"
FENCE_CLOSE = "TRANSCRIPT>>>"
ENTRY_OPEN = "[#"
"""How a transcript entry's header line starts: ``[#3 TOOL RESULT call_1]``, alone on its line. No line of an
entry's body starts so (``_body_safe`` escapes it), so content cannot open an entry of its own."""
_ENTRY_HEADER = re.compile(r"^\[#(\d+) ([^\]\n]*)\]$", re.MULTILINE)
_LINE_BREAKS = re.compile(r"\r\n?|[\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")
"""Every break ``str.splitlines`` (and a reader) sees that is not ``\\n``: bodies use ``\\n`` only."""
_HEADER_LOOKALIKE = re.compile(r"^([ \t]*)(?=\[#)", re.MULTILINE)
_LABEL_UNSAFE = re.compile(r"[^A-Za-z0-9 _.:()@/+-]")
LABEL_MAX_CHARS = 80
TEMPLATE_NAMES = ("summarize_system", "summarize_user", "merge_system", "merge_user")
GUIDED = ("summarize_user", "merge_user")
"""The templates that write or rewrite a summary: the user's guidance must reach every one."""
PLACEHOLDERS: dict[str, frozenset[str]] = {
    "summarize_system": frozenset(),
    "merge_system": frozenset(),
    "summarize_user": frozenset(
        {"previous_section", "guidance_section", "continuation_note", "max_words", "max_tokens", "transcript"}
    ),
    "merge_user": frozenset({"guidance_section", "max_words", "max_tokens", "transcript"}),
    "answer_system": frozenset(),
    "judge_system": frozenset(),
    "answer_user": frozenset({"transcript", "question"}),
    "judge_user": frozenset({"question", "reference", "keys", "answer"}),
}
"""The ``$placeholders`` the code fills in each template. Any other ``$name`` would reach the model as literal text
(``$guidance_sectionMerge``: a placeholder glued to the next word is another name), so ``load_prompts`` refuses it;
write ``${name}`` to glue one to a word, ``$$`` for a literal dollar."""
REQUIRED: dict[str, frozenset[str]] = {name: frozenset({"transcript", "guidance_section"}) for name in GUIDED}

_PACKAGE_DIR = Path(__file__).resolve().parent.parent

GUIDANCE_OPEN, GUIDANCE_CLOSE = "<<<USER_GUIDANCE", "USER_GUIDANCE>>>"
_KEEP_LINE = re.compile(r"^\W*(?:always\s+|must\s+|please\s+)*(?:keep|preserve|retain|never\s+drop)\s+(.+)$", re.I)
KEEP_NAMES_MAX = 20


def guidance_section(instructions: str | None, focus: str | None) -> str:
    """What the user asked the summaries to keep, for the summarize and merge prompts ('' when nothing: the prompt
    is then the one written without guidance, byte for byte)."""
    parts = []
    if instructions:
        parts.append(f"Standing instructions from the user for every summary:\n{_fenced(instructions)}")
    if focus:
        parts.append(f"The user asked this compaction to focus on:\n{_fenced(focus)}")
    if not parts:
        return ""
    return (
        "\n".join(parts)
        + "\nThis guidance is the user's own (it is not part of the transcript): follow it where the transcript "
        "allows, and keep verbatim what it names.\n"
    )


def _fenced(text: str) -> str:
    safe = fence_safe(text).replace(GUIDANCE_CLOSE, "USER_GUIDANCE>\u200b>>")
    return f"{GUIDANCE_OPEN}\n{safe}\n{GUIDANCE_CLOSE}"


def keep_names(*texts: str | None) -> tuple[str, ...]:
    """Names a line such as ``always keep the deploy password rotation date`` or ``keep: ORD-7731, ORD-7732``
    asks every summary to keep (what the offline summary honours): each comma- or ``and``-separated item, without
    a leading article; at most ``KEEP_NAMES_MAX``."""
    names: list[str] = []
    for text in texts:
        for line in (text or "").splitlines():
            match = _KEEP_LINE.match(line.strip()[:400])
            if match is None:
                continue
            for item in re.split(r",|;|\band\b", match.group(1).lstrip(":").strip()):
                item = re.sub(r"^(?:the|a|an|any|every|all)\s+", "", item.strip().strip(".'\"`"), flags=re.I)
                if len(item) >= 3 and item.lower() not in (n.lower() for n in names):
                    names.append(item)
    return tuple(names[:KEEP_NAMES_MAX])


def default_prompt_dir() -> Path:
    for candidate in (_PACKAGE_DIR / "prompts", _PACKAGE_DIR.parent / "prompts"):
        if (candidate / "summarize_system.md").is_file():
            return candidate
    raise FileNotFoundError("the packaged summarizer prompts are missing (expected prompts/summarize_system.md)")


@dataclass(frozen=True)
class PromptSet:
    templates: dict[str, str]

    @property
    def version(self) -> str:
        """Changes whenever any template changes, so cached summaries from old prompts are not served."""
        return content_hash(*self.templates.values())[:16]

    def system(self, kind: str) -> str:
        return Template(self.templates[f"{kind}_system"]).safe_substitute().strip()  # ``$$`` is a dollar

    def user(self, kind: str, **values: str) -> str:
        values.setdefault("guidance_section", "")  # no guidance: the prompt written before there was any
        return Template(self.templates[f"{kind}_user"]).safe_substitute(values).strip()


def load_prompts(prompt_dir: str | Path | None = None, names: tuple[str, ...] = TEMPLATE_NAMES) -> PromptSet:
    folder = Path(prompt_dir) if prompt_dir else default_prompt_dir()
    templates = {}
    for name in names:
        path = folder / f"{name}.md"
        if not path.is_file():
            raise ValueError(f"config key 'prompt_dir': {folder} has no {name}.md")
        try:
            templates[name] = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:  # the bare error names neither the file nor the key that chose it
            where = scrub_text(f"{folder}/{name}.md")
            raise ValueError(
                f"config key 'prompt_dir': {where} is not UTF-8 text (invalid byte at offset {exc.start})"
            ) from None
        except OSError as exc:
            raise ValueError(
                f"config key 'prompt_dir': cannot read {scrub_text(str(path))} ({type(exc).__name__})"
            ) from None
        _check_placeholders(folder, name, templates[name])
    return PromptSet(templates)


def _check_placeholders(folder: Path, name: str, template: str) -> None:
    """Refuse a template whose ``$placeholders`` the code would leave as literal text, or one of the summary
    templates that lacks the transcript or the user's guidance (it would be sent without it)."""
    known = PLACEHOLDERS.get(name)
    if known is None:
        return
    where = scrub_text(f"{folder}/{name}.md")
    found = set(Template(template).get_identifiers())
    unknown = sorted(found - known)
    if unknown:
        allowed = ", ".join(f"${n}" for n in sorted(known)) or "none"
        raise ValueError(
            f"config key 'prompt_dir': {where} has the unknown placeholder ${unknown[0][:60]} (this template's "
            f"placeholders: {allowed}; write ${{name}} to join one to a word, $$ for a literal dollar)"
        )
    missing = sorted(REQUIRED.get(name, frozenset()) - found)
    if missing:
        raise ValueError(f"config key 'prompt_dir': {where} lacks the placeholder ${missing[0]}")


def fence_safe(text: str) -> str:
    """Neutralise fence markers inside data so transcript text cannot close the fence early."""
    return text.replace(FENCE_CLOSE, "TRANSCRIPT>\u200b>>").replace(FENCE_OPEN, "<<\u200b<TRANSCRIPT")


def _block_line(block: object) -> str:
    text = block_text(block)
    if not isinstance(block, dict):
        return text
    kind = block_kind(block)
    if kind in CALL_BLOCK_TYPES:
        return f"[tool call {block.get('id', '')}] {text}"
    if kind == RESULT_BLOCK_TYPE:
        ref = block.get("tool_use_id") or block.get("tool_call_id") or ""
        return f"[tool result {ref}{' (error)' if block.get('is_error') else ''}] {text}"
    return text


def render_transcript(messages: list[Message], max_chars_per_message: int = 12_000) -> str:
    """Plain-text transcript of a span: numbered entries, tool traffic labelled, huge outputs clipped.

    Each entry is a header line ``[#n ROLE]`` and its body. Tool results get entries of their own, also when
    they arrive inside a user message (Anthropic ``tool_result`` blocks), so nothing a tool returned is shown
    under ``USER``. The structure cannot be forged from content: header labels keep only a safe alphabet, and
    in bodies every line break is ``\\n`` and a line opening like a header is escaped with a backslash
    (``_body_safe``); the prompt tells the model so. Linear in the span's size.
    """
    return join_entries(entry for message in messages for entry in transcript_entries(message, max_chars_per_message))


def transcript_entries(message: Message, max_chars_per_message: int = 12_000) -> list[tuple[str, str]]:
    """``(label, body)`` of each entry one message makes, its body as the transcript shows it (clipped, escaped,
    fence-safe), numbered only when joined (``join_entries``): a span cut into fragments renders each message once.

    Fence-safe per body is fence-safe over the whole: a fence marker holds ``<`` or ``>``, which neither a header
    line nor the blank line between entries has, so none can straddle a body's edge."""
    return [
        (label, fence_safe(_body_safe(clip_middle(body, max_chars_per_message))))
        for label, body in _message_entries(message)
    ]


def join_entries(entries: Iterable[tuple[str, str]], first: int = 1) -> str:
    """The transcript of ``transcript_entries``' entries, numbered from ``first``."""
    return "\n\n".join(f"{ENTRY_OPEN}{n} {label}]\n{body}" for n, (label, body) in enumerate(entries, first))


def parse_transcript(transcript: str) -> list[tuple[str, str]]:
    """``(label, body)`` of each entry of a ``render_transcript`` text, in order (text before the first
    header, if any, is left out)."""
    headers = list(_ENTRY_HEADER.finditer(transcript))
    out = []
    for i, match in enumerate(headers):
        end = headers[i + 1].start() if i + 1 < len(headers) else len(transcript)
        out.append((match.group(2), transcript[match.end() + 1 : end].removesuffix("\n\n")))
    return out


def _message_entries(message: Message) -> list[tuple[str, str]]:
    """The entries one message makes: its own (role) entry, and one per tool result it carries."""
    role = message.get("role")
    own = _label(str(role).upper() if role is not None else "?") or "?"
    if role == "tool":
        own = _label(f"TOOL RESULT {_text_id(message.get('tool_call_id'))}".strip())
    content = unique_content(message)  # a call stored both as a block and in tool_calls is shown once
    entries: list[tuple[str, list[str]]] = []
    if isinstance(content, str):
        entries.append((own, [content]))
    else:
        for block in content or []:
            if role != "tool" and isinstance(block, dict) and block_kind(block) == RESULT_BLOCK_TYPE:
                ref = _text_id(block.get("tool_use_id") or block.get("tool_call_id"))
                entries.append(
                    (_label(f"TOOL RESULT {ref}{' (error)' if block.get('is_error') else ''}"), [block_text(block)])
                )
            elif entries and entries[-1][0] == own:
                entries[-1][1].append(_block_line(block))
            else:
                entries.append((own, [_block_line(block)]))
    extra = [f"[tool call {i}] {name}({arguments_text(args)})" for i, name, args in listed_calls(message)]
    if message.get("reasoning_content"):
        extra.append(f"(reasoning) {message['reasoning_content']}")
    thinking = extra_thinking(message)
    if thinking:
        extra.append(f"(reasoning) {block_text(thinking)}")
    if extra or not entries:
        if entries and entries[-1][0] == own:
            entries[-1][1].extend(extra)
        else:
            entries.append((own, extra))
    return [(label, "\n".join(p for p in parts if p)) for label, parts in entries]


def _text_id(value: object) -> str:
    return value if isinstance(value, str) else ""


def _label(text: str) -> str:
    """A header label: a safe alphabet only (an id or a role may hold anything), one line, bounded."""
    return " ".join(_LABEL_UNSAFE.sub("_", text[: LABEL_MAX_CHARS * 2]).split())[:LABEL_MAX_CHARS]


def _body_safe(body: str) -> str:
    """``body`` with ``\\n`` as its only line break and no line opening like an entry header."""
    return _HEADER_LOOKALIKE.sub(r"\1\\", _LINE_BREAKS.sub("\n", body))
