"""The Kafka source: every partition of the events topic -> the store, batch by batch.

Order of one batch: poll records (all partitions) -> decode each record and apply it
through the record loop (``indexer.sources.loop``) -> when N records or T ms have passed,
wait for the DLQ acknowledgements, then commit the store with the next offsets (Tantivy,
then one SQLite transaction holding rows + offsets; ``indexer.store.records.checkpoint``).
Policy on the loop's outcomes: a record the store refuses (or a value that is no record)
is queued to the DLQ with its reason and source coordinates, and its partition keeps
flowing; a lost batch (a failed commit, SQLite ending the transaction itself, a full
disk) makes the source seek back to the stored offsets and replay it after a back-off,
so nothing is lost and nothing is applied twice in effect. While batches keep failing
the indexer reports not ready (``caught_up``; the cause is in ``readiness_notes``, one
line, e.g. ``disk full: …``) and recovers by itself once a commit lands.

The indexer holds its data dir's writer lease (``indexer.store.lease``) and never hands
it over: its data dir is a replica of the topic.

With ``--snapshot-every`` / ``--snapshot-to`` the indexer also publishes snapshots of its
data dir (``indexer.snapshot.schedule``): started between batches, run beside it, never
stopping it.

Between batches (after a commit, or idle): with ``--retain-days`` the retention check
publishes delete records for expired sessions to the events topic (they come back and
are applied like any record, on every replica), then a due purge pass runs
(``indexer.store.maintenance.purge``: erased bytes out of the data dir's files).
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from indexer.errors import BatchAbortedError
from indexer.kafka.client import EventsSource, InRecord, Producer
from indexer.kafka.dead_letter import DLQ_MAX_BYTES, DeadLetters
from indexer.metrics import Metrics
from indexer.model.records import DeleteRecord, encode_record
from indexer.settings import IndexerSettings
from indexer.snapshot.schedule import SnapshotSchedule
from indexer.sources.loop import RecordLoop
from indexer.store.failure import describe
from indexer.store.lease import WriterLease
from indexer.store.maintenance.purge import PurgeReport
from indexer.store.maintenance.retention import Retention
from indexer.store.records.store import Store

log = logging.getLogger("sessionq.indexer")
LAG_REFRESH_S = 5.0  # consumer-lag gauge refresh period
RETRY_FIRST_S = 0.5  # back-off after a lost batch, doubling up to RETRY_MAX_S
RETRY_MAX_S = 30.0


@dataclass(slots=True)
class IndexerCounters:
    applied: int = 0
    noop: int = 0
    dead_lettered: int = 0
    commits: int = 0
    last_commit_ms: float = 0.0
    expired: int = 0  # delete records published for sessions past --retain-days
    purges: int = 0
    lag: dict[int, int] = field(default_factory=dict)


class Indexer:
    """Consumes the events topic into one data directory (the single writer)."""

    def __init__(
        self,
        settings: IndexerSettings,
        *,
        on_commit: Callable[[IndexerCounters], Awaitable[None] | None] | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        kafka = settings.kafka
        self.settings = settings
        self.kafka = kafka
        self.metrics = metrics if metrics is not None else Metrics("indexer")
        self.counters = IndexerCounters()
        self.lease = WriterLease(settings.data, "indexer")
        self._store: Store | None = None  # opened by start(), once Kafka answered
        self._loop: RecordLoop | None = None
        self.source = EventsSource(kafka, kafka.events_topic)
        self.dlq = Producer(kafka, client_id="sessionq-indexer-dlq", max_request_size=DLQ_MAX_BYTES)
        # --retain-days: expired sessions leave as delete records on the events topic.
        self.retention = None if settings.retain_days is None else Retention(settings.retain_days)
        self.deletes = (
            None
            if self.retention is None
            else Producer(kafka, client_id="sessionq-indexer-retention")
        )
        self._next_retention = 0.0
        self._offsets: dict[tuple[str, int], int] = {}
        self.dead_letters = DeadLetters(self.dlq, kafka.dlq_topic, self.metrics)
        self._on_commit = on_commit
        self._stopping = asyncio.Event()
        self._caught_up = False
        self._retry_s = 0.0
        self.failing: str | None = None  # why the last batch was lost, until a commit lands
        self.snapshots: SnapshotSchedule | None = None
        if settings.snapshot_to is not None and settings.snapshot_every is not None:
            self.snapshots = SnapshotSchedule(
                settings.data,
                every_s=settings.snapshot_every,
                location=settings.snapshot_to,
                keep=settings.snapshot_keep,
                s3=settings.s3,
                registry=self.metrics.registry,
            )

    @property
    def store(self) -> Store:
        if self._store is None:
            raise RuntimeError("the indexer's store opens in start()")
        return self._store

    @property
    def loop(self) -> RecordLoop:
        if self._loop is None:
            raise RuntimeError("the indexer's store opens in start()")
        return self._loop

    async def start(self) -> None:
        """Kafka first (the producers, every partition of the events topic), then the
        data dir (the writer lease, the store), then the positions stored there: an
        indexer that cannot reach its broker or topic creates nothing."""
        await self.dlq.start()
        if self.deletes is not None:
            await self.deletes.start()
        await self.source.connect()
        self.lease.acquire_or_fail()
        self._store = Store(
            self.settings.data,
            on_purge=self._purged,
            failpoints=self.settings.failpoints,
            redaction=self.settings.redaction,
            batch_bytes=self.settings.commit_every_bytes,
        )
        self._loop = RecordLoop(self._store, self.metrics)
        await self.source.seek(self._store.offsets())

    async def stop(self) -> None:
        self._stopping.set()

    async def close(self) -> None:
        try:
            if self.snapshots is not None:
                await self.snapshots.close()
            await self.source.stop()
        finally:
            try:
                await self.dlq.stop()
                if self.deletes is not None:
                    await self.deletes.stop()
            finally:
                if self._store is not None:
                    self._store.close()
                self.lease.release()

    def apply(self, record: InRecord) -> bool:
        """Apply one record; a refused one is queued for the DLQ instead. False when the
        open batch was lost and the caller must replay from the stored offsets."""
        try:
            _, result = self.loop.apply_value(record.value)
        except BatchAbortedError as exc:
            log.error(
                "batch lost at %s[%d]@%d: %s",
                record.topic,
                record.partition,
                record.offset,
                exc.message,
                extra=_at(record),
            )
            self._fail(exc.message)
            return False
        if result.error is not None:
            if result.failed:
                log.error(
                    "unexpected failure applying %s[%d]@%d: %s",
                    record.topic,
                    record.partition,
                    record.offset,
                    result.error.message,
                    exc_info=result.error.__cause__,
                    extra={**_at(record), "code": result.error.code},
                )
            self.counters.dead_lettered += 1
            self.dead_letters.add(record, result.error.message, result.error.code)
        else:
            assert result.applied is not None
            if result.applied.noop:
                self.counters.noop += 1
            else:
                self.counters.applied += 1
        self._offsets[(record.topic, record.partition)] = record.offset + 1
        return True

    def _purged(self, report: PurgeReport) -> None:
        self.counters.purges += 1
        self.metrics.purge_seconds.observe(report.seconds)
        self.metrics.purge_pending.set(0 if report.complete else 1)

    async def expire(self) -> int:
        """Publish a delete record for each session past ``--retain-days``
        (``indexer.store.maintenance.retention``; at most one bounded check's worth) and wait
        for the acknowledgements. The deletes come back through the topic like any other record,
        here and on every other replica. A failed send is logged; the next check resends."""
        if self.retention is None or self.deletes is None:
            return 0
        expired = self.retention.expired(self.store.tables)
        if not expired:
            return 0
        try:
            futures = [
                await self.deletes.enqueue(
                    self.kafka.events_topic,
                    encode_record(DeleteRecord(v=1, kind="delete", session_id=e.session_id)),
                    key=e.routing_key.encode(),
                )
                for e in expired
            ]
            await asyncio.gather(*futures)
        except Exception as exc:
            log.error("retention: publishing %d delete records failed: %s", len(expired), exc)
            self.retention.forget(e.session_id for e in expired)
            return 0
        self.counters.expired += len(expired)
        self.metrics.retention_deletes.inc(len(expired))
        log.info(
            "retention: published delete records for %d sessions whose newest event is older"
            " than %d days (the oldest at %d ms)",
            len(expired),
            self.retention.retain_days,
            expired[0].last_event_ms,
            extra={"expired": len(expired), "retain_days": self.retention.retain_days},
        )
        return len(expired)

    async def _housekeeping(self) -> None:
        """Between batches: the retention check when due, then a due purge pass.

        Retention trusts this replica's view of the sessions only while it is caught up
        (at most one batch behind on every partition): a replica still replaying would
        take a session whose newer events it has not read yet for an idle one."""
        if self.retention is not None and time.monotonic() >= self._next_retention:
            self._next_retention = time.monotonic() + self.settings.retention_check_ms / 1000
            lag = await self.lag()
            if self._caught_up and all(v <= self.settings.batch_records for v in lag.values()):
                await self.expire()
            else:
                log.info("retention: check skipped, this replica is not caught up")
        self.store.purge_if_due()

    def _fail(self, cause: str) -> None:
        if self.failing is None:
            log.error("not ready until a batch commits again: %s", cause)
        self.failing = cause

    def readiness_notes(self) -> dict[str, str]:
        """Extra ``/readyz`` fields: the cause while batches are being lost."""
        return {} if self.failing is None else {"failing": self.failing}

    async def replay(self) -> None:
        """After a lost batch: forget it, seek back to the stored offsets, back off."""
        self._offsets.clear()
        self.dead_letters.clear()
        self._retry_s = min(RETRY_MAX_S, max(RETRY_FIRST_S, self._retry_s * 2))
        await self.source.seek(self.store.offsets())
        log.warning("replaying from the stored offsets in %.1fs", self._retry_s)
        await asyncio.sleep(self._retry_s)

    async def commit(self) -> None:
        """DLQ acknowledgements first, then the store with the consumed offsets."""
        started = time.perf_counter()
        await self.dead_letters.send()
        if not self._offsets:
            return
        try:
            self.loop.commit(self._offsets)
        except BatchAbortedError as exc:
            log.error("%s", exc.message)
            self._fail(exc.message)
            await self.replay()
            return
        self._offsets.clear()
        self._retry_s = 0.0
        if self.failing is not None:
            log.warning("batches commit again (was: %s)", self.failing)
            self.failing = None
        self.counters.commits += 1
        self.counters.last_commit_ms = (time.perf_counter() - started) * 1000
        if self._on_commit is not None:
            res = self._on_commit(self.counters)
            if res is not None:
                await res

    async def run(self, *, max_records: int | None = None, timeout: float | None = None) -> None:
        """Consume until stopped; bounded by ``max_records`` / ``timeout`` (seconds) for tests."""
        seen = 0
        deadline = None if timeout is None else time.monotonic() + timeout
        batch_started = time.monotonic()
        batch_count = 0
        last_lag = time.monotonic()
        while not self._stopping.is_set():
            if deadline is not None and time.monotonic() >= deadline:
                break
            if max_records is not None and seen >= max_records:
                break
            records = await self.source.poll(
                timeout_ms=min(50, self.settings.batch_ms),
                max_records=self.settings.batch_records,
            )
            for record in records:
                if not self.apply(record):
                    await self.replay()
                    records, batch_count = [], 0
                    break
            seen += len(records)
            batch_count += len(records)
            elapsed_ms = (time.monotonic() - batch_started) * 1000
            if batch_count and (
                batch_count >= self.settings.batch_records
                or elapsed_ms >= self.settings.batch_ms
                or self.store.batch_full
            ):
                await self.commit()
                batch_count = 0
                batch_started = time.monotonic()
            elif not batch_count:
                batch_started = time.monotonic()
                if not records and not self._caught_up:
                    await self.caught_up()
            if not batch_count:  # between batches: just committed, or idle
                await self._housekeeping()
            if time.monotonic() - last_lag >= LAG_REFRESH_S:
                await self.lag()
                last_lag = time.monotonic()
            if self.snapshots is not None and not batch_count:
                self.snapshots.poll()  # between batches: everything applied is committed
        await self.commit()

    async def lag(self) -> dict[int, int]:
        """Per-partition lag; also feeds the lag gauge and readiness (caught up = all 0)."""
        self.counters.lag = await self.source.lag()
        for partition, lag in self.counters.lag.items():
            self.metrics.consumer_lag.labels(self.kafka.events_topic, str(partition)).set(lag)
        return self.counters.lag

    async def caught_up(self) -> bool:
        """Readiness: sticky once every partition reached its end offset (lag 0) one time,
        so steady traffic does not make a healthy replica flap. Never ready while batches
        are being lost (``failing``)."""
        if self.failing is not None:
            return False
        if self._caught_up:
            return True
        if all(v == 0 for v in (await self.lag()).values()) and not self._offsets:
            try:
                self.store.mark_caught_up(time.time())
            except sqlite3.Error as exc:
                self._fail(describe(exc))
                return False
            self._caught_up = True
        return self._caught_up


def _at(record: Any) -> dict[str, Any]:
    """Where a record is, as log fields (``--log-format json``)."""
    return {"topic": record.topic, "partition": record.partition, "offset": record.offset}
