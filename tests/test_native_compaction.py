"""``summarizer.provider: native``: the providers' own compaction through the real SDKs, against HTTP stand-ins
that refuse what the real APIs refuse (``testing/native_standins.py``), with this module's summary as the fallback.

Runs on both SDK generations (``.ci/run``'s old-SDK step included): requests go through the SDK's raw ``post``.
"""

from __future__ import annotations

import json
from typing import Any

import anthropic
import openai
import pytest
from amplifier_core.testing import EventRecorder

from amplifier_module_context_summarize import create_manager
from amplifier_module_context_summarize.backends.base import BackendError, Fault
from amplifier_module_context_summarize.backends.native_wire import (
    ANTHROPIC_BETA,
    CLIP_MARK,
    INSTRUCTIONS_MAX_CHARS,
    instructions,
)
from amplifier_module_context_summarize.backends.registry import build_backend
from amplifier_module_context_summarize.config import SummarizerConfig, parse_config
from amplifier_module_context_summarize.stores import SqliteStore
from amplifier_module_context_summarize.stores.records import ArtefactKey, read
from amplifier_module_context_summarize.testing import mixed_history, replay
from amplifier_module_context_summarize.testing.native_standins import (
    AnthropicCompactionStandIn,
    OpenAICompactionStandIn,
    http_client,
)

BUDGET = 12_000
KEYS = {"ANTHROPIC_API_KEY": "sk-ant-test-SECRET", "OPENAI_API_KEY": "sk-openai-test-SECRET"}
SYSTEM = "You summarize agent sessions."
PROMPT = (
    "Summarize the following part of the conversation.\nStay under 120 words (about 200 tokens).\n\n<<<TRANSCRIPT\n"
    + "\n".join(f"[#{n} USER]\nplease run pytest tests/test_mod_{n}.py and fix src/mod_{n}.py" for n in range(1, 40))
    + "\nTRANSCRIPT>>>"
)
ANTHROPIC_MODEL, OPENAI_MODEL = "claude-sonnet-4-6", "gpt-5.4"


@pytest.fixture(autouse=True)
def _clean_sdk_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_BASE_URL", "ANTHROPIC_CUSTOM_HEADERS", "OPENAI_BASE_URL", "OPENAI_ORG_ID"):
        monkeypatch.delenv(name, raising=False)


def native(stand_in: Any, model: str = ANTHROPIC_MODEL) -> Any:
    sdk = anthropic if model.startswith("claude") else openai
    cfg = SummarizerConfig(provider="native", model=model)
    return build_backend(cfg, http_client=http_client(stand_in, sdk), environ=KEYS)


def sdk_for(stand_in: Any) -> Any:
    """A raw SDK client talking to the stand-in, to send what the module never would."""
    if isinstance(stand_in, AnthropicCompactionStandIn):
        return anthropic.AsyncAnthropic(api_key="k", max_retries=0, http_client=http_client(stand_in, anthropic))
    return openai.AsyncOpenAI(api_key="k", max_retries=0, http_client=http_client(stand_in, openai))


async def post(client: Any, path: str, body: dict[str, Any], beta: bool = True) -> Any:
    headers = {"anthropic-beta": ANTHROPIC_BETA} if beta and isinstance(client, anthropic.AsyncAnthropic) else {}
    return json.loads(await client.post(path, cast_to=str, body=body, options={"headers": headers}))


# --- the backend against the stand-ins ------------------------------------------------------------------------


async def test_anthropic_compaction_request_and_answer() -> None:
    stand_in = AnthropicCompactionStandIn()
    guidance = "Standing instructions from the user:\nkeep ORD-7731\n"
    completion = await native(stand_in).complete_guided(SYSTEM, PROMPT, 800, guidance)
    path, headers, body = stand_in.requests[0]
    assert path == "/v1/messages" and ANTHROPIC_BETA in headers["anthropic-beta"]
    assert body["compaction"]["type"] == "summarize"
    assert body["compaction"]["instructions"].startswith("Standing instructions from the user:\nkeep ORD-7731")
    assert SYSTEM in body["compaction"]["instructions"] and body["messages"] == [{"role": "user", "content": PROMPT}]
    assert "system" not in body and body["max_tokens"] == 800
    assert completion.text == stand_in.issued[0]["content"] and completion.text
    assert json.loads(completion.artefact or "") == stand_in.issued[0]
    assert completion.input_tokens > 0 and completion.output_tokens > 0  # from usage.iterations
    assert stand_in.rejections == []


