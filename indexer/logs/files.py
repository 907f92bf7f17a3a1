"""Files as discovery and the readers meet them: never opened unless regular, walked
without following a symlink loop, and every path that is skipped said once.

* :func:`open_regular` opens without blocking (``O_NONBLOCK``: a FIFO's open returns at
  once) and checks the opened descriptor is a regular file before a byte is read, so a
  FIFO, socket or device named ``*.jsonl`` is refused (``NotRegularFileError``), never
  waited on; the check is on the descriptor, so a file swapped after a ``stat`` is
  caught too.
* :func:`classify` says what a path is (``"file"``, ``"dir"``) or why it is skipped (a
  FIFO, a socket, a device, a symlink loop, a dangling link), from ``stat`` alone.
* :func:`walk` lists the files under a directory whose names match, following
  symlinked directories but entering each directory (``st_dev``, ``st_ino``) once, so a
  loop ends; matching names that are not regular files are returned as
  :class:`Skipped` with the reason.
* :func:`real_key` is a path's identity for de-duplication that never raises (a loop
  stays its own path).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Final

__all__ = ["NotRegularFileError", "Skipped", "classify", "open_regular", "real_key", "walk"]

_MAX_DEPTH: Final = 64
"""Directory levels a walk descends at most (no agent's layout is deeper than six)."""


@dataclass(frozen=True, slots=True)
class Skipped:
    """A path discovery did not read, and why (one note per path)."""

    path: Path
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: skipped: {self.reason}"


class NotRegularFileError(OSError):
    """A log path that is a FIFO, socket or device: never read."""


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "of an unknown file type"


def open_regular(path: Path) -> BinaryIO:
    """``path`` opened for binary reading, or ``NotRegularFileError`` (not regular) /
    ``OSError`` (missing, unreadable, a symlink loop)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFileError(f"not a regular file: {_kind(mode)}")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def classify(path: Path) -> str:
    """``"file"``, ``"dir"``, ``"missing"``, or the reason a path is skipped."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a symlink loop"
        if os.path.islink(path):
            return "dangling"  # listed as a file: reading it reports the OS error
        return "missing" if exc.errno == errno.ENOENT else f"cannot stat: {exc.strerror}"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISREG(mode):
        return "file"
    return _kind(mode)


def real_key(path: Path) -> str:
    """The resolved path, for "each file once"; ``os.path.realpath`` does not raise on
    a loop (``Path.resolve`` does), it leaves the looping part as it is."""
    return os.path.realpath(path)


def walk(
    root: Path, match: Callable[[Path], bool], *, max_depth: int = _MAX_DEPTH
) -> tuple[list[Path], list[Skipped]]:
    """Files under ``root`` (to ``max_depth`` levels) whose path ``match`` accepts,
    sorted; matching entries that are not regular files are returned as skipped.
    Dangling links that match are listed (reading them reports why)."""
    files: list[Path] = []
    skipped: list[Skipped] = []
    seen: set[tuple[int, int]] = set()
    stack: list[tuple[Path, int]] = [(root, 0)]
    while stack:
        directory, depth = stack.pop()
        try:
            st = os.stat(directory)
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as exc:
            if directory != root:
                skipped.append(Skipped(directory, f"cannot list: {exc.strerror}"))
            continue
        if (st.st_dev, st.st_ino) in seen:
            continue
        seen.add((st.st_dev, st.st_ino))
        for entry in entries:
            path = Path(entry.path)
            kind = classify(path)
            if kind == "dir":
                if depth < max_depth:
                    stack.append((path, depth + 1))
            elif match(path):
                if kind in ("file", "dangling"):
                    files.append(path)
                elif kind != "missing":
                    skipped.append(Skipped(path, kind))
    return sorted(files), skipped
