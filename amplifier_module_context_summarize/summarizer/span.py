"""Turning a span of messages into a summary: prompting, validation, splitting and the failure ladder.

LLM summary → retries with backoff (``backends.retrying.RetryingBackend``) → one more ask after a rejected
summary (asked for half the size when it came back no smaller than its span; an ungrounded or degenerate one,
``grounding``, is first cut to its sound sentences when they are most of it) → extractive summary → a bare
omission marker. Nothing here raises for provider faults; the outcome says which rung produced the text so
events can report it.

The size asked for follows the span (at most ``SUMMARY_RATIO`` of it) and is given to the model both in tokens
and in words counted at the span's own tokens per word: path-heavy text runs 3-4 tokens a word, so a word limit
made for prose lets a model answer with more tokens than the span it summarizes.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from ..backends.base import Backend, BackendError, Fault, SendsGuidance, Skip
from ..backends.retrying import RetryingBackend, retries_for
from ..core.clock import now
from ..core.messages import Message, scrub_text
from .extractive import extractive_summary
from .fragments import SpanText
from .grounding import Source, check
from .in_context import InContext, InContextCall, instruction, rules_of, shares_session_cache
from .kept import gathered
from .pace import Pace
from .prompts import PromptSet, fence_safe, guidance_section, keep_names, render_transcript

logger = logging.getLogger(__name__)

_REFUSAL = re.compile(
    r"^\s*(i'?m sorry|i am sorry|i can(?:'|no)t (?:help|assist|comply|do that)|i won'?t|as an ai\b|sorry, but)",
    re.IGNORECASE,
)
MAX_SPLIT_DEPTH = 6
SUMMARY_RATIO = 0.25
"""A summary is asked for at most this share of the span it stands for."""
MIN_ASK_TOKENS = 96
"""The smallest summary asked for: a goal, a decision and the next step."""
MIN_SPAN_TOKENS = int(MIN_ASK_TOKENS / SUMMARY_RATIO)
"""A span smaller than this is not worth an LLM summary (it stays masked, or the span widens)."""
OFF_LOOP_MESSAGES = 2_000
"""A span of this many messages or more is rendered and counted in a worker thread (~30 us a message)."""
PROSE_TOKENS_PER_WORD = 1.3
MAX_TOKENS_PER_WORD = 4.0


@dataclass
class Outcome:
    text: str
    provider_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    fallback: Fault | Skip | None = None
    """None when the configured summarizer produced the text; else the fault that forced a lower rung, or why the
    LLM was not asked (``Skip``)."""
    foreign_model: str | None = None
    """Set when the response says another model answered than the one the cache key names."""
    artefacts: list[str] = field(default_factory=list)
    """The native compaction artefacts of the answers kept (``Completion.artefact``), in order: stored beside the
    summary when it is one answer's."""

    @property
    def cacheable(self) -> bool:
        return self.fallback is None and self.foreign_model is None


@dataclass(frozen=True)
class Ask:
    """One request to the model: the template ``kind``, the fenced ``transcript`` (``source_tokens`` long), the
    size asked for in tokens, and the template's other values."""

    kind: str
    transcript: str
    source_tokens: int
    tokens: int
    values: dict[str, str] = field(default_factory=dict)
    focus: str | None = None
    """The compaction's focus (``compact(focus=...)``, a ``context:pre_compact`` hook), passed down with each call:
    never read from anything ambient, so no summary can carry another compaction's focus."""
    transcript_tokens: int | None = None
    """The count of ``transcript`` itself when known (``source_tokens`` unless it was clipped): the pace then counts
    only the rest of the prompt."""


@dataclass(frozen=True)
class SummarizerSettings:
    max_output_tokens: int
    max_input_tokens: int
    timeout_s: float
    max_retries: int | None
    """None: ``retries_for`` decides (0 for a backend that retries itself, else ``DEFAULT_RETRIES``)."""
    wait_base: float = 1.0
    wait_max: float = 30.0


ExtractiveObserver = Callable[[list[Message], Outcome], None]
"""Sees one extractive summary: the span it summarized and what came of it (``SpanSummarizer.on_extractive``)."""


