"""Record and replay every model call of an evaluation, so a run can be repeated with no network and no key.

A call is keyed by a hash of (system, prompt, max_output_tokens, backend name, model). Recording keeps
the first successful completion of each key (a later identical call is served from the cassette, so
the run stays consistent with its own replay); a call that only ever failed is kept as its failure
category so replay takes the same fallback. Replaying never calls the wrapped backend.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from ..backends.base import Backend, BackendError, Completion
from ..core.messages import canonical_json, content_hash
from ..readers.session_io import UnreadableFile, parse_json, read_text

FORMAT_VERSION = 1


class CassetteMiss(BaseException):
    """A replayed call the cassette does not hold.

    A ``BaseException`` on purpose: the summarizer turns ordinary exceptions into an extractive
    fallback, which would hide the miss and silently change the scores.
    """

    def __init__(self, key: str, backend: str, model: str | None, path: Path | None) -> None:
        super().__init__(
            f"cassette {path or '(memory)'} has no entry for key {key} (backend {backend}, model {model}); "
            "record it again with --record"
        )
        self.key = key


class ReplayedFailure(BackendError):
    """A failure recorded as final: replay must take the fallback at once, without retry waits."""

    @property
    def retryable(self) -> bool:
        return False


class Cassette:
    """The stored calls of one run, plus the run's settings so a replay can reuse them."""

    def __init__(self, path: Path | None = None, mode: str = "record") -> None:
        if mode not in ("record", "replay"):
            raise ValueError(f"cassette mode must be 'record' or 'replay', got {mode!r}")
        self.path = path
        self.mode = mode
        self.entries: dict[str, dict[str, Any]] = {}
        self.meta: dict[str, Any] = {}

    @classmethod
    def open(cls, path: str | Path, mode: str) -> Cassette:
        """Replay needs the file; recording extends it when it exists."""
        cassette = cls(Path(path), mode)
        file = Path(path)
        if file.exists():
            try:
                data = parse_json(read_text(file))
            except UnreadableFile as exc:
                raise ValueError(f"{file}: {exc}") from None
            except json.JSONDecodeError as exc:
                raise ValueError(f"{file}:{exc.lineno}: malformed cassette ({exc.msg})") from None
            except ValueError as exc:
                raise ValueError(f"{file}:1: malformed cassette ({exc})") from None
            if not isinstance(data, dict) or not isinstance(data.get("entries"), dict):
                raise ValueError(f"{file}:1: not a cassette (expected an object with 'entries')")
            cassette.entries = data["entries"]
            cassette.meta = data.get("meta") or {}
        elif mode == "replay":
            raise ValueError(f"{file}: cassette not found (record one with --record)")
        return cassette

    @staticmethod
    def key(system: str, prompt: str, max_output_tokens: int, backend: str, model: str | None) -> str:
        return content_hash(canonical_json([system, prompt, max_output_tokens, backend, model]))

    def save(self) -> None:
        if self.path is None or self.mode != "record":
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = {"version": FORMAT_VERSION, "meta": self.meta, "entries": self.entries}
        temporary = self.path.with_name(self.path.name + ".tmp")
        temporary.write_text(json.dumps(data, ensure_ascii=False, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        temporary.replace(self.path)


class CassetteBackend:
    """Wraps a Backend: records its completions, or replays them without calling it (``inner`` may be None)."""

    def __init__(self, cassette: Cassette, inner: Backend | None, name: str, model: str | None) -> None:
        if cassette.mode == "record" and inner is None:
            raise ValueError("recording needs a real backend to call")
        self.cassette = cassette
        self.inner = inner
        self.name = name
        self.model = model
        self.calls = 0
        """Calls that reached the wrapped backend."""
        self._inflight: dict[str, asyncio.Future[Completion]] = {}

    def __repr__(self) -> str:
        return f"CassetteBackend({self.name!r}, {self.model!r}, mode={self.cassette.mode!r})"

    async def complete(
        self, system: str, prompt: str, max_output_tokens: int, provider: Any | None = None
    ) -> Completion:
        key = Cassette.key(system, prompt, max_output_tokens, self.name, self.model)
        entry = self.cassette.entries.get(key)
        if self.cassette.mode == "replay":
            if entry is None:
                raise CassetteMiss(key, self.name, self.model, self.cassette.path)
            return _served(entry)
        if entry is not None and "error" not in entry:
            return _served(entry)
        pending = self._inflight.get(key)
        if pending is not None:  # an identical call is on its way: share its answer
            return await asyncio.shield(pending)
        future: asyncio.Future[Completion] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            assert self.inner is not None
            self.calls += 1
            completion = await self.inner.complete(system, prompt, max_output_tokens, provider)
        except BackendError as exc:
            self.cassette.entries[key] = {"error": exc.fault}
            future.set_exception(exc)
            future.exception()  # mark retrieved: nobody else may be waiting
            raise
        except BaseException:
            future.cancel()
            raise
        finally:
            self._inflight.pop(key, None)
        self.cassette.entries[key] = {
            "text": completion.text,
            "input_tokens": completion.input_tokens,
            "output_tokens": completion.output_tokens,
            "max_output_tokens": max_output_tokens,
            "backend": self.name,
            "model": self.model,
        }
        future.set_result(completion)
        return completion


def _served(entry: dict[str, Any]) -> Completion:
    if "error" in entry:
        raise ReplayedFailure(str(entry["error"]))
    return Completion(entry["text"], int(entry.get("input_tokens", 0)), int(entry.get("output_tokens", 0)))
