"""Grading a request view on a probe: key coverage always, an answer-and-judge pass when a judge model is given.

The deterministic score asks whether the facts a good answer needs are still in the view at all; the
judge asks whether a model reading only that view can actually answer. The judge grades the answer on the
six dimensions of Factory.ai's probe evaluation ("Evaluating Context Compression for AI Agents", 2025),
each 0–5, so its figures can be set beside the published ones.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from statistics import mean
from typing import Any

from ..backends.base import Backend, BackendError
from ..backends.retrying import RetryingBackend
from ..core.messages import Message, message_text
from ..summarizer.prompts import render_transcript
from ..working_set.fold import named_files
from .loader import Probe
from .prompts import EvalPrompts

ANSWER_TOKENS = 400
JUDGE_TOKENS = 300
DIMENSIONS = (
    "accuracy",
    "context_awareness",
    "artifact_trail",
    "completeness",
    "continuity",
    "instruction_following",
)
"""The judge's rubric, in the published order."""
PUBLISHED = {"overall": 3.70, "artifact_trail": 2.45}
"""Best published figures (Factory.ai's own summarizer) for comparison: overall mean and artifact trail."""
_PATH_KEY = re.compile(r"/?[\w.~+@-]+(?:/[\w.~+@-]+)*/[\w.~+@-]+\.\w+")
"""A probe key that is a relative or absolute file path with a folder."""
_SCORE_FIELD = re.compile(r'"score"\s*:\s*"?(\d+(?:\.\d+)?)')
_BARE_SCORE = re.compile(r"\b([0-5](?:\.\d+)?)\b")
_NUMBER = r"(-?\d+(?:\.\d+)?)"
_DIMENSION_FIELDS = {
    name: re.compile(r"(?i)\b" + r"[\s_-]*".join(name.split("_")) + r"\b[\s\"'*`:=|(-]{0,8}?" + _NUMBER)
    for name in DIMENSIONS
}


def view_text(view: list[Message]) -> str:
    """Everything the model would read in the view, lower-cased for key search."""
    return "\n".join(message_text(m) for m in view).lower()


def key_score(text: str, keys: tuple[str, ...] | list[str]) -> tuple[float, list[str]]:
    """Share of ``keys`` found in ``text`` (already lower-cased), and the keys found.

    A key that is a file path (``pkg/multival.py``) is also found by its file name on a line that names its
    folder (``- pkg/ — read: dataset.py, multival.py``), the way the working set lists a folded folder; the
    retention measure and the reference coverage read paths the same way (``working_set.named_files``).
    """
    paths = [k for k in keys if k.lower() not in text and _PATH_KEY.fullmatch(k)]
    folded = set(named_files(text, paths)) if paths else set()
    found = [k for k in keys if k.lower() in text or k in folded]
    return (len(found) / len(keys) if keys else 0.0), found


def parse_grade(text: str) -> float | None:
    """The 0–5 score in a judge reply: the JSON field when present, else the first bare digit 0–5."""
    match = _SCORE_FIELD.search(text) or _BARE_SCORE.search(text)
    if match is None:
        return None
    return min(max(float(match.group(1)), 0.0), 5.0)


def parse_dimensions(text: str) -> dict[str, float]:
    """The rubric scores in a judge reply, by dimension; those it does not give (or gives off the scale) are absent.

    The JSON objects in the reply are read wherever they are (a code fence, after a preamble), also when
    the scores are nested (``{"scores": {"accuracy": {"score": 4}}}``) or written as strings; names match
    whatever their case and separators (``Artifact Trail``). When no JSON gives any score (malformed,
    cut short, or prose), they are looked for as ``name: N`` in the text. A score outside 0–5 is not a
    score on this scale and is left out.
    """
    found: dict[str, float] = {}
    for data in _json_objects(text):
        _collect(data, found)
    if not found:
        for name, pattern in _DIMENSION_FIELDS.items():
            match = pattern.search(text)
            if match is not None:
                _keep(found, name, match.group(1))
    return {name: found[name] for name in DIMENSIONS if name in found}


def _json_objects(text: str) -> list[dict[str, Any]]:
    decoder, objects, position = json.JSONDecoder(), [], text.find("{")
    while position >= 0:
        try:
            value, end = decoder.raw_decode(text, position)
        except ValueError:
            end = position + 1
        else:
            if isinstance(value, dict):
                objects.append(value)
        position = text.find("{", end)
    return objects


def _dimension_name(key: str) -> str | None:
    name = re.sub(r"[\s-]+", "_", key.strip().lower())
    return name if name in DIMENSIONS else None


def _collect(data: Any, found: dict[str, float]) -> None:
    if isinstance(data, list):
        for item in data:
            _collect(item, found)
        return
    if not isinstance(data, dict):
        return
    if isinstance(data.get("dimension") or data.get("name"), str):  # [{"dimension": "accuracy", "score": 4}]
        name = _dimension_name(data.get("dimension") or data["name"])
        if name is not None and name not in found:
            _keep(found, name, data.get("score"))
    for key, value in data.items():
        name = _dimension_name(key) if isinstance(key, str) else None
        if name is None:
            _collect(value, found)
        elif name not in found:
            _keep(found, name, value.get("score") if isinstance(value, dict) else value)


def _keep(found: dict[str, float], name: str, value: Any) -> None:
    if isinstance(value, bool):
        return
    try:
        score = float(value)
    except (TypeError, ValueError):
        return
    if 0.0 <= score <= 5.0:
        found[name] = score


@dataclass
class Grade:
    answer: str | None = None
    score: float | None = None
    """Mean of ``dimensions``; a judge that gave none but a single ``score`` is taken at that."""
    dimensions: dict[str, float] = field(default_factory=dict)
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
            return Grade(error=exc.fault)
        return grade_from(answer, verdict)

    async def _ask(self, backend: Backend, kind: str, prompt: str, max_tokens: int) -> str:
        return (await backend.complete(self.prompts.system(kind), prompt, max_tokens)).text


def grade_from(answer: str, verdict: str) -> Grade:
    """The grade a judge's reply gives ``answer``: the rubric's dimensions, else a single score."""
    dimensions = parse_dimensions(verdict)
    score = mean(dimensions.values()) if dimensions else parse_grade(verdict)
    if score is None:
        return Grade(answer=answer, error="unparsed_grade", reason=verdict.strip()[:200])
    reason = re.search(r'"reason"\s*:\s*"((?:[^"\\]|\\.)*)"', verdict)
    return Grade(answer=answer, score=score, dimensions=dimensions, reason=reason.group(1) if reason else None)
