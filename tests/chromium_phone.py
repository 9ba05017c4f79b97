"""A page measured in headless Chromium as a phone shows it, through the DevTools protocol on a pipe (stdlib only).

``--window-size`` alone lays a page out as a desktop window does: it ignores the viewport meta a phone obeys, and a
phone without one lays the page out 980 px wide and shrinks it. Device-metrics emulation with ``mobile: true`` is
what a phone does, so the tests see what a reader on a 390 px phone sees.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import select
import subprocess
import time
from pathlib import Path
from typing import Any

TIMEOUT_S = 60.0


class _Pipe:
    """The DevTools protocol over ``--remote-debugging-pipe``: NUL-terminated JSON on fds 3 (in) and 4 (out)."""

    def __init__(self, chromium: str, profile: Path) -> None:
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()
        # both child ends above fd 4, so placing them at 3 and 4 cannot clobber one with the other
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_chrome_r, from_chrome_w)]
        os.close(to_chrome_r)
        os.close(from_chrome_w)

        def place() -> None:
            os.dup2(high[0], 3)
            os.dup2(high[1], 4)

        self.process = subprocess.Popen(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                "--remote-debugging-pipe",
                f"--user-data-dir={profile}",
                "about:blank",
            ],
            pass_fds=(3, 4),
            preexec_fn=place,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for fd in high:
            os.close(fd)
        self._buffer = b""
        self._next = 0
        self.events: list[dict[str, Any]] = []

    def call(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str) -> None:
        while not any(e.get("method") == method for e in self.events):
            self.events.append(self._read())

    def _read(self) -> dict[str, Any]:
        deadline = time.monotonic() + TIMEOUT_S
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_chrome], [], [], left)[0]:
                raise TimeoutError("no answer from chromium")
            chunk = os.read(self._from_chrome, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the pipe")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def close(self) -> None:
        with contextlib.suppress(RuntimeError, TimeoutError, OSError):
            self.call("Browser.close")
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._to_chrome)
        os.close(self._from_chrome)


def measure_on_phone(chromium: str, page: Path, script: str, profile: Path, width: int = 390) -> Any:
    """What ``script`` (a JavaScript expression) evaluates to on ``page`` laid out on a ``width`` px phone."""
    pipe = _Pipe(chromium, profile)
    try:
        target = pipe.call("Target.createTarget", url="about:blank")["targetId"]
        session = pipe.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        pipe.call(
            "Emulation.setDeviceMetricsOverride", session, width=width, height=844, deviceScaleFactor=3, mobile=True
        )
        pipe.call("Page.enable", session)
        pipe.call("Page.navigate", session, url=page.as_uri())
        pipe.wait_for("Page.loadEventFired")
        result = pipe.call("Runtime.evaluate", session, expression=script, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(str(result["exceptionDetails"])[:2000])
        return result["result"]["value"]
    finally:
        pipe.close()
