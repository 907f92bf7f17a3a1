"""``--retain-days`` on a partitioned node: per partition, by its owner.

Every ``check_s`` the node looks, in each partition it owns and that is ready (caught up:
a store still replaying would take a session with newer events it has not read yet
for an idle one), for sessions past the retention (``indexer.store.maintenance.
retention``), and publishes their delete records to the events topic keyed by their
workspace, so they land in the same partition; the owner applies them like any record
(and writes their lineage tombstones), every standby copy too.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable

from indexer.kafka.client import Producer
from indexer.model.records import DeleteRecord, encode_record
from indexer.sources.partitions.replica import PartitionReplica
from indexer.store.maintenance.retention import Retention

log = logging.getLogger("sessionq.node")


class PartitionRetention:
    def __init__(self, producer: Producer, topic: str, *, retain_days: int, check_s: float) -> None:
        self.producer = producer
        self.topic = topic
        self.check_s = check_s
        self._retention: dict[int, Retention] = {}
        self.retain_days = retain_days
        self._next = time.monotonic() + check_s
        self.published = 0

    async def poll(self, ready: Iterable[PartitionReplica]) -> int:
        """Publish the deletes of a due check; the number published."""
        if time.monotonic() < self._next:
            return 0
        self._next = time.monotonic() + self.check_s
        count = 0
        for replica in ready:
            if replica.store is None or replica.open_batch:
                continue
            retention = self._retention.setdefault(replica.partition, Retention(self.retain_days))
            expired = retention.expired(replica.store.tables)
            if not expired:
                continue
            try:
                futures = [
                    await self.producer.enqueue(
                        self.topic,
                        encode_record(DeleteRecord(v=1, kind="delete", session_id=e.session_id)),
                        key=e.routing_key.encode(),
                    )
                    for e in expired
                ]
                await asyncio.gather(*futures)
            except Exception as exc:
                log.error("partition %d: retention deletes failed: %s", replica.partition, exc)
                retention.forget(e.session_id for e in expired)
                continue
            count += len(expired)
            log.info(
                "partition %d: published delete records for %d sessions older than %d days",
                replica.partition,
                len(expired),
                self.retain_days,
            )
        self.published += count
        return count
