"""Between the local source's passes, in the process that writes: the ``--retain-days``
check when it is due (delete records applied through the record loop, committed at
once), then a due purge pass (``indexer.store.maintenance.purge``). Errors are logged;
the next tick retries."""

from __future__ import annotations

import logging
import time

from indexer.errors import SessionqError
from indexer.metrics import Metrics
from indexer.model.records import DeleteRecord
from indexer.sources.loop import RecordLoop
from indexer.store.maintenance.retention import Retention
from indexer.store.records.store import Store

log = logging.getLogger("sessionq.sources")


class Housekeeping:
    def __init__(self, metrics: Metrics, retain_days: int | None, check_s: float) -> None:
        self.metrics = metrics
        self.retention = None if retain_days is None else Retention(retain_days)
        self.check_s = check_s
        self.expired = 0  # sessions deleted by retention
        self._next_check = 0.0

    def run(self, store: Store) -> None:
        """One tick (in a worker thread, between passes)."""
        now = time.monotonic()
        if self.retention is not None and now >= self._next_check:
            self._next_check = now + self.check_s
            try:
                self._expire(store, self.retention)
            except SessionqError as exc:
                store.abort()
                log.error("retention check failed, retrying later: %s", exc.message)
        store.purge_if_due()

    def _expire(self, store: Store, retention: Retention) -> None:
        expired = retention.expired(store.tables)
        if not expired:
            return
        loop = RecordLoop(store, self.metrics)
        gone = 0
        for e in expired:
            result = loop.apply(DeleteRecord(v=1, kind="delete", session_id=e.session_id))
            gone += result.applied is not None and not result.applied.noop
        loop.commit()
        self.expired += gone
        self.metrics.retention_deletes.inc(gone)
        log.info(
            "retention: deleted %d sessions whose newest event is older than %d days"
            " (the oldest at %d ms)",
            gone,
            retention.retain_days,
            expired[0].last_event_ms,
        )
