"""provider-anthropic as it behaves beside each generation of the anthropic SDK (read from its public source).

provider-anthropic streams (``client.messages.stream(...)`` then ``get_final_message()``) unless the request's
metadata says ``stream: False``; then it calls ``client.messages.with_raw_response.create(...)`` and parses the
raw response. That parse is where releases and SDKs disagree: on anthropic 0.x ``parse()`` returns the
``Message``, on anthropic >= 1 it is a coroutine.

* ``UnawaitedParseProvider``: a release that asks for ``anthropic>=0.96`` (calls ``parse()`` without ``await``)
  on anthropic >= 1. The coroutine is taken for the message; reading ``response.model`` after the call raises
  ``AttributeError: 'coroutine' object has no attribute 'model'``, out of ``complete``, untranslated.
* ``AwaitedParseProvider``: a release that asks for ``anthropic>=1`` (awaits ``parse()``) on anthropic < 1.
  ``await`` on the ``Message`` raises ``TypeError: object Message can't be used in 'await' expression``; the
  provider's catch-all turns it into a retryable ``LLMError`` (chained ``from`` the TypeError), retries it
  ``retries`` times and raises it.

Both stream correctly: the streaming path emits ``llm:stream_block_*`` on the hooks they are given and returns
the complete ``ChatResponse``. ``stream_calls`` and ``quiet_calls`` count the requests each path took.
"""

from __future__ import annotations

from typing import Any

from amplifier_core import llm_errors
from amplifier_core.message_models import ChatRequest, ChatResponse, TextBlock, Usage

__all__ = ["AwaitedParseProvider", "UnawaitedParseProvider"]


class _Message:
    """What the SDK's parse yields: the fields the provider reads."""

    def __init__(self, text: str) -> None:
        self.model = "claude-sonnet-4-5"
        self.text = text


class _RawResponse:
    def __init__(self, text: str, parse_is_coroutine: bool) -> None:
        self._text = text
        self._parse_is_coroutine = parse_is_coroutine

    def parse(self) -> Any:
        if self._parse_is_coroutine:
            return self._parse_later()
        return _Message(self._text)

    async def _parse_later(self) -> _Message:
        return _Message(self._text)


class _SdkPathProvider:
    name = "anthropic"
    parse_is_coroutine = False

    def __init__(self, hooks: Any | None = None, *, retries: int = 2, reply: str = "### Progress\nSummarized.") -> None:
        self.hooks = hooks
        self.retries = retries
        self.reply = reply
        self.default_model = "claude-sonnet-4-5"
        self.stream_calls = 0
        self.quiet_calls = 0

    async def complete(self, request: ChatRequest, **kwargs: Any) -> ChatResponse:
        metadata = request.metadata if isinstance(request.metadata, dict) else {}
        if metadata.get("stream") is False:
            self.quiet_calls += 1
            return await self._non_streaming()
        self.stream_calls += 1
        if self.hooks is not None:
            await self.hooks.emit("llm:stream_block_start", {"request_id": "r", "block_index": 0, "block_type": "text"})
            await self.hooks.emit("llm:stream_block_delta", {"request_id": "r", "block_index": 0, "text": self.reply})
            await self.hooks.emit("llm:stream_block_end", {"request_id": "r", "block_index": 0, "block_type": "text"})
        return self._chat_response(_Message(self.reply))

    async def _non_streaming(self) -> ChatResponse:
        raise NotImplementedError

    def _chat_response(self, message: Any) -> ChatResponse:
        usage = Usage(input_tokens=100, output_tokens=20, total_tokens=120)
        return ChatResponse(content=[TextBlock(text=message.text)], usage=usage)


class UnawaitedParseProvider(_SdkPathProvider):
    """provider-anthropic asking ``anthropic>=0.96``, on anthropic >= 1 (see the module docstring)."""

    parse_is_coroutine = True

    async def _non_streaming(self) -> ChatResponse:
        response = _RawResponse(self.reply, self.parse_is_coroutine).parse()  # no await, as the release does
        try:
            model = response.model  # the provider's own log line after the call: AttributeError on a coroutine
        finally:
            if hasattr(response, "close"):
                response.close()  # the real one leaves it to warn "never awaited"; a test needn't
        return self._chat_response(_Message(model))


class AwaitedParseProvider(_SdkPathProvider):
    """provider-anthropic asking ``anthropic>=1``, on anthropic < 1 (see the module docstring)."""

    parse_is_coroutine = False

    async def _non_streaming(self) -> ChatResponse:
        for attempt in range(self.retries + 1):
            try:
                message = await _RawResponse(self.reply, self.parse_is_coroutine).parse()  # type: ignore[misc]
            except Exception as exc:  # the provider's catch-all: any exception becomes a retryable LLMError
                error = llm_errors.LLMError(str(exc), provider=self.name, retryable=True)
                error.__cause__ = exc
                if attempt == self.retries:
                    raise error from exc
                continue
            return self._chat_response(message)
        raise AssertionError("unreachable")