class SpanSummarizer:
    """Summarizes spans and merges summaries with one backend (or none: extractive only)."""

    def __init__(
        self,
        backend: Backend | None,
        prompts: PromptSet,
        count_text: Callable[[str], int],
        settings: SummarizerSettings,
    ) -> None:
        self.backend = backend
        self.prompts = prompts
        self.count_text = count_text
        self.settings = settings
        self.instructions: str | None = None
        """The user's standing guidance (``summary_instructions``), in every prompt beside the compaction's focus."""
        self.pace = Pace()
        """Seconds per input token of this summarizer's calls, measured (``pace.py``)."""
        self.on_extractive: list[ExtractiveObserver] = []
        """Called with the span and the outcome of every extractive summary, offline or a fallback after an LLM
        failure: no provider reports what one costs, so this is how a harness meters it (``evaluation``)."""

    def reads_authored_only(self, focus: str | None) -> bool:
        """Whether a summary asked with ``focus`` reads only what the user and the assistant wrote: the extractive
        summary with no names to keep (``keep_names`` searches every message's text, tool outputs included)."""
        return self.backend is None and not keep_names(self.instructions, focus)

    @property
    def name(self) -> str:
        return self.backend.name if self.backend else "extractive"

    @property
    def model(self) -> str | None:
        return self.backend.model if self.backend else None

    def extractive(
        self,
        messages: list[Message],
        previous_summary: str | None,
        fallback: Fault | Skip | None,
        pinned: Collection[str] = (),
        max_tokens: int | None = None,
        focus: str | None = None,
    ) -> Outcome:
        """``pinned``: requests the view shows verbatim beside the summary (the extractive summary only names them);
        ``max_tokens``: the summary's size when below the output cap; ``focus``: the compaction's, whose names it
        keeps first (``keep_names``)."""
        outcome = self._extract(messages, previous_summary, fallback, pinned, max_tokens, focus)
        self._observed(messages, outcome)
        return outcome

    def _extract(
        self,
        messages: list[Message],
        previous_summary: str | None,
        fallback: Fault | Skip | None,
        pinned: Collection[str],
        max_tokens: int | None,
        focus: str | None,
    ) -> Outcome:
        try:
            text = extractive_summary(
                messages,
                previous_summary=previous_summary,
                max_tokens=self._cap(max_tokens),
                count_tokens=self.count_text,
                pinned=pinned,
                keep=keep_names(self.instructions, focus),
            )
        except Exception as exc:  # the last rung before truncation must not take the agent down
            logger.warning("extractive summary failed (%s); omitting the span", type(exc).__name__)
            return Outcome(text=f"({len(messages)} earlier messages were omitted)", fallback=fallback or Fault.ERROR)
        return Outcome(text=scrub_text(text), fallback=fallback)

    def _observed(self, messages: list[Message], outcome: Outcome) -> None:
        for observe in self.on_extractive:
            try:
                observe(messages, outcome)
            except Exception as exc:  # an observer's bug must not cost the summary
                logger.warning("an extractive-summary observer failed (%s)", type(exc).__name__)

    async def extractive_off_loop(
        self,
        messages: list[Message],
        previous_summary: str | None,
        fallback: Fault | Skip | None,
        pinned: Collection[str] = (),
        max_tokens: int | None = None,
        focus: str | None = None,
    ) -> Outcome:
        """``extractive`` in a worker thread, so a long span does not hold the event loop (a span of thousands
        of messages takes seconds). Safe: it reads ``messages`` (a list of its own, whose messages nobody
        changes: stored ones are copies taken at ``add_message``, masked ones new dicts) and writes nothing
        shared; the token counter keeps no state. The observers see the outcome back on the loop."""
        span = list(messages)
        outcome = await asyncio.to_thread(self._extract, span, previous_summary, fallback, pinned, max_tokens, focus)
        self._observed(span, outcome)
        return outcome

    @property
    def max_retries(self) -> int:
        return retries_for(self.backend, self.settings.max_retries)

    def _retrying(self, outcome: Outcome, guidance: str, context: InContext | None = None) -> RetryingBackend:
        """The backend behind the retry policy, counting every attempt as a provider call of ``outcome``
        (asked at the end of ``context``'s prefix when given; sent ``guidance`` when it takes it apart).

        Built per ask (it is only settings): concurrent summaries then never share a counter or a guidance.
        """
        assert self.backend is not None
        s = self.settings
        inner: Any = self.backend
        if context is not None:
            inner = InContextCall(self.backend, context.prefix)
        elif isinstance(self.backend, SendsGuidance):
            inner = GuidedCall(self.backend, guidance)
        return RetryingBackend(
            inner,
            self.max_retries,
            s.timeout_s,
            s.wait_base,
            s.wait_max,
            on_attempt=lambda _n: _count_call(outcome),
        )

    async def summarize(
        self,
        messages: list[Message],
        previous_summary: str | None,
        provider: Any | None = None,
        deadline: float | None = None,
        pinned: Collection[str] = (),
        max_tokens: int | None = None,
        context: InContext | None = None,
        focus: str | None = None,
    ) -> Outcome:
        """``deadline`` (``core.clock.now()`` value) bounds every call and wait of this summary; ``pinned`` is
        for the extractive summary (``extractive``); ``max_tokens`` the size asked for, when below the output cap
        (the model is asked for fewer words; its output cap stays). ``context``: the span as the session's last
        view showed it, asked for at the end of that view when the backend is the session's own provider and
        model (``in_context``); else, or when that view is too long for one more message, the compact prompt.
        ``focus``: the compaction's, in every prompt of this summary (and its extractive fallback)."""
        if self.backend is None:
            return await self.extractive_off_loop(messages, previous_summary, None, pinned, max_tokens, focus)
        outcome = Outcome(text="")
        try:
            parts = None
            if context is not None and shares_session_cache(self.backend, provider, context):
                parts = await self._in_context(
                    context, previous_summary, provider, outcome, deadline, max_tokens, focus
                )
            if parts is None:
                if deadline is not None and deadline - now() <= 0:  # as its first ask would: before rendering the span
                    raise BackendError(Fault.DEADLINE)
                span = await self._span_text(messages)
                done: list[str] = []
                await self._summarize_fragments(
                    span, 0, len(messages), previous_summary, done, provider, outcome, 0, deadline, max_tokens, focus
                )
                parts = await self._fold(done, provider, outcome, deadline, max_tokens, focus)
        except BackendError as exc:
            # A fault of the moment (busy or slow) is INFO, the event says it; anything else is never silent.
            level = logging.INFO if exc.fault.transient else logging.WARNING
            logger.log(level, "summarizer %s failed (%s); using the extractive summary", self.name, exc.fault)
            fallback = await self.extractive_off_loop(messages, previous_summary, exc.fault, pinned, max_tokens, focus)
            fallback.provider_calls = outcome.provider_calls
            fallback.input_tokens, fallback.output_tokens = outcome.input_tokens, outcome.output_tokens
            return fallback
        outcome.text = scrub_text("\n\n".join(parts))
        return outcome

    async def _span_text(self, messages: list[Message]) -> SpanText:
        """The span rendered and counted once; a long one in a worker thread (1.4 s at 50,000 messages), so the loop
        runs meanwhile. Safe as ``extractive_off_loop`` is: the messages are nobody's to change, the counter keeps
        no state. A short one stays on the loop (a thread hop would only delay its first ask)."""
        if len(messages) < OFF_LOOP_MESSAGES:
            return SpanText(messages, self.count_text)
        return await asyncio.to_thread(SpanText, messages, self.count_text)

    async def merge(
        self,
        summaries: list[str],
        provider: Any | None = None,
        deadline: float | None = None,
        max_tokens: int | None = None,
        focus: str | None = None,
    ) -> Outcome:
        """One higher-tier summary standing for several consecutive ones (asked to keep within ``max_tokens``
        when that is below the output cap), steered by the compaction's ``focus``."""
        if self.backend is None:
            raise BackendError(Fault.ERROR)
        transcript = fence_safe("\n\n---\n\n".join(summaries))
        outcome = Outcome(text="")
        tokens = self.count_text(transcript)
        ask = Ask("merge", transcript, tokens, self._cap(max_tokens), focus=focus, transcript_tokens=tokens)
        outcome.text = await self._ask(ask, provider, outcome, deadline)
        return outcome

    async def _summarize_fragments(
        self,
        span: SpanText,
        lo: int,
        hi: int,
        previous_summary: str | None,
        done: list[str],
        provider: Any | None,
        outcome: Outcome,
        depth: int,
        deadline: float | None,
        max_tokens: int | None = None,
        focus: str | None = None,
    ) -> None:
        """Summarize messages ``[lo, hi)`` of a span onto ``done`` (the summaries of the fragments before them, in
        order), halving it into fragments that fit the summarizer's input. A range sure to be too long is halved
        without rendering it (``fragments``). Each fragment continues from ``previous_summary`` (the span's) and
        the newest summaries in ``done`` (``_newest``)."""
        context = "\n\n".join(p for p in [previous_summary, *self._newest(done, max_tokens)] if p) or None
        ask = self._fragment_ask(span, lo, hi, context, max_tokens, focus)
        if ask is not None:
            try:
                done.append(await self._ask(ask, provider, outcome, deadline))
                return
            except BackendError as exc:
                if exc.fault is not Fault.INPUT_TOO_LONG or hi - lo < 2 or depth >= MAX_SPLIT_DEPTH:
                    raise
        middle = lo + (hi - lo) // 2
        for a, b in ((lo, middle), (middle, hi)):
            await self._summarize_fragments(
                span, a, b, previous_summary, done, provider, outcome, depth + 1, deadline, max_tokens, focus
            )

    def _fragment_ask(
        self, span: SpanText, lo: int, hi: int, previous_summary: str | None, max_tokens: int | None, focus: str | None
    ) -> Ask | None:
        """The ask for messages ``[lo, hi)``, or None when they are several and too long for one (to be halved). One
        message too long is sent clipped."""
        limit = self.settings.max_input_tokens
        several = hi - lo > 1
        if several and span.least_tokens(lo, hi) > limit:
            return None
        transcript = span.transcript(lo, hi)
        source_tokens = self.count_text(transcript)
        if source_tokens > limit:
            if several:
                return None
            transcript = render_transcript(span.messages[lo:hi], max_chars_per_message=limit * 3)
        values = {
            "previous_section": _previous_section(previous_summary),
            "continuation_note": " (it continues from the earlier summary)" if previous_summary else "",
        }
        asked = self.asked_tokens(source_tokens, max_tokens)
        exact = source_tokens if source_tokens <= limit else None
        return Ask("summarize", transcript, source_tokens, asked, values, focus, transcript_tokens=exact)

    async def _in_context(
        self,
        context: InContext,
        previous_summary: str | None,
        provider: Any | None,
        outcome: Outcome,
        deadline: float | None,
        max_tokens: int | None,
        focus: str | None,
    ) -> list[str] | None:
        """The summary asked at the end of the session's last view; None when that request is too long for the
        model or the model answered it with a tool call (the compact prompt, which carries no tools, is then sent:
        the same request would only be answered the same way)."""
        transcript = render_transcript(context.span)
        source_tokens = self.count_text(transcript)
        values = {"previous_section": _previous_section(previous_summary)}
        ask = Ask("summarize", transcript, source_tokens, self.asked_tokens(source_tokens, max_tokens), values, focus)
        try:
            return [await self._ask(ask, provider, outcome, deadline, context)]
        except BackendError as exc:
            if exc.fault not in (Fault.INPUT_TOO_LONG, Fault.TOOL_CALL):
                raise
            logger.info("summary at the end of the view: %s; asking with the compact prompt", exc.fault)
            return None

    def _newest(self, parts: list[str], max_tokens: int | None) -> list[str]:
        """The newest fragment summaries within the size asked (the newest one at least): what the next fragment
        is given as the summary before it, beside the span's own previous summary. All of them made the prompt of
        the k-th fragment k summaries long, past the model's input after a few dozen fragments, and the work of
        counting and grounding those prompts quadratic in the span."""
        size, total = self._cap(max_tokens), 0
        for i in range(len(parts) - 1, -1, -1):
            total += self.count_text(parts[i])
            if total > size and i < len(parts) - 1:
                return parts[i + 1 :]
        return parts

    async def _fold(
        self,
        parts: list[str],
        provider: Any | None,
        outcome: Outcome,
        deadline: float | None,
        max_tokens: int | None,
        focus: str | None,
    ) -> list[str]:
        """The fragment summaries merged until they are within the size asked (or one is left): a span cut into k
        fragments otherwise comes back k times that size (a cold resume of 50,000 messages: 64 fragments, 106,000
        tokens asked for 1,800), which the plan can only make room for by summarizing the recent tail too.

        Merged in order, as many consecutive summaries per ask as the model's input takes (``max_input_tokens``,
        the fragments' own limit), each ask for the size asked; a failed merge falls back as a failed fragment
        does (the ladder in ``summarize``)."""
        size, limit = self._cap(max_tokens), self.settings.max_input_tokens
        while len(parts) > 1:
            counts = [self.count_text(part) for part in parts]
            if sum(counts) <= size:
                break
            merged: list[str] = []
            for lo, hi in batches(counts, limit):
                if hi - lo == 1:
                    merged.append(parts[lo])
                    continue
                transcript = fence_safe("\n\n---\n\n".join(parts[lo:hi]))
                tokens = self.count_text(transcript)
                ask = Ask(
                    "merge",
                    transcript,
                    tokens,
                    size,
                    focus=focus,
                    transcript_tokens=tokens,
                )
                merged.append(await self._ask(ask, provider, outcome, deadline))
            if len(merged) == len(parts):  # no two neighbours fit one ask: nothing more to fold
                break
            parts = merged
        return parts

    async def _ask(
        self, ask: Ask, provider: Any | None, outcome: Outcome, deadline: float | None, context: InContext | None = None
    ) -> str:
        """Ask the backend for about ``ask.tokens`` tokens; a rejected answer gets one more try.

        An answer no smaller than its source is asked again for half the size: the same prompt would only get
        the same answer back. An empty answer or a refusal is asked again as it was (models vary); so is one that
        names what its span never names, loops or forges markup (``grounding``), unless cutting it to its sound
        sentences keeps most of it.
        """
        guidance = guidance_section(self.instructions, ask.focus)
        backend = self._retrying(outcome, guidance, context)
        rejection: Fault | None = Fault.ERROR
        system = scrub_text(self.prompts.system(ask.kind))  # sendable as UTF-8
        tokens, per_word = ask.tokens, tokens_per_word(ask.transcript, ask.source_tokens)
        source: Source | None = None
        for _ in range(2):
            if deadline is not None and deadline - now() <= 0:
                raise BackendError(Fault.DEADLINE)
            if context is not None:
                prompt = instruction(
                    context,
                    rules_of(system),
                    max_words(tokens, per_word),
                    tokens,
                    bool(ask.values.get("previous_section")),
                    guidance,
                )
            else:
                prompt = self.prompts.user(
                    ask.kind,
                    transcript=ask.transcript,
                    max_words=str(max_words(tokens, per_word)),
                    max_tokens=str(tokens),
                    guidance_section=guidance,
                    **ask.values,
                )
            prompt = scrub_text(prompt)
            began = now()
            # Counted here, not taken from the usage reported: a provider's count may be of another tokenizer,
            # of the part not served from its cache, or missing. In the session's context the view before the
            # instruction is its cached prefix: the new work is the instruction's.
            sent = self.count_text(system) + self._prompt_tokens(prompt, ask, context)
            try:
                completion = await backend.complete(
                    system, prompt, self.settings.max_output_tokens, provider, deadline=deadline
                )
            except BackendError as exc:
                if exc.fault in (Fault.DEADLINE, Fault.TIMEOUT):  # cut short: the backend is at least this slow
                    self.pace.cut(now() - began, sent)
                raise
            except asyncio.CancelledError:  # a request past the budget stopped waiting: as slow as that, at least
                self.pace.cut(now() - began, sent)
                raise
            self.pace.answered(now() - began, sent)
            outcome.input_tokens += completion.input_tokens
            outcome.output_tokens += completion.output_tokens
            if completion.tool_calls:  # only a request carrying the session's tools: asked again without them
                raise BackendError(Fault.TOOL_CALL)
            if completion.model and self.model and not same_model(completion.model, self.model):
                outcome.foreign_model = completion.model
            rejection = self._rejection(completion.text, ask.source_tokens)
            if rejection is None:
                if source is None:  # read once per ask, and only once an answer is there to check
                    # Everything the model was given to draw names from: the span, the summary before it and the
                    # user's guidance, whose answers ("`docs/RUNBOOK.md` was not changed") name what it names.
                    source = Source.of(ask.transcript, ask.values.get("previous_section"), self.instructions, ask.focus)
                text, rejection = grounded(completion.text.strip(), source)
                if rejection is None:
                    if completion.artefact is not None:
                        outcome.artefacts.append(completion.artefact)
                    # What the guidance keeps goes into the KEPT section, which a request's clip keeps.
                    return scrub_text(gathered(text, keep_names(self.instructions, ask.focus)))
            if rejection is Fault.NOT_SMALLER:
                tokens = max(tokens // 2, 1)
        raise BackendError(rejection or Fault.ERROR)

    def _prompt_tokens(self, prompt: str, ask: Ask, context: InContext | None) -> int:
        """The prompt's tokens, for the pace. The transcript in it was counted already (``Ask.transcript_tokens``):
        only the rest is counted (its seams with the rest are off by a token at most), not the span once more."""
        if context is None and ask.transcript_tokens is not None and ask.transcript:
            rest = prompt.replace(ask.transcript, "", 1)
            if len(rest) < len(prompt):
                return self.count_text(rest) + ask.transcript_tokens
        return self.count_text(prompt)

    def _rejection(self, text: str, source_tokens: int) -> Fault | None:
        if not text or not text.strip():
            return Fault.EMPTY
        if _REFUSAL.match(text):
            return Fault.REFUSAL
        if self.count_text(text) >= source_tokens:
            return Fault.NOT_SMALLER
        return None

    def _cap(self, max_tokens: int | None) -> int:
        """The size asked for: the output cap, or ``max_tokens`` when smaller."""
        cap = self.settings.max_output_tokens
        return cap if max_tokens is None else max(min(max_tokens, cap), 1)

    def asked_tokens(self, source_tokens: int, max_tokens: int | None = None) -> int:
        """The summary's size: what the plan asks for (``max_tokens``, the output cap), at most ``SUMMARY_RATIO``
        of the span, never below ``MIN_ASK_TOKENS``."""
        return max(min(self._cap(max_tokens), int(source_tokens * SUMMARY_RATIO)), min(MIN_ASK_TOKENS, self._cap(None)))


class GuidedCall:
    """``backend.complete_guided(..., guidance)`` behind the ``complete`` signature the retry policy calls: the
    guidance is bound to this one ask, as ``InContextCall`` binds its prefix."""

    def __init__(self, backend: SendsGuidance, guidance: str) -> None:
        self.backend = backend
        self.guidance = guidance
        self.name: str = getattr(backend, "name", "")
        self.model: str | None = getattr(backend, "model", None)

    async def complete(self, system: str, prompt: str, max_output_tokens: int, provider: Any | None = None) -> Any:
        return await self.backend.complete_guided(system, prompt, max_output_tokens, self.guidance, provider)


def grounded(text: str, source: Source) -> tuple[str, Fault | None]:
    """The answer to keep and None, or the rejection category (``ungrounded``, ``degenerate``).

    An answer whose faults are a few sentences is kept without them: asking again costs a call and a wait (half
    a minute on a small local model) for what cutting gives at once."""
    verdict = check(text, source)
    if verdict.problem is None:
        return text, None
    if verdict.usable_cut:
        logger.info(
            "summary answer %s: %d sentence(s) cut (%d invented name(s), %d loop(s), %d marker(s))",
            verdict.problem,
            verdict.cut,
            len(verdict.invented),
            len(verdict.repeated),
            verdict.markup,
        )
        return verdict.kept, None
    return text, verdict.problem


def batches(counts: list[int], limit: int) -> list[tuple[int, int]]:
    """Consecutive ranges ``[lo, hi)`` of ``counts``, each as long as its sum stays within ``limit`` (one item
    at least), in order."""
    ranges: list[tuple[int, int]] = []
    lo, total = 0, 0
    for i, count in enumerate(counts):
        if i > lo and total + count > limit:
            ranges.append((lo, i))
            lo, total = i, 0
        total += count
    if counts:
        ranges.append((lo, len(counts)))
    return ranges


def tokens_per_word(text: str, tokens: int) -> float:
    """The text's own tokens per word, between prose's and that of dense paths and code."""
    words = len(text.split())
    return min(max(tokens / words, PROSE_TOKENS_PER_WORD), MAX_TOKENS_PER_WORD) if words else PROSE_TOKENS_PER_WORD


def max_words(tokens: int, per_word: float) -> int:
    """A word limit a model can meet for ``tokens``: models count words, not tokens, and overshoot a little."""
    return max(int(tokens / per_word * 0.85), 20)


def same_model(answered: str, requested: str) -> bool:
    """A dated snapshot answering for its alias (``claude-haiku-4-5-20251001`` for ``claude-haiku-4-5``) is the same."""
    return answered.startswith(requested) or requested.startswith(answered)


def _count_call(outcome: Outcome) -> None:
    outcome.provider_calls += 1


def _previous_section(previous_summary: str | None) -> str:
    if not previous_summary:
        return ""
    return (
        "Summary of the conversation before this part, for context only (do not repeat it):\n"
        f"<<<TRANSCRIPT\n{fence_safe(previous_summary)}\nTRANSCRIPT>>>\n"
    )
