"""Publishing snapshots: capture locally, upload, write the manifest last, prune.

``create_snapshot`` copies a data directory consistently (``copy.capture``) into a
staging folder inside it, checksums every file, uploads the files and then the
manifest, and removes the staging folder whatever happens. ``prune`` keeps the newest N
complete snapshots; an incomplete one (no manifest) is removed only once it is a day old,
so an upload another replica still runs is never pulled from under it.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final

from indexer.snapshot.copy import SNAPSHOT_LOCK, STAGING_DIR, capture
from indexer.snapshot.errors import SnapshotBusyError, SnapshotError
from indexer.snapshot.manifest import (
    MANIFEST_NAME,
    Manifest,
    OffsetEntry,
    file_entry,
    name_time,
    new_name,
    now_iso,
    sessionq_version,
)
from indexer.snapshot.stores import SnapshotStore
from indexer.store.layout import sqlite_path
from indexer.store.private import open_file

log = logging.getLogger("sessionq.snapshot")
INCOMPLETE_GRACE: Final = timedelta(days=1)
LOCK_POLL_S: Final = 0.1
CLI_WAIT_S: Final = 300.0
"""How long ``sessionq snapshot create`` waits for the indexer's periodic snapshot of the
same data dir to finish (the indexer itself never waits: a busy dir is that round's
failure, counted and retried next interval)."""


@dataclass(frozen=True, slots=True)
class CreatedSnapshot:
    name: str
    where: str  # the snapshot's own location
    manifest: Manifest
    capture_s: float  # the consistent local copy
    upload_s: float
    pruned: list[str]


def complete_snapshots(store: SnapshotStore) -> list[str]:
    """Names of the complete snapshots at ``store``, newest first."""
    names = [n for n in store.children() if name_time(n) is not None]
    return [n for n in sorted(names, reverse=True) if store.exists(f"{n}/{MANIFEST_NAME}")]


def newest_snapshot(store: SnapshotStore) -> str | None:
    """The newest complete snapshot: ``""`` when ``store`` is a snapshot itself, else the
    name of its newest complete child, None when there is none."""
    if store.exists(MANIFEST_NAME):
        return ""
    for name in sorted((n for n in store.children() if name_time(n)), reverse=True):
        if store.exists(f"{name}/{MANIFEST_NAME}"):
            return name
    return None


def prune(store: SnapshotStore, keep: int, *, now: datetime | None = None) -> list[str]:
    """Delete all but the newest ``keep`` complete snapshots, and incomplete ones older
    than ``INCOMPLETE_GRACE``; returns the names deleted."""
    now = now or datetime.now(UTC)
    complete = set(complete_snapshots(store))
    kept = sorted(complete, reverse=True)[:keep]
    deleted = []
    for name in store.children():
        started = name_time(name)
        if started is None or name in kept:
            continue
        if name not in complete and now - started < INCOMPLETE_GRACE:
            continue
        # the manifest first: from then on nobody takes the snapshot for complete
        store.delete_file(f"{name}/{MANIFEST_NAME}")
        store.delete_folder(name)
        deleted.append(name)
    return deleted


@contextlib.contextmanager
def _one_at_a_time(data_dir: Path, wait_s: float) -> Iterator[Path]:
    """One snapshot of a data dir at a time (the CLI and the indexer may both try; the
    later one waits up to ``wait_s`` for the other): the staging folder, emptied of what
    an interrupted snapshot left, is then ours."""
    if not sqlite_path(data_dir).is_file():
        raise SnapshotError(f"no sessionq data directory at {data_dir}")
    fd = open_file(data_dir / SNAPSHOT_LOCK, os.O_RDWR)
    try:
        give_up = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= give_up:
                    raise SnapshotBusyError(
                        f"another snapshot of {data_dir} is in progress"
                    ) from None
                time.sleep(LOCK_POLL_S)
        staging = data_dir / STAGING_DIR
        shutil.rmtree(staging, ignore_errors=True)
        try:
            yield staging
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    finally:
        os.close(fd)


def create_snapshot(
    data_dir: Path, store: SnapshotStore, *, keep: int | None = None, wait_s: float = 0.0
) -> CreatedSnapshot:
    """One complete snapshot of ``data_dir`` at ``store`` (module doc for the order);
    ``wait_s``: how long to wait for a snapshot of the same dir already running."""
    with _one_at_a_time(data_dir, wait_s) as staging_root:
        return _create(data_dir, store, staging_root, keep)


def _create(
    data_dir: Path, store: SnapshotStore, staging_root: Path, keep: int | None
) -> CreatedSnapshot:
    name = new_name()
    staging = staging_root / name
    try:
        t0 = time.perf_counter()
        created_at = now_iso()
        captured = capture(data_dir, staging)
        entries = [file_entry(staging, f) for f in captured.files]
        capture_s = time.perf_counter() - t0
        manifest = Manifest(
            name=name,
            created_at=created_at,
            sessionq_version=sessionq_version(),
            schema_version=captured.schema_version,
            offsets=[
                OffsetEntry(topic=t, partition=p, next_offset=o) for t, p, o in captured.offsets
            ],
            files=entries,
            tantivy_opstamp=captured.tantivy_opstamp,
        )
        t1 = time.perf_counter()
        for entry in entries:
            store.upload_file(f"{name}/{entry.path}", staging / entry.path)
        store.upload_bytes(f"{name}/{MANIFEST_NAME}", manifest.encode())
        upload_s = time.perf_counter() - t1
    except OSError as exc:
        raise SnapshotError(f"snapshot of {data_dir} failed: {exc}") from exc
    pruned: list[str] = []
    if keep is not None:
        try:
            pruned = prune(store, keep)
        except SnapshotError as exc:  # the snapshot itself is complete: say so, go on
            log.warning("snapshot %s published; pruning older ones failed: %s", name, exc.message)
    where = f"{store.where.rstrip('/')}/{name}"
    return CreatedSnapshot(name, where, manifest, capture_s, upload_s, pruned)
