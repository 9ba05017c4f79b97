"""A small kit for testing code that uses this context manager, or the manager itself, offline.

The module's own tests, evaluation and benchmark use it; it is public for people who build on the module::

    from amplifier_module_context_summarize import create_manager
    from amplifier_module_context_summarize.testing import EventRecorder, FakeProvider, mixed_history, replay

    recorder = EventRecorder()
    manager = create_manager({"max_tokens": 12_000}, hooks=recorder)
    provider = FakeProvider()  # summarizes by quoting; records its requests; can fail or stall
    views = await replay(manager, mixed_history(90), provider, budget=12_000)  # a view before each reply
    assert recorder.payloads("context:post_compact") and provider.requests

* ``providers``: ``FakeProvider`` (a minimal Amplifier provider) and ``AnthropicLikeProvider`` (behaves like
  provider-anthropic: model from kwargs, streaming, its own retries and tokenizer), with ``ReadFileTool``.
* ``loops``: ``LoopLike``, one agent turn the way loop-basic runs it, for driving a mounted manager.
* ``builders``: histories and single messages in every tool-call shape the module reads (``SHAPES``,
  ``CALL_SHAPES``).
* ``replay``: the orchestrator's replay loop, a request before every assistant message (``replay``, and
  ``replay_steps`` to time or count around each request), and ``extends`` for prompt-cache prefix checks.
* ``events``: ``EventRecorder`` to pass as ``hooks=``, with ``payloads(name)``.
* ``simulated_llm``: ``SimulatedLLM``, a summarizer ``Backend`` that writes summaries the way models do, flaws
  included (loose length, preambles, restatements, omissions, empty answers, refusals, latency, faults),
  deterministic from a seed; ``eval --summarizer simulated`` uses it.
* ``native_standins``: ``AnthropicCompactionStandIn`` and ``OpenAICompactionStandIn``, the providers' own compaction
  at the HTTP level (the real SDKs talk to them through ``http_client``), refusing what the real APIs refuse;
  ``eval --summarizer simulated-native`` and ``bench --cost --native`` use them.
* ``simulated_reader``: ``SimulatedReader``, the session's model meeting a large tool output's preview: it carries on
  as if it saw the whole (claude-code#17407) unless the start or end of the result says plainly that it did not and
  how to read the rest.
* ``sdk_paths``: provider-anthropic's request paths as each anthropic SDK generation leaves them (the
  non-streaming path broken on one), for the module's provider-path fallback.
* ``redis_server``: ``RedisServer``, a throwaway ``redis-server`` on a free loopback port that can be killed and
  restarted mid-run (for a fleet's shared store; needs the ``redis-server`` binary).

The context manager itself never imports the kit (the CLI, evaluation and benchmark replay through it); it needs
only the module's own dependencies.
"""

from .builders import (
    CALL_SHAPES,
    FILLER,
    ORCHESTRATOR_SHAPES,
    SHAPES,
    amplifier_turn,
    anthropic_turn,
    mixed_history,
    openai_turn,
    tool_call,
    tool_result,
)
from .events import EventRecorder
from .loops import LoopLike
from .providers import TOKENIZER_RATIO, AnthropicLikeProvider, FakeProvider, ReadFileTool
from .redis_server import RedisServer
from .replay import REPLAY_DEADLINE_S, ReplayStep, extends, replay, replay_steps, request_due
from .simulated_llm import SimulatedBehaviour, SimulatedLLM

__all__ = [
    "CALL_SHAPES",
    "FILLER",
    "ORCHESTRATOR_SHAPES",
    "SHAPES",
    "TOKENIZER_RATIO",
    "AnthropicLikeProvider",
    "EventRecorder",
    "FakeProvider",
    "LoopLike",
    "ReadFileTool",
    "RedisServer",
    "ReplayStep",
    "SimulatedBehaviour",
    "SimulatedLLM",
    "amplifier_turn",
    "anthropic_turn",
    "extends",
    "mixed_history",
    "openai_turn",
    "REPLAY_DEADLINE_S",
    "replay",
    "replay_steps",
    "request_due",
    "tool_call",
    "tool_result",
]
