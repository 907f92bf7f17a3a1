"""The indexer's periodic snapshots (``SnapshotSchedule``) and their settings: a failure is
logged and counted and the next one comes one interval later; both settings or neither."""

from __future__ import annotations

import asyncio
import fcntl
import logging
import os
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from pydantic import ValidationError

from indexer.settings import IndexerSettings, KafkaSettings, S3Settings
from indexer.snapshot.copy import SNAPSHOT_LOCK
from indexer.snapshot.create import complete_snapshots
from indexer.snapshot.schedule import SnapshotSchedule
from indexer.snapshot.stores import DirectoryStore
from tests.snapshot.helpers import build


def _schedule(data: Path, to: str, registry: CollectorRegistry) -> SnapshotSchedule:
    return SnapshotSchedule(
        data, every_s=0.05, location=to, keep=2, s3=S3Settings(), registry=registry
    )


async def _run(schedule: SnapshotSchedule, until: int) -> None:
    async with asyncio.timeout(30):
        while schedule.published + schedule.failed < until:
            schedule.poll()
            await asyncio.sleep(0.01)
        await schedule.close()


async def test_snapshots_are_published_every_interval_and_pruned(tmp_path: Path) -> None:
    data = tmp_path / "data"
    build(data, 2)
    registry = CollectorRegistry()
    schedule = _schedule(data, str(tmp_path / "snaps"), registry)
    await _run(schedule, 4)
    assert schedule.published == 4 and schedule.failed == 0
    assert len(complete_snapshots(DirectoryStore(tmp_path / "snaps"))) == 2
    assert registry.get_sample_value("sessionq_snapshots_total", {"outcome": "ok"}) == 4
    assert registry.get_sample_value("sessionq_snapshot_last_success_timestamp_seconds")


async def test_a_failing_destination_is_logged_and_counted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data = tmp_path / "data"
    build(data, 1)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    registry = CollectorRegistry()
    schedule = _schedule(data, str(blocker / "snaps"), registry)
    with caplog.at_level(logging.ERROR, logger="sessionq.snapshot"):
        await _run(schedule, 2)
    assert schedule.failed == 2 and schedule.published == 0
    assert registry.get_sample_value("sessionq_snapshots_total", {"outcome": "failed"}) == 2
    assert "indexing goes on" in caplog.text and str(blocker) in caplog.text
    assert not (data / ".snapshot-staging").exists()


async def test_a_snapshot_running_by_hand_skips_the_periodic_one(tmp_path: Path) -> None:
    """``sessionq snapshot create`` of the same dir holds its lock: the periodic snapshot
    that comes meanwhile is skipped, not failed, and the next one is published."""
    data = tmp_path / "data"
    build(data, 1)
    registry = CollectorRegistry()
    schedule = _schedule(data, str(tmp_path / "snaps"), registry)
    fd = os.open(data / SNAPSHOT_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        async with asyncio.timeout(30):
            while schedule.skipped < 2:
                schedule.poll()
                await asyncio.sleep(0.01)
        fcntl.flock(fd, fcntl.LOCK_UN)
        await _run(schedule, 1)
    finally:
        os.close(fd)
    assert schedule.failed == 0 and schedule.published == 1 and schedule.skipped >= 2
    assert registry.get_sample_value("sessionq_snapshots_total", {"outcome": "skipped"}) >= 2
    assert registry.get_sample_value("sessionq_snapshots_total", {"outcome": "failed"}) is None


def test_periodic_snapshots_need_an_interval_and_a_destination() -> None:
    kafka = KafkaSettings(bootstrap="127.0.0.1:9092")
    for every, seconds in (("90", 90.0), ("90s", 90.0), ("15m", 900.0), ("1h", 3600.0)):
        settings = IndexerSettings(
            data=Path("/d"),
            kafka=kafka,
            snapshot_every=every,
            snapshot_to="/s",  # type: ignore[arg-type]
        )
        assert settings.snapshot_every == seconds
    assert IndexerSettings(data=Path("/d"), kafka=kafka).snapshot_to is None
    with pytest.raises(ValidationError, match="need both"):
        IndexerSettings(data=Path("/d"), kafka=kafka, snapshot_to="/s")
    with pytest.raises(ValidationError, match="need both"):
        IndexerSettings(data=Path("/d"), kafka=kafka, snapshot_every=60)
    with pytest.raises(ValidationError):
        IndexerSettings(data=Path("/d"), kafka=kafka, snapshot_every="0", snapshot_to="/s")  # type: ignore[arg-type]
