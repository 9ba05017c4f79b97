"""The spill folder: one sub-folder per session, owner-only, written without ever following a link, bounded.

Every folder this creates is mode 0700 and is opened with ``O_NOFOLLOW | O_DIRECTORY``, and every file is created
relative to that descriptor with ``O_NOFOLLOW``, so a link planted at the root, a session folder or a file name
fails instead of being written through. After each new file the folder is held to its bounds: files older than
``max_age_s`` go, then the oldest (by modification time) until the total is within ``max_bytes``; the file just
written always stays. Only files named as this module names them are ever removed.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

FILE_NAME = re.compile(r"^m\d{1,9}(?:\.\d{1,6})?-[0-9a-f]{6}-[0-9a-f]{10}\.txt$")
"""``m57-3fa2b1-9c0d1e2f3a.txt``: the recall handle, then more of the content's hash."""
SESSION_NAME = re.compile(r"^[0-9a-f]{16}$")
DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


class FolderError(OSError):
    """The folder cannot be used: a link where a folder should be, someone else's folder, not a folder."""


@dataclass
class SpillFolder:
    root: Path
    max_bytes: int
    max_age_s: float
    clock: Callable[[], float] = time.time
    """Wall time: file ages are compared with modification times other processes wrote."""
    _ready: set[str] = field(default_factory=set)

    def write(self, session: str, name: str, data: bytes) -> Path:
        """Store ``data`` as ``root/session/name`` (kept, and its age renewed, when already there whole); return
        the path. Raises ``OSError`` (``FolderError`` among them) when the folder cannot be used."""
        if not SESSION_NAME.match(session) or not FILE_NAME.match(name):
            raise FolderError(f"not a spill file name: {session}/{name}")
        folder = self._session(session)
        fd = os.open(folder, DIR_FLAGS)
        try:
            if _whole(fd, name, len(data)):
                os.utime(name, dir_fd=fd, follow_symlinks=False)  # renewed: a resumed session's file is in use
                return folder / name
            temp = f".{name}.{os.getpid()}.tmp"
            _unlink_quietly(temp, fd)
            out = os.open(temp, FILE_FLAGS, 0o600, dir_fd=fd)
            try:
                with os.fdopen(out, "wb", closefd=False) as stream:
                    stream.write(data)
            finally:
                os.close(out)
            os.replace(temp, name, src_dir_fd=fd, dst_dir_fd=fd)
        finally:
            os.close(fd)
        self.prune(keep=folder / name)
        return folder / name

    def prune(self, keep: Path | None = None) -> int:
        """Hold the folder to its bounds (the age bound, then the oldest first); return how many files went."""
        files: list[tuple[float, int, Path]] = []
        try:
            sessions = [
                e for e in os.scandir(self.root) if SESSION_NAME.match(e.name) and e.is_dir(follow_symlinks=False)
            ]
        except OSError:
            return 0
        for session in sessions:
            try:
                entries = list(os.scandir(session.path))
            except OSError:
                continue
            for entry in entries:
                if not FILE_NAME.match(entry.name):
                    continue
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISREG(info.st_mode):
                    files.append((info.st_mtime, info.st_size, Path(entry.path)))
        files.sort()
        total = sum(size for _, size, _ in files)
        oldest_kept = self.clock() - self.max_age_s
        removed = 0
        for mtime, size, path in files:
            if path == keep:
                continue
            if mtime >= oldest_kept and total <= self.max_bytes:
                break
            try:
                path.unlink()
            except OSError:
                continue
            total -= size
            removed += 1
        return removed

    def _session(self, session: str) -> Path:
        if session not in self._ready:
            self.root.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            _owned_folder(self.root)
            _owned_folder(self.root / session)
            self._ready.add(session)
        return self.root / session


def _owned_folder(path: Path) -> None:
    """Create ``path`` mode 0700 if missing; refuse a link, a non-folder or a folder another user owns."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        raise FolderError(f"{path} is a symbolic link; the spill folder never follows one")
    if not stat.S_ISDIR(info.st_mode):
        raise FolderError(f"{path} is not a folder")
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise FolderError(f"{path} belongs to another user")
    if stat.S_IMODE(info.st_mode) & 0o077:
        os.chmod(path, 0o700)  # a folder, checked above (a link would have been refused)


def _whole(fd: int, name: str, size: int) -> bool:
    try:
        info = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(info.st_mode):
        raise FolderError(f"{name} is a symbolic link; the spill folder never follows one")
    return stat.S_ISREG(info.st_mode) and info.st_size == size


def _unlink_quietly(name: str, fd: int) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(name, dir_fd=fd)