async def test_openai_compaction_then_its_summary_read_back() -> None:
    stand_in = OpenAICompactionStandIn()
    completion = await native(stand_in, OPENAI_MODEL).complete(SYSTEM, PROMPT, 800)
    (p1, _, compact), (p2, _, restate) = stand_in.requests
    assert (p1, p2) == ("/v1/responses/compact", "/v1/responses")
    assert compact["input"][1] == {"role": "assistant", "content": PROMPT}  # user messages are kept verbatim
    item = json.loads(completion.artefact or "")
    assert item["type"] == "compaction" and item == stand_in.issued[item["id"]]
    assert restate["input"][-2] == item and restate["store"] is False  # the window as compacted, then the ask
    assert completion.text and completion.output_tokens > 0 and stand_in.rejections == []


def test_instructions_are_clipped_to_the_limit_guidance_first() -> None:
    guidance = "keep ORD-7731\n" + "x" * 20_000
    text = instructions(SYSTEM, guidance)
    assert len(text) == INSTRUCTIONS_MAX_CHARS and text.startswith("keep ORD-7731") and text.endswith(CLIP_MARK)
    assert instructions(SYSTEM, "") == SYSTEM


async def test_long_guidance_is_clipped_and_accepted() -> None:
    stand_in = AnthropicCompactionStandIn()
    await native(stand_in).complete_guided(SYSTEM, PROMPT, 800, "keep the deploy date\n" + "y" * 30_000)
    assert len(stand_in.requests[0][2]["compaction"]["instructions"]) == INSTRUCTIONS_MAX_CHARS
    assert stand_in.rejections == []


@pytest.mark.parametrize(
    ("mode", "fault"),
    [
        ("unavailable", Fault.SERVER_ERROR),
        ("empty", Fault.EMPTY),
        ("tool_use", Fault.TOOL_CALL),
        ("null_content", Fault.EMPTY),
    ],
)
async def test_anthropic_failures_are_typed_faults(mode: str, fault: Fault) -> None:
    with pytest.raises(BackendError) as caught:
        await native(AnthropicCompactionStandIn(mode=mode)).complete(SYSTEM, PROMPT, 800)
    assert caught.value.fault is fault
    assert caught.value.retryable is (mode == "unavailable")


@pytest.mark.parametrize(
    ("mode", "fault"),
    [("unavailable", Fault.SERVER_ERROR), ("empty", Fault.EMPTY), ("tool_use", Fault.TOOL_CALL)],
)
async def test_openai_failures_are_typed_faults(mode: str, fault: Fault) -> None:
    with pytest.raises(BackendError) as caught:
        await native(OpenAICompactionStandIn(mode=mode), OPENAI_MODEL).complete(SYSTEM, PROMPT, 800)
    assert caught.value.fault is fault


async def test_a_refusal_is_a_refusal() -> None:
    stand_in = AnthropicCompactionStandIn()
    stand_in.writer.behaviour = type(stand_in.writer.behaviour)(refusal_rate=1.0, empty_rate=0.0)
    with pytest.raises(BackendError) as caught:
        await native(stand_in).complete(SYSTEM, PROMPT, 800)
    assert caught.value.fault is Fault.REFUSAL


def test_config_names_the_key() -> None:
    with pytest.raises(ValueError, match="summarizer.model") as caught:
        parse_config({"summarizer": {"provider": "native", "model": "llama-3.1-8b"}})
    assert "llama" not in str(caught.value)  # a string value is described, never echoed
    with pytest.raises(ValueError, match="summarizer.api_key_env"):
        build_backend(SummarizerConfig(provider="native", model=OPENAI_MODEL), environ={})
    assert parse_config({"summarizer": "native"}).summarizer.key_env == "ANTHROPIC_API_KEY"


# --- the stand-ins refuse what the real APIs refuse --------------------------------------------------------------


async def compacted_block(stand_in: AnthropicCompactionStandIn, client: Any) -> dict[str, Any]:
    answer = await post(
        client,
        "/v1/messages",
        {
            "model": ANTHROPIC_MODEL,
            "max_tokens": 500,
            "messages": [{"role": "user", "content": PROMPT}],
            "compaction": {"type": "summarize"},
        },
    )
    assert answer["stop_reason"] == "compaction"
    block: dict[str, Any] = answer["content"][0]
    return block


