"""Mount-plan configuration: defaults, and errors that name the key at fault."""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from .backends.registry import NAMES as SUMMARIZER_PROVIDERS
from .backends.registry import SummarizerConfig
from .core.redact import describe, env_name, env_name_key
from .stores.default_path import MEMORY
from .stores.redis_settings import url_problem

STRATEGIES = ("summarize", "mask", "extractive", "truncate")
"""The ``compaction_strategy`` names: the keys of the one strategy registry, ``compaction/plan/strategies.py``'s
``STRATEGIES``. Config sits below compaction, so it holds the names only (tests/test_architecture.py holds the two
equal)."""
RECALL_TOOL_NAME = "context_recall"
DEFAULT_BUDGET = 200_000
ENV_NAME_KEYS = ("storage_password_env", "summarizer.api_key_env")
"""Every key whose value names an environment variable (never a secret): each is checked by ``env_name_key``."""


Fractions = tuple[float, ...]
"""A list of fractions in (0, 1], each checked like a numeric key (``_check_fractions``)."""


@dataclass(frozen=True)
class Config:
    compaction_strategy: str = "summarize"
    max_tokens: int | None = None
    """Caps the request budget when set; unset, the provider's window rules (``DEFAULT_BUDGET`` without one)."""
    compact_threshold: float = 0.92
    target_usage: float = 0.5
    preserve_recent_ratio: float = 0.25
    preserve_system: bool = True
    safety_margin: int = 1000
    summary_max_tokens: int = 2000
    summary_budget_ratio: float = 0.3
    summarizer: SummarizerConfig = field(default_factory=SummarizerConfig)
    prompt_dir: str | None = None
    storage_path: str | None = None
    """SQLite file of the summary cache; unset, a mounted session uses the per-user cache
    (``stores.default_path``); ``memory`` (or ``null``) keeps summaries in the process only."""
    cache_max_entries: int = 20_000
    prefetch: bool = False
    prefetch_threshold: float = 0.8
    failure_cooldown_s: float = 300.0
    token_encoding: str = "cl100k_base"
    compaction_deadline_s: float = 30.0
    """Longest a request waits for summarizing; past it the extractive rung answers."""
    background_compaction: bool = True
    """The soft threshold: while the view still fits, the summarizer works in the background and no request
    waits for it; false: the request that passes ``compact_threshold`` waits for its compaction (blocking)."""
    calibrate_from_usage: bool = True
    """Learn how the provider's token counts differ from ours from the usage it reports (mounted sessions)."""
    initial_calibration: float = 1.1
    """Factor applied to our counts before any usage report is seen (mounted sessions)."""
    storage_url: str | None = None
    """``redis://`` or ``rediss://`` URL of a summary store shared by a fleet (never with a password in it)."""
    storage_password_env: str | None = None
    """Environment variable holding the Redis password."""
    storage_ttl_s: float = 604_800.0
    """Summaries in Redis unused for this long expire (7 days); 0 leaves expiry to Redis's eviction."""
    storage_timeout_s: float = 1.0
    """Longest wait for Redis to connect or answer; past it the local store stands in."""
    storage_retry_s: float = 30.0
    """While Redis is unreachable, how often (at most) to check whether it is back."""
    observation_masking: bool = True
    """Mask old tool outputs before summarizing (the hybrid); false: summarize only."""
    mask_min_chars: int = 600
    """Tool outputs and call arguments longer than this are masked; shorter ones stay as they are."""
    mask_keep_recent: int = 5
    """The newest tool outputs, which stay verbatim unless the next rung would take their groups whole."""
    ledger_share: float = 0.6
    """Share of the summary's room (``budget × summary_budget_ratio``) the working set may take; 0 leaves it out."""
    notify: bool = True
    """Show one line on the user's screen per compaction, and when summaries fall back or the circuit opens."""
    recall_tool: bool = True
    """Mount the ``context_recall`` tool (search and fetch of summarized or masked originals by handle)."""
    summary_instructions: str | None = None
    """The user's standing guidance for every summary and merge (text; ``@path`` reads a UTF-8 file at mount)."""
    pin_patterns: tuple[str, ...] = ()
    """Texts that pin a message that contains one (literal, case-sensitive: ``<system-reminder>``, ``AGENTS.md``);
    a message with ``metadata.pin: true`` is pinned too."""
    pin_budget_ratio: float = 0.2
    """Share of the budget the pinned messages and the recent user turns may take after the summary; past it the
    oldest give way (``context:pins_dropped``)."""
    preserve_recent_user_turns: int = 0
    """The last few user messages kept verbatim after the summary when their groups are summarized."""
    usage_fractions: Fractions = (0.6, 0.7, 0.92)
    """Fractions of the budget whose upward crossing by a view emits ``context:usage`` (empty: none)."""
    usage_threshold_fractions: Fractions = ()
    """Fractions of the compaction threshold whose upward crossing emits ``context:usage``."""
    spill_threshold_tokens: int = 10_000
    """A tool output over this many tokens is written whole to the spill folder and shown as a preview."""
    spill_path: str | None = None
    """The spill folder's root; unset, ``spill`` beside the summary store's file (none with a store in memory:
    spilling is off); ``off`` (or ``null``) turns spilling off."""
    spill_max_mb: int = 512
    """Past this total the spill folder's oldest files are removed."""
    spill_max_age_s: float = 604_800.0
    """Spilled files unused for this long are removed (7 days; a resume writes a removed one again)."""

    def __repr__(self) -> str:
        """Fields as the dataclass shows them, but a secret pasted as ``storage_password_env`` is hidden."""
        shown = {f.name: getattr(self, f.name) for f in fields(self)}
        if self.storage_password_env is not None:
            shown["storage_password_env"] = env_name(self.storage_password_env)
        if self.summary_instructions is not None:  # the user's text: described, never echoed (it may hold anything)
            shown["summary_instructions"] = f"<{len(self.summary_instructions)} characters>"
        return f"Config({', '.join(f'{k}={v!r}' for k, v in shown.items())})"

    @property
    def recall_tool_name(self) -> str | None:
        """Name of the recall tool that placeholders and the summary preamble mention (``None`` when off)."""
        return RECALL_TOOL_NAME if self.recall_tool else None

    @property
    def budget_fallback(self) -> int:
        return self.max_tokens or DEFAULT_BUDGET

    @property
    def summary_output_tokens(self) -> int:
        return self.summarizer.max_output_tokens or self.summary_max_tokens

    def summary_room(self, budget: int) -> int:
        """Tokens the summary message is planned to take in a view planned against ``budget``."""
        return int(budget * self.summary_budget_ratio)

    def working_set_tokens(self, budget: int) -> int:
        """Tokens the working set may always take of the summary's room (it may also take what the segment
        summaries leave)."""
        return int(budget * self.summary_budget_ratio * self.ledger_share)


