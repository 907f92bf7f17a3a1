"""The partition stores of one node and their life through rebalances (DESIGN.md
"Partitioned nodes"): which partitions it owns (``active``) or copies (``standby``), and
when an owned partition may answer.

On an assignment (owned O, standby S; the eager protocol revokes everything first, so
the set acts on the difference with what it had; a ready partition that stays owned
keeps answering throughout):

1. lost (neither in O nor in S): it stops answering (``on_lost``), its open batch is
   committed, its store closed, its files kept for a possible return;
2. owned -> standby, standby -> owned: the store stays open, only its feed changes
   (the group consumer for an owner, the copy consumer for a standby);
3. gained without a local store: with ``--snapshot-from`` its newest snapshot is
   restored first (in a thread; its events and requests partitions stay paused);
4. every gained partition is positioned at its stored offset and its requests stay
   paused while it catches up: it is *ready* once its committed offset reached the end
   offset the topic had when the check began; then its requests are resumed and
   ``on_ready(p)`` is called. Requests that arrived meanwhile wait in Kafka, within
   their deadline (the worker counts it from the record's timestamp).

A record is applied only at its replica's position or later, and only from the feed of
the replica's current role: a fetch that was under way during a change is dropped.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Literal

from indexer.kafka.client import InRecord, Producer
from indexer.kafka.node_group import CopySource, LocalState, NodeGroup
from indexer.lineage.follower import LineageWriter
from indexer.metrics import Metrics
from indexer.settings import S3Settings
from indexer.sources.partitions.replica import (
    PARTITIONS_DIR,
    PartitionReplica,
    ReplicaSettings,
    partition_dir,
)
from indexer.sources.partitions.snapshots import restore_partition
from indexer.store.layout import sqlite_path

log = logging.getLogger("sessionq.node")
Feed = Literal["group", "copy"]
State = Literal["restoring", "catching_up", "ready"]
REPLAY_BACKOFF_S = 0.5


def local_offsets(node_dir: Path, topic: str) -> dict[int, int]:
    """Partition -> stored next offset of every partition store under ``node_dir``."""
    out: dict[int, int] = {}
    root = node_dir / PARTITIONS_DIR
    if not root.is_dir():
        return out
    for child in root.iterdir():
        if not child.name.isdigit() or not sqlite_path(child).exists():
            continue
        try:
            conn = sqlite3.connect(f"file:{sqlite_path(child)}?mode=ro", uri=True, timeout=5)
            try:
                row = conn.execute(
                    "SELECT next_offset FROM offsets WHERE topic = ? AND partition = ?",
                    (topic, int(child.name)),
                ).fetchone()
            finally:
                conn.close()
        except sqlite3.Error:
            continue
        if row is not None:
            out[int(child.name)] = int(row[0])
    return out


class PartitionSet:
    """A node's partition stores (module docstring)."""

    def __init__(
        self,
        node_dir: Path,
        settings: ReplicaSettings,
        *,
        group: NodeGroup,
        copies: CopySource,
        dlq: Producer,
        lineage: LineageWriter,
        metrics: Metrics,
        snapshot_from: str | None = None,
        s3: S3Settings | None = None,
        on_ready: Callable[[int], None] = lambda p: None,
        on_lost: Callable[[int], None] = lambda p: None,
    ) -> None:
        self.node_dir = node_dir
        self.settings = settings
        self.group = group
        self.copies = copies
        self._dlq = dlq
        self._lineage = lineage
        self._metrics = metrics
        self.snapshot_from = snapshot_from
        self.s3 = s3 or S3Settings()
        self.on_ready = on_ready
        self.on_lost = on_lost
        self.replicas: dict[int, PartitionReplica] = {}
        self.state: dict[int, State] = {}  # owned partitions only
        self.standby: set[int] = set()
        self._targets: dict[int, int] = {}
        self._restores: dict[int, asyncio.Task[None]] = {}

    # ---- what the assignor reports --------------------------------------------------------------
    def local_state(self) -> LocalState:
        stores = local_offsets(self.node_dir, self.settings.events_topic)
        for p, replica in self.replicas.items():
            if replica.store is not None:
                stores[p] = replica.position
        return LocalState(frozenset(self.state), frozenset(self.standby), stores)

    @property
    def active(self) -> list[int]:
        return sorted(self.state)

    def ready(self) -> list[int]:
        return sorted(p for p, s in self.state.items() if s == "ready")

    def owned_dirs(self) -> Iterable[tuple[int, Path]]:
        return [(p, partition_dir(self.node_dir, p)) for p in self.ready()]

    # ---- rebalances ---------------------------------------------------------------------------
    def revoked(self) -> None:
        """A rebalance began. Nothing stops yet: the eager protocol revokes every
        partition, but most come back; ``assigned`` acts on the difference."""

    async def assigned(self, owned: list[int], standby: list[int]) -> None:
        """The new assignment (module docstring, steps 1-4)."""
        new_owned, new_standby = set(owned), set(standby) - set(owned)
        kept = {p for p in new_owned if self.state.get(p) == "ready" and self._opened(p)}
        for p in sorted(set(self.state) - new_owned):  # no longer answered here
            self.state.pop(p)
            self._targets.pop(p, None)
            self.on_lost(p)
        for p in sorted(set(self.replicas) - new_owned - new_standby):  # 1. lost
            await self._release(p)
        for p in sorted(new_standby):
            await self._open(p, "standby")
        self.standby = new_standby
        gained = sorted(new_owned - kept)
        self.group.pause(self.settings.events_topic, gained)
        self.group.pause(self.group.topic, gained)
        for p in sorted(kept):  # the group reset its position: the store knows better
            await self.group.seek_events(p, self.replicas[p].position)
        for p in gained:
            self.state[p] = "catching_up"
            self._targets.pop(p, None)
            await self._open(p, "active")
        await self.copies.assign(
            {p: self.replicas[p].stored_offset() for p in sorted(new_standby) if self._opened(p)}
        )
        log.info(
            "owned partitions %s (kept %s), standby %s",
            sorted(new_owned),
            sorted(kept),
            sorted(new_standby),
        )

    def _opened(self, p: int) -> bool:
        replica = self.replicas.get(p)
        return replica is not None and replica.store is not None

    async def _release(self, p: int) -> None:
        replica = self.replicas.pop(p)
        self.state.pop(p, None)
        self._targets.pop(p, None)
        self.standby.discard(p)
        if replica.store is not None:
            await replica.commit()
        replica.close()
        log.info("partition %d released (its store stays in %s)", p, replica.data_dir)

    async def _open(self, p: int, role: Literal["active", "standby"]) -> None:
        replica = self.replicas.get(p)
        if replica is None:
            replica = PartitionReplica(
                self.node_dir,
                p,
                self.settings,
                dlq=self._dlq,
                lineage=self._lineage,
                metrics=self._metrics,
            )
            self.replicas[p] = replica
        if replica.store is not None:
            await replica.commit()  # the open batch belongs to the previous role
            replica.forget()
        replica.role = role
        if replica.store is None and self.snapshot_from is not None:
            if p not in self._restores:
                self._restores[p] = asyncio.create_task(self._restore(p))
            if role == "active":
                self.state[p] = "restoring"
            return
        if p in self._restores:  # a restore still runs: it opens the store when done
            return
        replica.open()
        if role == "active":
            await self.group.seek_events(p, replica.stored_offset())
            self.group.resume(self.settings.events_topic, [p])

    async def _restore(self, p: int) -> None:
        assert self.snapshot_from is not None
        replica = self.replicas.get(p)
        if replica is None:
            return
        try:
            outcome = await asyncio.to_thread(
                restore_partition, self.snapshot_from, self.s3, p, replica.data_dir
            )
            log.info("partition %d: %s", p, outcome.message)
        except Exception as exc:
            log.error("partition %d: no snapshot restored (%s); replaying the topic", p, exc)
        finally:
            self._restores.pop(p, None)
        replica = self.replicas.get(p)
        if replica is None or replica.store is not None:
            return  # released meanwhile
        replica.open()
        if replica.role == "active":
            self.state[p] = "catching_up"
            await self.group.seek_events(p, replica.stored_offset())
            self.group.resume(self.settings.events_topic, [p])
        else:
            await self.copies.assign(
                {
                    q: self.replicas[q].stored_offset()
                    for q in sorted(self.standby)
                    if self._opened(q)
                }
            )

    # ---- records ------------------------------------------------------------------------------
    async def apply(self, records: list[InRecord], feed: Feed) -> None:
        """Apply records from one feed (module docstring: position and role checks)."""
        for record in records:
            replica = self.replicas.get(record.partition)
            if replica is None or replica.store is None:
                continue
            if (feed == "group") != (replica.role == "active"):
                continue
            if record.offset < replica.position:
                continue
            if not replica.apply(record):
                await self._replay(replica)

    async def _replay(self, replica: PartitionReplica) -> None:
        await asyncio.sleep(REPLAY_BACKOFF_S)
        offset = replica.stored_offset()
        if replica.role == "active":
            await self.group.seek_events(replica.partition, offset)
        else:
            await self.copies.seek(replica.partition, offset)

    async def commit_due(self, *, idle: bool = False) -> None:
        """Commit every replica whose batch is due (``idle``: every open batch)."""
        for replica in list(self.replicas.values()):
            if replica.store is None or not replica.open_batch:
                continue
            if (idle or replica.due()) and not await replica.commit():
                await self._replay(replica)
            if not replica.open_batch:
                replica.housekeeping()

    async def check_ready(self) -> None:
        """Owned partitions that caught up become ready (module docstring, step 4)."""
        waiting = [p for p, s in self.state.items() if s == "catching_up" and self._opened(p)]
        if not waiting:
            return
        unknown = [p for p in waiting if p not in self._targets]
        if unknown:
            ends = await self.group.end_offsets(self.settings.events_topic, unknown)
            if ends is None:
                return
            self._targets.update(ends)
        for p in waiting:
            replica = self.replicas[p]
            if replica.open_batch or p not in self._targets:
                continue
            if (replica.stored_offset() or 0) >= self._targets[p]:
                self.state[p] = "ready"
                self.group.resume(self.group.topic, [p])
                log.info("partition %d ready (caught up to %d)", p, self._targets[p])
                self.on_ready(p)

    async def lag(self) -> dict[tuple[str, int], int]:
        """Events not yet applied, per owned and standby partition."""
        out: dict[tuple[str, int], int] = {}
        active = [p for p in self.state if self._opened(p)]
        copies = [p for p in self.standby if self._opened(p)]
        for role, ends in (
            ("active", await self.group.end_offsets(self.settings.events_topic, active)),
            ("standby", await self.copies.end_offsets(copies)),
        ):
            for p, end in (ends or {}).items():
                out[(role, p)] = max(0, end - self.replicas[p].position)
        return out

    async def close(self) -> None:
        for task in list(self._restores.values()):
            task.cancel()
        for p in list(self.replicas):
            try:
                await self._release(p)
            except Exception as exc:  # the broker gone: the stores are crash-safe anyway
                log.warning("partition %d: closing commit failed: %s", p, exc)
                replica = self.replicas.pop(p, None)
                if replica is not None:
                    replica.close()
