#!/usr/bin/env python3
"""How often the grounding check (``summarizer/grounding.py``) rejects good summaries, and catches bad ones.

Usage::

    python tools/measure_grounding.py [--spans N]

* **Claude Code's own summaries**: every ``isCompactSummary`` record of the Claude Code recordings in
  ``../shared/corpus/raw`` (beside the checkout), checked against the session before it (the span it stands for,
  rendered as the summarizer reads a span). A strong model's narrative: every rejection is a false one.
* **The simulated LLM's answers** (``testing.SimulatedLLM``, default behaviour) to the module's own prompt over
  spans of the bundled evaluation corpus, each span with the answer before it as the previous summary: good
  answers, so every rejection is a false one.
* **The simulated small model** (``SMALL_MODEL`` rates, and each failure mode alone at rate 1): the share of its
  answers the check rejects or cuts, by what it did.

Prints one line per figure. Maintainer tooling: not in the wheel.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if __name__ == "__main__":
    sys.path.insert(0, str(REPO))

from amplifier_module_context_summarize.evaluation.loader import load_corpus  # noqa: E402
from amplifier_module_context_summarize.readers.session_io import load_session  # noqa: E402
from amplifier_module_context_summarize.summarizer.grounding import Source, check  # noqa: E402
from amplifier_module_context_summarize.summarizer.prompts import load_prompts, render_transcript  # noqa: E402
from amplifier_module_context_summarize.testing.simulated_llm import (  # noqa: E402
    FAILURE_MODES,
    SMALL_MODEL,
    SimulatedBehaviour,
    SimulatedLLM,
)

RAW = REPO.parent / "shared" / "corpus" / "raw"
CORPUS = REPO / "amplifier_module_context_summarize" / "evaluation" / "corpus"


def model_written(summary: str) -> str:
    """Claude Code's summary without the lines its harness adds around the model's text (the opening sentence,
    the path of the transcript file and the instruction to continue)."""
    harness = ("This session is being continued", "If you need specific details", "Please continue the conversation")
    return "\n".join(line for line in summary.splitlines() if not line.startswith(harness))


def claude_code_summaries() -> None:
    files = sorted(RAW.glob("*/*.jsonl")) if RAW.is_dir() else []
    checked = rejected = cut = 0
    for path in files:
        try:
            loaded = load_session(path)
        except Exception:  # not every raw file is a Claude Code recording
            continue
        reference = loaded.reference
        if not reference or reference.get("source") != "claude-code":
            continue
        span = loaded.messages[: reference["boundary"]]
        started = time.perf_counter()
        source = Source.of(render_transcript(span, max_chars_per_message=10**9))
        verdict = check(model_written(reference["summary"]), source)
        ms = (time.perf_counter() - started) * 1000
        checked += 1
        rejected += verdict.problem is not None and not verdict.usable_cut
        cut += verdict.problem is not None and verdict.usable_cut
        print(
            f"claude-code {path.name[:8]}: {len(reference['summary']):,} chars over a {len(span)}-message span: "
            f"{verdict.problem or 'accepted'}{', cut' if verdict.problem and verdict.usable_cut else ''} "
            f"({verdict.cut} sentences, {verdict.kept_share:.0%} kept; {ms:.0f} ms)"
            + (f" invented: {', '.join(verdict.invented[:8])}" if verdict.invented else "")
        )
    print(f"claude-code summaries: {checked}: {rejected} rejected, {cut} cut to their sound sentences")


def previous_section(previous: str | None) -> str:
    """The previous summary as the module's prompt fences it."""
    if not previous:
        return ""
    head = "Summary of the conversation before this part, for context only:"
    return f"{head}\n<<<TRANSCRIPT\n{previous}\nTRANSCRIPT>>>\n"


async def simulated(behaviour: SimulatedBehaviour, spans: int, label: str) -> tuple[int, int, int]:
    """Answers, rejections (not cut-usable) and cuts of ``behaviour`` over corpus spans."""
    prompts = load_prompts()
    llm = SimulatedLLM(seed=7, behaviour=behaviour)
    answers = rejected = cut = 0
    for session in load_corpus(CORPUS):
        previous = None
        messages = session.messages
        for start in range(0, len(messages), 24):
            if answers >= spans:
                break
            transcript = render_transcript(messages[start : start + 24])
            values = {"previous_section": previous_section(previous), "continuation_note": ""}
            prompt = prompts.user("summarize", transcript=transcript, max_words="300", max_tokens="400", **values)
            completion = await llm.complete(prompts.system("summarize"), prompt, 2000)
            if not completion.text.strip() or completion.text.startswith("I'm sorry"):
                continue
            verdict = check(completion.text, Source.of(transcript, values["previous_section"]))
            answers += 1
            if verdict.problem is not None:
                if verdict.usable_cut:
                    cut += 1
                else:
                    rejected += 1
                if label == "good":
                    print(f"  false {verdict.problem}: invented {verdict.invented[:5]} repeated {verdict.repeated[:2]}")
            previous = completion.text
    print(f"simulated {label}: {answers} answers, {rejected} rejected, {cut} cut to their sound sentences")
    return answers, rejected, cut


async def main(spans: int) -> None:
    claude_code_summaries()
    await simulated(SimulatedBehaviour(), spans, "good")
    await simulated(SMALL_MODEL, spans, "small-model")
    for mode in FAILURE_MODES:
        await simulated(SimulatedBehaviour(**{mode: 1.0}), spans, f"{mode}=1")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spans", type=int, default=200, help="simulated answers per figure (default 200)")
    asyncio.run(main(parser.parse_args().spans))