def _fail(key: str, allowed: str, value: Any) -> ValueError:
    """The error naming ``key``; a string value is described, never echoed (it may be a misplaced key)."""
    return ValueError(f"config key '{key}': {allowed}, got {describe(value)}")


MAX_NUMBER = 10**12
"""Ceiling of every numeric key without its own: far beyond any token count, size or number of seconds that
makes sense, and low enough that float arithmetic on it stays exact and finite (``10**400`` tokens overflowed
on every request, an infinite TTL in ``create_manager``)."""


def _check_number(key: str, value: Any, kind: type, low: float, high: float | None, inclusive_low: bool) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float) or (kind is int and not isinstance(value, int)):
        raise _fail(key, f"must be {'an integer' if kind is int else 'a number'}", value)
    if isinstance(value, float) and not math.isfinite(value):  # NaN passes every comparison below
        raise _fail(key, "must be a finite number", value)
    high = MAX_NUMBER if high is None else high
    too_low = value < low if inclusive_low else value <= low
    if too_low or (high is not None and value > high):
        span = f"{'>=' if inclusive_low else '>'} {low}" + (f" and <= {high}" if high is not None else "")
        raise _fail(key, f"must be {span}", value)
    return kind(value)


_NUMBERS: dict[str, tuple[type, float, float | None, bool]] = {
    "max_tokens": (int, 1, None, True),
    "compact_threshold": (float, 0, 1, False),
    "target_usage": (float, 0, 1, False),
    "preserve_recent_ratio": (float, 0, 1, True),
    "safety_margin": (int, 0, None, True),
    "summary_max_tokens": (int, 16, None, True),
    "summary_budget_ratio": (float, 0, 1, False),
    "cache_max_entries": (int, 1, None, True),
    "prefetch_threshold": (float, 0, 1, False),
    "failure_cooldown_s": (float, 0, None, True),
    "compaction_deadline_s": (float, 0, None, False),
    "initial_calibration": (float, 0.5, 2, True),
    "mask_min_chars": (int, 100, None, True),
    "mask_keep_recent": (int, 0, None, True),
    "storage_ttl_s": (float, 0, None, True),
    "storage_timeout_s": (float, 0, 60, False),
    "storage_retry_s": (float, 0, None, False),
    "ledger_share": (float, 0, 0.8, True),
    "pin_budget_ratio": (float, 0, 0.5, True),
    "preserve_recent_user_turns": (int, 0, 100, True),
    "spill_threshold_tokens": (int, 1_000, None, True),
    "spill_max_mb": (int, 1, None, True),
    "spill_max_age_s": (float, 0, None, False),
}
_SUMMARIZER_NUMBERS: dict[str, tuple[type, float, float | None, bool]] = {
    "timeout_s": (float, 0, None, False),
    "max_retries": (int, 0, 20, True),
    "max_output_tokens": (int, 16, None, True),
    "max_input_tokens": (int, 256, None, True),
    "circuit_failures": (int, 0, 1000, True),
    "circuit_open_s": (float, 0, None, True),
    "prompt_cache_ttl_s": (float, 0, None, True),
}


