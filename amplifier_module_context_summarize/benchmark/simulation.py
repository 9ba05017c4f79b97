"""What a long session costs in summarizer tokens and prompt-cache breaks, against re-summarizing the prefix.

A session of realistic turns is replayed as an orchestrator would (a request before each assistant
message) through a manager whose instant backend writes summaries of realistic size and reports
input/output tokens counted with the module's own tokenizer.

The naive baseline re-summarizes everything summarized so far at every compaction, so its input at
compaction *k* is the token count of all messages before the boundary at *k*.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from .. import create_manager
from ..core.tokens import TokenCounter
from ..testing import EventRecorder, extends, replay_steps
from .fake_backend import InstantBackend
from .synth import REALISTIC, SessionGenerator, Sizes, TextSource
from .timing import SummarizerClock


@dataclass(frozen=True)
class SimPlan:
    turns: int = 2_000
    budget: int = 100_000
    sizes: Sizes = REALISTIC
    seed: int = 2_000


@dataclass
class SimResult:
    turns: int = 0
    budget: int = 0
    compact_threshold: float = 0.0
    target_usage: float = 0.0
    messages: int = 0
    session_tokens: int = 0
    """Growth: every message's tokens, counted once."""
    requests: int = 0
    extending_views: int = 0
    break_causes: dict[str, int] = field(default_factory=dict)
    compactions: int = 0
    compactions_allowed: float = 0.0
    summarize_calls: int = 0
    merge_calls: int = 0
    summarizer_input_tokens: int = 0
    summarizer_output_tokens: int = 0
    naive_input_tokens: int = 0
    max_view_tokens: int = 0
    views_over_budget: int = 0
    seconds: float = 0.0

    @property
    def extension_share(self) -> float:
        return self.extending_views / max(self.requests - 1, 1)

    @property
    def input_over_session(self) -> float:
        return self.summarizer_input_tokens / max(self.session_tokens, 1)

    @property
    def naive_over_module(self) -> float:
        return self.naive_input_tokens / max(self.summarizer_input_tokens, 1)


def allowed_compactions(growth: int, budget: int, compact_threshold: float, target_usage: float) -> float:
    """The bound hysteresis should meet: 1.2x the growth over the band, plus one."""
    return 1.2 * growth / ((compact_threshold - target_usage) * budget) + 1


async def simulate(plan: SimPlan, text: TextSource) -> SimResult:
    started = time.perf_counter()
    counter = TokenCounter()
    events = EventRecorder(only={"context:post_compact"})
    backend = InstantBackend(text, count_text=counter.count_text)
    # In band: the replay has no agent time between requests for background work (``bench --latency`` has).
    settings = {"max_tokens": plan.budget, "background_compaction": False}
    manager = create_manager(settings, hooks=events, backend=backend)
    clock = SummarizerClock(manager)
    config = manager.config
    result = SimResult(plan.turns, plan.budget, config.compact_threshold, config.target_usage)
    generator = SessionGenerator(plan.sizes, seed=plan.seed, text=text)
    said = [0]
    """Cumulative tokens of the non-system messages: what a naive summarizer resends."""
    previous: list[Any] | None = None
    view_tokens = 0
    pending = [generator.system()]
    for _ in range(plan.turns):
        pending += generator.turn()
        async for step in replay_steps(manager, pending, budget=plan.budget):
            tokens = counter.count_message(step.message)
            result.session_tokens += tokens
            result.messages += 1
            if step.message.get("role") != "system":
                said.append(said[-1] + tokens)
            if not step.due:
                continue
            compactions = manager.stats["compactions"]
            view = await step.request()
            result.requests += 1
            if previous is not None and extends(previous, view):
                result.extending_views += 1
                view_tokens += counter.count_messages(view[len(previous) :])  # count only what is new
            else:
                if previous is not None:
                    cause = "compaction" if manager.stats["compactions"] > compactions else "other"
                    result.break_causes[cause] = result.break_causes.get(cause, 0) + 1
                view_tokens = counter.count_messages(view)
            result.max_view_tokens = max(result.max_view_tokens, view_tokens)
            result.views_over_budget += view_tokens > plan.budget
            previous = view
        pending = []
    posts = events.payloads("context:post_compact")
    result.naive_input_tokens = sum(said[min(e["summarized_messages"], len(said) - 1)] for e in posts)
    result.compactions = manager.stats["compactions"]
    result.summarize_calls, result.merge_calls = clock.calls["summarize"], clock.calls["merge"]
    result.summarizer_input_tokens = manager.stats["summarizer_input_tokens"]
    result.summarizer_output_tokens = manager.stats["summarizer_output_tokens"]
    result.compactions_allowed = allowed_compactions(
        result.session_tokens, plan.budget, config.compact_threshold, config.target_usage
    )
    result.seconds = time.perf_counter() - started
    return result
