"""The indexer's periodic snapshots (``--snapshot-every``, ``--snapshot-to``,
``--snapshot-keep``).

``poll`` is called between batches; when a snapshot is due and none is running, one
starts in a worker thread (``create.create_snapshot``): its capture holds the commit lock
only while it pins the index and the tables, so the indexer keeps consuming and
committing while the copy and the upload run. The time each one took is logged; a
failure is logged and counted (``sessionq_snapshots_total{outcome="failed"}``) and never
stops indexing — the next one is tried one interval later.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from indexer.settings import S3Settings
from indexer.snapshot.create import CreatedSnapshot, create_snapshot
from indexer.snapshot.errors import SnapshotBusyError, SnapshotError
from indexer.snapshot.stores import SnapshotStore, open_location

log = logging.getLogger("sessionq.snapshot")
SNAPSHOT_BUCKETS = (0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800)


class SnapshotSchedule:
    """Publishes a snapshot of ``data_dir`` every ``every_s`` seconds."""

    def __init__(
        self,
        data_dir: Path,
        *,
        every_s: float,
        location: str,
        keep: int,
        s3: S3Settings,
        registry: CollectorRegistry,
    ) -> None:
        self.data_dir = data_dir
        self.every_s = every_s
        self.location = location
        self.keep = keep
        self._s3 = s3
        self._store: SnapshotStore | None = None
        self._next = time.monotonic() + every_s
        self._task: asyncio.Task[None] | None = None
        self.published = 0
        self.failed = 0
        self.skipped = 0  # another snapshot of the dir (``sessionq snapshot create``) ran
        self.last: CreatedSnapshot | None = None
        self._outcomes = Counter(
            "sessionq_snapshots", "Snapshots published, by outcome", ["outcome"], registry=registry
        )
        self._seconds = Histogram(
            "sessionq_snapshot_seconds",
            "Time to publish one snapshot (capture + upload + prune)",
            buckets=SNAPSHOT_BUCKETS,
            registry=registry,
        )
        self._last_ok = Gauge(
            "sessionq_snapshot_last_success_timestamp_seconds",
            "Wall time of the last snapshot published",
            registry=registry,
        )

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def poll(self) -> None:
        """Start a snapshot when one is due (call between batches)."""
        if self.running or time.monotonic() < self._next:
            return
        self._task = asyncio.create_task(self._publish(), name="sessionq-snapshot")

    def _create(self) -> CreatedSnapshot:
        if self._store is None:
            self._store = open_location(self.location, self._s3)
        return create_snapshot(self.data_dir, self._store, keep=self.keep)

    async def _publish(self) -> None:
        started = time.perf_counter()
        try:
            created = await asyncio.to_thread(self._create)
        except SnapshotBusyError as exc:  # a by-hand snapshot of this dir: not a failure
            self.skipped += 1
            self._outcomes.labels("skipped").inc()
            log.info(
                "snapshot to %s skipped (next try in %.0fs): %s",
                self.location,
                self.every_s,
                exc.message,
            )
        except SnapshotError as exc:
            self._failed(started, exc.message)
        except Exception as exc:  # a bug must not stop indexing either
            log.exception("snapshot to %s failed unexpectedly", self.location)
            self._failed(started, f"{type(exc).__name__}: {exc}")
        else:
            seconds = time.perf_counter() - started
            self.published += 1
            self.last = created
            self._outcomes.labels("ok").inc()
            self._seconds.observe(seconds)
            self._last_ok.set(time.time())
            m = created.manifest
            log.info(
                "snapshot %s published in %.1fs (capture %.1fs, upload %.1fs; %d files,"
                " %d bytes; %d offsets)%s",
                created.where,
                seconds,
                created.capture_s,
                created.upload_s,
                len(m.files),
                m.total_bytes(),
                len(m.offsets),
                f"; pruned {len(created.pruned)}" if created.pruned else "",
            )
        finally:
            self._next = time.monotonic() + self.every_s

    def _failed(self, started: float, why: str) -> None:
        self.failed += 1
        self._outcomes.labels("failed").inc()
        log.error(
            "snapshot to %s failed after %.1fs (indexing goes on; next try in %.0fs): %s",
            self.location,
            time.perf_counter() - started,
            self.every_s,
            why,
        )

    async def close(self) -> None:
        """Let a running snapshot finish (its thread cannot be interrupted)."""
        if self._task is not None and not self._task.done():
            log.info("waiting for the snapshot in progress")
            await self._task
