"""Self-compaction (issue 37): with the session's own provider and model, a summary request begins with exactly
the messages of the last view sent, carries the session's tool schemas, and ends with the instruction; with
another model, or a view that does not show the span, the compact prompt is sent as before."""

from __future__ import annotations

from typing import Any

from amplifier_core.message_models import ChatResponse, TextBlock, Usage
from amplifier_core.testing import MockCoordinator

from amplifier_module_context_summarize import mount
from amplifier_module_context_summarize.summarizer.in_context import INSTRUCTION_KIND
from amplifier_module_context_summarize.testing import ReadFileTool
from amplifier_module_context_summarize.testing.builders import amplifier_turn


class RecordingProvider:
    """Answers agent requests with nothing and summary requests with a grounded summary; records both."""

    name = "recording"

    def __init__(self, default_model: str = "model-a") -> None:
        self.default_model = default_model
        self.requests: list[tuple[Any, dict[str, Any]]] = []

    def get_info(self) -> Any:
        from amplifier_core.models import ProviderInfo

        return ProviderInfo(id=self.name, display_name="Recording", defaults={"model": self.default_model})

    async def list_models(self) -> list[Any]:
        return []

    def parse_tool_calls(self, response: Any) -> list[Any]:
        return []

    async def complete(self, request: Any, **kwargs: Any) -> ChatResponse:
        self.requests.append((request, kwargs))
        return ChatResponse(
            content=[TextBlock(text="### State\nThe agent read files and ran the tests.")],
            usage=Usage(input_tokens=100, output_tokens=10, total_tokens=110),
        )


async def _session(config: dict[str, Any], provider: RecordingProvider) -> tuple[Any, list[list[dict[str, Any]]]]:
    coordinator = MockCoordinator()
    await coordinator.mount("providers", provider, name=provider.name)
    await coordinator.mount("tools", ReadFileTool(), name="read_file")
    plan = {"max_tokens": 12_000, "background_compaction": False, "storage_path": "memory", **config}
    manager = (await mount(coordinator, plan)).manager
    views = []
    history = [{"role": "system", "content": "You are a careful coding agent."}]
    for i in range(80):
        history += amplifier_turn(i)
    for message in history:
        await manager.add_message(message)
        if message["role"] in ("user", "tool"):
            views.append(await manager.get_messages_for_request(provider=provider))
    manager.coordinator_tools = coordinator.get("tools")
    return manager, views


def _as_sent(message: Any) -> dict[str, Any]:
    return message.model_dump(exclude_none=True)


def _same_message(sent: dict[str, Any], shown: dict[str, Any]) -> bool:
    from amplifier_core.message_models import Message

    return sent == Message(**shown).model_dump(exclude_none=True)


async def test_a_session_model_summary_extends_the_last_view_sent():
    provider = RecordingProvider()
    manager, views = await _session({}, provider)
    summaries = [
        (r, k) for r, k in provider.requests if (r.messages[-1].metadata or {}).get("source") == INSTRUCTION_KIND
    ]
    assert summaries, "no summary was asked at the end of a view"
    for request, kwargs in summaries:
        *prefix, instruction = request.messages
        # The view the session sent just before this summary: the prefix is exactly its messages, in order.
        earlier = [v for v in views if len(v) == len(prefix) and all(map(_same_message, map(_as_sent, prefix), v))]
        assert earlier, "the summary request does not start with the messages of a view the session sent"
        assert instruction.role == "user" and instruction.metadata["ephemeral"] is True
        assert "conversation messages" in instruction.content and "TRANSCRIPT" not in instruction.content
        mounted = manager.coordinator_tools  # what loop-basic sends: every mounted tool, in mount order
        assert [t.name for t in request.tools] == [tool.name for tool in mounted.values()]
        assert [t.parameters for t in request.tools] == [tool.input_schema for tool in mounted.values()]
        assert request.tools[0].parameters == ReadFileTool.input_schema
        assert "extended_thinking" not in kwargs  # thinking as the session has it: a change drops Anthropic's cache


async def test_another_model_gets_the_compact_prompt():
    provider = RecordingProvider(default_model="model-a")
    _, _ = await _session({"summarizer": {"model": "model-b"}}, provider)
    summaries = [r for r, _ in provider.requests if r.messages and r.messages[0].role == "system"]
    assert summaries
    assert all("<<<TRANSCRIPT" in str(r.messages[-1].content) for r in summaries)
    assert not any((r.messages[-1].metadata or {}).get("source") == INSTRUCTION_KIND for r in summaries)


