"""The record loop's one step, shared by every source: apply a unit through the record
path, count what it did, and hand back whose fault a failure was.

Every source (``files``: logs once, ``sessionq ingest``; ``local``: watched logs,
``serve`` and ``mcp``; ``kafka``: the events topic) applies its records here and
commits here. The classification is the store's (``Store.apply``); a source only
chooses what to do with each outcome:

* ``Result.applied`` — stored (or an identical re-delivery: ``noop``);
* ``Result.error`` — the record's fault: rejected for its content
  (``RecordRejectedError``), or failed for another reason (``Result.failed``: a bug, a
  document the index refused); the rest of the batch stands; the source reports the
  file, dead-letters the record, or reads the log again later;
* ``BatchAbortedError`` (raised) — the batch's fault: nothing since the last commit is
  stored; the source replays from its last committed position.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass

from indexer.errors import BatchAbortedError, RecordRejectedError, SessionqError
from indexer.logs.reader import SessionLog
from indexer.metrics import Metrics
from indexer.model.records import EventStreamRecord, decode_record
from indexer.store.records.plan import FreshLog
from indexer.store.records.store import Store
from indexer.store.records.writer import Applied

__all__ = ["BatchAbortedError", "RecordLoop", "Result"]

log = logging.getLogger("sessionq.records")


@dataclass(frozen=True, slots=True)
class Result:
    """One unit's result: what it changed, or why it was refused (never both)."""

    applied: Applied | None = None
    error: SessionqError | None = None

    @property
    def failed(self) -> bool:
        """The record failed for a reason that is not its content (a bug, an index that
        refused a document, an I/O error that was not the batch's): a later attempt may
        succeed. Otherwise the store rejected the record itself (``RecordRejectedError``)."""
        return self.error is not None and not isinstance(self.error, RecordRejectedError)


class RecordLoop:
    """Applies units to one store and commits them (module docstring)."""

    def __init__(self, store: Store, metrics: Metrics | None = None) -> None:
        self.store = store
        self.metrics = metrics
        self.applied = 0
        self.noop = 0
        self.refused = 0
        self.commits = 0
        self.last_commit_s = 0.0

    def apply(self, unit: EventStreamRecord | SessionLog) -> Result:
        """Apply one record (or one whole log); raises ``BatchAbortedError`` when the
        batch is lost."""
        try:
            applied = self.store.apply(unit)
        except BatchAbortedError:
            raise
        except SessionqError as exc:
            self.refused += 1
            return Result(error=exc)
        self._count(applied)
        return Result(applied=applied)

    def apply_value(self, value: bytes | None) -> tuple[EventStreamRecord | None, Result]:
        """Apply one encoded record (a topic's value): the record it decoded to (None:
        the value is no record, a ``RecordRejectedError`` in the result) and its result;
        raises ``BatchAbortedError`` when the batch is lost."""
        try:
            record = decode_record(value)
        except RecordRejectedError as exc:
            self.refused += 1
            return None, Result(error=exc)
        return record, self.apply(record)

    def apply_fresh(self, fresh: FreshLog) -> Result | None:
        """A log planned off the writer; None when the store holds its session already
        (apply the log itself then)."""
        try:
            applied = self.store.apply_fresh(fresh)
        except BatchAbortedError:
            raise
        except SessionqError as exc:
            self.refused += 1
            return Result(error=exc)
        if applied is None:
            return None
        self._count(applied)
        return Result(applied=applied)

    def _count(self, applied: Applied) -> None:
        if applied.noop:
            self.noop += 1
            if self.metrics is not None:
                self.metrics.records_noop.inc()
            return
        self.applied += 1
        if self.metrics is not None:
            self.metrics.records_applied.labels(applied.kind).inc()
            self.metrics.last_applied.set(time.time())

    def commit(self, offsets: Mapping[tuple[str, int], int] | None = None) -> None:
        """Make the batch durable; raises ``BatchAbortedError`` when it is lost."""
        started = time.perf_counter()
        self.store.commit(offsets)
        self.commits += 1
        self.last_commit_s = time.perf_counter() - started
        if self.metrics is not None:
            self.metrics.commit_seconds.observe(self.last_commit_s)

    def abort(self) -> None:
        self.store.abort()
