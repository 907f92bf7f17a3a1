"""A long watched log (``indexer.sources.local``): the first pass stores it as
``sessionq ingest`` does, piece by piece, and an append to it stores the rest; a restart
reads it again from the stored state without storing anything twice."""

from __future__ import annotations

from pathlib import Path

from indexer.sources.files import ingest_files
from indexer.store.records.store import Store
from tests.long_session import long_session_turns
from tests.serve.watched import WatchedStore
from tests.snapshots import snapshot

EVENTS = 45_000  # three pieces of 20,000 events


def _ingested(log: Path, data: Path) -> Path:
    store = Store(data)
    try:
        assert ingest_files(store, [log]).rejected == []
    finally:
        store.close()
    return data


async def test_a_long_watched_log_is_stored_as_ingest_stores_it(tmp_path: Path) -> None:
    parts = list(long_session_turns(EVENTS))
    cut = len(parts) * 9 // 10
    root = tmp_path / "logs"
    root.mkdir()
    log = root / "long.jsonl"
    log.write_bytes(b"".join(parts[:cut]))
    whole = tmp_path / "whole.jsonl"
    whole.write_bytes(b"".join(parts))
    reference = snapshot(_ingested(whole, tmp_path / "reference"), offsets=False)

    watched = WatchedStore(root, tmp_path / "data")
    try:
        assert await watched.sync_once() > 2
        assert watched.status.rejected == {}
        with log.open("ab") as f:
            f.write(b"".join(parts[cut:]))
        assert await watched.sync_once() > 0
        assert watched.status.rejected == {}
    finally:
        watched.close()
    assert snapshot(tmp_path / "data", offsets=False) == reference

    again = WatchedStore(root, tmp_path / "data")  # a restart: seeded, nothing new
    try:
        assert await again.sync_once() == 0
    finally:
        again.close()
    assert snapshot(tmp_path / "data", offsets=False) == reference
