"""Self-compaction: a summary asked for at the end of the prefix the session last sent, billed as a cache read.

When the summarizer is the session's own provider and model, a request that begins with exactly the messages the
session's last request sent (system, the summary in force, the span as that view showed it, the rest of the view,
in the same order, with the same tool schemas) and then appends the summarize instruction as one more user
message reads all of that prefix from the provider's prompt cache: Anthropic's breakpoint on the last message of
the session's request (provider-anthropic marks the last stable message; the instruction is marked ephemeral, so
the breakpoint stays where the session's own request put it) and OpenAI's automatic prefix cache both hold it.
With another model or a direct backend the compact prompt (``prompts/summarize_*.md``) is sent as before.

``SentView`` is what the manager records of each view it returns; ``locate`` finds a span's messages in it (None
when the view does not show the span exactly as a summary would need: another history, a clipped copy, a
boundary that moved); ``instruction`` writes the appended message; ``InContextCall`` adapts a backend's
``complete_in_context`` to the ``complete`` the retry policy wraps, so retries, deadlines and the accounting are
the compact prompt's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..backends.base import AcceptsMessages, SessionCacheSharing
from ..core.history import History
from ..core.messages import Message

INSTRUCTION_KIND = "context-summarize:instruction"
"""``metadata["source"]`` of the appended instruction, beside ``ephemeral``: it is never stored or sent again."""


@dataclass(frozen=True)
class SentView:
    """One view as returned to the orchestrator: the list itself and where its groups start."""

    messages: Sequence[Message]
    length: int
    """How many messages it had when returned (an orchestrator may append its own after them)."""
    history: Any
    boundary: int
    tail_start: int
    head: int
    """Index of the first message of group ``boundary`` in ``messages``."""
    sent_at: float = 0.0
    """When it was returned (``core.clock.now()``): a provider's cache holds a prompt only so long."""

    def cached(self, at: float, ttl_s: float) -> bool:
        """Whether the provider may still hold this view in its prompt cache at ``at`` (``ttl_s`` > 0)."""
        return ttl_s > 0 and at - self.sent_at <= ttl_s


@dataclass(frozen=True)
class InContext:
    """A span found in the last view sent: ``prefix`` is that view, ``span`` its messages ``[first, end)``."""

    prefix: list[Message]
    first: int
    end: int

    @property
    def span(self) -> list[Message]:
        return self.prefix[self.first : self.end]

    def conversation_number(self, index: int) -> int:
        """1-based number of message ``index`` among the conversation's messages (system messages not counted)."""
        return sum(1 for m in self.prefix[: index + 1] if m.get("role") != "system")


class MaskedGroups(Protocol):
    """Groups as a view shows them masked (``compaction.view.masking.Masks``)."""

    def group(self, index: int) -> list[Message]: ...


def locate(
    sent: SentView | None, history: History, masks: MaskedGroups | None, start: int, end: int
) -> InContext | None:
    """Groups ``[start, end)`` in ``sent``, shown as that view showed them (masked before its ``tail_start``).

    Every message of the span is compared with the form the view would show it in (identity first, so the usual
    case costs a pointer compare per message); any difference, or groups the view does not show, gives None.
    """
    if sent is None or sent.history is not history or not sent.boundary <= start < end:
        return None
    if end > len(history.groups) or not history.groups[end - 1].closed:
        return None
    position = sent.head
    for g in range(sent.boundary, start):
        position += len(_shown(history, masks, sent, g))
    first = position
    view = sent.messages
    for g in range(start, end):
        for message in _shown(history, masks, sent, g):
            if position >= sent.length or not (view[position] is message or view[position] == message):
                return None
            position += 1
    if first == position:
        return None
    return InContext(list(view[: sent.length]), first, position)


def _shown(history: History, masks: MaskedGroups | None, sent: SentView, group: int) -> list[Message]:
    if masks is not None and group < sent.tail_start:
        return masks.group(group)
    return history.shown(group)


def instruction(
    context: InContext, rules: str, max_words: int, max_tokens: int, previous: bool, guidance: str = ""
) -> str:
    """The user message appended to the prefix: which messages to summarize and the summarizer's own rules."""
    first, last = context.conversation_number(context.first), context.conversation_number(context.end - 1)
    earlier = (
        "The [CONTEXT SUMMARY] message before them already stands for what came earlier: do not repeat it. "
        if previous
        else ""
    )
    return (
        "Pause the task: this request is not from the user. Write a summary of part of the conversation above; "
        "it will replace that part in your context.\n"
        f"The part: conversation messages {first} to {last} (counting every message after the system prompt "
        f"from 1, tool results included). {earlier}The messages after it stay in view as they are, so summarize "
        f"only the part.\n\n{rules}\n{guidance}\n"
        f"Stay under {max_words} words (about {max_tokens} tokens): a shorter summary is better than a longer one. "
        "Answer with the summary only, and call no tool."
    )


def rules_of(system_prompt: str) -> str:
    """The compact prompt's system rules, without its paragraphs about the fenced transcript (here the part to
    summarize is the conversation itself)."""
    kept = [p for p in system_prompt.split("\n\n") if "TRANSCRIPT" not in p and "[#n ROLE]" not in p]
    return "\n\n".join(kept).strip()


def instruction_message(text: str) -> Message:
    return {"role": "user", "content": text, "metadata": {"ephemeral": True, "source": INSTRUCTION_KIND}}


class InContextCall:
    """``backend.complete_in_context(prefix + [instruction])`` behind the ``complete`` signature the retry policy
    calls: ``system`` is unused (the session's own system messages lead the prefix), ``prompt`` is the
    instruction."""

    def __init__(self, backend: Any, prefix: list[Message]) -> None:
        self.backend = backend
        self.prefix = prefix
        self.name = backend.name
        self.model = backend.model

    async def complete(self, system: str, prompt: str, max_output_tokens: int, provider: Any | None = None) -> Any:
        return await self.backend.complete_in_context(
            [*self.prefix, instruction_message(prompt)], max_output_tokens, provider
        )


def shares_session_cache(backend: Any, provider: Any | None, context: InContext) -> bool:
    """Whether ``backend`` answers with the session's own provider and model for a request of ``provider``, and
    can send ``context``'s prefix as the session sent it."""
    if not isinstance(backend, SessionCacheSharing):
        return False
    try:
        return bool(backend.shares_session_cache(provider)) and (
            not isinstance(backend, AcceptsMessages) or bool(backend.accepts(context.prefix))
        )
    except Exception:  # a provider fault asking for its model costs the cache read, never the summary
        return False
