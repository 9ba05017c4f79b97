"""Summaries through the session's own Amplifier provider (no extra key, same billing)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from amplifier_core import llm_errors
from amplifier_core.message_models import ChatRequest, Message, ToolSpec

from .base import BackendError, Completion, Fault

if TYPE_CHECKING:
    from .provider_paths import ProviderPaths
    from .registry import SummarizerConfig

logger = logging.getLogger(__name__)

# Most specific first: several of these subclass each other.
_CATEGORIES: tuple[tuple[type[BaseException], Fault], ...] = (
    (llm_errors.ContextLengthError, Fault.INPUT_TOO_LONG),
    (llm_errors.QuotaExceededError, Fault.AUTH),
    (llm_errors.RateLimitError, Fault.RATE_LIMITED),
    (llm_errors.AuthenticationError, Fault.AUTH),
    (llm_errors.ContentFilterError, Fault.REFUSAL),
    (llm_errors.NetworkError, Fault.CONNECTION),
    (llm_errors.StreamError, Fault.CONNECTION),  # a response cut off mid-stream: transient (retryable in taxonomy)
    (llm_errors.LLMTimeoutError, Fault.TIMEOUT),
    (llm_errors.ProviderUnavailableError, Fault.SERVER_ERROR),
    (llm_errors.InvalidRequestError, Fault.BAD_REQUEST),
    (llm_errors.NotFoundError, Fault.BAD_REQUEST),
    (asyncio.TimeoutError, Fault.TIMEOUT),
    (TimeoutError, Fault.TIMEOUT),
    (ConnectionError, Fault.CONNECTION),
)


def classify(exc: BaseException) -> BackendError:
    for kind, category in _CATEGORIES:
        if isinstance(exc, kind):
            return BackendError(category, retry_after=getattr(exc, "retry_after", None))
    return BackendError(Fault.ERROR)


def completion_of(response: Any, tool_calls: int = 0) -> Completion:
    """A provider's ``ChatResponse`` as the summarizer reads it: text, usage, the model that answered."""
    usage = getattr(response, "usage", None)
    return Completion(
        text=response_text(response),
        input_tokens=getattr(usage, "input_tokens", 0) or 0,
        output_tokens=getattr(usage, "output_tokens", 0) or 0,
        model=answering_model(response),
        tool_calls=tool_calls,
    )


def response_text(response: Any) -> str:
    """Join the text blocks of a ChatResponse (typed blocks or plain dicts)."""
    parts = []
    for block in getattr(response, "content", None) or []:
        kind = getattr(block, "type", None) or (block.get("type") if isinstance(block, dict) else None)
        if kind == "text":
            parts.append(getattr(block, "text", None) or (block.get("text", "") if isinstance(block, dict) else ""))
    return "".join(parts).strip()


def tool_call_count(response: Any) -> int:
    """Tool calls in a ChatResponse: its ``tool_calls``, else its ``tool_call`` blocks (typed or plain dicts)."""
    calls = getattr(response, "tool_calls", None)
    if calls:
        return len(calls)
    count = 0
    for block in getattr(response, "content", None) or []:
        kind = getattr(block, "type", None) or (block.get("type") if isinstance(block, dict) else None)
        count += kind in ("tool_call", "tool_use")
    return count


BACKGROUND_METADATA = {"stream": False, "source": "context-summarize"}
"""How the real orchestrators mark their own background calls: the providers then skip ``llm:stream_*``."""
STREAMED_METADATA = {"source": "context-summarize"}
"""The provider's default (streaming) path: the one that works when its non-streaming path is broken."""
BACKGROUND_KWARGS = {"extended_thinking": False, "enable_response_chaining": False, "store": False}
"""No thinking, and no OpenAI response chain: a summary is one self-contained call."""
IN_CONTEXT_KWARGS = {"store": False}
"""A summary asked at the end of the session's prefix leaves thinking as the session's requests have it: Anthropic
drops cached message blocks when the thinking parameters change. Response chaining is left as the session's too:
provider-openai chains reasoning models by default and then sends no reasoning items, while a call that turns it
off re-inserts every earlier turn's encrypted reasoning inline, so its input would part from the session's at the
first turn that reasoned (its README measures 0% of the prefix cached without chaining). ``store`` stays off for
a provider that does not chain (one that does forces it on, as for the session's own requests).
``tool_choice`` is left as loop-basic leaves it
(unset: provider-anthropic omits it, Anthropic's default ``auto``; provider-openai sends ``"auto"``) for the same
reason: Anthropic documents that a ``tool_choice`` change invalidates the cached message blocks, so
``{"type": "none"}`` would turn the whole span into a cache write (1.25x) instead of a read (0.1x). The instruction
forbids a call instead, and an answer that makes one anyway is rejected (``TOOL_CALL``): the compact prompt,
which carries no tools, is asked then."""