async def test_anthropic_stand_in_takes_its_block_back_only_first_once_and_byte_exact() -> None:
    stand_in = AnthropicCompactionStandIn()
    client = sdk_for(stand_in)
    block = await compacted_block(stand_in, client)
    replayed = json.loads(json.dumps(block))  # as stored and read back
    later = {"role": "user", "content": "go on"}

    def turn(*messages: dict[str, Any]) -> dict[str, Any]:
        return {"model": ANTHROPIC_MODEL, "max_tokens": 100, "messages": list(messages)}

    ok = await post(client, "/v1/messages", turn({"role": "assistant", "content": [replayed]}, later))
    assert ok["stop_reason"] == "end_turn"
    refused = [
        turn({"role": "assistant", "content": [{**block, "content": block["content"] + " "}]}, later),  # not exact
        turn({"role": "assistant", "content": [{**block, "signature": "forged"}]}, later),
        turn({"role": "assistant", "content": [block, block]}, later),  # twice
        turn({"role": "user", "content": "first"}, {"role": "assistant", "content": [block]}, later),  # not first
    ]
    for body in refused:
        with pytest.raises(anthropic.BadRequestError):
            await post(client, "/v1/messages", body)
    with pytest.raises(anthropic.BadRequestError):  # the beta header on every request carrying the block
        await post(client, "/v1/messages", turn({"role": "assistant", "content": [block]}, later), beta=False)
    assert len(stand_in.rejections) == 5


async def test_anthropic_stand_in_refuses_bad_compaction_requests() -> None:
    stand_in = AnthropicCompactionStandIn()
    client = sdk_for(stand_in)
    base = {"model": ANTHROPIC_MODEL, "max_tokens": 500, "messages": [{"role": "user", "content": PROMPT}]}
    tool_use = {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {}}
    bad = [
        ({**base, "compaction": {"type": "summarize", "instructions": "x" * (INSTRUCTIONS_MAX_CHARS + 1)}}, True),
        ({**base, "compaction": {"type": "summarize"}}, False),  # no beta header
        ({**base, "compaction": {"type": "summarize"}, "context_management": {"edits": []}}, True),
        ({**base, "compaction": {"type": "clear"}}, True),
        ({**base, "model": "claude-haiku-4-5", "compaction": {"type": "summarize"}}, True),
        (
            {
                **base,
                "messages": [*base["messages"], {"role": "assistant", "content": [tool_use]}],
                "compaction": {"type": "summarize"},
            },
            True,
        ),  # a trailing unanswered tool call
    ]
    for body, beta in bad:
        with pytest.raises(anthropic.BadRequestError):
            await post(client, "/v1/messages", body, beta=beta)
    longest = {"type": "summarize", "instructions": "x" * INSTRUCTIONS_MAX_CHARS}
    ok = await post(client, "/v1/messages", {**base, "compaction": longest})
    assert ok["stop_reason"] == "compaction"


async def test_anthropic_stand_in_answers_match_the_sdk_types() -> None:
    beta_types = pytest.importorskip("anthropic.types.beta")
    if not hasattr(beta_types, "BetaCompactionBlock"):
        pytest.skip("this anthropic SDK has no compaction types")
    stand_in = AnthropicCompactionStandIn()
    client = sdk_for(stand_in)
    await compacted_block(stand_in, client)
    _, _, answer = await stand_in.handle(
        "POST",
        "/v1/messages",
        {"anthropic-beta": ANTHROPIC_BETA},
        json.dumps({**stand_in.requests[0][2]}).encode(),
    )
    message = beta_types.BetaMessage.model_validate(json.loads(answer))
    assert isinstance(message.content[0], beta_types.BetaCompactionBlock) and message.stop_reason == "compaction"
    assert message.usage.iterations and message.usage.iterations[0].type == "compaction"
    param = beta_types.BetaCompactionBlockParam(**stand_in.issued[0])  # what is sent back is the SDK's param shape
    assert param["signature"] == stand_in.issued[0]["signature"]


