"""A partition's traces with the global lineage (``indexer.query.partitioned``) render what
a full replica renders: hidden markers for children in other partitions, a boundary for
a parent there, nothing below a hidden node, a deleted session gone, a cycle through
another partition still reported; and the lineage copy itself (``indexer.lineage``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from indexer.kafka.node_group import partition_for
from indexer.lineage.entry import LineageEntry, decode_entry, encode_entry
from indexer.lineage.table import LineageTable
from indexer.model.header import parse_header
from indexer.model.records import decode_record
from indexer.query.partitioned import PartitionQueryService
from indexer.query.service import StoreQueryService
from indexer.store.records.store import Store
from tests.builders import header, user
from worker.calls.pipeline import Pipeline
from worker.tools.access import Caller

PARTITIONS = 4


def home(key: str) -> int:
    return partition_for(key.encode(), PARTITIONS)


def workspaces() -> tuple[str, str]:
    """Two workspaces in different partitions."""
    first = "/w/alpha"
    other = next(f"/w/o{i}" for i in range(100) if home(f"/w/o{i}") != home(first))
    return first, other


def write(store_dir: Path, sessions: Sequence[dict[str, Any]]) -> None:
    import orjson

    store = Store(store_dir)
    try:
        for h in sessions:
            store.apply(decode_record(orjson.dumps({"v": 1, "kind": "header", "header": h})))
            record = {"v": 1, "kind": "events", "session_id": h["id"], "events": [user(0, "hi")]}
            store.apply(decode_record(orjson.dumps(record)))
        store.commit()
    finally:
        store.close()


async def trace(service: Any, caller: str, target: str | None = None) -> str:
    args = {} if target is None else {"session_id": target}
    reply = await Pipeline(service).call("session_trace", args, Caller(caller))
    return reply.text if reply.error is None else f"{reply.error.code}: {reply.text}"


@pytest.fixture
def lineage_world(tmp_path: Path) -> tuple[Path, Path, LineageTable, list[dict[str, Any]]]:
    alpha, other = workspaces()
    sessions = [
        header("root", cwd=alpha, created_at=1000),
        header("sib", cwd=alpha, created_at=2000, parent="root"),
        header("far", cwd=other, created_at=1500, parent="root"),
        header("under-far", cwd=alpha, created_at=3000, parent="far"),
        header("far-child", cwd=alpha, created_at=4000, parent="far2"),
        header("far2", cwd=other, created_at=500),
    ]
    full, part = tmp_path / "full", tmp_path / "part"
    write(full, sessions)
    write(part, [s for s in sessions if home(s["cwd"]) == home(alpha)])
    table = LineageTable(tmp_path / "node")
    table.apply([LineageEntry.of(parse_header(s)) for s in sessions], {0: len(sessions)})
    return full, part, table, sessions


async def test_a_partition_traces_like_a_full_replica(
    lineage_world: tuple[Path, Path, LineageTable, list[dict[str, Any]]],
) -> None:
    full_dir, part_dir, table, _ = lineage_world
    full = StoreQueryService(full_dir)
    alone = StoreQueryService(part_dir)
    part = PartitionQueryService(
        part_dir, partition=home("/w/alpha"), lineage_table=table, home=home
    )
    try:
        for caller, target in [("root", None), ("sib", "root"), ("far-child", None)]:
            expected = await trace(full, caller, target)
            assert await trace(part, caller, target) == expected
        # without the lineage the hidden child is missing: the test can fail
        assert "[outside workspace subtree]" in await trace(full, "root")
        assert "[outside workspace subtree]" not in await trace(alone, "root")
        # a deleted foreign session (a tombstone) leaves the trace as it leaves a replica's
        table.apply(["far"], {0: 99})
        assert "[outside workspace subtree]" not in await trace(part, "root")
    finally:
        for service in (full, alone, part):
            service.close()
        table.close()


async def test_a_cycle_through_another_partition_is_still_reported(tmp_path: Path) -> None:
    alpha, other = workspaces()
    sessions = [
        header("a", cwd=alpha, created_at=1, parent="b"),
        header("b", cwd=other, created_at=2, parent="a"),
    ]
    write(tmp_path / "full", sessions)
    write(tmp_path / "part", sessions[:1])
    table = LineageTable(tmp_path / "node")
    table.apply([LineageEntry.of(parse_header(s)) for s in sessions], {})
    full = StoreQueryService(tmp_path / "full")
    part = PartitionQueryService(
        tmp_path / "part", partition=home(alpha), lineage_table=table, home=home
    )
    try:
        expected = await trace(full, "a")
        assert expected.startswith("SESSION_QUERY_INVALID_LINEAGE"), expected
        assert await trace(part, "a") == expected
    finally:
        full.close()
        part.close()
        table.close()


def test_lineage_records_round_trip_and_bad_ones_are_skipped() -> None:
    entry = LineageEntry("s1", "p", "/w", 5)
    assert decode_entry(b"s1", encode_entry(entry)) == entry
    assert decode_entry(b"s1", None) == "s1"  # a tombstone
    assert decode_entry(b"other", encode_entry(entry)) is None  # key and id disagree
    assert decode_entry(b"s1", b"{") is None
    assert decode_entry(None, encode_entry(entry)) is None
    assert LineageEntry("s2", None, "session:s2", 1).header().cwd is None


def test_the_lineage_copy_keeps_its_offsets_with_its_rows(tmp_path: Path) -> None:
    table = LineageTable(tmp_path)
    table.apply([LineageEntry("a", None, "/w", 1), LineageEntry("b", "a", "/x", 2)], {0: 2, 1: 7})
    table.apply(["a"], {0: 3})
    assert table.offsets() == {0: 3, 1: 7}
    assert table.get("a") is None and [e.session_id for e in table.children("a")] == ["b"]
    table.close()
    again = LineageTable(tmp_path, writable=False)
    assert again.count() == 1 and again.offsets() == {0: 3, 1: 7}
    again.close()
