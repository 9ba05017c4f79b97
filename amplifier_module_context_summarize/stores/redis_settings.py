"""The Redis store's settings, and its URL checked and shown without importing redis or showing a secret."""

from __future__ import annotations

from dataclasses import dataclass, fields
from urllib.parse import parse_qs, urlsplit

from ..core.redact import env_name

SCHEMES = ("redis", "rediss")


@dataclass(frozen=True)
class RedisSettings:
    url: str
    """``redis://host:port/db`` or ``rediss://…``; never with a password in it."""
    password_env: str | None = None
    """Environment variable holding the password (read once, when the store is built)."""
    ttl_s: float = 7 * 86_400.0
    """Summaries unused for this long expire; 0 keeps them until Redis evicts them."""
    timeout_s: float = 1.0
    """Longest wait to connect and for any answer; past it Redis counts as unreachable."""
    retry_s: float = 30.0
    """While Redis is unreachable, how often (at most) to check whether it is back."""

    def __repr__(self) -> str:
        """Fields as the dataclass shows them, but a password pasted as ``password_env`` is hidden."""
        shown = {f.name: getattr(self, f.name) for f in fields(self)}
        shown["password_env"] = None if self.password_env is None else env_name(self.password_env)
        return f"RedisSettings({', '.join(f'{k}={v!r}' for k, v in shown.items())})"


def url_problem(url: str) -> str | None:
    """What is wrong with ``url`` as a ``storage_url``, or None. The answer never quotes the URL: it may
    hold a password."""
    try:
        parts = urlsplit(url)
        password = parts.password
        port = parts.port
    except ValueError:
        return "must be a redis:// or rediss:// URL (it does not parse)"
    query = {key.lower() for key in parse_qs(parts.query, keep_blank_values=True)}
    if password is not None or "password" in query:
        return "must not contain a password; put it in an environment variable named by storage_password_env"
    if parts.scheme not in SCHEMES:
        return f"must start with redis:// or rediss:// (got a {parts.scheme or 'missing'} scheme)"
    if not parts.hostname:
        return "must name a host, as in redis://cache.internal:6379/0"
    if port == 0:
        return "must not use port 0"
    path = parts.path.strip("/")
    if path and not path.isdigit():
        return "must name the database by number, as in redis://host:6379/2"
    return None


def describe(url: str) -> str:
    """``scheme://host:port/db``, for logs and reprs (no user name, no query)."""
    parts = urlsplit(url)
    host = parts.hostname or "?"
    if ":" in host:
        host = f"[{host}]"
    return f"{parts.scheme}://{host}:{parts.port or 6379}/{parts.path.strip('/') or '0'}"