PATH_FAULTS = (TypeError, AttributeError)
"""What a provider raises when its code does not match the SDK installed beside it (never a network fault)."""
_SIGNATURES = (
    ("'coroutine' object has no attribute", "'coroutine' object has no attribute ..."),
    ("can't be used in 'await' expression", "... can't be used in 'await' expression"),
)
PIN_ADVICE = (
    "provider-anthropic and the anthropic SDK installed beside it disagree about the non-streaming response: "
    "releases of provider-anthropic that ask for anthropic>=0.96 call parse() without await and need "
    "'anthropic<1'; releases that ask for anthropic>=1 await it and need 'anthropic>=1'. Install the one your "
    "provider-anthropic asks for (pip install 'anthropic<1' for the first), or set summarizer.provider: anthropic "
    "to let this module call the Messages API itself"
)


def path_fault(exc: BaseException) -> BaseException | None:
    """The ``TypeError``/``AttributeError`` behind a provider failure (raised as is, or wrapped by the provider's
    error translation, e.g. into a retryable ``LLMError``), else None."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, PATH_FAULTS):
            return current
        current = current.__cause__ or current.__context__
    text = str(exc)
    return exc if any(signature in text for signature, _ in _SIGNATURES) else None


def describe_fault(fault: BaseException) -> str:
    """The fault's type and, when it is one of the known SDK-mismatch messages, that message's fixed shape
    (never the raw text: it is the provider's, and may quote anything)."""
    text = str(fault)
    shape = next((shown for signature, shown in _SIGNATURES if signature in text), None)
    return f"{type(fault).__name__}: {shape}" if shape else type(fault).__name__


class SessionBackend:
    """Calls ``provider.complete(ChatRequest, **kwargs)`` on the provider of the request, else a mounted one.

    The real providers take the model from ``kwargs["model"]`` (``ChatRequest.model`` is ignored), retry
    on their own, and stream unless the request's metadata says ``stream: False``. A summary asks for the quiet
    non-streaming path first; a provider whose non-streaming path breaks on the SDK installed beside it (see
    ``PIN_ADVICE``) is told once, at WARNING, and asked on its streaming path from then on; with ``paths`` set,
    later processes of the same install remember that and ask there at once (``provider_paths.py``).
    """

    name = "session"
    retries_itself = True

    def __init__(self, coordinator: Any | None, provider_name: str | None = None, model: str | None = None) -> None:
        self._coordinator = coordinator
        self.provider_name = provider_name
        self.configured_model = model
        self.default_model: str | None = None
        """The session provider's own default, learned from it when no model is configured."""
        self.streamed: set[str] = set()
        """Names of providers whose non-streaming path failed: they are asked on their streaming path."""
        self.broken: set[str] = set()
        """Names of providers that failed on both paths (said once; summaries fall back)."""
        self.paths: ProviderPaths | None = None
        """Where the providers known to need streaming are remembered between processes (None: this process
        only, e.g. with the summaries kept in memory)."""
        self.recalled: dict[str, str] = {}
        """Names of providers looked up in ``paths`` already, with their keys (one lookup per process)."""
        self.remembered: set[str] = set()
        """Names of providers on their streaming path because ``paths`` said so (not yet confirmed here)."""

    @property
    def model(self) -> str | None:
        """The model that answers: the configured one (passed as ``kwargs["model"]``), else the provider's default."""
        return self.configured_model or self.default_model

    def learn_default_model(self, provider: Any | None) -> bool:
        """Note the provider's default model; True when it changed (so must the summaries' key)."""
        if self.configured_model or provider is None:
            return False
        try:
            found = getattr(provider, "default_model", None)
        except Exception:
            found = None
        if not isinstance(found, str) or not found or found == self.default_model:
            return False
        self.default_model = found
        return True

    def __repr__(self) -> str:
        return f"SessionBackend(provider_name={self.provider_name!r}, model={self.model!r})"

    def mounted_provider(self) -> Any | None:
        if self._coordinator is None:
            return None
        try:
            providers = self._coordinator.get("providers") or {}
        except Exception:
            return None
        if self.provider_name:
            return providers.get(self.provider_name)
        return next(iter(providers.values()), None)

    async def complete(
        self, system: str, prompt: str, max_output_tokens: int, provider: Any | None = None
    ) -> Completion:
        provider = provider if provider is not None and hasattr(provider, "complete") else self.mounted_provider()
        if provider is None:
            raise BackendError(Fault.NO_PROVIDER)
        response = await self._on_a_working_path(
            provider, lambda stream: self._ask(provider, system, prompt, max_output_tokens, stream)
        )
        return completion_of(response)

    async def _on_a_working_path(self, provider: Any, send: Callable[[bool], Awaitable[Any]]) -> Any:
        """``send(stream)`` on the non-streaming path, then on the streaming path if the provider's non-streaming
        path is broken (said once, at WARNING, and remembered in ``paths``); a provider known to need streaming,
        in this process or a previous one, is asked there at once. A remembered path that fails is forgotten and
        the provider asked as it would be the first time."""
        label = provider_label(provider)
        key = await self._recall(provider, label)
        attempts = [True] if label in self.streamed else [False, True]
        streaming_failed = False
        while attempts:
            stream = attempts.pop(0)
            try:
                response = await send(stream)
            except BackendError:
                raise
            except Exception as exc:
                fault = path_fault(exc)
                if fault is None:
                    raise classify(exc) from None
                if stream and label in self.remembered:  # what a previous process found no longer holds
                    await self._forget(label, key, fault)
                    streaming_failed, attempts = True, [False]
                    continue
                if stream or streaming_failed:
                    raise self._broken(label, fault) from None
                self.streamed.add(label)
                logger.warning(
                    "summaries through provider %r failed on its non-streaming path (%s); asking on its streaming "
                    "path from now on. %s",
                    label,
                    describe_fault(fault),
                    PIN_ADVICE,
                )
                await self._remember(key)
                continue
            self.remembered.discard(label)  # it worked here: confirmed
            return response
        raise BackendError(Fault.ERROR)  # not reached: the streaming path returns or raises

    async def _recall(self, provider: Any, label: str) -> str | None:
        """The provider's key in ``paths`` (looked up once per process); a remembered streaming path is taken."""
        if self.paths is None:
            return None
        if label not in self.recalled:
            paths = self.paths
            key, streams = await asyncio.to_thread(lambda: (k := paths.key(provider), paths.streams(k)))
            self.recalled[label] = key
            if streams and label not in self.streamed:
                self.streamed.add(label)
                self.remembered.add(label)
                logger.debug("provider %r: its streaming path, remembered from a previous process", label)
        return self.recalled[label]

    async def _remember(self, key: str | None) -> None:
        if self.paths is not None and key is not None:
            await asyncio.to_thread(self.paths.remember, key)

    async def _forget(self, label: str, key: str | None, fault: BaseException) -> None:
        self.streamed.discard(label)
        self.remembered.discard(label)
        logger.info(
            "provider %r failed on the streaming path remembered for it (%s); forgotten, asking on its "
            "non-streaming path",
            label,
            describe_fault(fault),
        )
        if self.paths is not None and key is not None:
            await asyncio.to_thread(self.paths.forget, key)

    async def _ask(self, provider: Any, system: str, prompt: str, max_output_tokens: int, streamed: bool) -> Any:
        model = self.configured_model
        request = ChatRequest(
            messages=[Message(role="system", content=system), Message(role="user", content=prompt)],
            max_output_tokens=max_output_tokens,
            model=model,
            metadata=dict(STREAMED_METADATA if streamed else BACKGROUND_METADATA),
        )
        kwargs: dict[str, Any] = dict(BACKGROUND_KWARGS)
        if model:
            kwargs["model"] = model
        return await provider.complete(request, **kwargs)

    def shares_session_cache(self, provider: Any | None) -> bool:
        """True when a summary for a request of ``provider`` is answered by that provider with the session's own
        model (no model configured, or the provider's default): its prompt cache holds the session's prefix."""
        if provider is None or not hasattr(provider, "complete"):
            return False
        if self.provider_name and self.mounted_provider() is not provider:
            return False
        if self.configured_model is None:
            return True
        return self.configured_model == getattr(provider, "default_model", None)

    def accepts(self, messages: list[dict[str, Any]]) -> bool:
        """Whether ``messages`` make an Amplifier request (a view the orchestrator could not have sent, e.g. one in
        a provider's native block shapes, gets the compact prompt instead)."""
        try:
            for message in messages:
                Message(**message)
        except Exception:
            return False
        return True

    async def complete_in_context(
        self, messages: list[dict[str, Any]], max_output_tokens: int, provider: Any | None = None
    ) -> Completion:
        """Self-compaction: ``messages`` (the session's last view, then the instruction) sent as the session sends
        them, with the tool schemas of the mounted tools as the loops build them, so the provider's prompt cache
        reads the prefix. Faults, and a broken non-streaming path, are handled as ``complete`` handles them."""
        if provider is None or not hasattr(provider, "complete"):
            raise BackendError(Fault.NO_PROVIDER)
        tools = self.tool_specs()

        def send(stream: bool) -> Awaitable[Any]:
            request = ChatRequest(
                messages=[Message(**message) for message in messages],
                tools=tools,
                max_output_tokens=max_output_tokens,
                metadata=dict(STREAMED_METADATA if stream else BACKGROUND_METADATA),
            )
            reply: Awaitable[Any] = provider.complete(request, **IN_CONTEXT_KWARGS)  # any provider's coroutine
            return reply

        response = await self._on_a_working_path(provider, send)
        return completion_of(response, tool_calls=tool_call_count(response))

    def tool_specs(self) -> list[ToolSpec] | None:
        """The mounted tools as loop-basic and loop-streaming send them (name, description, input schema, in
        mount order): Anthropic caches the tools first, so other schemas would make every block after them new."""
        try:
            mounted = (self._coordinator.get("tools") if self._coordinator is not None else None) or {}
            specs = [
                ToolSpec(name=tool.name, description=tool.description, parameters=tool.input_schema)
                for tool in mounted.values()
            ]
        except Exception:
            return None
        return specs or None

    def _broken(self, label: str, fault: BaseException) -> BackendError:
        if label not in self.broken:
            self.broken.add(label)
            logger.warning(
                "summaries through provider %r fail on both its paths (%s): a fault of the provider's code, "
                "not of the network; summaries fall back to the extractive summary. %s",
                label,
                describe_fault(fault),
                PIN_ADVICE,
            )
        return BackendError(Fault.ERROR)


def provider_label(provider: Any) -> str:
    """A provider's name for logs and bookkeeping (its ``name``, else its class)."""
    try:
        name = getattr(provider, "name", None)
    except Exception:
        name = None
    return name if isinstance(name, str) and name else type(provider).__name__


def build(
    cfg: SummarizerConfig, coordinator: Any | None, http_client: Any | None, environ: Mapping[str, str]
) -> SessionBackend:
    """Registry builder: no key and no HTTP client, the session's provider does the talking."""
    return SessionBackend(coordinator, cfg.session_provider, cfg.model)


def answering_model(response: Any) -> str | None:
    """The model a response says answered (``model``, or ``metadata["model"]``); the real providers say none."""
    found = getattr(response, "model", None)
    if not isinstance(found, str):
        metadata = getattr(response, "metadata", None)
        found = metadata.get("model") if isinstance(metadata, dict) else None
    return found if isinstance(found, str) and found else None
