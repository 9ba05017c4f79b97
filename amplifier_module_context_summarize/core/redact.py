"""Showing configuration without showing secrets: what errors and reprs may print of a value.

A key pasted into the wrong place (an unknown key, ``api_key_env``, a ``base_url`` with credentials)
must not reach a traceback, a log line or a repr. So errors describe a string by its kind and length,
never its text, and reprs print URLs without userinfo or query values.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit, urlunsplit

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
"""What an environment variable name looks like (a key never does: it holds '-' or is far longer)."""
HIDDEN = "***"


def describe(value: Any) -> str:
    """``value`` as an error may show it: numbers, booleans and None as they are, anything else by its kind.

    Strings are never echoed: any string in a config may be a key pasted into the wrong place.
    """
    if value is None or isinstance(value, bool | float):
        return repr(value)
    if isinstance(value, int):
        return repr(value) if abs(value) < 10**18 else "a very large integer"
    if isinstance(value, str):
        return f"a string of {len(value)} characters"
    return f"a value of type {type(value).__name__}"


def env_name(name: str | None) -> str:
    """``name`` when it looks like an environment variable's name; else a placeholder (it may be a key)."""
    if name is None:
        return "(none)"
    return name if ENV_NAME.fullmatch(name) else "(not a variable name: hidden)"


def env_name_key(key: str, value: Any) -> str:
    """``value`` of config key ``key``, which names an environment variable; else the error naming the key.

    The one check of every such key (``config.ENV_NAME_KEYS``): a secret pasted where its variable's name
    belongs is refused by its kind and length, never repeated.
    """
    if not isinstance(value, str) or not ENV_NAME.fullmatch(value):
        raise ValueError(
            f"config key '{key}': must be the name of an environment variable (letters, digits, _), "
            f"not the secret itself, got {describe(value)}"
        )
    return value


def unset_variable(key: str, name: str | None, purpose: str = "") -> ValueError:
    """The error for a variable named by config key ``key`` that is not set: the name when it is one, never
    the value (it may be the secret itself)."""
    return ValueError(f"config key '{key}': environment variable {env_name(name)}{purpose} is not set")


def redact_url(url: str | None) -> str | None:
    """``url`` without userinfo and with every query value and the fragment hidden (they can carry keys)."""
    if url is None:
        return None
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:  # not parseable as a URL: nothing of it is shown
        return HIDDEN
    if not parts.scheme or not parts.netloc:
        return HIDDEN  # not a URL at all: perhaps a key pasted into the wrong place
    netloc = parts.netloc
    if "@" in netloc:
        host = f"[{host}]" if ":" in host else host
        netloc = f"{HIDDEN}@{host}" + (f":{port}" if port is not None else "")
    query = "&".join(
        f"{pair.split('=', 1)[0]}={HIDDEN}" if "=" in pair else HIDDEN for pair in parts.query.split("&") if pair
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query, HIDDEN if parts.fragment else ""))
