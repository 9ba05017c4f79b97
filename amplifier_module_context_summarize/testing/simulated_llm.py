"""A simulated LLM summarizer: a ``Backend`` that writes summaries the way real models do, flaws included.

``SimulatedLLM`` implements ``backends.base.Backend``. It reads the prompt the module sends (the span fenced
between ``<<<TRANSCRIPT`` and ``TRANSCRIPT>>>``, the last fence; an earlier fence after a line starting "Summary of
the conversation before this part" is the previous summary; merge prompts fence several summaries separated by
``---``; the limit is "Stay under N words", optionally with "(about T tokens)") and answers with a summary built
from the transcript's own words, so that everything the module does after the call — validation, the retry of a
rejected answer, the extractive fallback, merges, the breaker — runs as it would against a provider.

What it models, and why (defaults in ``SimulatedBehaviour``):

* **Length loosely follows the limit, in words.** Models count words badly and tokens not at all: asked for "at
  most N words" they mostly stay a little under, and sometimes overshoot by 10–40% (Retkowski & Waibel 2025,
  "Zero-Shot Strategies for Length-Controllable Summarization"; practitioners report 10–15% overshoots of exact
  counts). The length factor is drawn from 0.6–1.1× the word limit, and with ``overshoot_rate`` (0.15) from
  1.1–1.4×. A token count in the prompt only lowers the aim (the model believes ~0.75 words a token).
* **Realistic tokens per word.** The words are the transcript's own (requests, reasoning, paths, commands, error
  lines), so path- and code-heavy spans give 2–4 tokens a word, as real summaries of agent work do; the limit in
  words therefore does not bound tokens.
* **Thin spans are padded, not shortened.** Asked for 150 words about a 60-word span, models elaborate (headers,
  restatements) to well past the source: the answer can be no smaller than the span (the module's
  ``not_smaller`` rejection). Bounded by ``pad_factor`` × the span's words.
* **``max_output_tokens`` is a hard stop**, as a provider's ``max_tokens``: the text is cut mid-sentence there
  (counted with the module's tokenizer).
* **A preamble** ("Here is a summary of the conversation so far:") with ``preamble_rate`` (0.6): models often
  add one despite "no commentary".
* **Restating the previous summary** with ``restate_rate`` (0.3), although the prompt says not to repeat it.
* **Omissions**: a random share (``omit_share``, 10–35%) of the candidate facts is left out.
* **Empty answers** (``empty_rate`` 0.02) and **refusals** (``refusal_rate`` 0.01, "I'm sorry, but I can't help
  with that."), which real APIs return now and then (content filters, a stop at once).
* **A small model's failures** (each 0 by default, so default answers stay exactly as they were; ``SMALL_MODEL``
  has the rates of SmolLM2-135M-Instruct on agent sessions, issue 33, where most answers had invented names):
  ``invent_rate``, names the span never has (``Todo_filterables``, ``toggle_filters()``, ``filterable_view.py``)
  built from its own words; ``loop_rate``, one line repeated 7-20 times; ``offtopic_rate``, text about something
  else ("TODOS HAVE BEEN MODIFIED SUCH AS HEREBY …"); ``markup_rate``, lines forging the module's own markup
  (``[tool call …]``, ``[tool output masked: …]``); ``garble_rate``, the span's tool-call ids with characters
  changed. The module's grounding check (``summarizer/grounding.py``) is what these exercise.
* **Transient faults** (``fault_rate``, default 0): ``BackendError(Fault.SERVER_ERROR)``, retried by the module.
* **Latency** (``latency_s``, default 0, ±30% jitter) through an injectable async ``sleep``: tests never wait.
* **Usage** like a provider: input tokens of system + prompt (+ a few framing tokens), output tokens of the text.

Deterministic from ``seed``: each answer's randomness derives from (seed, a hash of system and prompt, the how-many-th
call with that prompt this instance has seen), so results do not depend on call order or concurrency across prompts,
while a retry of the same prompt gets a different answer (providers sample; the default temperature is 1). Give
each concurrently running manager its own instance (``fork()``) so that identical prompts from different managers do
not share the attempt count.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import re
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from ..backends.base import BackendError, Completion, Fault
from ..core.tokens import TokenCounter
from ..summarizer.prompts import FENCE_CLOSE, FENCE_OPEN, parse_transcript

__all__ = [
    "FAILURE_MODES",
    "PREAMBLES",
    "REFUSAL_TEXT",
    "SMALL_MODEL",
    "SimulatedBehaviour",
    "SimulatedLLM",
    "parse_limits",
    "parse_prompt",
]

REFUSAL_TEXT = "I'm sorry, but I can't help with that."
PREAMBLES = (
    "Here is a summary of the conversation so far:",
    "Here's a concise summary of this part of the conversation:",
    "Summary of the conversation:",
    "Below is the working-memory summary for the agent.",
)
PREVIOUS_MARK = "Summary of the conversation before this part"
FRAMING_TOKENS = 7
"""Tokens a provider bills for the role framing of a system + user request."""

_WORDS = re.compile(r"stay\s+under\s+(?:about\s+)?([\d,]+)\s+words", re.IGNORECASE)
_TOKENS = re.compile(r"([\d,]+)\s+tokens", re.IGNORECASE)
_PATH = re.compile(r"(?<![\w/.<-])(?:[\w.-]+/)+[\w.-]+\.\w{1,8}\b|(?<![\w/<])/(?:[\w.-]+/)+[\w.-]+")
_NARRATION = re.compile(
    r"^(?:(?:now|first|next|then),?\s+)?(?:let me|let's|i'll|i will|i need to|i'm going to)\s+", re.IGNORECASE
)
_COMMAND = re.compile(r'"(?:command|cmd)"\s*:\s*"((?:[^"\\]|\\.){2,200})"')
_ERROR = re.compile(r"\b(error|exception|traceback|failed|failure|fatal)\b", re.IGNORECASE)
_DECISION = re.compile(
    r"\b(decid\w*|because|instead|rather than|chose|choose|should|won't|plan|approach|"
    r"the (?:fix|issue|problem|cause) is|so that)\b",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_HEADING = re.compile(r"^#{1,6}\s+(.*)$")


@dataclass(frozen=True)
class SimulatedBehaviour:
    """Rates of the modelled behaviours (see the module docstring)."""

    length_low: float = 0.6
    length_high: float = 1.1
    overshoot_rate: float = 0.15
    overshoot_high: float = 1.4
    pad_factor: float = 1.6
    """A thin span is elaborated to at most this many times its own words (before the limit applies)."""
    preamble_rate: float = 0.6
    restate_rate: float = 0.3
    omit_share: tuple[float, float] = (0.1, 0.35)
    empty_rate: float = 0.02
    refusal_rate: float = 0.01
    fault_rate: float = 0.0
    latency_s: float = 0.0
    invent_rate: float = 0.0
    loop_rate: float = 0.0
    offtopic_rate: float = 0.0
    markup_rate: float = 0.0
    garble_rate: float = 0.0


FAILURE_MODES = ("invent_rate", "loop_rate", "offtopic_rate", "markup_rate", "garble_rate")
"""The small-model failures, each a ``SimulatedBehaviour`` rate."""
SMALL_MODEL = SimulatedBehaviour(invent_rate=0.8, loop_rate=0.6, offtopic_rate=0.5, markup_rate=0.5, garble_rate=0.6)
"""Rates like SmolLM2-135M-Instruct's answers to the module's prompt (issue 33): most invent names; many loop,
drift off topic, forge markup or garble tool-call ids."""


@dataclass
class SimulatedStats:
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    events: Counter[str] = field(default_factory=Counter)
    """How often each behaviour happened: preamble, restated, empty, refusal, fault, cut, padded, merge."""


@dataclass(frozen=True)
class ParsedPrompt:
    kind: str
    """``summarize`` or ``merge``."""
    transcript: str
    previous: str | None
    word_limit: int | None
    token_limit: int | None


def parse_limits(text: str) -> tuple[int | None, int | None]:
    """The word limit ("Stay under N words") and a token count ("N tokens") if the prompt names one."""
    words = _WORDS.search(text)
    tokens = _TOKENS.search(text)
    return (
        int(words.group(1).replace(",", "")) if words else None,
        int(tokens.group(1).replace(",", "")) if tokens else None,
    )


def parse_prompt(system: str, prompt: str) -> ParsedPrompt:
    """What a model reads in a summarize or merge request (tolerant of wording changes)."""
    last_open = prompt.rfind(FENCE_OPEN)
    if last_open < 0:
        transcript, head = prompt, prompt
    else:
        close = prompt.find(FENCE_CLOSE, last_open)
        transcript = prompt[last_open + len(FENCE_OPEN) : close if close >= 0 else len(prompt)].strip("\n")
        head = prompt[:last_open] + (prompt[close:] if close >= 0 else "")
    previous = None
    mark = prompt.find(PREVIOUS_MARK)
    if mark >= 0:
        first_open = prompt.find(FENCE_OPEN, mark)
        if 0 <= first_open < last_open:
            close = prompt.find(FENCE_CLOSE, first_open)
            if close > first_open:
                previous = prompt[first_open + len(FENCE_OPEN) : close].strip("\n")
    instructions = head[:2000]
    merge = re.search(r"\bmerge\b", instructions, re.IGNORECASE) is not None or (
        re.search(r"\bmerge\b", system[:400], re.IGNORECASE) is not None and previous is None
    )
    words, tokens = parse_limits(head)
    return ParsedPrompt("merge" if merge else "summarize", transcript, previous, words, tokens)


@dataclass
class _Material:
    """Candidate facts of a span, by the section a model would put them in."""

    goal: list[str] = field(default_factory=list)
    progress: list[str] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)
    artifacts: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    open_items: list[str] = field(default_factory=list)

    def sections(self) -> list[tuple[str, list[str]]]:
        return [
            ("Goal", self.goal),
            ("Progress", self.progress),
            ("Decisions", self.decisions),
            ("Files and commands", self.artifacts),
            ("Errors", self.errors),
            ("Open items", self.open_items),
        ]


class SimulatedLLM:
    """A ``Backend`` answering summarize and merge prompts like a real model, deterministically from ``seed``."""

    name = "simulated"

    def __init__(
        self,
        seed: int = 0,
        behaviour: SimulatedBehaviour | None = None,
        *,
        model: str = "simulated-llm",
        sleep: Callable[[float], Awaitable[Any]] | None = None,
        counter: TokenCounter | None = None,
        stats: SimulatedStats | None = None,
        **rates: Any,
    ) -> None:
        """``rates``: any ``SimulatedBehaviour`` field, overriding ``behaviour`` (e.g. ``empty_rate=0.1``)."""
        self.seed = seed
        self.behaviour = replace(behaviour or SimulatedBehaviour(), **rates)
        self.model: str | None = model
        self.sleep = sleep or asyncio.sleep
        self.counter = counter or TokenCounter()
        self.stats = stats or SimulatedStats()
        self._attempts: Counter[str] = Counter()

    def __repr__(self) -> str:
        return f"SimulatedLLM(seed={self.seed}, {self.behaviour})"

    def fork(self) -> SimulatedLLM:
        """A twin (same seed, rates, sleep and shared stats) with its own per-prompt attempt counts."""
        return SimulatedLLM(
            self.seed,
            self.behaviour,
            model=self.model or "simulated-llm",
            sleep=self.sleep,
            counter=self.counter,
            stats=self.stats,
        )

    def rng_for(self, system: str, prompt: str) -> random.Random:
        digest = hashlib.sha256(f"{system}\x00{prompt}".encode("utf-8", "surrogatepass")).hexdigest()
        attempt = self._attempts[digest]
        self._attempts[digest] += 1
        return random.Random(f"{self.seed}:{digest}:{attempt}")

    async def complete(
        self,
        system: str,
        prompt: str,
        max_output_tokens: int,
        provider: Any | None = None,
        deadline: float | None = None,
    ) -> Completion:
        rng = self.rng_for(system, prompt)
        b = self.behaviour
        self.stats.calls += 1
        if b.latency_s > 0:
            await self.sleep(b.latency_s * rng.uniform(0.7, 1.3))
        if rng.random() < b.fault_rate:
            self.stats.events["fault"] += 1
            raise BackendError(Fault.SERVER_ERROR)
        input_tokens = self.counter.count_text(system) + self.counter.count_text(prompt) + FRAMING_TOKENS
        roll = rng.random()
        if roll < b.empty_rate:
            self.stats.events["empty"] += 1
            text = ""
        elif roll < b.empty_rate + b.refusal_rate:
            self.stats.events["refusal"] += 1
            text = REFUSAL_TEXT
        else:
            parsed = parse_prompt(system, prompt)
            text = self.write(parsed, rng)
            if any(getattr(b, mode) > 0 for mode in FAILURE_MODES):  # no draws at all otherwise: same answers
                text = self.fail(text, parsed, rng)
        text = self._cut(text, max_output_tokens)
        output_tokens = self.counter.count_text(text)
        self.stats.input_tokens += input_tokens
        self.stats.output_tokens += output_tokens
        return Completion(text=text, input_tokens=input_tokens, output_tokens=output_tokens, model=self.model)

    # ---------------------------------------------------------------- writing

    def target_words(self, parsed: ParsedPrompt, rng: random.Random) -> int:
        b = self.behaviour
        limit = parsed.word_limit
        if parsed.token_limit is not None:
            believed = int(parsed.token_limit * 0.75)
            limit = believed if limit is None else min(limit, believed)
        if limit is None:
            limit = 400  # no limit named: a typical unconstrained summary
        if rng.random() < b.overshoot_rate:
            factor = rng.uniform(b.length_high, b.overshoot_high)
        else:
            factor = rng.uniform(b.length_low, b.length_high)
        return max(int(limit * factor), 8)

    def write(self, parsed: ParsedPrompt, rng: random.Random) -> str:
        """The answer text for a parsed prompt (before the ``max_output_tokens`` stop)."""
        b = self.behaviour
        if parsed.kind == "merge":
            self.stats.events["merge"] += 1
            material = _merge_material(parsed.transcript)
        else:
            material = _span_material(parsed.transcript)
        if parsed.previous and parsed.kind == "summarize" and rng.random() < b.restate_rate:
            self.stats.events["restated"] += 1
            earlier = _summary_lines(parsed.previous)
            kept = [line for line in earlier if rng.random() < rng.uniform(0.3, 0.7)]
            material.progress[:0] = kept
        low, high = b.omit_share
        share = rng.uniform(low, high)
        for _, items in material.sections():
            items[:] = [item for item in items if rng.random() >= share]
        target = self.target_words(parsed, rng)
        source_words = len(parsed.transcript.split())
        padded_cap = max(int(source_words * b.pad_factor), 40)
        if target > padded_cap:
            target = padded_cap
        lines: list[str] = []
        if rng.random() < b.preamble_rate:
            self.stats.events["preamble"] += 1
            lines += [rng.choice(PREAMBLES), ""]
        target = max(target - sum(len(line.split()) for line in lines), 8)
        body = _fill(material, target, rng)
        words = sum(len(line.split()) for line in body)
        if words < target:  # thin material: models elaborate rather than stop short
            self.stats.events["padded"] += 1
            body += _pad(material, target - words, rng)
        return "\n".join(lines + body).strip()

    def fail(self, text: str, parsed: ParsedPrompt, rng: random.Random) -> str:
        """The small model's failures, each at its rate, worked into ``text``."""
        b = self.behaviour
        lines = text.splitlines() or [""]
        if rng.random() < b.invent_rate:
            self.stats.events["invented"] += 1
            for name in _invented_names(parsed.transcript, rng, rng.randint(1, 3)):
                lines.insert(rng.randint(0, len(lines)), rng.choice(_INVENTED_LINES).format(name=name))
        if rng.random() < b.garble_rate:
            ids = _CALL_ID.findall(parsed.transcript)
            if ids:
                self.stats.events["garbled"] += 1
                for call_id in rng.sample(ids, min(len(ids), rng.randint(1, 3))):
                    lines.insert(rng.randint(0, len(lines)), f"- Called `{_garble(call_id, rng)}` for the next step.")
        if rng.random() < b.markup_rate:
            self.stats.events["markup"] += 1
            ids = _CALL_ID.findall(parsed.transcript) or ["call_1"]
            forged = [
                f'[tool call {rng.choice(ids)}] bash({{"command": "ls"}})',
                f"[tool output masked: {rng.randint(200, 90_000):,} chars, {rng.randint(3, 900)} lines; first line: "
                f'"ok"; handle m{rng.randint(1, 400)}-{rng.getrandbits(24):06x}]',
            ]
            lines[rng.randint(0, len(lines)) : 0] = rng.sample(forged, rng.randint(1, 2))
        if rng.random() < b.offtopic_rate:
            self.stats.events["offtopic"] += 1
            lines.insert(rng.randint(0, len(lines)), rng.choice(_OFF_TOPIC))
        if rng.random() < b.loop_rate:
            content = [line for line in lines if len(line.split()) >= 3] or [rng.choice(_OFF_TOPIC)]
            self.stats.events["loop"] += 1
            at = rng.randint(0, len(lines))
            lines[at:at] = [rng.choice(content)] * rng.randint(7, 20)
        return "\n".join(lines).strip()

    def _cut(self, text: str, max_output_tokens: int) -> str:
        """Stop at ``max_output_tokens`` as a provider's ``max_tokens`` does: mid-sentence."""
        count = self.counter.count_text
        if max_output_tokens <= 0 or count(text) <= max_output_tokens:
            return text
        self.stats.events["cut"] += 1
        pieces = re.split(r"(\s+)", text)
        lo, hi = 0, len(pieces)
        while lo < hi:  # the longest prefix of pieces within the cap
            mid = (lo + hi + 1) // 2
            if count("".join(pieces[:mid])) <= max_output_tokens:
                lo = mid
            else:
                hi = mid - 1
        return "".join(pieces[:lo]).rstrip()


