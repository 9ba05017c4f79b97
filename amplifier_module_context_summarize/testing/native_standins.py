"""Stand-ins for the providers' own compaction, at the HTTP level: the real SDKs talk to them.

``AnthropicCompactionStandIn`` answers ``POST /v1/messages`` as Anthropic's on-demand compaction (beta
``compact-2026-09-04``) does, and ``OpenAICompactionStandIn`` answers ``POST /v1/responses/compact`` and
``POST /v1/responses`` as OpenAI's Responses API does. Each refuses, with the status and error body the real API
uses, what the real API refuses (rules read from the SDKs' types and the providers' compaction docs, see
docs/native-compaction.md):

* Anthropic: the beta header on every request that sends ``compaction`` or carries a ``compaction`` block;
  ``compaction`` is ``{"type": "summarize", "instructions"?}``, instructions at most 16,384 characters, never with
  ``context_management`` or ``stop_sequences``; a ``compaction`` block only as the first block of the first message,
  exactly once, and byte-exact (content, signature and every other field as issued); no tool call left unanswered
  (the last turn's included); a model that offers compaction.
* OpenAI: the compact body's known fields only; input items of known shapes; a compaction item only as issued
  (``type``, ``id``, ``encrypted_content``); no function call left unanswered. The compacted output is every user
  message, then one compaction item (``CompactedResponse``).

Their summaries are written by ``SimulatedLLM`` from the span the request carries, so they read like a model's and
fail like one (empty answers, refusals). ``mode`` (or ``script``, one mode per compaction request, then ``mode``)
forces the failures the docs name: ``unavailable`` (Anthropic's 529, OpenAI's 503), ``empty`` (200 without a block
or item: ``max_tokens``), ``tool_use`` (a tool call instead), ``null_content`` (a block whose ``content`` is null),
``bloated`` (a summary larger than its span).

``http_client(stand_in, sdk)`` gives an ``AsyncClient`` of the library the installed SDK sends with (``httpx`` or
``httpx2``) whose transport is the stand-in, to inject as ``http_client``.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
from abc import ABC, abstractmethod
from collections.abc import Mapping
from types import ModuleType
from typing import Any, Protocol

from ..backends.base import BackendError, Completion
from ..backends.native_wire import ANTHROPIC_BETA, INSTRUCTIONS_MAX_CHARS
from .simulated_llm import REFUSAL_TEXT, SimulatedLLM

__all__ = [
    "ANTHROPIC_COMPACTION_MODELS",
    "MODES",
    "AnthropicCompactionStandIn",
    "OpenAICompactionStandIn",
    "StandInAnswer",
    "Writer",
    "http_client",
]

ANTHROPIC_COMPACTION_MODELS = frozenset(
    {"claude-opus-4-6", "claude-opus-4-7", "claude-sonnet-4-6", "claude-mythos-preview"}
)
"""The models Anthropic's compaction page lists."""
MODES = ("ok", "unavailable", "empty", "tool_use", "null_content", "bloated")
_KEY = b"stand-in signing key"

StandInAnswer = tuple[int, dict[str, str], bytes]
"""(status, headers, body) of one answer."""


class Writer(Protocol):
    """What writes a stand-in's summaries: ``SimulatedLLM`` by default, or any backend-like writer (a test's)."""

    async def complete(self, system: str, prompt: str, max_output_tokens: int) -> Completion: ...


def _json(status: int, body: object) -> StandInAnswer:
    return status, {"content-type": "application/json"}, json.dumps(body).encode()