_BOOLEANS = (
    "preserve_system",
    "prefetch",
    "calibrate_from_usage",
    "observation_masking",
    "recall_tool",
    "background_compaction",
    "notify",
)


def _check_storage_url(value: Any) -> str | None:
    """Errors here never quote the value: a URL can carry a password."""
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ValueError(f"config key 'storage_url': must be a redis:// or rediss:// URL, got a {type(value).__name__}")
    problem = url_problem(value)
    if problem is not None:
        raise ValueError(f"config key 'storage_url': {problem}")
    return value


INSTRUCTIONS_MAX_CHARS = 20_000
"""Standing instructions longer than this would crowd out the transcript in every summarizer prompt."""
INSTRUCTIONS_MAX_BYTES = 4 * INSTRUCTIONS_MAX_CHARS
"""Most bytes read from an ``@path`` file: ``INSTRUCTIONS_MAX_CHARS`` characters of UTF-8 at most take this many."""
PIN_PATTERNS_MAX = 50


def _check_instructions(value: Any) -> str | None:
    """Text, or ``@path`` naming a UTF-8 file read now (the file's text is what the fingerprint versions)."""
    key = "summary_instructions"
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise _fail(key, "must be non-empty text or @path of a text file", value)
    text: str = value
    if text.startswith("@"):
        text = _instructions_file(key, Path(text[1:]).expanduser())
        if not text.strip():
            raise ValueError(f"config key '{key}': the file it names is empty")
    if len(text) > INSTRUCTIONS_MAX_CHARS:
        raise _fail(key, f"must be at most {INSTRUCTIONS_MAX_CHARS:,} characters", text)
    return text.strip()