# ---------------------------------------------------------------- a small model's failures

_CALL_ID = re.compile(r"\[tool (?:call|result) ([\w-]{3,80})")
_INVENTED_LINES = (
    "- Updated `{name}` to handle the new state.",
    "The agent added {name} and wired it into the view.",
    "- The fix lives in `{name}`.",
    "Next: call {name} once the tests pass.",
)
_OFF_TOPIC = (
    "TODOS HAVE BEEN MODIFIED SUCH AS HEREBY THE ITEMS ARE UPDATED ACCORDINGLY.",
    "The weather was pleasant and the meeting was moved to Thursday afternoon.",
    "As a language model I find that gardening requires patience and good soil.",
)
_INVENTED_SUFFIXES = ("ables", "_handler", "ify", "erator", "_manager")
_INVENTED_VERBS = ("toggle", "update", "render", "refresh", "sync", "apply")
_WORD = re.compile(r"\b[a-z]{4,12}\b")


def _invented_names(transcript: str, rng: random.Random, count: int) -> list[str]:
    """Names built from the span's own words that the span never has (``Todo_filterables``, ``toggle_filters()``)."""
    from ..summarizer.grounding import Source  # the check's own reading of "appears": a name it would find

    source = Source.of(transcript)
    words = list(dict.fromkeys(_WORD.findall(transcript[:20_000]))) or ["todo", "filter", "item"]
    names: list[str] = []
    while len(names) < count:
        a, b = rng.choice(words), rng.choice(words)
        shape = rng.randrange(4)
        if shape == 0:
            name = f"{a.capitalize()}_{b}{rng.choice(_INVENTED_SUFFIXES)}"
        elif shape == 1:
            name = f"{rng.choice(_INVENTED_VERBS)}_{b}s()"
        elif shape == 2:
            name = f"{a}_{b}_view.py"
        else:
            name = f"{rng.choice(_INVENTED_VERBS)}{b.capitalize()}{a.capitalize()}()"
        if not source.has(name.rstrip("()")):
            names.append(name)
    return names


