"""The session's summary key (``C0``, ``cache.keys.fingerprint``) as the summarizer's model changes under it: a
summarizer writing with the session provider's default model learns it from the first request that names one."""

from __future__ import annotations

from typing import Any

from ...backends.base import LearnsDefaultModel
from ...config import Config
from ...stores import Scoped, SummaryStore
from ...summarizer.span import SpanSummarizer
from ..cache.keys import fingerprint
from ..view.masking import MaskSettings


class SessionKey:
    """The fingerprint summaries are keyed and a shared store is scoped by; ``learned`` says when it may change."""

    def __init__(
        self,
        summarizer: SpanSummarizer,
        config: Config,
        mask_settings: MaskSettings | None,
        store: SummaryStore,
        spill_key: list[Any] | None = None,
    ) -> None:
        self.summarizer, self.config, self.mask_settings, self.store = summarizer, config, mask_settings, store
        self.spill_key = spill_key
        """What spilling changes in the text a summarizer reads (``spill.Spiller.key``), fixed for the session."""
        backend = summarizer.backend
        self._learner = backend if isinstance(backend, LearnsDefaultModel) else None
        """Asked once: a runtime protocol check costs microseconds, and every request asks whether it learns."""
        self.fingerprint = fingerprint(summarizer, config, mask_settings, spill_key)
        self.scope()

    def learned(self, provider: Any | None) -> bool:
        """The summarizer writes with the session provider's default model and has just learned a new one (the
        usual request learns nothing: no hashing, no await)."""
        learner = self._learner
        return learner is not None and bool(learner.learn_default_model(provider))

    def renewed(self) -> str | None:
        """The fingerprint now, when it differs from the one in use (None: unchanged)."""
        now = fingerprint(self.summarizer, self.config, self.mask_settings, self.spill_key)
        return None if now == self.fingerprint else now

    def adopt(self, fingerprint: str) -> None:
        self.fingerprint = fingerprint
        self.scope()

    def scope(self) -> None:
        """A shared store (Redis) files summaries under the fingerprint, so one summarizer's can be found or dropped."""
        if isinstance(self.store, Scoped):
            self.store.scope(self.fingerprint)
