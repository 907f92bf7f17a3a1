"""A data directory: the SQLite tables, the Tantivy index, the writer and the commit
protocol behind one handle. One process writes a data dir at a time (the writer lease,
``indexer.store.lease``); readers open ``indexer.query.service.StoreQueryService`` on
the same directory, in any process.

``Store.apply`` is the one record path: every source (``indexer.sources``: files once,
watched files, the Kafka topic) applies through it, and it alone decides whose fault a
failure is:

* the record runs inside a SQLite savepoint and an index mark;
* if it raises, both are rolled back: none of its rows and none of its staged index
  documents survive, the rest of the open batch stands. A seq-gap rejection then marks
  the session *held*, the one state change a rejection leaves;
* a whole log read from a file replaces the session of the same id that an older
  release imported (``stale_imports``: its events are in that release's mapping);
* the **record's** fault comes back as ``RecordRejectedError`` (the record is bad) or
  ``RecordFailedError`` (anything unexpected, a bug): the caller reports or dead-letters
  that record and goes on;
* the **batch's** fault comes back as ``BatchAbortedError``: SQLite lost the whole
  transaction, the index writer failed, or the disk is full (a full disk is never a
  record's fault, whatever raised it). The whole batch is gone, as after a failed
  ``commit``; the caller replays it from its last committed position.

After a commit the dir may train its own zstd dictionary
(``indexer.store.blocks.dictionaries``). A commit that follows an applied delete runs a
purge pass (``indexer.store.maintenance.purge``), so the deleted session's bytes leave
the files too; ``purge_if_due`` is the idle tick.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Mapping
from pathlib import Path

from indexer.errors import (
    BatchAbortedError,
    RecordFailedError,
    RecordRejectedError,
    SessionqError,
)
from indexer.failpoints import DISARMED, FailPoints
from indexer.logs.reader import SessionLog
from indexer.model.records import EventStreamRecord, record_session_id
from indexer.redact import DEFAULT, Redaction
from indexer.redact.counts import ensure_table
from indexer.redact.state import open_writer, record_redaction
from indexer.store.blocks.dictionaries import Dictionaries
from indexer.store.bounds import BATCH_BYTES, INDEX_HEAP_BYTES
from indexer.store.failure import describe, is_disk_full
from indexer.store.layout import index_path, sqlite_path
from indexer.store.maintenance.index_format import clear_stale_index, rebuild
from indexer.store.maintenance.purge import MIN_INTERVAL_S, Purger, PurgeReport
from indexer.store.private import own_dir
from indexer.store.records.checkpoint import Checkpoint
from indexer.store.records.plan import FreshLog
from indexer.store.records.writer import Applied, StoreWriter
from indexer.store.tables.sqlite_tables import SqliteTables
from indexer.store.tables.transaction import Savepoint, TransactionLostError
from indexer.store.tantivy import TantivyIndex

log = logging.getLogger("sessionq.store")


def _session_of(unit: EventStreamRecord | SessionLog) -> str:
    return unit.header.id if isinstance(unit, SessionLog) else record_session_id(unit)


class Store:
    """The writer side of a data directory. Opening a dir written by an older release
    migrates its tables in place first (``indexer.store.tables.migrate``), then rebuilds its
    index if that has an older format (``indexer.store.maintenance.index_format``) or was
    redacted otherwise than ``redaction`` says (``indexer.redact.state``)."""

    def __init__(
        self,
        data_dir: Path,
        *,
        heap_bytes: int = INDEX_HEAP_BYTES,
        threads: int = 1,
        purge_interval_s: float | None = MIN_INTERVAL_S,
        on_purge: Callable[[PurgeReport], None] | None = None,
        failpoints: FailPoints = DISARMED,
        redaction: Redaction = DEFAULT,
        batch_bytes: int = BATCH_BYTES,
    ) -> None:
        """``batch_bytes``: what the open batch may hold before ``batch_full`` says it
        is due (``pending_bytes``). ``purge_interval_s``: the least time between two purge passes
        (``indexer.store.maintenance.purge``); None never purges. ``failpoints``: the
        crash tests' kill points (``indexer.failpoints``), disarmed but in those tests.
        ``redaction``: the ``--redact-secrets`` mode (``indexer.redact``); a mode the dir
        cannot take raises ``RedactionModeError`` before anything is written."""
        own_dir(data_dir)  # the writer's: owner-only, an older release's 0755 too
        self.data_dir = data_dir
        self.tables = SqliteTables(sqlite_path(data_dir), failpoints)
        try:
            ensure_table(self.tables.conn)
            redacted = open_writer(self.tables.conn, redaction)
        except BaseException:
            self.tables.close()
            raise
        self.redaction = redaction
        stale = clear_stale_index(self.tables.conn, index_path(data_dir), redacted=redacted)
        self.index = TantivyIndex(
            index_path(data_dir), writable=True, heap_bytes=heap_bytes, threads=threads
        )
        self.dictionaries = Dictionaries(self.tables, failpoints)
        self.writer = StoreWriter(self.tables, self.index, self.dictionaries, redaction)
        if stale:
            with self.tables.tx.step():  # the recounted redactions commit with the format
                rebuild(
                    self.tables.conn,
                    lambda ids: self.writer.reindex(ids, recount=True),
                    self.index.flush,
                    self.index.commit,
                )
                if redacted:
                    record_redaction(self.tables.conn, redaction)
        self.checkpoint = Checkpoint(self.tables, self.index, failpoints)
        self.purger = Purger(
            self.tables,
            self.index,
            self.writer.reindex,
            self.dictionaries,
            min_interval_s=purge_interval_s,
            on_pass=on_purge,
        )
        self._touched: set[str] = set()  # sessions the open batch changed
        self.batch_bytes = batch_bytes

    @property
    def pending_bytes(self) -> int:
        """What the open batch holds until it commits, besides what Tantivy's heap
        budget bounds: its queued deletes (``indexer.store.tantivy.staging``); its rows
        are SQLite's, in pages that spill to the WAL file, not held here."""
        return self.index.pending_bytes

    @property
    def batch_full(self) -> bool:
        """The open batch holds ``batch_bytes``: every source commits it now, whatever
        its own count of records, so memory follows bytes, not records."""
        return self.index.pending_bytes >= self.batch_bytes

    def apply(self, unit: EventStreamRecord | SessionLog) -> Applied:
        """Apply one record (or one whole log read from a file) atomically; see the module
        docstring for the failure rule."""

        def write() -> Applied:
            if isinstance(unit, SessionLog):
                if self.tables.stale_import(unit.header.id):  # a log read again replaces it
                    self.writer.delete(unit.header.id)
                return self.writer.apply_log(unit)
            return self.writer.apply(unit)

        applied = self._atomic(_session_of(unit), write)
        assert applied is not None
        return applied

    def apply_fresh(self, fresh: FreshLog) -> Applied | None:
        """Apply a log planned off the writer (``indexer.sources.parallel``) under the same
        rule as ``apply``; ``None`` when the store holds the session already (nothing was
        written: apply the log itself)."""
        return self._atomic(fresh.header.id, lambda: self.writer.apply_fresh(fresh))

    def _atomic(self, session_id: str, write: Callable[[], Applied | None]) -> Applied | None:
        mark = self.index.mark()
        try:
            with Savepoint(self.tables.tx, "record"):
                applied = write()
        except TransactionLostError as exc:
            self.abort()
            raise BatchAbortedError(f"the open batch was lost: {exc.message}") from exc
        except BaseException as exc:
            self.index.rollback_to(mark)
            if not isinstance(exc, Exception):
                raise
            if is_disk_full(exc):
                self.abort()
                raise BatchAbortedError(describe(exc)) from exc
            if not isinstance(exc, SessionqError):
                raise RecordFailedError(f"internal error: {describe(exc)}") from exc
            if isinstance(exc, RecordRejectedError) and exc.hold is not None:
                self.tables.set_held(session_id, exc.hold)
            raise
        try:
            self.index.flush()
        except Exception as exc:  # the writer failed: the batch cannot be trusted
            self.abort()
            raise BatchAbortedError(f"index write failed: {describe(exc)}") from exc
        if applied is not None and not applied.noop:
            self._touched.add(applied.session_id)
            if applied.kind == "delete":
                self.purger.note_erasure()
        return applied

    def commit(self, offsets: Mapping[tuple[str, int], int] | None = None) -> None:
        """Make the batch durable (``indexer.store.records.checkpoint``). When only its Tantivy
        step landed, the touched sessions' documents are rebuilt from the committed rows
        before the error goes on, so a search never finds what the tables lost."""
        touched, self._touched = self._touched, set()
        try:
            self.checkpoint.commit(offsets)
        except BatchAbortedError as exc:
            if exc.index_committed:
                self._repair_index(touched)
            raise
        self.dictionaries.after_commit()
        self.purger.after_commit()

    def note_source(
        self, session_id: str, path: str, signature: tuple[int, int] | None
    ) -> None:
        """Record, in the open batch, the log file a session was applied from and its
        signature then (``indexer.sources.local``). A failure here loses the batch."""
        try:
            self.tables.set_watched_source(session_id, path, signature)
        except sqlite3.Error as exc:
            self.abort()
            raise BatchAbortedError(f"the open batch was lost: {describe(exc)}") from exc

    def hold(self, session_id: str, reason: str) -> None:
        """Mark a session *held*, in the open batch: its log broke after some of its
        events were applied (``indexer.sources.files``), as a seq gap holds a Kafka
        session; its next applied batch clears the mark. A failure loses the batch."""
        try:
            self.tables.tx.begin()
            self.tables.set_held(session_id, reason)
        except sqlite3.Error as exc:
            self.abort()
            raise BatchAbortedError(f"the open batch was lost: {describe(exc)}") from exc

    def mark_caught_up(self, when: float) -> None:
        """Record that this dir's Kafka indexer reached the end of its topic once (a
        short transaction of its own, between batches)."""
        with self.tables.tx.step():
            self.tables.mark_caught_up(when)

    def purge_if_due(self) -> PurgeReport | None:
        """Run a due purge pass between batches (the idle tick of a long-running role)."""
        return self.purger.run_if_due()

    def _repair_index(self, session_ids: set[str]) -> None:
        try:
            self.writer.reindex(sorted(session_ids))
            self.index.commit()
        except Exception:
            self.index.rollback()
            log.exception(
                "index repair of %d sessions failed; re-applying their records converges",
                len(session_ids),
            )

    def abort(self) -> None:
        self._touched.clear()
        self.checkpoint.abort()

    def offsets(self) -> dict[tuple[str, int], int]:
        return self.tables.offsets()

    def close(self) -> None:
        self.checkpoint.abort()
        self.tables.close()
        self.index.close()
