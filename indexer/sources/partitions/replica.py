"""One partition's store on a node: a data dir of its own (``<node dir>/partitions/<p>``,
with its own writer lease), fed by that partition of the events topic.

The order of one batch is the full-replica indexer's (``indexer.sources.kafka``): decode
and apply each record through the record loop; when N records or T ms have passed, wait
for the dead letters and (owner only) the lineage entries to be acknowledged, then
commit the store with the next offset (Tantivy, then one SQLite transaction with rows +
offset). A refused record is dead-lettered and the partition flows on; a lost batch is
forgotten and replayed from the stored offset by the caller (``apply``/``commit`` say
so).

An owner (``active``) writes the global lineage (``indexer.lineage.follower``) for each
header and delete it applies; a standby copy applies the same records and writes
nothing else. Either role answers nothing itself: the node does.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from indexer.errors import BatchAbortedError
from indexer.failpoints import DISARMED, FailPoints
from indexer.kafka.client import InRecord, Producer
from indexer.kafka.dead_letter import DeadLetters
from indexer.lineage.entry import LineageEntry
from indexer.lineage.follower import LineageWriter
from indexer.metrics import Metrics
from indexer.model.header import parse_header
from indexer.model.records import DeleteRecord, HeaderRecord
from indexer.redact import DEFAULT, Redaction
from indexer.sources.loop import RecordLoop
from indexer.store.bounds import BATCH_BYTES
from indexer.store.lease import WriterLease
from indexer.store.maintenance.purge import PurgeReport
from indexer.store.private import make_dirs
from indexer.store.records.store import Store

log = logging.getLogger("sessionq.node")
Role = Literal["active", "standby"]
PARTITIONS_DIR = "partitions"


def partition_dir(node_dir: Path, partition: int) -> Path:
    return node_dir / PARTITIONS_DIR / str(partition)


@dataclass(frozen=True, slots=True)
class ReplicaSettings:
    """What every partition store of a node shares."""

    events_topic: str
    dlq_topic: str
    batch_records: int = 5000
    batch_ms: int = 250
    commit_every_bytes: int = BATCH_BYTES
    redaction: Redaction = DEFAULT
    failpoints: FailPoints = DISARMED


class PartitionReplica:
    """The store of partition ``partition`` (module docstring)."""

    def __init__(
        self,
        node_dir: Path,
        partition: int,
        settings: ReplicaSettings,
        *,
        dlq: Producer,
        lineage: LineageWriter,
        metrics: Metrics,
    ) -> None:
        self.partition = partition
        self.data_dir = partition_dir(node_dir, partition)
        self.settings = settings
        self.role: Role = "standby"
        self._lineage = lineage
        self.lease = WriterLease(self.data_dir, "indexer")
        self.store: Store | None = None
        self.loop: RecordLoop | None = None
        self._metrics = metrics
        self._next: int | None = None  # next offset applied in the open batch
        self._count = 0
        self._started = 0.0
        self._dead_letters = DeadLetters(dlq, settings.dlq_topic, metrics)
        self._lineage_due: list[LineageEntry | str] = []
        self.applied = 0
        self.dead_lettered = 0
        self.failing: str | None = None
        self._committing = asyncio.Lock()

    # ---- lifecycle ----------------------------------------------------------------------------
    def open(self) -> None:
        """Take the partition dir's lease and open its store (idempotent)."""
        if self.store is not None:
            return
        make_dirs(self.data_dir)
        self.lease.acquire_or_fail()
        try:
            self.store = Store(
                self.data_dir,
                failpoints=self.settings.failpoints,
                redaction=self.settings.redaction,
                on_purge=self._purged,
                batch_bytes=self.settings.commit_every_bytes,
            )
        except BaseException:
            self.lease.release()
            raise
        self.loop = RecordLoop(self.store, self._metrics)

    def close(self) -> None:
        """Close the store and release the lease; the files stay for a later return."""
        if self.store is not None:
            self.store.close()
            self.store = None
            self.loop = None
            self.lease.release()

    def stored_offset(self) -> int | None:
        """The next offset stored with the data (None: nothing applied yet)."""
        assert self.store is not None
        return self.store.offsets().get((self.settings.events_topic, self.partition))

    @property
    def position(self) -> int:
        """The next offset this replica will apply (open batch included)."""
        if self._next is not None:
            return self._next
        return self.stored_offset() or 0

    # ---- records ------------------------------------------------------------------------------
    def apply(self, record: InRecord) -> bool:
        """Apply one record; False when the open batch was lost (the caller replays
        from ``stored_offset`` after ``forget``)."""
        assert self.loop is not None
        if self._count == 0:
            self._started = time.monotonic()
        try:
            decoded, result = self.loop.apply_value(record.value)
        except BatchAbortedError as exc:
            self._lost(record, exc.message)
            return False
        if result.error is not None:
            self.dead_lettered += 1
            self._dead_letters.add(record, result.error.message, result.error.code)
        elif result.applied is not None and not result.applied.noop:
            self.applied += 1
            if self.role == "active":
                self._note_lineage(decoded)
        self._next = record.offset + 1
        self._count += 1
        return True

    def _note_lineage(self, record: Any) -> None:
        if isinstance(record, HeaderRecord):
            self._lineage_due.append(LineageEntry.of(parse_header(record.header)))
        elif isinstance(record, DeleteRecord):
            self._lineage_due.append(record.session_id)

    def _lost(self, record: InRecord, why: str) -> None:
        log.error("batch lost at %s[%d]@%d: %s", record.topic, record.partition, record.offset, why)
        self.failing = why
        self.forget()

    def forget(self) -> None:
        """Drop the open batch (after a loss): the caller seeks back to ``stored_offset``."""
        self._next = None
        self._count = 0
        self._dead_letters.clear()
        self._lineage_due.clear()

    def due(self) -> bool:
        """The open batch reached N records, T ms or the store's bound of bytes."""
        if not self._count:
            return False
        elapsed_ms = (time.monotonic() - self._started) * 1000
        full = self.store is not None and self.store.batch_full
        return (
            full
            or self._count >= self.settings.batch_records
            or elapsed_ms >= self.settings.batch_ms
        )

    @property
    def open_batch(self) -> int:
        return self._count

    async def commit(self) -> bool:
        """Dead letters, then lineage entries acknowledged, then the store commit with
        the next offset. False when the batch was lost (the caller replays). One commit
        at a time: the record loop and a rebalance (the group's own task) both commit."""
        async with self._committing:
            if self.loop is None or not self._count:
                return True
            return await self._commit()

    async def _commit(self) -> bool:
        assert self.loop is not None
        await self._dead_letters.send()
        for change in self._lineage_due:
            if isinstance(change, str):
                await self._lineage.remove(change)
            else:
                await self._lineage.put(change)
        self._lineage_due.clear()
        await self._lineage.flush()
        assert self._next is not None
        try:
            self.loop.commit({(self.settings.events_topic, self.partition): self._next})
        except BatchAbortedError as exc:
            log.error("partition %d: %s", self.partition, exc.message)
            self.failing = exc.message
            self.forget()
            return False
        self._next = None
        self._count = 0
        self.failing = None
        return True

    def housekeeping(self) -> None:
        """Between batches: a due purge pass of the partition's files."""
        if self.store is not None and not self._count:
            self.store.purge_if_due()

    def _purged(self, report: PurgeReport) -> None:
        self._metrics.purge_seconds.observe(report.seconds)
