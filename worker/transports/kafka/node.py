"""``sessionq node``: a partitioned node (DESIGN.md "Partitioned nodes").

One consumer-group member on the events and the requests topic with the co-partitioning
assignor (``indexer.kafka.assignor``): the member that owns events-p also answers
requests-p, from a store of its own for p (``indexer.sources.partitions``). The order:

1. start — the events and requests topics must have the same partition count (else one
   line, exit 2) and the lineage topic must exist; the node's lineage copy catches up
   with the whole lineage topic (``indexer.lineage.follower``) before the node joins;
2. join — on each assignment the partition set opens, restores, positions or releases
   the partition stores; a partition answers once it caught up (``PartitionSet``);
3. loop — each poll of the group member is split: events records go to their
   partition's store, request records to the worker (``worker.transports.kafka.node_worker``); the
   standby copies' consumer feeds the standby stores; due batches commit; request
   offsets commit after their replies; the lineage copy follows in its own task.

Request intake never blocks event application: fetched requests are handed to the
worker in order by a chain of tasks; only while more than ``max_admitted`` of them wait
for admission are the requests partitions paused.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

from indexer.errors import INVALID_CONFIG, SessionqError
from indexer.kafka.client import InRecord, Producer
from indexer.kafka.dead_letter import DLQ_MAX_BYTES
from indexer.kafka.node_group import CopySource, NodeGroup, partition_for
from indexer.lineage.follower import LineageFollower, LineageWriter
from indexer.lineage.table import LineageTable
from indexer.metrics import Metrics
from indexer.sources.partitions.replica import ReplicaSettings, partition_dir
from indexer.sources.partitions.retention import PartitionRetention
from indexer.sources.partitions.set import PartitionSet
from indexer.sources.partitions.snapshots import PartitionSnapshots
from indexer.sources.partitions.status import read_status, write_status
from worker.host.topics import rebuilt_warning
from worker.settings_node import NodeSettings
from worker.transports.kafka.node_metrics import NodeMetrics
from worker.transports.kafka.node_worker import NodeWorker

log = logging.getLogger("sessionq.node")
POLL_MS = 50
READY_CHECK_S = 0.1
COMMIT_REQUESTS_S = 0.2
METRICS_S = 5.0


class NodeConfigError(SessionqError):
    """The topics cannot carry partitioned nodes (one line, exit 2)."""

    code = INVALID_CONFIG


class _Requests:
    """The worker's view of the node's group member: the requests topic only."""

    def __init__(self, group: NodeGroup) -> None:
        self.group = group
        self.topic = group.topic

    async def start(
        self,
        on_revoked: Callable[[list[int]], Awaitable[None]],
        on_assigned: Callable[[list[int]], Awaitable[None]],
    ) -> None:
        raise RuntimeError("a node joins its group itself (Node.start)")

    async def poll(self, timeout_ms: int, max_records: int) -> list[InRecord]:
        raise RuntimeError("a node polls its group itself (Node.run)")

    async def commit(self, offsets: dict[int, int]) -> None:
        await self.group.commit(offsets)

    async def lag(self) -> dict[int, int]:
        return await self.group.lag()

    async def stop(self) -> None:
        return None  # the node stops the member


class Node:
    """One partitioned node (module docstring)."""

    def __init__(self, settings: NodeSettings, *, metrics: Metrics | None = None) -> None:
        kafka = settings.kafka
        self.settings = settings
        self.kafka = kafka
        self.metrics = metrics if metrics is not None else Metrics("node")
        self.partition_count = 0
        self.lineage = LineageTable(settings.data)
        self.follower = LineageFollower(kafka, self.lineage)
        self.lineage_writer = LineageWriter(kafka)
        self.dlq = Producer(kafka, client_id="sessionq-node-dlq", max_request_size=DLQ_MAX_BYTES)
        self.group = NodeGroup(
            kafka,
            settings.group,
            standby_replicas=settings.standby_replicas,
            local=lambda: self.partitions.local_state(),
            session_timeout_ms=settings.session_timeout_ms,
        )
        self.copies = CopySource(kafka)
        self.partitions = PartitionSet(
            settings.data,
            ReplicaSettings(
                events_topic=kafka.events_topic,
                dlq_topic=kafka.dlq_topic,
                batch_records=settings.batch_records,
                batch_ms=settings.batch_ms,
                commit_every_bytes=settings.commit_every_bytes,
                redaction=settings.redaction,
                failpoints=settings.failpoints,
            ),
            group=self.group,
            copies=self.copies,
            dlq=self.dlq,
            lineage=self.lineage_writer,
            metrics=self.metrics,
            snapshot_from=settings.snapshot_from,
            s3=settings.s3,
            on_ready=self._ready,
            on_lost=self._lost,
        )
        self.worker = NodeWorker(
            settings,
            lineage=self.lineage,
            home=self.home,
            source=_Requests(self.group),
            metrics=self.metrics,
        )
        self.snapshots = (
            None
            if settings.snapshot_to is None
            else PartitionSnapshots(
                settings.snapshot_to,
                settings.s3,
                every_s=settings.snapshot_every,
                keep=settings.snapshot_keep,
            )
        )
        self.retention = (
            None
            if settings.retain_days is None
            else PartitionRetention(
                self.dlq,
                kafka.events_topic,
                retain_days=settings.retain_days,
                check_s=settings.retention_check_ms / 1000,
            )
        )
        self.gauges = NodeMetrics(self.metrics.registry)
        self._stopping = asyncio.Event()
        self._backlog = 0  # request records fetched, not yet admitted by the worker
        self._intake: asyncio.Task[None] | None = None
        self._requests_paused = False
        self._follow: asyncio.Task[None] | None = None
        self.joined = False

    def home(self, key: str) -> int:
        """The partition a workspace key routes to."""
        return partition_for(key.encode(), self.partition_count)

    # ---- 1. start ------------------------------------------------------------------------------
    async def start(self, *, lineage_timeout_s: float = 600.0) -> None:
        await self.group.connect()
        counts = await self.group.partition_counts(
            [self.kafka.events_topic, self.kafka.requests_topic, self.kafka.lineage_topic]
        )
        events, requests = counts[self.kafka.events_topic], counts[self.kafka.requests_topic]
        missing = [t for t, n in counts.items() if n == 0]
        if missing:
            raise NodeConfigError(
                f"topic {', '.join(missing)} does not exist: run `sessionq topics create`"
            )
        if events != requests:
            raise NodeConfigError(
                f"{self.kafka.events_topic} has {events} partitions and"
                f" {self.kafka.requests_topic} {requests}: a node needs them equal"
                " (co-partitioned by workspace); recreate them with `sessionq topics create`"
            )
        before = (read_status(self.settings.data) or {}).get("partitions")
        if isinstance(before, int) and before not in (0, events):
            log.warning("%s", rebuilt_warning(self.kafka, before, events))
        self.partition_count = events
        self.worker.partitions = events
        for client in (self.dlq, self.lineage_writer, self.copies, self.worker.producer):
            await client.start()
        await self.follower.start()
        deadline = time.monotonic() + lineage_timeout_s
        while not self.follower.caught_up and time.monotonic() < deadline:
            if self._stopping.is_set():
                return
            await self.follower.step()
        self._follow = asyncio.create_task(self.follower.run(self._stopping), name="lineage")
        self.group.join(self._on_revoked, self._on_assigned)
        self.worker._started = True
        self.joined = True
        log.info("node joined group %s (%d partitions)", self.settings.group, events)

    # ---- 2. rebalances -------------------------------------------------------------------------
    async def _on_revoked(self) -> None:
        self.partitions.revoked()
        await self.worker._on_revoked(list(self.worker.assigned))

    async def _on_assigned(self, owned: list[int], standby: list[int]) -> None:
        await self.partitions.assigned(owned, standby)
        await self.worker._on_assigned(owned)
        self._requests_paused = False
        self.write_status()

    def _ready(self, partition: int) -> None:
        self.worker.serve(partition, partition_dir(self.settings.data, partition))
        self.write_status()

    def _lost(self, partition: int) -> None:
        self.worker.unserve(partition)

    def write_status(self) -> None:
        """``<data>/node.json``: the partitions owned (and ready) and copied now."""
        write_status(
            self.settings.data,
            partitions=self.partition_count,
            owned=self.partitions.active,
            ready=self.partitions.ready(),
            standby=sorted(self.partitions.standby),
        )

    # ---- 3. loop -------------------------------------------------------------------------------
    async def run(self, *, timeout: float | None = None) -> None:
        deadline = None if timeout is None else time.monotonic() + timeout
        last = dict.fromkeys(("ready", "commit", "metrics"), time.monotonic())
        while not self._stopping.is_set():
            if deadline is not None and time.monotonic() >= deadline:
                break
            records = await self.group.poll(
                timeout_ms=POLL_MS, max_records=self.settings.batch_records
            )
            events = [r for r in records if r.topic == self.kafka.events_topic]
            self._take_requests([r for r in records if r.topic == self.kafka.requests_topic])
            await self.partitions.apply(events, "group")
            copied = await self.copies.poll(timeout_ms=0, max_records=self.settings.batch_records)
            await self.partitions.apply(copied, "copy")
            await self.partitions.commit_due(idle=not events and not copied)
            now = time.monotonic()
            if now - last["ready"] >= READY_CHECK_S:
                await self.partitions.check_ready()
                last["ready"] = now
            if now - last["commit"] >= COMMIT_REQUESTS_S:
                await self.worker._step(self.worker._commit())
                last["commit"] = now
            if now - last["metrics"] >= METRICS_S:
                await self.refresh_metrics()
                last["metrics"] = now
            if self.snapshots is not None:
                self.snapshots.poll(self.partitions.owned_dirs)
            if self.retention is not None:
                await self.retention.poll(
                    self.partitions.replicas[p] for p in self.partitions.ready()
                )

    def _take_requests(self, records: list[InRecord]) -> None:
        """Hand requests to the worker without blocking the loop (module docstring):
        batches are taken in order, each after the one before; past ``max_admitted``
        records waiting for admission, the requests partitions pause until half of
        that is left (pausing costs a fetch round trip, so only under overload)."""
        if records:
            self._backlog += len(records)
            self._intake = asyncio.create_task(self._take_after(self._intake, records))
        bound = self.settings.max_admitted
        if self._backlog > bound and not self._requests_paused:
            self.group.pause(self.kafka.requests_topic, self.partitions.active)
            self._requests_paused = True
        elif self._requests_paused and self._backlog <= bound // 2:
            self.group.resume(self.kafka.requests_topic, self.partitions.ready())
            self._requests_paused = False

    async def _take_after(
        self, previous: asyncio.Task[None] | None, records: list[InRecord]
    ) -> None:
        try:
            if previous is not None:
                await asyncio.wait([previous])
            owned = set(self.partitions.active)  # another member answers the others
            await self.worker._take([r for r in records if r.partition in owned])
        finally:
            self._backlog -= len(records)

    async def refresh_metrics(self) -> None:
        try:
            lag = await self.partitions.lag()
        except Exception as exc:  # the broker away: the next refresh retries
            log.debug("lag refresh failed: %s", exc)
            return
        self.gauges.update(self.partitions, lag, self.follower.caught_up)

    async def ready(self) -> bool:
        """Ready once joined, with the lineage copy caught up and no owned partition
        still restoring or catching up."""
        owned = self.partitions.active
        return (
            self.joined
            and self.follower.caught_up
            and not self._stopping.is_set()
            and len(self.partitions.ready()) == len(owned)
        )

    def readiness_notes(self) -> dict[str, str]:
        notes = self.worker.readiness_notes()
        notes["owned"] = ",".join(map(str, self.partitions.active))
        notes["ready"] = ",".join(map(str, self.partitions.ready()))
        notes["standby"] = ",".join(map(str, sorted(self.partitions.standby)))
        return notes

    async def stop(self) -> None:
        self._stopping.set()
        await self.worker.stop()

    async def close(self) -> None:
        """In-flight calls drain (the worker's bounds), open batches commit, the member
        leaves its group, the stores close."""
        self._stopping.set()
        if self._intake is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._intake, 2.0)
        await self.worker.close()
        try:
            if self.snapshots is not None:
                await self.snapshots.close()
            await self.partitions.close()
        finally:
            for step in (self.group.stop, self.copies.stop, self.follower.stop):
                with contextlib.suppress(Exception):
                    await step()
            if self._follow is not None:
                self._follow.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await self._follow
            for client in (self.lineage_writer, self.dlq):
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(client.stop(), 2.0)
            self.worker.close_services()
            self.lineage.close()
