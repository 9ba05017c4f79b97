"""Grading a request view on a probe: key coverage always, an answer-and-judge pass when a judge model is given.

The deterministic score asks whether the facts a good answer needs are still in the view at all; the
judge asks whether a model reading only that view can actually answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..backends.base import Backend, BackendError
from ..backends.retrying import RetryingBackend
from ..messages import Message, message_text
from ..prompts import render_transcript
from .loader import Probe
from .prompts import EvalPrompts

ANSWER_TOKENS = 400
JUDGE_TOKENS = 200
_SCORE_FIELD = re.compile(r'"score"\s*:\s*"?(\d+(?:\.\d+)?)')
_BARE_SCORE = re.compile(r"\b([0-5](?:\.\d+)?)\b")


def view_text(view: list[Message]) -> str:
    """Everything the model would read in the view, lower-cased for key search."""
    return "\n".join(message_text(m) for m in view).lower()


def key_score(text: str, keys: tuple[str, ...] | list[str]) -> tuple[float, list[str]]:
    """Share of ``keys`` found in ``text`` (already lower-cased), and the keys found."""
    found = [k for k in keys if k.lower() in text]
    return (len(found) / len(keys) if keys else 0.0), found


def parse_grade(text: str) -> float | None:
    """The 0–5 score in a judge reply: the JSON field when present, else the first bare digit 0–5."""
    match = _SCORE_FIELD.search(text) or _BARE_SCORE.search(text)
    if match is None:
        return None
    return min(max(float(match.group(1)), 0.0), 5.0)


@dataclass
class Grade:
    answer: str | None = None
    score: float | None = None
    reason: str | None = None
    error: str | None = None
    """Failure category when the answerer or judge could not be used; the probe then has no judge score."""


class Judge:
    """Answers a probe from a view with one model, then grades the answer with another (or the same).

    Both are asked through ``RetryingBackend``, the same retry policy the summarizer uses.
    """

    def __init__(
        self,
        answerer: Backend,
        judge: Backend,
        prompts: EvalPrompts,
        *,
        max_retries: int = 3,
        timeout_s: float = 120.0,
    ) -> None:
        self.answerer = RetryingBackend(answerer, max_retries, timeout_s)
        self.judge = RetryingBackend(judge, max_retries, timeout_s)
        self.prompts = prompts

    async def grade(self, view: list[Message], probe: Probe) -> Grade:
        prompt = self.prompts.user("answer", transcript=render_transcript(view), question=probe.question)
        try:
            answer = (await self._ask(self.answerer, "answer", prompt, ANSWER_TOKENS)).strip()
            prompt = self.prompts.user(
                "judge",
                question=probe.question,
                reference=probe.answer,
                keys=", ".join(probe.keys),
                answer=answer.replace("ANSWER>>>", "ANSWER>\u200b>>") or "(empty)",
            )
            verdict = await self._ask(self.judge, "judge", prompt, JUDGE_TOKENS)
        except BackendError as exc:
            return Grade(error=exc.category)
        score = parse_grade(verdict)
        if score is None:
            return Grade(answer=answer, error="unparsed_grade", reason=verdict.strip()[:200])
        reason = re.search(r'"reason"\s*:\s*"((?:[^"\\]|\\.)*)"', verdict)
        return Grade(answer=answer, score=score, reason=reason.group(1) if reason else None)

    async def _ask(self, backend: Backend, kind: str, prompt: str, max_tokens: int) -> str:
        return (await backend.complete(self.prompts.system(kind), prompt, max_tokens)).text
