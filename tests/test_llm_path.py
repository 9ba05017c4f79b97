"""The LLM path at small windows: what is asked of the model, what its answers may do to the breaker, and what a
view shows when one turn's outputs fill it (issue 22).

The sessions here are agent tasks whose file reads are 20-30k characters (a 12-32k window holds one or two), and
the summarizer is the seeded ``SimulatedLLM`` (loose length, preambles, restatements, empty answers, refusals)
going through the real ``SpanSummarizer``, prompts, validation, retries, merges and breaker.
"""

from __future__ import annotations

import random
import re
from typing import Any

import pytest

from amplifier_module_context_summarize import create_manager
from amplifier_module_context_summarize.backends.base import BackendError, Completion, Fault, Skip
from amplifier_module_context_summarize.core.state import SUMMARY_MARKER, TRUNCATION_MARKER
from amplifier_module_context_summarize.core.tokens import TokenCounter
from amplifier_module_context_summarize.summarizer.prompts import FENCE_CLOSE, FENCE_OPEN
from amplifier_module_context_summarize.summarizer.span import MIN_SPAN_TOKENS, SUMMARY_RATIO, tokens_per_word
from amplifier_module_context_summarize.testing import EventRecorder, SimulatedLLM, replay

COUNT = TokenCounter().count_text
MARKER_HEAD = TRUNCATION_MARKER.split("{")[0]


def source_file(rng: random.Random, task: int) -> str:
    """A numbered source listing of 20-30k characters, as a read tool returns it."""
    lines, target, n = [], rng.randint(20_000, 30_000), 0
    while sum(len(line) + 1 for line in lines) < target:
        n += 1
        lines.append(
            f"{n:>6}\tdef handle_{task}_{n}(store, path='src/pkg{task % 5}/module_{task}.py'): "
            f"return store.load(path, retries={n % 4})"
        )
    return "\n".join(lines)


def read_tasks(tasks: int, seed: int = 1) -> list[dict[str, Any]]:
    """One user request per task, a read of a large file, and the agent's decision about it."""
    rng = random.Random(seed)
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are a careful coding agent."}]
    for t in range(tasks):
        path = f"src/pkg{t % 5}/module_{t}.py"
        history += [
            {"role": "user", "content": f"Task {t}: review {path} and decide whether its cache stays. Keep tests/."},
            {
                "role": "assistant",
                "content": "Reading it.",
                "tool_calls": [{"id": f"call_{t}", "tool": "read_file", "arguments": {"path": path}}],
            },
            {"role": "tool", "tool_call_id": f"call_{t}", "content": source_file(rng, t)},
            {"role": "assistant", "content": f"Decided: the cache in {path} stays, because every handler reloads."},
        ]
    return history