def _instructions_file(key: str, path: Path) -> str:
    """The UTF-8 text of the regular file at ``path``, read at mount. Anything else is refused before it is read
    whole: a named pipe blocked mount waiting for a writer, ``/dev/zero`` filled memory. The file is opened without
    blocking and checked again once open (it may have been swapped since the first look), and at most
    ``INSTRUCTIONS_MAX_BYTES`` + 1 bytes are read, whatever size it claims."""
    try:
        mode = path.stat().st_mode
        if not stat.S_ISREG(mode):
            raise ValueError(f"config key '{key}': the file it names is not a regular file ({_kind(mode)})")
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
        fd = os.open(path, flags)
        with os.fdopen(fd, "rb") as file:
            if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
                raise ValueError(f"config key '{key}': the file it names is not a regular file")
            data = file.read(INSTRUCTIONS_MAX_BYTES + 1)
    except OSError as exc:
        raise ValueError(f"config key '{key}': cannot read the file it names ({type(exc).__name__})") from None
    if len(data) > INSTRUCTIONS_MAX_BYTES:
        raise ValueError(f"config key '{key}': the file it names is larger than {INSTRUCTIONS_MAX_BYTES:,} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"config key '{key}': the file it names is not UTF-8 text") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")  # line ends as a text-mode read gives them


def _kind(mode: int) -> str:
    """What a path that is not a regular file names, in words."""
    for test, kind in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a file"


def _check_pin_patterns(value: Any) -> tuple[str, ...]:
    key = "pin_patterns"
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise _fail(key, "must be a list of non-empty strings", value)
    if len(value) > PIN_PATTERNS_MAX:
        raise _fail(key, f"must hold at most {PIN_PATTERNS_MAX} patterns", value)
    for i, pattern in enumerate(value):
        if not isinstance(pattern, str) or not pattern:
            raise _fail(key, f"item {i} must be a non-empty string", pattern)
    return tuple(value)


def _check_fractions(key: str, value: Any) -> tuple[float, ...]:
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise _fail(key, "must be a list of numbers between 0 and 1", value)
    out = []
    for i, v in enumerate(value):
        try:
            out.append(_check_number(key, v, float, 0, 1, False))
        except ValueError as exc:
            raise ValueError(str(exc).replace(f"'{key}':", f"'{key}': item {i}", 1)) from None
    return tuple(sorted(set(out)))