def _garble(call_id: str, rng: random.Random) -> str:
    """The id with a few of its characters changed, as a small model copies one."""
    chars = list(call_id)
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    for _ in range(max(2, len(chars) // 5)):
        i = rng.randrange(len(chars))
        chars[i] = rng.choice(alphabet.replace(chars[i].lower(), ""))
    return "".join(chars) + rng.choice(("x", "9", "_b"))


# ---------------------------------------------------------------- reading a span


def _entries(transcript: str) -> list[tuple[str, str]]:
    """(role, body) of each transcript entry, in order."""
    entries = [(label, body.strip()) for label, body in parse_transcript(transcript)]
    if not entries:
        return [("USER", transcript)] if transcript.strip() else []
    return entries


def _sentences(text: str, max_words: int = 40) -> list[str]:
    out = []
    for raw in _SENTENCE.split(text):
        sentence = raw.strip().lstrip("-*# ").strip()
        words = sentence.split()
        if len(words) < 3:
            continue
        if len(words) > max_words:
            sentence = " ".join(words[:max_words]) + " …"
        out.append(sentence)
    return out


def _span_material(transcript: str) -> _Material:
    material = _Material()
    seen_paths: dict[str, None] = {}
    call_paths: dict[str, None] = {}  # files the agent named in its calls: what a model lists first
    last_texts: list[str] = []
    for role, body in _entries(transcript):
        text_lines: list[str] = []
        outputs: list[str] = []
        in_output = False  # a tool result's text runs until the next block
        for line in body.splitlines():
            stripped = line.strip()
            if stripped.startswith("[tool call"):
                in_output = False
                for command in _COMMAND.findall(stripped):
                    material.artifacts.append(f"- Ran `{_unescape(command)[:160]}`")
                for path in _PATH.findall(stripped):
                    call_paths.setdefault(path)
            elif stripped.startswith("[tool result"):
                in_output = True
                outputs.append(stripped)
            elif in_output:
                outputs[-1] += "\n" + line
            else:
                text_lines.append(line)
        if role.startswith("TOOL RESULT"):
            outputs = [body]
            text_lines = []
        text = "\n".join(text_lines)
        for output in outputs:
            for path in _PATH.findall(output[:4000]):
                seen_paths.setdefault(path)
            for line in output.splitlines()[:400]:
                if _ERROR.search(line) and 3 <= len(line.split()) <= 40:
                    material.errors.append(f"- `{line.strip()[:200]}`")
                    break
        if not text.strip():
            continue
        for path in _PATH.findall(text):
            seen_paths.setdefault(path)
        sentences = _sentences(text)
        if role == "USER":
            material.goal += sentences[:4]
        elif role == "ASSISTANT":
            for sentence in sentences:
                plain = _NARRATION.sub("", sentence.removeprefix("(reasoning) "))
                plain = plain[:1].upper() + plain[1:]
                (material.decisions if _DECISION.search(plain) else material.progress).append(plain)
        if sentences:
            last_texts = sentences
    paths = list({**call_paths, **seen_paths})[:40]
    material.artifacts[:0] = [f"- `{p}`" for p in paths]
    material.open_items = last_texts[-3:]
    material.errors = list(dict.fromkeys(material.errors))[:8]
    return material


def _unescape(text: str) -> str:
    try:
        return str(json.loads(f'"{text}"'))
    except ValueError:
        return text


def _summary_lines(summary: str) -> list[str]:
    """The content lines of a summary (headings and preambles left out)."""
    out = []
    for line in summary.splitlines():
        stripped = line.strip()
        if not stripped or _HEADING.match(stripped) or stripped in PREAMBLES or stripped.startswith("Here"):
            continue
        out.append(stripped)
    return out


def _merge_material(transcript: str) -> _Material:
    """Facts of several summaries by section; only the last summary's open items still hold."""
    material = _Material()
    by_name = {name.lower(): items for name, items in material.sections()}
    parts = [p for p in re.split(r"\n\s*---\s*\n", transcript) if p.strip()]
    for index, part in enumerate(parts):
        current = material.progress
        for line in part.splitlines():
            stripped = line.strip()
            heading = _HEADING.match(stripped)
            if heading:
                name = heading.group(1).strip().lower()
                current = next((items for key, items in by_name.items() if key.split()[0] in name), material.progress)
                continue
            if not stripped or stripped in PREAMBLES or stripped.startswith("Here"):
                continue
            if current is material.open_items and index < len(parts) - 1:
                continue  # superseded by later summaries
            current.append(stripped)
    for _, items in material.sections():
        items[:] = list(dict.fromkeys(items))
    return material


# ---------------------------------------------------------------- composing

_SHARES = {"Goal": 0.15, "Progress": 0.3, "Decisions": 0.2, "Files and commands": 0.15, "Errors": 0.05}
_SHARES["Open items"] = 0.15


def _fill(material: _Material, target: int, rng: random.Random) -> list[str]:
    """Markdown sections, each filled in order up to its share of ``target`` words; leftovers go to progress.

    Words are counted as written: a bullet's dash is one, a heading two (reserved up front)."""
    target = max(target - 2 * len(material.sections()), 8)
    chosen: dict[str, list[str]] = {}
    used = 0
    for name, items in material.sections():
        room = int(target * _SHARES[name])
        taken: list[str] = []
        spent = 0
        for item in items:
            n = len(_bullet(item, name).split())
            if spent + n > room and (taken or used + n > target):
                break
            taken.append(item)
            spent += n
        chosen[name] = taken
        used += spent
    for name, items in material.sections():  # the room other sections left
        for item in items[len(chosen[name]) :]:
            n = len(_bullet(item, name).split())
            if used + n > target:
                continue  # a model ends near its aim rather than one long item past it
            chosen[name].append(item)
            used += n
    lines: list[str] = []
    for name, _ in material.sections():
        items = chosen[name]
        if not items:
            continue
        lines += [f"### {name}", *(_bullet(i, name) for i in items), ""]
    return lines


def _bullet(item: str, section: str) -> str:
    return item if item.startswith("- ") or section == "Goal" else f"- {item}"


_CONNECTIVES = ("In particular,", "To be precise,", "Notably,", "As noted,", "This means that", "Specifically,")


def _pad(material: _Material, missing: int, rng: random.Random) -> list[str]:
    """Elaboration of thin material: facts restated with connectives (what models write when told 'under N')."""
    pool = [item.lstrip("- ") for _, items in material.sections() for item in items]
    if not pool:
        pool = ["The conversation so far contains no further details beyond the current step."]
    lines = ["### Notes"]
    for _ in range(200):
        item = rng.choice(pool)
        line = f"- {rng.choice(_CONNECTIVES)} {item[0].lower()}{item[1:]}" if item else "-"
        if len(line.split()) > missing:
            break  # ends near its aim, a little under
        lines.append(line)
        missing -= len(line.split())
    return lines