async def test_the_configured_default_model_counts_as_the_session_model():
    provider = RecordingProvider(default_model="model-a")
    await _session({"summarizer": {"model": "model-a"}}, provider)
    assert any((r.messages[-1].metadata or {}).get("source") == INSTRUCTION_KIND for r, _ in provider.requests)


async def test_a_view_that_does_not_show_the_span_gets_the_compact_prompt():
    from amplifier_module_context_summarize.summarizer.in_context import SentView, locate

    provider = RecordingProvider()
    manager, views = await _session({}, provider)
    history, masks = manager.history, manager.masks
    sent = manager.compactor.sent
    assert sent is not None
    start = sent.boundary
    end = start + 2
    found = locate(sent, history, masks, start, end)
    assert found is not None and found.prefix == list(views[-1])
    # The same view with one message of the span changed: not a prefix the provider holds.
    changed = list(sent.messages)
    changed[found.first] = {**changed[found.first], "content": "edited"}
    altered = SentView(changed, sent.length, history, sent.boundary, sent.tail_start, sent.head)
    assert locate(altered, history, masks, start, end) is None
    # Another history (a set_messages since): nothing found.
    assert locate(sent, object(), masks, start, end) is None


class ToolCallingProvider(RecordingProvider):
    """Answers a summary asked at the end of the view with a tool call (a preamble, then ``read_file``), as a real
    model may when the session's tools are in the request; answers everything else like ``RecordingProvider``."""

    async def complete(self, request: Any, **kwargs: Any) -> ChatResponse:
        from amplifier_core.message_models import ToolCall, ToolCallBlock

        if (request.messages[-1].metadata or {}).get("source") != INSTRUCTION_KIND:
            return await super().complete(request, **kwargs)
        self.requests.append((request, kwargs))
        call = {"id": "toolu_1", "name": "read_file", "arguments": {"path": "src/app.py"}}
        return ChatResponse(
            content=[
                TextBlock(text="Let me read the file again before I summarize."),
                ToolCallBlock(id="toolu_1", name="read_file", input={"path": "src/app.py"}),
            ],
            tool_calls=[ToolCall(**call)],
            usage=Usage(input_tokens=100, output_tokens=20, total_tokens=120),
        )


def _is_instruction(request: Any) -> bool:
    return (request.messages[-1].metadata or {}).get("source") == INSTRUCTION_KIND


async def test_the_in_context_request_keeps_the_session_tool_choice():
    """Anthropic: a tool_choice change invalidates the cached message blocks (the whole span), so the request
    sends tool_choice as loop-basic does (unset: the provider's auto) and forbids a call in the instruction."""
    provider = RecordingProvider()
    await _session({}, provider)
    summaries = [(r, k) for r, k in provider.requests if _is_instruction(r)]
    assert summaries
    for request, kwargs in summaries:
        assert request.tool_choice is None and "tool_choice" not in kwargs
        assert "call no tool" in request.messages[-1].content


async def test_a_tool_call_answer_falls_back_to_the_compact_prompt():
    provider = ToolCallingProvider()
    manager, _ = await _session({}, provider)
    asked = [(i, r) for i, (r, _) in enumerate(provider.requests) if _is_instruction(r)]
    assert asked, "no summary was asked at the end of a view"
    for index, _request in asked:
        # The very next request is the compact prompt for the same span: no tools, the fenced transcript.
        following, _ = provider.requests[index + 1]
        assert not _is_instruction(following)
        assert "<<<TRANSCRIPT" in str(following.messages[-1].content)
        assert not following.tools
    # Each in-context ask was tried once: a model that called a tool is not asked the same again.
    assert all(not _is_instruction(provider.requests[i + 1][0]) for i, _ in asked)
    summaries = [m for m in await manager.get_messages_for_request() if "CONTEXT SUMMARY" in str(m.get("content"))]
    assert summaries, "no summary in the view"
    assert not any("Let me read the file" in str(m["content"]) for m in summaries)
    assert "The agent read files and ran the tests." in str(summaries[0]["content"])