def unwrap_mount_plan(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    """Accept a whole mount plan as well as the module's own ``config`` mapping."""
    session = raw.get("session")
    if isinstance(session, Mapping):
        context = session.get("context")
        if isinstance(context, Mapping) and isinstance(context.get("config"), Mapping):
            inner: Mapping[str, Any] = context["config"]
            return inner
        top = raw.get("context")
        if isinstance(top, Mapping) and isinstance(top.get("config"), Mapping):
            given: Mapping[str, Any] = top["config"]
            return given
        return {}
    return raw


def parse_summarizer(value: Any) -> SummarizerConfig:
    if value is None:
        return SummarizerConfig()
    if isinstance(value, str):
        value = {"provider": value}
    if not isinstance(value, Mapping):
        raise _fail("summarizer", f"must be one of {', '.join(SUMMARIZER_PROVIDERS)} or a mapping", value)
    known = {f.name for f in fields(SummarizerConfig)}
    for key in value:
        if key == "api_key":
            raise _fail(
                "summarizer.api_key", "is not accepted: name the environment variable holding it in api_key_env", ""
            )
        if key not in known:
            raise _fail(f"summarizer.{key}", f"is not a known key (known: {', '.join(sorted(known))})", value[key])
    options: dict[str, Any] = dict(value)
    provider = options.get("provider", "session")
    if provider not in SUMMARIZER_PROVIDERS:
        raise _fail("summarizer.provider", f"must be one of {', '.join(SUMMARIZER_PROVIDERS)}", provider)
    for key, spec in _SUMMARIZER_NUMBERS.items():
        if options.get(key) is not None:
            options[key] = _check_number(f"summarizer.{key}", options[key], *spec)
    for key in ("model", "base_url", "api_key_env", "session_provider"):
        if options.get(key) is not None and (not isinstance(options[key], str) or not options[key]):
            raise _fail(f"summarizer.{key}", "must be a non-empty string", options[key])
    if options.get("api_key_env") is not None:
        env_name_key("summarizer.api_key_env", options["api_key_env"])
    if provider == "native":
        from .backends.native_wire import DEFAULT_MODEL, NOT_NATIVE, family_of

        try:
            family_of(options.get("model") or DEFAULT_MODEL)
        except ValueError:
            raise _fail("summarizer.model", NOT_NATIVE, options.get("model")) from None
    return SummarizerConfig(**options)


def parse_config(raw: Mapping[str, Any] | None) -> Config:
    """Validate a mount-plan ``config`` mapping into a ``Config``; raise ``ValueError`` naming the key."""
    if raw is None:
        return Config()
    if not isinstance(raw, Mapping):
        raise ValueError(f"config must be a mapping, got {type(raw).__name__}")
    raw = unwrap_mount_plan(raw)
    from .core.peer_keys import without_peer_keys  # foundation's context-simple keys arrive in a composed bundle

    raw = without_peer_keys(raw)
    known = {f.name for f in fields(Config)}
    for key in raw:
        if key not in known:
            raise _fail(key, f"is not a known key (known: {', '.join(sorted(known))})", raw[key])
    options: dict[str, Any] = {}
    for key, value in raw.items():
        if key in _NUMBERS:
            options[key] = _check_number(key, value, *_NUMBERS[key])
        elif key == "compaction_strategy":
            if value not in STRATEGIES:
                raise _fail(key, f"must be one of {', '.join(STRATEGIES)}", value)
            options[key] = value
        elif key in _BOOLEANS:
            if not isinstance(value, bool):
                raise _fail(key, "must be true or false", value)
            options[key] = value
        elif key == "summarizer":
            options[key] = parse_summarizer(value)
        elif key == "storage_url":
            options[key] = _check_storage_url(value)
        elif key == "storage_password_env":
            options[key] = None if value is None else env_name_key(key, value)
        elif key == "storage_path" and value is None:
            options[key] = MEMORY  # said explicitly: no file, not even the default one
        elif key == "spill_path" and value is None:
            options[key] = "off"  # said explicitly: no folder, not even the default one
        elif key == "summary_instructions":
            options[key] = _check_instructions(value)
        elif key == "pin_patterns":
            options[key] = _check_pin_patterns(value)
        elif key in ("usage_fractions", "usage_threshold_fractions"):
            options[key] = _check_fractions(key, value)
        elif key in ("prompt_dir", "storage_path", "token_encoding", "spill_path"):
            if value is not None and (not isinstance(value, str) or not value):
                raise _fail(key, "must be a non-empty string", value)
            options[key] = value
    config = Config(**options)
    if config.storage_password_env is not None and config.storage_url is None:
        raise _fail("storage_password_env", "needs storage_url (it is Redis's password)", config.storage_password_env)
    if config.target_usage >= config.compact_threshold:
        raise _fail(
            "target_usage", f"must be below compact_threshold ({config.compact_threshold})", config.target_usage
        )
    if config.preserve_recent_ratio > config.target_usage:
        raise _fail(
            "preserve_recent_ratio",
            f"must not exceed target_usage ({config.target_usage})",
            config.preserve_recent_ratio,
        )
    if config.prefetch_threshold >= config.compact_threshold:
        raise _fail(
            "prefetch_threshold",
            f"must be below compact_threshold ({config.compact_threshold})",
            config.prefetch_threshold,
        )
    return config
