"""Answer and judge prompt templates, read from the same ``prompts/`` folder as the summarizer's."""

from __future__ import annotations

from pathlib import Path

from ..summarizer.prompts import PromptSet, load_prompts

EVAL_TEMPLATES = ("answer_system", "answer_user", "judge_system", "judge_user")
EvalPrompts = PromptSet


def load_eval_prompts(folder: str | Path | None = None) -> PromptSet:
    return load_prompts(folder, EVAL_TEMPLATES)
