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

from collections.abc import Mapping

from indexer.errors import BatchAbortedError
from indexer.failpoints import DISARMED, FailPoints
from indexer.store.failure import describe
from indexer.store.locks import CommitLock
from indexer.store.tables.sqlite_tables import SqliteTables
from indexer.store.tantivy import TantivyIndex


class Checkpoint:
    """Commits or aborts the current batch of one data directory."""

    def __init__(
        self, tables: SqliteTables, index: TantivyIndex, failpoints: FailPoints = DISARMED
    ) -> None:
        self.tables = tables
        self.index = index
        self.failpoints = failpoints
        self._lock = CommitLock(tables.path.parent)

    def commit(self, offsets: Mapping[tuple[str, int], int] | None = None) -> None:
        """Make the batch durable (steps 2-3 above); on failure abort it and raise
        ``BatchAbortedError`` naming the cause."""
        index_committed = False
        try:
            with self._lock:
                # (2) Tantivy first: it can be re-derived from re-applied records.
                self.index.commit()
                index_committed = True
                self.failpoints.reach("after-index-commit")
                # (3) rows and offsets in one SQLite transaction.
                self.tables.tx.begin()
                if offsets:
                    self.tables.store_offsets(dict(offsets))
                self.tables.tx.commit()
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
        self.tables.tx.rollback()