async def test_openai_stand_in_shape_and_refusals() -> None:
    stand_in = OpenAICompactionStandIn()
    client = sdk_for(stand_in)
    items = [{"role": "user", "content": "fix the build"}, {"role": "assistant", "content": PROMPT}]
    compacted = await post(client, "/responses/compact", {"model": OPENAI_MODEL, "input": items})
    output = compacted["output"]
    assert [o["type"] for o in output] == ["message", "compaction"] and output[0]["role"] == "user"
    assert compacted["object"] == "response.compaction"
    types = pytest.importorskip("openai.types.responses")
    if hasattr(types, "ResponseCompactionItem"):
        # The SDK types ``output`` as output items, whose messages are the assistant's: its user messages (the
        # docstring's "all user messages, followed by a single compaction item") are checked by hand above.
        item_type = types.ResponseCompactionItem.model_validate(output[-1])
        assert item_type.encrypted_content == output[-1]["encrypted_content"]
        assert types.ResponseUsage.model_validate(compacted["usage"]).total_tokens >= 0
    item = output[-1]
    call = {"type": "function_call", "call_id": "c1", "name": "bash", "arguments": "{}"}
    refused = [
        {"model": OPENAI_MODEL, "input": [{**item, "encrypted_content": item["encrypted_content"] + "A"}]},
        {"model": OPENAI_MODEL, "input": [*items, call]},  # a call without its output
        {"model": OPENAI_MODEL, "input": items, "temperature": 0},  # not a compact parameter
    ]
    for body in refused:
        with pytest.raises(openai.BadRequestError):
            await post(client, "/responses/compact", body)
    window = [*output, {"role": "user", "content": "go"}]
    answer = await post(client, "/responses", {"model": OPENAI_MODEL, "input": window})
    if hasattr(types, "Response"):
        assert types.Response.model_validate(answer).output_text


# --- in the manager: events, the view, storage and resume -------------------------------------------------------


def manager_with(
    stand_in: Any, store: Any, recorder: EventRecorder, model: str = ANTHROPIC_MODEL, **config: Any
) -> Any:
    sdk = anthropic if model.startswith("claude") else openai
    summarizer = {"provider": "native", "model": model, "max_retries": 1}
    manager = create_manager(
        {"max_tokens": BUDGET, "summarizer": summarizer, **config},
        hooks=recorder,
        store=store,
        backend=build_backend(SummarizerConfig(**summarizer), http_client=http_client(stand_in, sdk), environ=KEYS),
    )
    settings = manager.summarizer.settings
    manager.summarizer.settings = type(settings)(**{**settings.__dict__, "wait_base": 0.001, "wait_max": 0.002})
    return manager


def posts(recorder: EventRecorder) -> list[dict[str, Any]]:
    return [data for _, data in recorder.get_events("context:post_compact")]


async def test_native_summary_in_the_view_stored_with_its_artefact_and_resumed_free(tmp_path: Any) -> None:
    stand_in, recorder = AnthropicCompactionStandIn(), EventRecorder()
    store = SqliteStore(str(tmp_path / "s.db"))
    guidance = {"summary_instructions": "Always keep ORD-7731."}
    manager = manager_with(stand_in, store, recorder, **guidance)
    history = mixed_history(60)
    await manager.set_messages(history)
    live = await manager.get_messages_for_request(BUDGET)
    first = posts(recorder)[0]
    assert first["fallback"] is None and first["provider_calls"] >= 1
    assert len(recorder.get_events("context:pre_compact")) == len(posts(recorder))
    summary = live[1]["content"]
    assert "[CONTEXT SUMMARY]" in summary
    # The narrative is the block's readable content (its looping lines cut by the module's grounding check), and
    # the working set follows it.
    block_lines = {line for block in stand_in.issued for line in block["content"].splitlines()}
    narrative = summary[summary.index("### Goal") : summary.index("### Working set")].strip().splitlines()
    assert len(narrative) > 5 and all(line in block_lines for line in narrative if line)
    assert all("Always keep ORD-7731." in body["compaction"]["instructions"] for _, _, body in stand_in.requests)
    segment = manager.state.segments[0]
    chain = manager.history.chain_at
    (record,) = await read(store, ArtefactKey(chain(segment.start)))
    assert json.loads(record.text) in stand_in.issued  # verbatim, for a provider module that can send it back
    assert record.end.startswith(chain(segment.end))

    calls = len(stand_in.requests)
    resumed = manager_with(stand_in, store, EventRecorder(), **guidance)
    await resumed.set_messages(history)
    assert await resumed.get_messages_for_request(BUDGET) == live
    assert len(stand_in.requests) == calls  # zero calls on resume

    other = manager_with(stand_in, store, EventRecorder(), model="claude-opus-4-6", **guidance)
    await other.set_messages(history)
    await other.get_messages_for_request(BUDGET)
    assert len(stand_in.requests) > calls  # another model never reuses them
    assert {body["model"] for _, _, body in stand_in.requests[calls:]} == {"claude-opus-4-6"}


