"""Per-partition snapshots of a node: the existing snapshot format and stores, one
folder per partition (``<location>/p<N>/<snapshot>``), so a node that gains partition p
without a local store restores p's newest snapshot and replays only what came after it.

Publishing: every ``every_s`` the owner snapshots each partition it owns, one at a time,
in a thread beside the record loop (a snapshot is consistent while its store keeps
committing: ``indexer.snapshot.create``). Restoring: ``restore_partition`` into an
absent or empty partition dir only (``--if-empty``): a local store always wins.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from indexer.settings import S3Settings
from indexer.snapshot.create import create_snapshot
from indexer.snapshot.errors import SnapshotError
from indexer.snapshot.restore import RestoreOutcome, restore_snapshot
from indexer.snapshot.stores import open_location

log = logging.getLogger("sessionq.node")


def location_for(location: str, partition: int) -> str:
    return f"{location.rstrip('/')}/p{partition}"


def restore_partition(
    location: str, s3: S3Settings, partition: int, data_dir: Path
) -> RestoreOutcome:
    """Partition ``partition``'s newest snapshot into ``data_dir`` when it holds no data."""
    store = open_location(location_for(location, partition), s3)
    return restore_snapshot(store, data_dir, if_empty=True)


class PartitionSnapshots:
    """Publishes a snapshot of every owned partition every ``every_s`` seconds."""

    def __init__(self, location: str, s3: S3Settings, *, every_s: float, keep: int) -> None:
        self.location = location
        self.s3 = s3
        self.every_s = every_s
        self.keep = keep
        self._next = time.monotonic() + every_s
        self._task: asyncio.Task[None] | None = None
        self.published = 0
        self.failed = 0

    def poll(self, owned: Callable[[], Iterable[tuple[int, Path]]]) -> None:
        """Start a round when one is due (call between batches)."""
        if (self._task is not None and not self._task.done()) or time.monotonic() < self._next:
            return
        self._task = asyncio.create_task(self._round(owned), name="sessionq-node-snapshots")

    async def _round(self, owned: Callable[[], Iterable[tuple[int, Path]]]) -> None:
        try:
            for partition, data_dir in list(owned()):
                await asyncio.to_thread(self._one, partition, data_dir)
        finally:
            self._next = time.monotonic() + self.every_s

    def _one(self, partition: int, data_dir: Path) -> None:
        try:
            store = open_location(location_for(self.location, partition), self.s3)
            created = create_snapshot(data_dir, store, keep=self.keep)
        except SnapshotError as exc:
            self.failed += 1
            log.error("snapshot of partition %d failed: %s", partition, exc.message)
            return
        except Exception:  # a bug must not stop the node
            self.failed += 1
            log.exception("snapshot of partition %d failed unexpectedly", partition)
            return
        self.published += 1
        log.info("partition %d: snapshot %s published", partition, created.where)

    async def close(self) -> None:
        if self._task is not None and not self._task.done():
            await asyncio.wait([self._task], timeout=60)