class Recording:
    """A backend that records every prompt it is sent before ``inner`` answers it."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.prompts = inner, []
        self.name, self.model = inner.name, inner.model

    async def complete(self, system: str, prompt: str, max_output_tokens: int, provider: Any = None, **kw: Any):
        self.prompts.append(prompt)
        return await self.inner.complete(system, prompt, max_output_tokens, provider, **kw)


def span_of(prompt: str) -> str:
    return prompt.rsplit(FENCE_OPEN, 1)[1].split(FENCE_CLOSE, 1)[0]


def asked(prompt: str) -> tuple[int, int]:
    words = re.search(r"Stay under (\d+) words \(about (\d+) tokens\)", prompt)
    assert words, "the limit is given in words and in tokens"
    return int(words.group(1)), int(words.group(2))


async def session(budget: int, backend: Any, tasks: int = 24, **config: Any):
    recorder = EventRecorder()
    manager = create_manager(
        {"max_tokens": budget, "summarizer": {"circuit_failures": 3}, **config}, backend=backend, hooks=recorder
    )
    views = await replay(manager, read_tasks(tasks), None, budget=budget)  # every view is valid and fits
    return manager, recorder, views


def shows(view: list[dict[str, Any]], head: str) -> bool:
    return any(str(m.get("content", "")).startswith(head) for m in view)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("budget", "tasks", "masking"), [(12_000, 24, True), (16_000, 24, True), (32_000, 60, True), (64_000, 40, False)]
)
async def test_a_healthy_summarizer_never_opens_the_circuit_and_every_view_keeps_its_summary(budget, tasks, masking):
    """Answers that are empty, refusals or too long are rejected and reported, never held against the LLM (at 64k
    the hybrid masks 40 such tasks without a summary: summarize-only exercises the LLM there)."""
    llm = SimulatedLLM(seed=3, empty_rate=0.1, refusal_rate=0.1)
    manager, recorder, views = await session(budget, llm, tasks=tasks, observation_masking=masking)
    posts = recorder.payloads("context:post_compact")
    assert posts and all(p["fallback"] != Skip.CIRCUIT_OPEN and p["circuit"] == "closed" for p in posts)
    failed = recorder.payloads("context:summary_failed")
    assert all(Fault(f["fallback"]).rejected_answer and f["reason"] == "compaction" for f in failed)
    first = next(i for i, v in enumerate(views) if shows(v, SUMMARY_MARKER))
    assert all(shows(v, SUMMARY_MARKER) and not shows(v, MARKER_HEAD) for v in views[first:])
    names = [e for e, _ in recorder.events if e in ("context:pre_compact", "context:post_compact")]
    open_ = 0  # a background compaction's pre goes out when it starts, its post when it lands; in band, adjacent
    for name in names:
        open_ += 1 if name == "context:pre_compact" else -1
        assert 0 <= open_ <= 2, "a post closes an open pre; only a masking's pair nests in a background one"
    flight = manager.background.flight
    assert open_ == int(flight is not None and flight.owes), "every pre has its post but one under way"


@pytest.mark.slow
async def test_content_rejections_leave_the_breaker_closed_but_provider_faults_open_it():
    class Refusing:
        name, model = "refusing", "m"

        async def complete(self, *args: Any, **kw: Any) -> Completion:
            return Completion("I'm sorry, but I can't help with that.")

    class Failing:
        name, model = "failing", "m"

        async def complete(self, *args: Any, **kw: Any) -> Completion:
            raise BackendError(Fault.SERVER_ERROR)

    _, refused, _ = await session(16_000, Refusing(), summarizer={"circuit_failures": 2, "max_retries": 0})
    fallbacks = [p["fallback"] for p in refused.payloads("context:post_compact")]
    assert "refusal" in fallbacks and Skip.CIRCUIT_OPEN not in fallbacks
    assert {f["fallback"] for f in refused.payloads("context:summary_failed")} == {"refusal"}
    _, failed, _ = await session(16_000, Failing(), 40, summarizer={"circuit_failures": 2, "max_retries": 0})
    assert Skip.CIRCUIT_OPEN in [p["fallback"] for p in failed.payloads("context:post_compact")]


@pytest.mark.parametrize(("budget", "masking"), [(12_000, True), (32_000, False)])
async def test_the_size_asked_follows_the_span_in_words_the_model_can_meet(budget, masking):
    backend = Recording(SimulatedLLM(seed=5))
    await session(budget, backend, observation_masking=masking)
    spans = [(p, span_of(p)) for p in backend.prompts if "Summarize the following" in p]
    assert spans
    for prompt, span in spans:
        words, tokens = asked(prompt)
        span_tokens = COUNT(span)
        assert span_tokens >= MIN_SPAN_TOKENS * 0.8, "no tiny span is sent"
        assert tokens <= max(span_tokens * SUMMARY_RATIO, 96) + 1, "the size asked follows the span"
        assert words * tokens_per_word(span, span_tokens) <= tokens, "the word limit is one the tokens can meet"


async def test_an_answer_no_smaller_than_its_span_is_asked_again_for_half_the_size():
    class Verbose:
        """Answers its first prompt with the whole span back (as a model padding a short span does)."""

        name, model = "verbose", "m"

        def __init__(self) -> None:
            self.prompts: list[str] = []

        async def complete(self, system: str, prompt: str, *args: Any, **kw: Any) -> Completion:
            self.prompts.append(prompt)
            span = span_of(prompt)
            return Completion(span + span if len(self.prompts) == 1 else span[: len(span) // 8])

    backend = Verbose()
    manager, recorder, _ = await session(16_000, backend)
    first, second = asked(backend.prompts[0]), asked(backend.prompts[1])
    assert span_of(backend.prompts[0]) == span_of(backend.prompts[1])
    assert second[1] == first[1] // 2 and second[0] < first[0]
    assert recorder.payloads("context:post_compact")[0]["fallback"] is None


async def test_the_summary_stays_when_the_newest_output_fills_the_view_and_the_counts_are_what_was_sent():
    """Budget 6,000 and newest reads of 5-8,000 tokens: the working set gives way, then the output is clipped in
    the copy sent; the state keeps its summary, and every count reported is that of the view returned."""
    budget = 6_000
    llm = SimulatedLLM(seed=2)
    recorder = EventRecorder()
    manager = create_manager({"max_tokens": budget}, backend=llm, hooks=recorder)
    history = read_tasks(10)
    for message in history[:-1]:
        await manager.add_message(message)
        if message.get("role") == "tool":
            view = await manager.get_messages_for_request(token_budget=budget)
    assert manager.state.segments and shows(view, SUMMARY_MARKER) and not shows(view, MARKER_HEAD)
    sent = manager.counter.count_messages(view)
    assert sent <= budget and manager.planned_tokens > budget, "the newest output alone fills the view"
    assert await manager.get_token_count() == sent
    assert recorder.payloads("context:post_compact")[-1]["token_count"] == sent
    assert history[-2]["content"][:500] in str(view[-1]["content"]), "the newest output is clipped, not masked"


@pytest.mark.parametrize("requirements", [770, 790])
async def test_a_shorter_summary_or_the_marker_stands_for_the_summary_for_one_request_only(requirements):
    """A latest request larger than the budget less the summary: that request gets the summary without its
    narrative and with what of the working set fits (770: ~250 tokens left), or the marker when not even the
    summary's preamble fits (790: ~60 tokens left); the state keeps the segments, and the next request shows the
    whole summary again."""
    budget = 8_000
    manager = create_manager({"max_tokens": budget}, backend=SimulatedLLM(seed=4))
    await replay(manager, read_tasks(30), None, budget=budget)
    assert manager.state.segments
    whole = manager.view.shown().summary["content"]
    words = " ".join(f"requirement {i}: handle case {i} exactly;" for i in range(requirements))
    huge = {"role": "user", "content": words}
    await manager.add_message(huge)
    view = await manager.get_messages_for_request(token_budget=budget)
    assert manager.counter.count_messages(view) <= budget and view[-1] == huge
    if requirements == 770:
        shorter = view[1]["content"]
        assert shorter.startswith(SUMMARY_MARKER) and "narrative" in shorter and "### Working set" in shorter
        assert len(shorter) < len(whole) and manager.state.segments, "the shorter summary is in this view only"
    else:
        assert shows(view, MARKER_HEAD) and manager.state.segments, "the marker is in this view only"
    await manager.add_message({"role": "assistant", "content": "Noted; starting with case 0."})
    await manager.add_message({"role": "user", "content": "Go on with case 1."})
    view = await manager.get_messages_for_request(token_budget=budget)
    assert shows(view, SUMMARY_MARKER) and not shows(view, MARKER_HEAD)


def test_the_prompts_spend_the_models_words_on_what_no_extractor_recovers():
    from amplifier_module_context_summarize.summarizer.prompts import load_prompts

    prompts = load_prompts()
    system = prompts.system("summarize")
    for section in ("### Goal", "### Decisions", "### State", "### Next"):
        assert section in system
    assert "the commands run and their outcomes" not in system and "Do not list those" in system
    assert "rejected" in prompts.system("merge")
