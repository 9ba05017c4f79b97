"""The working set's facts of many groups at once, extracted on two cores.

A resume with nothing stored (``set_messages``, then a first request that summarizes the whole history) extracts
the facts of every closed group before its plan: tens of thousands of groups, the longest part of that request, all
pure Python. A forked child extracts the older share while this process extracts the newer one (the event loop let
run between slices, ``warm.py``); the child also works out the group hashes of every group not yet chained (the
store's keys: ``History.group_hash``). It sends both back in plain form (marshalled tuples and strings,
``working_set.index.plain``); the facts are kept in order and the hashes chained. The facts are those one process
would have extracted (the child reads the same history, forked), so no view changes. Where fork is missing or
fails, the child fails or is late, this process extracts the child's share itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import marshal
import os
import signal
import time
from collections.abc import Awaitable, Callable

from ...core.history import History
from ...working_set.facts import extract
from ...working_set.index import PLAIN_FIELDS, WorkingSetIndex, plain

SPLIT_MIN_GROUPS = 4_096
"""Fewer groups than this to extract are not worth a child (its fork and the facts' trip back cost ~0.1 s)."""
CHILD_SHARE = 0.85
"""Share of the groups the child extracts: meanwhile this process works out the chain hashes and the masked forms
(``warm.py``), about as long as extracting the rest."""
CHILD_WAIT_FACTOR = 2.0
CHILD_MIN_WAIT_S = 1.0
"""How long this process waits for the child once its own share is done: ``CHILD_WAIT_FACTOR`` times what the
child's share should take at this process's own pace, at least ``CHILD_MIN_WAIT_S``; then it kills the child and
extracts that share itself. A child that hangs (a lock another thread held at the fork) thus costs the resume about
twice its usual time, not a stall."""
SLICE_S = 0.005
STEP = 8


def can_split() -> bool:
    return hasattr(os, "fork") and (os.cpu_count() or 1) >= 2


class Split:
    """A child extracting groups ``[start, middle)``; ``finish`` extracts ``[middle, end)`` here and keeps them all."""

    def __init__(self, index: WorkingSetIndex, history: History, start: int, middle: int, end: int) -> None:
        self.index, self.history = index, history
        self.start, self.middle, self.end = start, middle, end
        self.hashed_from = min(history.chained, end)
        """The child also works out the group hashes of groups ``[hashed_from, end)``."""
        self.pid = 0
        self._receiving: asyncio.Future[tuple[bytes, bool]] | None = None

    def fork(self) -> bool:
        read_fd, write_fd = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(read_fd)
            os.close(write_fd)
            return False
        if pid == 0:  # the child: never returns into the parent's event loop
            code = 1
            try:
                os.close(read_fd)
                facts = child_facts(self.history, self.start, self.middle)
                hashes = [self.history.group_hash(g) for g in range(self.hashed_from, self.end)]
                _send(write_fd, marshal.dumps((facts, hashes)))
                code = 0
            finally:
                os._exit(code)
        os.close(write_fd)
        self.pid = pid
        self._receiving = asyncio.ensure_future(asyncio.to_thread(_receive, read_fd, pid))
        return True

    async def finish(self, let_loop_run: Callable[[], Awaitable[None]]) -> None:
        """Extract this process's share (``let_loop_run`` between slices, ``warm.py``'s), then keep the child's facts
        and these in order; the child's share is extracted here when it failed or does not answer within
        the time ``CHILD_WAIT_FACTOR`` allows."""
        history, receiving = self.history, self._receiving
        assert receiving is not None, "finish before fork"
        own: list[tuple[object, ...]] = []
        started = slice_ends = time.perf_counter()
        slice_ends += SLICE_S
        for group in range(self.middle, self.end):
            own.append(plain(extract(history.shown(group))))
            if len(own) % STEP == 0 and time.perf_counter() >= slice_ends:
                await let_loop_run()
                slice_ends = time.perf_counter() + SLICE_S
        pace_s = (time.perf_counter() - started) / max(self.end - self.middle, 1)
        wait_s = max(CHILD_MIN_WAIT_S, CHILD_WAIT_FACTOR * pace_s * (self.middle - self.start))
        try:
            data, ok = await asyncio.wait_for(asyncio.shield(receiving), wait_s)
        except TimeoutError:
            _kill(self.pid)
            data, ok = await receiving
        parsed = _parsed(data, self.middle - self.start, self.end - self.hashed_from) if ok else None
        if parsed is None:  # the child failed: its share is extracted here, as one process would have
            older = _extracted(history, self.start, self.middle)
        else:
            older, hashes = parsed
            history.adopt_group_hashes(self.hashed_from, hashes)
        self.index.adopt(self.start, [*older, *own])
        history.chain_at(self.end)  # the hashes the child did not send (it failed), or none

    def cancel(self) -> None:
        """The compaction was cancelled: the child is stopped (its reaping thread ends with it)."""
        if self.pid and self._receiving is not None and not self._receiving.done():
            _kill(self.pid)


def start_split(index: WorkingSetIndex, history: History, end: int) -> Split | None:
    """A child extracting the older share of closed groups ``[index.extracted, end)``; None (nothing started) when
    there are fewer than ``SPLIT_MIN_GROUPS``, or no second core or fork."""
    start = index.extracted
    if end - start < SPLIT_MIN_GROUPS or not can_split():
        return None
    split = Split(index, history, start, start + int((end - start) * CHILD_SHARE), end)
    return split if split.fork() else None


def child_facts(history: History, start: int, end: int) -> list[tuple[object, ...]]:
    """What the child extracts and sends back: the facts of groups ``[start, end)``, plain."""
    return _extracted(history, start, end)


def _extracted(history: History, start: int, end: int) -> list[tuple[object, ...]]:
    return [plain(extract(history.shown(group))) for group in range(start, end)]


def _send(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.close(fd)


def _receive(fd: int, pid: int) -> tuple[bytes, bool]:
    """Read what the child sends until it closes the pipe, then reap it: its bytes, and whether it ended well."""
    parts: list[bytes] = []
    try:
        while chunk := os.read(fd, 1 << 20):
            parts.append(chunk)
    finally:
        os.close(fd)
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:  # reaped elsewhere (a host ignoring SIGCHLD): what it sent is checked when parsed
        return b"".join(parts), True
    return b"".join(parts), os.waitstatus_to_exitcode(status) == 0


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _parsed(data: bytes, count: int, hashed: int) -> tuple[list[tuple[object, ...]], list[str]] | None:
    """The child's facts (in ``plain`` form, kept as they come) and group hashes, or None unless there are as many
    of each as it was asked for, in their shapes."""
    try:
        plains, hashes = marshal.loads(data)
    except (ValueError, EOFError, TypeError):
        return None
    if len(plains) != count or len(hashes) != hashed or not all(isinstance(h, str) for h in hashes):
        return None
    if not all(type(p) is tuple and len(p) == PLAIN_FIELDS for p in plains):
        return None
    return plains, hashes
