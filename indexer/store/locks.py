"""File locks of a data directory (``flock``: released by the kernel when the holding
process ends, ``kill -9`` included, so a lock never outlives its holder)."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from types import TracebackType

from indexer.store.layout import COMMIT_LOCK_NAME
from indexer.store.private import open_file


class CommitLock:
    """An exclusive ``flock`` on ``<data dir>/commit.lock``: held by a commit's steps 2-3
    and by a snapshot while it pins the index and the tables. Blocking; per open file,
    so two holders in one process exclude each other too."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / COMMIT_LOCK_NAME
        self._fd: int | None = None

    def __enter__(self) -> CommitLock:
        fd = open_file(self.path, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # closing the only descriptor releases the lock
