"""Which model backends an evaluation uses: the summarizer shared by all strategies, the answerer and the judge.

Every backend built here goes through the cassette when one is given, and when replaying none is
built at all, so a replay needs neither network nor key.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from importlib import import_module

from ..backends import registry
from ..backends.base import Backend
from ..backends.registry import DEFAULT_KEY_ENV, SummarizerConfig
from ..core.extras import installed, key_without_sdk_note
from ..core.redact import redact_url
from .cassette import Cassette, CassetteBackend

SUMMARIZER_CHOICES = ("session", "anthropic", "openai", "native", "extractive", "simulated", "simulated-native")
DIRECT = ("anthropic", "openai")
NATIVE = "native"
SIMULATED = "simulated"
SIMULATED_NATIVE = "simulated-native"
"""The provider's own compaction as ``testing.native_standins`` answers it (through the real SDK), the summaries
written by ``SimulatedLLM``: ``native`` compared with ours offline."""
_OPENAI_PREFIXES = ("gpt", "o1", "o3", "o4", "chatgpt", "text-")


@dataclass(frozen=True)
class ModelSpec:
    provider: str
    """``anthropic``, ``openai``, ``native`` (the model's provider compacts), ``extractive`` (no model at all),
    ``simulated`` (``testing.SimulatedLLM``) or ``simulated-native`` (``native`` against its stand-in)."""
    model: str | None = None
    seed: int | None = None
    """``simulated``: the seed its answers derive from."""
    base_url: str | None = None
    """``openai``: the OpenAI-compatible server (a local llama.cpp, vLLM, Ollama) instead of OpenAI's API."""

    @property
    def label(self) -> str:
        if self.provider in (SIMULATED, SIMULATED_NATIVE):
            name = self.provider if self.provider == SIMULATED else f"{self.provider}:{self.model}"
            return f"{name}(seed={self.seed or 0})"
        name = self.provider if self.model is None else f"{self.provider}:{self.model}"
        return f"{name} at {redact_url(self.base_url)}" if self.base_url else name


def choose_summarizer(
    requested: str | None,
    model: str | None,
    environ: Mapping[str, str] | None = None,
    base_url: str | None = None,
    sdk_installed: Callable[[str], bool] = installed,
) -> tuple[ModelSpec, str | None]:
    """The summarizer spec, and a note for stderr when it was picked for the user.

    ``session`` (the default) means what a session would use; outside a session that is the direct
    backend whose key is in the environment (Anthropic first), else the offline extractive summarizer.
    ``base_url`` (an OpenAI-compatible server, as ``compact --base-url``) means ``openai`` at that server; it
    needs no key. A key whose SDK (an extra) is not installed is passed over, with a note.
    """
    env = os.environ if environ is None else environ
    if base_url:
        if requested not in (None, "session", "openai"):
            raise ValueError(
                f"--base-url names an OpenAI-compatible server: it needs --summarizer openai, not {requested}"
            )
        return replace(resolve(ModelSpec("openai", model)), base_url=base_url), None
    if requested in (None, "session"):
        unusable = []
        for provider in DIRECT:
            if (env.get(DEFAULT_KEY_ENV[provider]) or "").strip():
                if not sdk_installed(provider):  # a key without its SDK: offline, not an error
                    unusable.append(key_without_sdk_note(provider, DEFAULT_KEY_ENV[provider], "eval"))
                    continue
                spec = resolve(ModelSpec(provider, model))
                return spec, f"eval: summarizing with {spec.label} ({DEFAULT_KEY_ENV[provider]} is set)"
        if unusable:
            return ModelSpec("extractive"), unusable[0]
        keys = " / ".join(DEFAULT_KEY_ENV[p] for p in DIRECT)
        return ModelSpec("extractive"), (
            f"eval: no {keys} in the environment: summarizing with the offline extractive summarizer"
        )
    if requested == "extractive":
        return ModelSpec("extractive"), None
    if requested == SIMULATED:
        return ModelSpec(SIMULATED, "simulated-llm", seed=0), None
    if requested in (NATIVE, SIMULATED_NATIVE):
        return ModelSpec(requested, SummarizerConfig(provider=NATIVE, model=model).effective_model, seed=0), None
    if requested in DIRECT:
        return resolve(ModelSpec(requested, model)), None
    raise ValueError(f"--summarizer must be one of {', '.join(SUMMARIZER_CHOICES)}, got {requested!r}")


def parse_model(value: str) -> ModelSpec:
    """``provider:model``, or a bare model name whose provider is clear from its name."""
    provider, sep, model = value.partition(":")
    if sep and provider in DIRECT and model:
        return ModelSpec(provider, model)
    lowered = value.lower()
    if lowered.startswith("claude"):
        return ModelSpec("anthropic", value)
    if lowered.startswith(_OPENAI_PREFIXES):
        return ModelSpec("openai", value)
    raise ValueError(f"cannot tell the provider of model {value!r}: write it as anthropic:MODEL or openai:MODEL")


def resolve(spec: ModelSpec) -> ModelSpec:
    """Fill in the provider's default model, so cassette keys name the model really used."""
    if spec.provider not in DIRECT:
        return spec
    model = SummarizerConfig(provider=spec.provider, model=spec.model).effective_model
    return replace(spec, model=model)


def build_backend(
    spec: ModelSpec,
    cassette: Cassette | None = None,
    environ: Mapping[str, str] | None = None,
    latency_ms: float = 0.0,
) -> Backend | None:
    """A backend for ``spec`` (None for extractive); raises ``ValueError`` naming a missing key.

    ``simulated`` is never taped (it is deterministic from its seed and needs no network); ``latency_ms`` is its
    mean answer time (real sleeps: leave it 0 unless timing matters).
    """
    if spec.provider == SIMULATED:
        from ..testing.simulated_llm import SimulatedLLM

        return SimulatedLLM(spec.seed or 0, model=spec.model or "simulated-llm", latency_s=max(latency_ms, 0) / 1000)
    if spec.provider == SIMULATED_NATIVE:
        return simulated_native(spec)
    if spec.provider not in (*DIRECT, NATIVE):
        return None
    inner: Backend | None = None
    if cassette is None or cassette.mode == "record":
        config = SummarizerConfig(provider=spec.provider, model=spec.model, base_url=spec.base_url)
        inner = registry.build_backend(config, environ=environ)
    if cassette is None:
        return inner
    return CassetteBackend(cassette, inner, spec.provider, spec.model)


def simulated_native(spec: ModelSpec) -> Backend:
    """``native`` as it runs, through the real SDK, against the stand-in of the model's provider (no network, no
    key: the stand-in takes any), its summaries written by ``SimulatedLLM`` from ``spec.seed``."""
    from ..backends.native_wire import family_of
    from ..testing.native_standins import AnthropicCompactionStandIn, OpenAICompactionStandIn, http_client
    from ..testing.simulated_llm import SimulatedLLM

    model = spec.model or SummarizerConfig(provider=NATIVE).effective_model or ""
    family = family_of(model)
    writer = SimulatedLLM(spec.seed or 0, model=model)
    stand_in = AnthropicCompactionStandIn(writer) if family == "anthropic" else OpenAICompactionStandIn(writer)
    client = http_client(stand_in, import_module(family))
    config = SummarizerConfig(provider=NATIVE, model=model)
    backend = registry.build_backend(config, http_client=client, environ={DEFAULT_KEY_ENV[family]: "stand-in"})
    assert backend is not None
    return backend