class ResponsesLikeProvider(RecordingProvider):
    """Renders a request's input as provider-openai does for a reasoning model (``enable_response_chaining``
    "auto", its default): while chaining is on the server holds the reasoning, so thinking blocks are left out;
    a call that turns chaining off re-inserts each one as a reasoning item with its encrypted content."""

    def __init__(self) -> None:
        super().__init__()
        self.rendered: list[tuple[list[Any], list[Any]]] = []
        """(the request's input, its messages before the instruction rendered as the session's requests are)."""

    @staticmethod
    def render(messages: list[Any], kwargs: dict[str, Any]) -> list[Any]:
        chained = kwargs.get("enable_response_chaining", "auto") in ("auto", True)
        items: list[Any] = []
        for message in messages:
            blocks = message.content if isinstance(message.content, list) else []
            for block in blocks:
                if getattr(block, "type", None) == "thinking" and not chained:
                    items.append({"type": "reasoning", "encrypted_content": block.content})
            items.append((message.role, str(message.content), message.tool_call_id))
        return items

    async def complete(self, request: Any, **kwargs: Any) -> ChatResponse:
        if _is_instruction(request):
            prefix = request.messages[:-1]
            self.rendered.append((self.render(request.messages, kwargs), self.render(prefix, {})))
        return await super().complete(request, **kwargs)


async def test_the_in_context_request_renders_the_session_prefix_under_response_chaining():
    """provider-openai chains reasoning models by default and then sends no reasoning items (README: 85% of the
    prefix cached with chaining, 0% without); a summary request that turned chaining off would re-insert every
    earlier turn's encrypted reasoning, and its input would part from the session's at the first such turn."""
    provider = ResponsesLikeProvider()
    coordinator = MockCoordinator()
    await coordinator.mount("providers", provider, name=provider.name)
    await coordinator.mount("tools", ReadFileTool(), name="read_file")
    plan = {"max_tokens": 12_000, "background_compaction": False, "storage_path": "memory"}
    manager = (await mount(coordinator, plan)).manager
    await manager.add_message({"role": "system", "content": "You are a careful coding agent."})
    for i in range(80):
        for message in amplifier_turn(i):
            if message["role"] == "assistant" and isinstance(message["content"], list):
                thinking = {"type": "thinking", "thinking": "", "content": [f"gAAAA{i}", f"rs_{i}"]}
                message = {**message, "content": [thinking, *message["content"]]}
            await manager.add_message(message)
            if message["role"] in ("user", "tool"):
                await manager.get_messages_for_request(provider=provider)
    assert provider.rendered, "no summary was asked at the end of a view"
    for sent, session in provider.rendered:
        assert sent[: len(session)] == session, "the summary request's input parts from the session's prefix"


def _views_sent_six_minutes_before_the_next_request(monkeypatch) -> Any:
    """Every view recorded as sent 6 minutes earlier than it was (a user who pauses before each turn); returns the
    real ``record_sent`` to put back."""
    from dataclasses import replace

    from amplifier_module_context_summarize.compaction.run.compactor import Compactor

    recorded = Compactor.record_sent

    def sent_six_minutes_ago(self, view):
        recorded(self, view)
        self.sent = replace(self.sent, sent_at=self.sent.sent_at - 360)

    monkeypatch.setattr(Compactor, "record_sent", sent_six_minutes_ago)
    return recorded


async def test_after_a_pause_longer_than_the_prompt_cache_keeps_a_view_the_compact_prompt_is_sent(monkeypatch):
    """A user back after 5 minutes: the provider no longer holds the last view, so asking at its end would write
    the whole view to the cache again (1.25x on Anthropic) only for the compacted view to replace it."""
    _views_sent_six_minutes_before_the_next_request(monkeypatch)
    provider = RecordingProvider()
    await _session({}, provider)
    assert provider.requests, "no summary was asked"
    assert not any((r.messages[-1].metadata or {}).get("source") == INSTRUCTION_KIND for r, _ in provider.requests)
    assert any("<<<TRANSCRIPT" in str(r.messages[-1].content) for r, _ in provider.requests)


async def test_a_one_hour_cache_keeps_asking_at_the_end_of_the_view_and_zero_never_does(monkeypatch):
    from amplifier_module_context_summarize.compaction.run.compactor import Compactor

    recorded = _views_sent_six_minutes_before_the_next_request(monkeypatch)
    hour, never = RecordingProvider(), RecordingProvider()
    await _session({"summarizer": {"prompt_cache_ttl_s": 3600}}, hour)
    monkeypatch.setattr(Compactor, "record_sent", recorded)
    await _session({"summarizer": {"prompt_cache_ttl_s": 0}}, never)
    assert any((r.messages[-1].metadata or {}).get("source") == INSTRUCTION_KIND for r, _ in hour.requests)
    assert never.requests
    assert not any((r.messages[-1].metadata or {}).get("source") == INSTRUCTION_KIND for r, _ in never.requests)
