"""A throwaway ``redis-server`` for tests and the fleet benchmark: a free loopback port, a temporary directory,
no persistence, and ways to kill and restart it mid-run::

    with RedisServer.started(tmp_path) as server:      # RedisServer.binary() is None when it is not installed
        manager = create_manager({"storage_url": server.url, ...})
        server.kill()       # Redis goes away (SIGKILL, nothing saved)
        server.start()      # and comes back empty, on the same port
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

__all__ = ["MISSING", "RedisServer"]

READY_TIMEOUT_S = 10.0
MISSING = "redis-server is not installed (Debian: apt-get install redis-server): tests that need Redis are skipped"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class RedisServer:
    def __init__(self, directory: Path, *, port: int | None = None, args: Sequence[str] = ()) -> None:
        binary = self.binary()
        if binary is None:
            raise FileNotFoundError(MISSING)
        self.executable = binary
        self.directory = Path(directory)
        self.port = port or free_port()
        self.args = list(args)
        """Extra server options, e.g. ``["--requirepass", secret]`` or ``["--maxmemory", "1mb"]``."""
        self.process: subprocess.Popen[bytes] | None = None

    @staticmethod
    def binary() -> str | None:
        return shutil.which("redis-server")

    @classmethod
    @contextlib.contextmanager
    def started(cls, directory: Path, **options: object) -> Iterator[RedisServer]:
        server = cls(directory, **options)  # type: ignore[arg-type]
        server.start()
        try:
            yield server
        finally:
            server.stop()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        """Start (or start again, on the same port); returns once the server answers."""
        if self.process is not None and self.process.poll() is None:
            return self
        self.directory.mkdir(parents=True, exist_ok=True)
        command = [
            self.executable,
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--dir", str(self.directory),
            "--save", "",
            "--appendonly", "no",
            "--logfile", str(self.directory / "redis.log"),
            *self.args,
        ]  # fmt: skip
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not self._answers():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                log = self.directory / "redis.log"
                tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
                raise RuntimeError(f"redis-server did not start on port {self.port}:\n{tail}")
            time.sleep(0.01)
        return self

    def kill(self) -> None:
        """Gone at once, as a crash or a lost host: SIGKILL, nothing saved."""
        self._end(signal.SIGKILL)

    def stop(self) -> None:
        self._end(signal.SIGTERM)

    def _end(self, how: signal.Signals) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(how)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def _answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as conn:
                conn.sendall(b"PING\r\n")
                reply = conn.recv(64)
        except OSError:
            return False
        return reply.startswith((b"+PONG", b"-NOAUTH"))  # up (with a password, it says so)

    def __repr__(self) -> str:
        return f"RedisServer(port={self.port}, running={self.process is not None and self.process.poll() is None})"