@pytest.mark.parametrize(("mode", "reason"), [("unavailable", "server_error"), ("bloated", "not_smaller")])
async def test_failures_fall_back_to_our_summary_with_the_reason(mode: str, reason: str) -> None:
    stand_in, recorder = AnthropicCompactionStandIn(mode=mode), EventRecorder()
    manager = manager_with(stand_in, None, recorder)
    views = await replay(manager, mixed_history(60), budget=BUDGET)
    first = posts(recorder)[0]
    assert first["fallback"] == reason and first["provider_calls"] >= 2  # retried (529) or asked again (smaller)
    assert "[CONTEXT SUMMARY]" in views[-1][1]["content"]


async def test_openai_native_in_the_manager() -> None:
    stand_in, recorder = OpenAICompactionStandIn(), EventRecorder()
    manager = manager_with(stand_in, None, recorder, model=OPENAI_MODEL)
    views = await replay(manager, mixed_history(60), budget=BUDGET)
    assert posts(recorder)[0]["fallback"] is None
    assert "[CONTEXT SUMMARY]" in views[-1][1]["content"] and stand_in.rejections == []


async def test_an_artefact_record_reads_back_verbatim_under_its_own_namespace() -> None:
    from amplifier_module_context_summarize.stores import MemoryStore
    from amplifier_module_context_summarize.stores.records import ArtefactRecord, SegmentKey

    text = '{"type":"compaction","content":"caf\\u00e9 \\ud800","signature":"sig"}'  # ASCII JSON, a lone surrogate
    record = ArtefactRecord(ArtefactKey("c3"), "c9|focus:0123", 6, text)
    store = MemoryStore()
    await store.put(record.row(len))
    assert await read(store, ArtefactKey("c3")) == [record]
    assert json.loads((await read(store, ArtefactKey("c3")))[0].text)["content"] == "caf\u00e9 \ud800"
    assert await read(store, SegmentKey("c3")) == [] and await read(store, ArtefactKey("c4")) == []


# --- eval and bench --cost take the native choice -----------------------------------------------------------------


def test_eval_chooses_native_and_its_stand_in() -> None:
    from amplifier_module_context_summarize.evaluation.models import (
        SIMULATED_NATIVE,
        choose_summarizer,
    )
    from amplifier_module_context_summarize.evaluation.models import (
        build_backend as eval_backend,
    )
    from amplifier_module_context_summarize.evaluation.strategies import manager_config

    spec, note = choose_summarizer("native", None, environ={})
    assert (spec.provider, spec.model, note) == ("native", ANTHROPIC_MODEL, None)
    with pytest.raises(ValueError, match="summarizer.api_key_env"):  # the real one needs its key
        eval_backend(spec, environ={})
    stand_in, _ = choose_summarizer(SIMULATED_NATIVE, OPENAI_MODEL)
    backend = eval_backend(stand_in)
    assert backend is not None and backend.name == "native:openai" and backend.model == OPENAI_MODEL
    assert manager_config("summarize", BUDGET, stand_in)["summarizer"]["provider"] == "native"


async def test_bench_cost_native_policy_is_billed_beside_ours() -> None:
    from amplifier_module_context_summarize.benchmark.cost_compare import compare, simulated_session

    result = await compare(
        {"simulation": [simulated_session(60)]}, budgets=[20_000], policies=["summarize"], native=True
    )
    native_rows = [row for row in result.rows if row.policy == "native"]
    assert {row.policy for row in result.rows} >= {"summarize", "native"} and native_rows
    assert all(row.summarizer_input > 0 for row in native_rows)  # its compactions were billed


# --- the view carries the signed block to a provider module that can send it ---------------------------------------

CARRIER = "anthropic:compaction"


