"""An HTTP client for an SDK under test whose transport is a ``respx.MockRouter``.

anthropic < 1 and openai < 3 send through ``httpx`` (0.x); anthropic >= 1 and openai >= 3 send
through ``httpx2``. Each SDK checks the type of an injected ``http_client``, and the two generations
can be installed side by side (``anthropic<1`` beside the newest openai), so the library is chosen
per SDK, by what that SDK's own ``DefaultAsyncHttpxClient`` subclasses.

respx matches and records requests of either library, but only builds ``httpx`` responses: for an
``httpx`` SDK the respx response is returned as is, for an ``httpx2`` SDK it is copied over.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import httpx
import respx

try:
    import httpx2
except ImportError:  # only the httpx2-based SDK generation installs it
    httpx2 = None

LIBRARIES: tuple[ModuleType, ...] = (httpx,) if httpx2 is None else (httpx2, httpx)


def http_library(sdk: ModuleType) -> ModuleType:
    """``httpx`` or ``httpx2``: the library the installed ``sdk`` (the anthropic or openai module) sends with."""
    for library in LIBRARIES:
        if issubclass(sdk.DefaultAsyncHttpxClient, library.AsyncClient):
            return library
    raise TypeError(f"{sdk.__name__}.DefaultAsyncHttpxClient is neither an httpx nor an httpx2 client")


def mock_http_client(router: respx.MockRouter, sdk: ModuleType) -> Any:
    """An async client of ``sdk``'s library whose every request is answered by ``router``."""
    library = http_library(sdk)

    if library is httpx:

        async def handler(request: Any) -> Any:
            return await router.async_handler(request)

    else:

        async def handler(request: Any) -> Any:
            response = await router.async_handler(request)  # an httpx 0.x Response
            return library.Response(
                response.status_code, headers=list(response.headers.multi_items()), content=response.content
            )

    return library.AsyncClient(transport=library.MockTransport(handler))


def sdk_versions() -> str:
    """The SDK versions and the library each sends with, e.g. for a test report header."""
    import anthropic
    import openai

    return ", ".join(f"{sdk.__name__} {sdk.__version__} ({http_library(sdk).__name__})" for sdk in (anthropic, openai))
