"""A span cut into many fragments still comes back as one summary of about the size asked (``SpanSummarizer._fold``).

Each fragment is asked for the segment's size, so a span of k fragments came back k times that size when its
fragment summaries were only joined: a cold resume of 50,000 messages on the LLM path got 106,000 tokens for a
segment asked at 1,800, the plan's next pass then summarized the recent tail too, and the view was the summary and
the last group (6 messages of a 60,000-token budget). The fragment summaries are now merged to the size asked, and
each fragment is given only the newest summaries before it (all of them made the k-th prompt k summaries long).
"""

from __future__ import annotations

import re
from typing import Any

from amplifier_module_context_summarize import create_manager
from amplifier_module_context_summarize.backends.base import Completion
from amplifier_module_context_summarize.benchmark.coding import CodingSession
from amplifier_module_context_summarize.benchmark.fake_backend import InstantBackend
from amplifier_module_context_summarize.benchmark.synth import SMALL, TextSource
from amplifier_module_context_summarize.core.state import SUMMARY_MARKER
from amplifier_module_context_summarize.core.tokens import TokenCounter, text_counter
from amplifier_module_context_summarize.stores import MemoryStore
from amplifier_module_context_summarize.summarizer.prompts import FENCE_CLOSE, FENCE_OPEN, load_prompts
from amplifier_module_context_summarize.summarizer.span import SpanSummarizer, SummarizerSettings, batches

COUNT = text_counter()
TEXT = TextSource()


class Obedient:
    """Answers every ask with about the tokens it asks for (at most a third of its transcript), in words of the
    transcript (grounded), recording each prompt."""

    name = "obedient"
    model: str | None = "fake"

    def __init__(self) -> None:
        self.prompts: list[str] = []

    async def complete(self, system: str, prompt: str, max_output_tokens: int, provider: Any = None) -> Completion:
        self.prompts.append(prompt)
        asked = int(re.search(r"about (\d+) tokens", prompt).group(1))  # type: ignore[union-attr]
        words = re.findall(r"[a-z]{4,}", prompt[prompt.rfind(FENCE_OPEN) :])
        want = min(asked, COUNT(prompt) // 3)
        text = "### State\n- " + " ".join(words[i % len(words)] for i in range(want))
        text = text[: len(text) * want // max(COUNT(text), 1)]  # about ``want`` tokens, not words
        return Completion(text, COUNT(prompt), COUNT(text))


def history(messages: int) -> list[Any]:
    return CodingSession(SMALL, seed=48, text=TEXT).history(messages)


async def test_a_span_of_many_fragments_comes_back_within_the_size_asked() -> None:
    backend = Obedient()
    summarizer = SpanSummarizer(backend, load_prompts(), COUNT, SummarizerSettings(2_000, 3_000, 30, 0))
    outcome = await summarizer.summarize(history(600), "the summary before", max_tokens=400)
    summarize = [p for p in backend.prompts if "Summarize the following" in p]
    merges = [p for p in backend.prompts if "Merge these consecutive summaries" in p]
    assert outcome.fallback is None and len(summarize) > 10 and merges
    assert COUNT(outcome.text) <= 400 * 1.1
    assert outcome.provider_calls == len(backend.prompts)
    # every fragment continues from the span's previous summary and the newest fragment summaries only, within the
    # size asked (and one summary more), however many fragments came before it
    before = [p.split(FENCE_OPEN, 1)[1].split(FENCE_CLOSE, 1)[0] for p in summarize[1:]]
    assert all(b.startswith("\nthe summary before") and COUNT(b) <= 2 * 400 + 20 for b in before)
    assert sum("part" not in b and COUNT(b) > 400 for b in before) > 0, "more than one summary before, when they fit"


def test_batches_are_consecutive_and_within_the_limit_unless_one_item_alone_is_not() -> None:
    assert batches([5, 5, 5, 5, 5], 10) == [(0, 2), (2, 4), (4, 5)]
    assert batches([30, 5, 5], 10) == [(0, 1), (1, 3)]
    assert batches([], 10) == []


async def test_a_cold_llm_resume_of_many_fragments_keeps_the_recent_tail_verbatim() -> None:
    """The seam: a first request after ``set_messages`` with nothing stored summarizes a span of dozens of
    fragments; the view must still show the recent groups verbatim and come near the target, not the summary and
    the last group alone. Blocking (``background_compaction: false``): the request waits for the LLM's summary
    (with background compaction on, a span this long is stood in for, ``test_stand_in.py``)."""
    budget = 12_000
    messages = history(1_500)
    backend = InstantBackend(TEXT, COUNT, ratio=0.25, low=60, high=1_500)  # a fragment's summary: ~ the size asked
    manager = create_manager(
        {"max_tokens": budget, "background_compaction": False, "summarizer": {"max_input_tokens": 2_000}},
        backend=backend,
        store=MemoryStore(),
    )
    await manager.set_messages(messages)
    view = await manager.get_messages_for_request(token_budget=budget)
    assert backend.calls > 30, "the span is cut into dozens of fragments"
    tokens = TokenCounter().count_messages(view)
    target, preserve_recent = int(budget * 0.5), int(budget * 0.25)
    assert tokens <= budget and tokens >= target * 0.6, (tokens, target)
    assert any(str(m.get("content", "")).startswith(SUMMARY_MARKER) for m in view)
    history_, state = manager.history, manager.state
    assert len(state.segments) == 1 and state.segments[0].tokens <= budget * 0.3
    # the groups after the summary are shown (their older outputs masked): at least the protected recent share
    assert history_.total - history_.prefix[state.boundary] >= preserve_recent
    assert view[-1] == messages[-1]
