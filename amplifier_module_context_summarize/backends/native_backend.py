"""``summarizer.provider: native``: the span's summary written by the provider's own compaction.

The whole pipeline stays this module's: the span the summarizer would send (its transcript prompt) goes to
Anthropic's on-demand compaction or OpenAI's ``responses/compact``, the readable content comes back as the
summary text, and everything the view restates after a summary (working set, pins, injected context, recall
handles) stays on top. The provider's artefact (the signed block, the encrypted item) rides along as
``Completion.artefact`` and is stored beside the summary. Any answer that is no usable summary raises a typed
fault (``native_wire``), so the summarizer's ladder writes this module's own summary and the event names why.

Requests go through the SDK's raw ``post`` with the body as JSON and the answer read as text (``cast_to=str``):
every supported SDK generation sends them (anthropic 0.40 and openai 1.40 know no compaction types), and the
artefact is parsed from the provider's own bytes. The SDK never retries (``retrying.py`` does).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from ..core.extras import import_for
from ..core.redact import redact_url
from . import native_wire as wire
from .base import BackendError, Completion, Fault
from .keys import missing_key, read_api_key

if TYPE_CHECKING:
    from .registry import SummarizerConfig


class _Transport(Protocol):
    async def post(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> str: ...

    async def close(self) -> None: ...


class _SdkTransport:
    """One SDK client, used only to send JSON and read the answer's text; SDK errors become fault categories."""

    def __init__(self, family: str, api_key: str, base_url: str | None, timeout_s: float, http_client: Any) -> None:
        sdk_module = "anthropic_backend" if family == "anthropic" else "openai_backend"
        self._errors = import_for(f"{__package__}.{sdk_module}", f"summarizer.provider 'native' ({family})")
        sdk = import_for(family, f"summarizer.provider 'native' ({family})")
        self._sdk_error: type[BaseException] = sdk.AnthropicError if family == "anthropic" else sdk.OpenAIError
        client_class = sdk.AsyncAnthropic if family == "anthropic" else sdk.AsyncOpenAI
        if http_client is None and family == "openai":  # openai 1.40-1.55.2's own default fails on httpx 0.28
            http_client = sdk.DefaultAsyncHttpxClient(timeout=timeout_s)
        self._client = client_class(
            api_key=api_key, base_url=base_url, timeout=timeout_s, max_retries=0, http_client=http_client
        )

    async def post(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> str:
        try:
            text = await self._client.post(path, cast_to=str, body=body, options={"headers": headers})
        except self._sdk_error as exc:
            raise self._errors.to_backend_error(exc) from None
        return str(text)

    async def close(self) -> None:
        await self._client.close()


class NativeBackend:
    """One provider compaction per ``complete`` (two requests on OpenAI: compact, then read its summary back).

    The key lives only inside the SDK client, so neither ``repr`` nor any error can show it.
    """

    def __init__(
        self,
        family: str,
        model: str,
        transport: _Transport,
        *,
        base_url: str | None = None,
        owns_transport: bool = True,
    ) -> None:
        if family not in wire.FAMILIES:
            raise ValueError(f"summarizer.provider 'native': no compaction of family {family!r}")
        self.family = family
        self.name = f"native:{family}"
        self.model: str | None = model
        self.base_url = base_url
        self._transport = transport
        self._owns_transport = owns_transport

    def __repr__(self) -> str:
        return f"NativeBackend(family={self.family!r}, model={self.model!r}, base_url={redact_url(self.base_url)!r})"

    async def complete(
        self, system: str, prompt: str, max_output_tokens: int, provider: Any | None = None
    ) -> Completion:
        """A compaction without guidance (the summarizer calls ``complete_guided``)."""
        return await self.complete_guided(system, prompt, max_output_tokens, "", provider)

    async def complete_guided(
        self, system: str, prompt: str, max_output_tokens: int, guidance: str, provider: Any | None = None
    ) -> Completion:
        """One compaction whose ``instructions`` lead with ``guidance`` (the prompt's own guidance section)."""
        model = self.model or ""
        if self.family == "anthropic":
            body = wire.anthropic_request(model, system, prompt, guidance, max_output_tokens)
            raw = await self._transport.post("/v1/messages", body, {"anthropic-beta": wire.ANTHROPIC_BETA})
            return wire.anthropic_answer(raw)
        compact = wire.openai_compact_request(model, system, prompt, guidance)
        raw = await self._transport.post("/responses/compact", compact, {})
        window, item, usage = wire.openai_compacted(raw)
        restate = wire.openai_restate_request(model, window, system, guidance, max_output_tokens)
        try:
            answer = await self._transport.post("/responses", restate, {})
        except BackendError as exc:
            if exc.fault is Fault.INPUT_TOO_LONG:  # the compacted window did not fit: the compaction did not help
                raise BackendError(Fault.NOT_SMALLER) from None
            raise
        return wire.openai_answer(answer, item, usage)

    async def aclose(self) -> None:
        """Release the SDK's connection pool (an injected ``http_client`` is closed by its owner)."""
        if self._owns_transport:
            await self._transport.close()


def build(
    cfg: SummarizerConfig, coordinator: Any | None, http_client: Any | None, environ: Mapping[str, str]
) -> NativeBackend:
    """Registry builder: the family is the model's (``native_wire.family_of``); its key is required."""
    model = cfg.effective_model or wire.DEFAULT_MODEL
    family = wire.family_of(model)
    api_key = read_api_key(cfg, environ)
    if not api_key:
        raise missing_key(cfg)
    transport = _SdkTransport(family, api_key, cfg.base_url, cfg.timeout_s, http_client)
    return NativeBackend(family, model, transport, base_url=cfg.base_url, owns_transport=http_client is None)
