"""Snapshots in S3-compatible storage, against a real server process (moto's server
mode): the round trip, a parent or a snapshot URL, verification, pruning."""

from __future__ import annotations

from pathlib import Path

import obstore
import pytest
from obstore.store import S3Store

from indexer.snapshot.create import complete_snapshots, create_snapshot
from indexer.snapshot.errors import SnapshotCorruptError
from indexer.snapshot.restore import restore_snapshot
from indexer.snapshot.stores import ObjectStore, open_location
from indexer.store.records.store import Store
from tests.fixtures.snapshot import S3Server
from tests.snapshot.helpers import add_sessions, build, view
from tests.snapshots import snapshot


def test_round_trip_through_s3(tmp_path: Path, s3_server: S3Server, s3_bucket: str) -> None:
    data = tmp_path / "data"
    build(data, 6)
    url = f"s3://{s3_bucket}/replicas/prod"
    location = open_location(url, s3_server.settings())
    assert isinstance(location, ObjectStore)
    created = create_snapshot(data, location)
    assert created.where == f"{url}/{created.name}"
    assert complete_snapshots(location) == [created.name]

    restore_snapshot(open_location(url, s3_server.settings()), tmp_path / "from-parent")
    restore_snapshot(open_location(created.where, s3_server.settings()), tmp_path / "from-name")
    assert snapshot(tmp_path / "from-parent") == snapshot(data)
    assert snapshot(tmp_path / "from-name") == snapshot(data)


def test_a_changed_object_fails_the_restore(
    tmp_path: Path, s3_server: S3Server, s3_bucket: str
) -> None:
    data = tmp_path / "data"
    build(data, 2)
    location = open_location(f"s3://{s3_bucket}/r", s3_server.settings())
    created = create_snapshot(data, location)
    raw = S3Store(
        s3_bucket,
        prefix=f"r/{created.name}",
        config={
            "endpoint": s3_server.endpoint,
            "region": "us-east-1",
            "access_key_id": "x",
            "secret_access_key": "y",
        },
        client_options={"allow_http": True},
    )
    meta = bytes(obstore.get(raw, "tantivy/meta.json").bytes())
    obstore.put(raw, "tantivy/meta.json", meta.replace(b'"opstamp"', b'"opstamp" '))
    with pytest.raises(SnapshotCorruptError, match=r"tantivy/meta\.json has more than \d+ bytes"):
        restore_snapshot(location, tmp_path / "restored")
    assert not (tmp_path / "restored").exists()


def test_prune_on_s3_keeps_the_newest(tmp_path: Path, s3_server: S3Server, s3_bucket: str) -> None:
    data = tmp_path / "data"
    build(data, 1)
    location = open_location(f"s3://{s3_bucket}/p", s3_server.settings())
    first = create_snapshot(data, location)
    store = Store(data)
    try:
        add_sessions(store, 1, 1)
    finally:
        store.close()
    second = create_snapshot(data, location, keep=1)
    assert second.pruned == [first.name]
    assert complete_snapshots(location) == [second.name]
    assert location.children() == [second.name]  # every object of the first is gone
    restore_snapshot(location, tmp_path / "restored")
    assert view(tmp_path / "restored").sessions == {"s00000", "s00001"}