def _sign(*parts: str) -> str:
    return hmac.new(_KEY, "\x00".join(parts).encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()


class _StandIn(ABC):
    """What both stand-ins share: the writer, the modes, what was asked."""

    def __init__(self, writer: Writer | None = None, *, mode: str = "ok", script: list[str] | None = None):
        for chosen in [mode, *(script or [])]:
            if chosen not in MODES:
                raise ValueError(f"mode must be one of {', '.join(MODES)}")
        self.writer: Writer = writer or SimulatedLLM(0)
        self.mode = mode
        self.script = list(script or [])
        self.requests: list[tuple[str, dict[str, str], Any]] = []
        """Every request as (path, headers lower-cased, JSON body)."""
        self.rejections: list[str] = []
        """The message of every request refused, in order."""
        self._ids = itertools.count(1)

    def next_mode(self) -> str:
        return self.script.pop(0) if self.script else self.mode

    async def handle(self, method: str, path: str, headers: Mapping[str, str], content: bytes) -> StandInAnswer:
        lowered = {k.lower(): v for k, v in headers.items()}
        try:
            body = json.loads(content or b"null")
        except ValueError:
            return self.invalid("the request body is not JSON")
        self.requests.append((path, lowered, body))
        if method != "POST" or not isinstance(body, dict):
            return self.invalid("expected a JSON object POSTed")
        return await self.answer(path, lowered, body)

    @abstractmethod
    async def answer(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> StandInAnswer:
        """The answer to a well-formed JSON request."""

    @abstractmethod
    def invalid(self, message: str) -> StandInAnswer:
        """A refusal as the provider words it (status, error body), recorded in ``rejections``."""

    async def write(self, system: str, prompt: str, max_tokens: int) -> Completion:
        """The writer's summary; its empty answers and refusals come back as such (the text says which)."""
        try:
            return await self.writer.complete(system, prompt, max_tokens)
        except BackendError:
            return Completion("")


class AnthropicCompactionStandIn(_StandIn):
    """Anthropic's Messages API for on-demand compaction, and for the request that sends its block back."""

    def __init__(
        self,
        writer: Writer | None = None,
        *,
        mode: str = "ok",
        script: list[str] | None = None,
        models: frozenset[str] = ANTHROPIC_COMPACTION_MODELS,
    ) -> None:
        super().__init__(writer, mode=mode, script=script)
        self.models = models
        self.issued: list[dict[str, Any]] = []
        """Every compaction block answered, as sent."""

    def invalid(self, message: str) -> StandInAnswer:
        self.rejections.append(message)
        return _json(400, {"type": "error", "error": {"type": "invalid_request_error", "message": message}})

    async def answer(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> StandInAnswer:
        if path != "/v1/messages":
            return _json(404, {"type": "error", "error": {"type": "not_found_error", "message": "Not found"}})
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
            return self.invalid("messages: at least one message is required")
        if not isinstance(body.get("max_tokens"), int) or isinstance(body.get("max_tokens"), bool):
            return self.invalid("max_tokens: Field required")
        compaction = body.get("compaction")
        carried = [(i, j, b) for i, m in enumerate(messages) for j, b in enumerate(_blocks(m)) if _is_compaction(b)]
        betas = {v.strip() for v in headers.get("anthropic-beta", "").split(",")}
        if (compaction is not None or carried) and ANTHROPIC_BETA not in betas:
            return self.invalid(f"compaction requires the anthropic-beta header {ANTHROPIC_BETA}")
        problem = self._carried_problem(carried) or _unanswered_tool_use(messages)
        if problem:
            return self.invalid(problem)
        if compaction is None:
            return await self._reply(body)
        problem = self._compaction_problem(body, compaction)
        if problem:
            return self.invalid(problem)
        return await self._compact(body, compaction)

    def _carried_problem(self, carried: list[tuple[int, int, dict[str, Any]]]) -> str | None:
        if len(carried) > 1:
            return "messages: at most one compaction block may be sent"
        if carried and carried[0][:2] != (0, 0):
            return "messages: a compaction block must be the first block of the first message"
        if carried and carried[0][2] not in self.issued:
            return "messages.0.content.0: invalid compaction block (not byte-exact as returned, or its signature)"
        return None

    def _compaction_problem(self, body: dict[str, Any], compaction: object) -> str | None:
        if body.get("model") not in self.models:
            return "compaction is not supported on this model"
        if not isinstance(compaction, dict) or compaction.get("type") != "summarize":
            return "compaction.type: Input should be 'summarize'"
        if set(compaction) - {"type", "instructions"}:
            return "compaction: Extra inputs are not permitted"
        text = compaction.get("instructions")
        if text is not None and not isinstance(text, str):
            return "compaction.instructions: Input should be a valid string"
        if isinstance(text, str) and len(text) > INSTRUCTIONS_MAX_CHARS:
            return f"compaction.instructions: String should have at most {INSTRUCTIONS_MAX_CHARS} characters"
        if "context_management" in body:
            return "compaction: cannot be combined with context_management"
        if "stop_sequences" in body:
            return "compaction: stop_sequences are not accepted on a compaction request"
        return None

    async def _compact(self, body: dict[str, Any], compaction: dict[str, Any]) -> StandInAnswer:
        mode = self.next_mode()
        if mode == "unavailable":
            error = {"type": "compaction_unavailable", "message": "Compaction is temporarily unavailable."}
            return _json(529, {"type": "error", "error": error})
        prompt = _conversation_text(body["messages"])
        written = await self.write(compaction.get("instructions") or "", prompt, body["max_tokens"])
        usage = {
            "input_tokens": 0,
            "output_tokens": 0,
            "iterations": [
                {
                    "type": "compaction",
                    "input_tokens": written.input_tokens,
                    "output_tokens": written.output_tokens,
                    "cache_read_input_tokens": 0,
                    "cache_creation_input_tokens": 0,
                }
            ],
        }
        message: dict[str, Any] = {
            "id": f"msg_standin_{next(self._ids)}",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "stop_sequence": None,
            "usage": usage,
        }
        if mode == "tool_use":
            tool = {"type": "tool_use", "id": "toolu_standin", "name": "bash", "input": {"command": "ls"}}
            return _json(200, {**message, "content": [tool], "stop_reason": "tool_use"})
        if mode == "empty" or not written.text:
            return _json(200, {**message, "content": [], "stop_reason": "max_tokens"})
        if written.text == REFUSAL_TEXT:
            return _json(200, {**message, "content": [], "stop_reason": "refusal"})
        text = written.text if mode != "bloated" else (prompt + "\n") * 2
        block: dict[str, Any] = {"type": "compaction", "content": None if mode == "null_content" else text}
        block["signature"] = _sign(str(block["content"]), body["model"])
        self.issued.append(block)
        return _json(200, {**message, "content": [block], "stop_reason": "compaction"})

    async def _reply(self, body: dict[str, Any]) -> StandInAnswer:
        """A normal turn (a later request, the block sent back first): a short text answer."""
        text = {"type": "text", "text": "Continuing from the compacted context."}
        usage = {"input_tokens": 10, "output_tokens": 6}
        return _json(
            200,
            {
                "id": f"msg_standin_{next(self._ids)}",
                "type": "message",
                "role": "assistant",
                "model": body.get("model"),
                "content": [text],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": usage,
            },
        )


class OpenAICompactionStandIn(_StandIn):
    """OpenAI's ``responses/compact`` and the ``responses`` request that carries its compaction item."""

    _COMPACT_FIELDS = frozenset({"model", "input", "instructions", "previous_response_id", "prompt_cache_key"})

    def __init__(self, writer: Writer | None = None, *, mode: str = "ok", script: list[str] | None = None):
        super().__init__(writer, mode=mode, script=script)
        self.issued: dict[str, dict[str, Any]] = {}
        """Every compaction item answered, by its id."""
        self._summaries: dict[str, str] = {}

    def invalid(self, message: str, status: int = 400) -> StandInAnswer:
        self.rejections.append(message)
        error = {"message": message, "type": "invalid_request_error", "param": None, "code": None}
        return _json(status, {"error": error})

    async def answer(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> StandInAnswer:
        items = body.get("input")
        if not isinstance(body.get("model"), str) or not body["model"]:
            return self.invalid("Missing required parameter: 'model'.")
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            return self.invalid("Invalid type for 'input': expected an array of input items.")
        problem = self._input_problem(items)
        if problem:
            return self.invalid(problem)
        if path == "/v1/responses/compact":
            unknown = set(body) - self._COMPACT_FIELDS
            if unknown:
                return self.invalid(f"Unknown parameter: '{sorted(unknown)[0]}'.")
            return await self._compact(body, items)
        if path == "/v1/responses":
            return await self._respond(body, items)
        return self.invalid("Not found", 404)

    def _input_problem(self, items: list[dict[str, Any]]) -> str | None:
        calls: set[str] = set()
        for n, item in enumerate(items):
            kind = item.get("type", "message")
            if kind == "message":
                if item.get("role") not in ("user", "assistant", "system", "developer"):
                    return f"Invalid value for 'input[{n}].role'."
                if not isinstance(item.get("content"), str | list):
                    return f"Invalid type for 'input[{n}].content'."
            elif kind == "compaction":
                issued = self.issued.get(str(item.get("id")))
                if issued is None or {k: v for k, v in item.items()} != issued:
                    return f"Invalid 'input[{n}].encrypted_content': not a compaction item this API returned."
            elif kind == "function_call":
                calls.add(str(item.get("call_id")))
            elif kind == "function_call_output":
                calls.discard(str(item.get("call_id")))
            else:
                return f"Invalid value for 'input[{n}].type'."
        if calls:
            return f"No tool output found for function call {sorted(calls)[0]}."
        return None

    async def _compact(self, body: dict[str, Any], items: list[dict[str, Any]]) -> StandInAnswer:
        mode = self.next_mode()
        if mode == "unavailable":
            return self.invalid("The server is temporarily unable to compact. Please retry.", 503)
        spoken = [i for i in items if i.get("type", "message") == "message" and i.get("role") != "user"]
        written = await self.write(str(body.get("instructions") or ""), _conversation_text(spoken), 4096)
        users = [
            {
                "type": "message",
                "id": f"msg_standin_{next(self._ids)}",
                "role": "user",
                "status": "completed",
                "content": [{"type": "input_text", "text": _text_of(i.get("content"))}],
            }
            for i in items
            if i.get("type", "message") == "message" and i.get("role") == "user"
        ]
        output: list[dict[str, Any]] = list(users)
        if mode != "empty":
            item_id = f"cmp_standin_{next(self._ids)}"
            item = {"type": "compaction", "id": item_id, "encrypted_content": "gAAAAB" + _sign(item_id, written.text)}
            self.issued[item_id] = item
            summary = written.text if mode != "bloated" else _conversation_text(spoken) * 2
            self._summaries[item_id] = "" if mode == "null_content" else summary
            output.append(item)
        body_out = {
            "id": f"resp_cmp_{next(self._ids)}",
            "object": "response.compaction",
            "created_at": 1_767_225_600,
            "output": output,
            "usage": _usage(written.input_tokens, written.output_tokens),
        }
        if mode == "tool_use":
            self.script.insert(0, "tool_use")  # the restating request answers with a tool call
        return _json(200, body_out)

    async def _respond(self, body: dict[str, Any], items: list[dict[str, Any]]) -> StandInAnswer:
        mode = self.next_mode() if self.script else "ok"
        held = [self._summaries[str(i["id"])] for i in items if i.get("type") == "compaction"]
        text = "\n\n".join(held)
        out: dict[str, Any]
        if mode == "tool_use":
            out = {
                "type": "function_call",
                "id": "fc_standin",
                "call_id": "call_standin",
                "name": "bash",
                "arguments": "{}",
                "status": "completed",
            }
        else:
            out = {
                "type": "message",
                "id": f"msg_standin_{next(self._ids)}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        tokens = len(text) // 4  # the stand-in's own estimate: the module's tokenizer counts only the module's work
        return _json(
            200,
            {
                "id": f"resp_standin_{next(self._ids)}",
                "object": "response",
                "created_at": 1_767_225_600,
                "status": "completed",
                "error": None,
                "incomplete_details": None,
                "instructions": body.get("instructions"),
                "metadata": {},
                "model": body["model"],
                "output": [out],
                "parallel_tool_calls": True,
                "temperature": 1.0,
                "tool_choice": "auto",
                "tools": [],
                "top_p": 1.0,
                "usage": _usage(sum(len(json.dumps(i)) // 4 for i in items), tokens),
            },
        )


def _usage(input_tokens: int, output_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input_tokens + output_tokens,
    }


def _blocks(message: dict[str, Any]) -> list[Any]:
    content = message.get("content")
    return content if isinstance(content, list) else []


def _is_compaction(block: object) -> bool:
    return isinstance(block, dict) and block.get("type") == "compaction"


def _unanswered_tool_use(messages: list[dict[str, Any]]) -> str | None:
    """A ``tool_use`` whose result is not in the next message (the last turn's too) is refused, as the API does."""
    for n, message in enumerate(messages):
        ids = {b.get("id") for b in _blocks(message) if isinstance(b, dict) and b.get("type") == "tool_use"}
        if not ids:
            continue
        following = messages[n + 1] if n + 1 < len(messages) else {}
        answered = {b.get("tool_use_id") for b in _blocks(following) if isinstance(b, dict)}
        if ids - answered:
            return f"messages.{n}: tool_use ids were found without tool_result blocks immediately after"
    return None


def _text_of(content: object) -> str:
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "\n".join(str(p.get("text", "")) for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str))


def _conversation_text(messages: list[dict[str, Any]]) -> str:
    return "\n\n".join(_text_of(m.get("content")) for m in messages if not _is_compaction(m))


def http_client(stand_in: _StandIn, sdk: ModuleType) -> Any:
    """An ``AsyncClient`` of the library ``sdk`` (the anthropic or openai module) sends with, answered by
    ``stand_in``: inject it as the SDK client's ``http_client``."""
    library = _library_of(sdk)

    async def handler(request: Any) -> Any:
        status, headers, body = await stand_in.handle(
            request.method, request.url.path, dict(request.headers), await request.aread()
        )
        return library.Response(status, headers=headers, content=body)

    return library.AsyncClient(transport=library.MockTransport(handler))


def _library_of(sdk: ModuleType) -> ModuleType:
    import importlib

    for name in ("httpx2", "httpx"):  # httpx2: only the newer SDK generation installs it
        try:
            library = importlib.import_module(name)
        except ImportError:
            continue
        if issubclass(sdk.DefaultAsyncHttpxClient, library.AsyncClient):
            return library
    raise TypeError(f"{sdk.__name__}.DefaultAsyncHttpxClient is neither an httpx nor an httpx2 client")
