"""Answer and judge prompt templates, read from the same ``prompts/`` folder as the summarizer's."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from string import Template

from ..prompts import default_prompt_dir

EVAL_TEMPLATES = ("answer_system", "answer_user", "judge_system", "judge_user")


@dataclass(frozen=True)
class EvalPrompts:
    templates: dict[str, str]

    def system(self, kind: str) -> str:
        return self.templates[f"{kind}_system"].strip()

    def user(self, kind: str, **values: str) -> str:
        return Template(self.templates[f"{kind}_user"]).safe_substitute(values).strip()


def load_eval_prompts(folder: str | Path | None = None) -> EvalPrompts:
    directory = Path(folder) if folder else default_prompt_dir()
    templates = {}
    for name in EVAL_TEMPLATES:
        path = directory / f"{name}.md"
        if not path.is_file():
            raise ValueError(f"{directory} has no {name}.md (the evaluation's answer/judge prompts)")
        templates[name] = path.read_text(encoding="utf-8")
    return EvalPrompts(templates)
