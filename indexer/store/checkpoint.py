"""The batch commit protocol that keeps Tantivy, SQLite and the consumed offsets in step.

Order of a commit:
  1. the batch's records have been applied (``Store.apply``): their rows to the open
     SQLite transaction, their index documents to the Tantivy writer (delete-then-add
     by doc key);
  2. Tantivy commits;
  3. one SQLite transaction holding the rows *and* the consumed offsets commits.

A record's documents reach the Tantivy writer only once the whole record succeeded,
so a record that fails drops its own documents by truncating the staging list. On any
failure of steps 2-3 the writer and the SQLite transaction are rolled back and
``BatchAbortedError`` is raised: the caller replays from its last committed position
(the indexer seeks back to the stored offsets). A failure of step 3 after step 2 landed
is repaired at once (``Store.commit`` rebuilds the batch's sessions' documents from the
committed rows); a crash between 2 and 3 leaves Tantivy ahead of SQLite until the
records are re-applied from the stored offsets, which is idempotent (upserts by key,
deletes of what is already gone), so the store converges.

Steps 2-3 run under ``CommitLock`` (an exclusive ``flock`` on ``<data dir>/commit.lock``):
a snapshot (``indexer.snapshot``) takes the same lock while it pins its view of both
(``meta.json`` and a SQLite read transaction), so it copies the index and the tables of
one and the same batch, from another process or from the indexer's own.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

from indexer.errors import BatchAbortedError
from indexer.store.failure import describe
from indexer.store.sqlite_tables import SqliteTables
from indexer.store.tantivy import TantivyIndex

FAILPOINT_ENV = "SESSIONQ_FAILPOINT"
COMMIT_LOCK_NAME = "commit.lock"


class CommitLock:
    """An exclusive ``flock`` on ``<data dir>/commit.lock``: held by a commit's steps 2-3
    and by a snapshot while it pins the index and the tables. Blocking; per open file,
    so two holders in one process exclude each other too."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / COMMIT_LOCK_NAME
        self._fd: int | None = None

    def __enter__(self) -> CommitLock:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
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


def _failpoint_from_env() -> tuple[str, int] | None:
    """``SESSIONQ_FAILPOINT=<point>:<n>`` kills the process at the n-th pass of a protocol
    point, so crash tests hit the exact step they mean ("after-index-commit")."""
    spec = os.environ.get(FAILPOINT_ENV)
    if not spec or ":" not in spec:
        return None
    point, _, count = spec.partition(":")
    return point, int(count)


class Checkpoint:
    """Commits or aborts the current batch of one data directory."""

    def __init__(self, tables: SqliteTables, index: TantivyIndex) -> None:
        self.tables = tables
        self.index = index
        self._failpoint = _failpoint_from_env()
        self._lock = CommitLock(tables.path.parent)
        self._passes: dict[str, int] = {}

    def _reach(self, point: str) -> None:
        if self._failpoint is None or self._failpoint[0] != point:
            return
        self._passes[point] = self._passes.get(point, 0) + 1
        if self._passes[point] >= self._failpoint[1]:
            os._exit(137)

    def commit(self, offsets: Mapping[tuple[str, int], int] | None = None) -> None:
        """Make the batch durable (steps 2-3 above); on failure abort it and raise
        ``BatchAbortedError`` naming the cause."""
        index_committed = False
        try:
            with self._lock:
                # (2) Tantivy first: it can be re-derived from re-applied records.
                self.index.commit()
                index_committed = True
                self._reach("after-index-commit")
                # (3) rows and offsets in one SQLite transaction.
                self.tables.begin()
                if offsets:
                    self.tables.store_offsets(dict(offsets))
                self.tables.commit()
        except Exception as exc:
            self.abort()
            raise BatchAbortedError(
                f"commit failed: {describe(exc)}", index_committed=index_committed
            ) from exc
        except BaseException:
            self.abort()
            raise

    def abort(self) -> None:
        """Drop everything applied since the last commit."""
        self.index.rollback()
        self.tables.rollback()