class CarrierProvider:
    """provider-anthropic as its ``compaction.py`` carries a block (read at 2bd27a3): ``validate_compacted_context``
    accepts a message whose ``metadata["anthropic:compaction"]`` is ``{"version": 1, "model": <its model>, "block":
    <a complete signed block>}``, and its assembly sends that block first, as the assistant's, with the beta header
    (``extract_checkpoint``, ``add_beta``). The other messages go as text here: the stand-in judges the block."""

    name = "anthropic"

    def __init__(self, stand_in: AnthropicCompactionStandIn, model: str = ANTHROPIC_MODEL) -> None:
        self.default_model = model
        self.client = anthropic.AsyncAnthropic(api_key="k", max_retries=0, http_client=http_client(stand_in, anthropic))

    def signed_block(self, message: dict[str, Any]) -> dict[str, Any] | None:
        state = (message.get("metadata") or {}).get(CARRIER, ...)
        if state is ...:
            return None
        if not isinstance(state, dict) or state.get("version") != 1 or state.get("model") != self.default_model:
            raise ValueError("Native Anthropic context has an incompatible model or format")
        block = state.get("block")
        if not (
            isinstance(block, dict)
            and block.get("type") == "compaction"
            and block.get("content")
            and block.get("signature")
        ):
            raise ValueError("Native Anthropic context requires a complete signed block")
        return dict(block)

    def validate_compacted_context(self, message: dict[str, Any]) -> bool:
        return self.signed_block(message) is not None

    async def send(self, view: list[dict[str, Any]]) -> dict[str, Any]:
        block, messages, seen = None, [], False
        for message in view:
            found = self.signed_block(message)
            if found is not None:
                if block is not None or seen:
                    raise ValueError("Native Anthropic context must precede conversation history")
                block = found
                continue
            if message["role"] == "system":
                continue
            seen = True
            role = "assistant" if message["role"] == "assistant" else "user"
            text = json.dumps(message.get("content"))[:200] or "-"
            if messages and messages[-1]["role"] == role:
                messages[-1]["content"] += "\n" + text
            else:
                messages.append({"role": role, "content": text})
        if block is not None:
            messages.insert(0, {"role": "assistant", "content": [block]})
        body = {"model": self.default_model, "max_tokens": 100, "messages": messages}
        return await post(self.client, "/v1/messages", body, beta=block is not None)


class PlainWriter:
    """A model whose summary the grounding check keeps whole (names only what the span names)."""

    async def complete(self, system: str, prompt: str, max_output_tokens: int) -> Any:
        from amplifier_module_context_summarize.backends.base import Completion

        return Completion(
            "### Goal\nInspect the modules.\n\n### Progress\nRead module_0.py and ran the tests.", 900, 20
        )


async def carried_view(
    provider: Any, stand_in: AnthropicCompactionStandIn, model: str = ANTHROPIC_MODEL, store: Any = None
) -> Any:
    manager = manager_with(stand_in, store, EventRecorder(), model=model)
    await manager.set_messages(mixed_history(60))
    return manager, await manager.get_messages_for_request(BUDGET, provider)


async def test_a_provider_that_carries_the_block_gets_it_first_once_and_byte_exact(tmp_path: Any) -> None:
    stand_in = AnthropicCompactionStandIn(PlainWriter())
    provider = CarrierProvider(stand_in)
    store = SqliteStore(str(tmp_path / "s.db"))
    manager, view = await carried_view(provider, stand_in, store=store)
    [carrier] = [m for m in view if CARRIER in (m.get("metadata") or {})]
    assert carrier["metadata"][CARRIER]["block"] == stand_in.issued[0]
    at = view.index(carrier)
    assert all(m["role"] == "system" for m in view[:at])
    summary = view[at + 1]["content"]
    assert summary.startswith("[CONTEXT SUMMARY]") and "Inspect the modules." not in summary  # said once, by the block
    assert "### Working set" in summary  # what the view restates stays on top
    assert manager.counter.count_messages(view) <= BUDGET
    answer = await provider.send(view)
    assert answer["stop_reason"] == "end_turn" and stand_in.rejections == []
    sent = stand_in.requests[-1][2]["messages"][0]["content"][0]
    assert sent == stand_in.issued[0]
    calls = len(stand_in.requests)
    _, resumed = await carried_view(provider, stand_in, store=SqliteStore(str(tmp_path / "s.db")))
    assert resumed == view and len(stand_in.requests) == calls  # a resume carries the same block, for nothing


async def test_the_readable_summary_stays_for_other_provider_modules_and_models() -> None:
    stand_in = AnthropicCompactionStandIn(PlainWriter())
    _, view = await carried_view(None, stand_in)  # no provider module: the readable view
    assert not any(CARRIER in (m.get("metadata") or {}) for m in view)
    assert "Inspect the modules." in next(m["content"] for m in view if m["role"] == "user")
    other = CarrierProvider(stand_in, model="claude-opus-4-6")  # another model than the block's
    _, view = await carried_view(other, stand_in)
    assert not any(CARRIER in (m.get("metadata") or {}) for m in view)
