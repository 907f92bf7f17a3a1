"""Snapshots in a local directory: the round trip, consistency while a writer commits,
verification on restore, the data-dir rules, choosing and pruning snapshots."""

from __future__ import annotations

import os
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from indexer.snapshot.create import complete_snapshots, create_snapshot, prune
from indexer.snapshot.errors import (
    DataDirNotEmptyError,
    SnapshotCorruptError,
    SnapshotError,
    SnapshotNotFoundError,
)
from indexer.snapshot.manifest import MANIFEST_NAME, HashingWriter, new_name
from indexer.snapshot.restore import MARKER, restore_snapshot
from indexer.snapshot.stores import DirectoryStore
from indexer.store.records.store import Store
from indexer.store.tables.sqlite_tables import CAUGHT_UP_KEY
from tests.fixtures.snapshot import corrupt
from tests.snapshot.helpers import TOPIC, add_sessions, build, view
from tests.snapshots import snapshot


def _mark_caught_up(data: Path) -> None:
    store = Store(data)
    try:
        store.mark_caught_up(1.0)
    finally:
        store.close()


def test_round_trip_restores_rows_index_and_offsets(tmp_path: Path) -> None:
    data, restored = tmp_path / "data", tmp_path / "restored"
    build(data, 12)
    _mark_caught_up(data)
    snaps = DirectoryStore(tmp_path / "snaps")
    created = create_snapshot(data, snaps)

    assert [o.model_dump() for o in created.manifest.offsets] == [
        {"topic": TOPIC, "partition": 0, "next_offset": 12}
    ]
    assert created.manifest.schema_version == view(data).meta["schema_version"]
    paths = {f.path for f in created.manifest.files}
    assert {"store.sqlite3", "tantivy/meta.json", "tantivy/.managed.json"} <= paths
    assert not (data / ".snapshot-staging").exists()

    outcome = restore_snapshot(snaps, restored)
    assert outcome.restored and outcome.name == created.name
    assert snapshot(restored) == snapshot(data)
    # a restored replica is caught up only once its own indexer reached the topic's end
    assert CAUGHT_UP_KEY in view(data).meta and CAUGHT_UP_KEY not in view(restored).meta
    assert sorted(os.listdir(restored)) == ["store.sqlite3", "tantivy"]


def test_restored_store_takes_new_writes(tmp_path: Path) -> None:
    data, restored = tmp_path / "data", tmp_path / "restored"
    build(data, 3)
    snaps = DirectoryStore(tmp_path / "snaps")
    create_snapshot(data, snaps)
    restore_snapshot(snaps, restored)
    store = Store(restored)
    try:
        assert store.offsets() == {(TOPIC, 0): 3}
        add_sessions(store, 3, 2)
    finally:
        store.close()
    v = view(restored)
    assert v.sessions == v.documents == {f"s{n:05d}" for n in range(5)}


def test_snapshots_taken_while_a_writer_commits_pair_index_rows_and_offsets(
    tmp_path: Path,
) -> None:
    """Many small commits (Tantivy merges and collects segments meanwhile) and
    snapshots at the same time: every snapshot holds the rows, the documents and the
    offsets of one and the same batch."""
    data = tmp_path / "data"
    build(data, 1)
    stop = threading.Event()
    errors: list[BaseException] = []

    def write() -> None:
        store = Store(data)
        # a slow disk: the gap between a batch's Tantivy commit and its SQLite commit
        # (where a snapshot without the commit lock would pair them wrongly) is wide
        store_offsets = store.tables.store_offsets

        def slow_store_offsets(offsets: dict[tuple[str, int], int]) -> None:
            time.sleep(0.005)
            store_offsets(offsets)

        store.tables.store_offsets = slow_store_offsets  # type: ignore[method-assign]
        try:
            n = 1
            while not stop.is_set() and n < 3000:
                add_sessions(store, n, 3)
                n += 3
        except BaseException as exc:  # reported by the test thread
            errors.append(exc)
        finally:
            store.close()

    writer = threading.Thread(target=write)
    writer.start()
    snaps = DirectoryStore(tmp_path / "snaps")
    created = []
    try:
        for _ in range(8):
            created.append(create_snapshot(data, snaps))
    finally:
        stop.set()
        writer.join(60)
    assert not errors, errors
    taken = {c.manifest.offsets[0].next_offset for c in created}
    assert len(taken) >= 4, taken  # the writer really moved between snapshots
    for n, c in enumerate(created):
        target = tmp_path / f"restored-{n}"
        restore_snapshot(DirectoryStore(tmp_path / "snaps" / c.name), target)
        v = view(target)
        expected = {f"s{i:05d}" for i in range(c.manifest.offsets[0].next_offset)}
        assert v.offsets == {(TOPIC, 0): c.manifest.offsets[0].next_offset}
        assert v.sessions == expected, c.name
        assert v.documents == expected, c.name


def test_a_corrupted_file_fails_the_restore_and_leaves_nothing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    build(data, 4)
    snaps = DirectoryStore(tmp_path / "snaps")
    created = create_snapshot(data, snaps)
    segment = next(
        f.path for f in created.manifest.files if f.path.endswith(".term") and f.size > 0
    )
    corrupt(tmp_path / "snaps" / created.name / segment)
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(SnapshotCorruptError) as info:
        restore_snapshot(snaps, tmp_path / "restored")
    assert segment in info.value.message and "checksum" in info.value.message
    assert "\n" not in info.value.message
    assert sorted(os.listdir(tmp_path)) == before  # no data dir, no temporary folder


def test_a_missing_file_fails_the_restore_into_an_existing_dir(tmp_path: Path) -> None:
    data, target = tmp_path / "data", tmp_path / "target"
    build(data, 4)
    snaps = DirectoryStore(tmp_path / "snaps")
    created = create_snapshot(data, snaps)
    (tmp_path / "snaps" / created.name / "tantivy" / "meta.json").unlink()
    target.mkdir()
    (target / "lost+found").mkdir()  # a fresh volume's root
    with pytest.raises(SnapshotCorruptError, match=r"tantivy/meta\.json is missing"):
        restore_snapshot(snaps, target)
    assert os.listdir(target) == ["lost+found"]


def test_a_truncated_file_fails_on_its_size(tmp_path: Path) -> None:
    data = tmp_path / "data"
    build(data, 2)
    snaps = DirectoryStore(tmp_path / "snaps")
    created = create_snapshot(data, snaps)
    db = tmp_path / "snaps" / created.name / "store.sqlite3"
    db.write_bytes(db.read_bytes()[:-10])
    with pytest.raises(SnapshotCorruptError, match=r"store\.sqlite3 has \d+ bytes"):
        restore_snapshot(snaps, tmp_path / "restored")


def test_restore_refuses_a_dir_with_data_unless_forced_and_if_empty_is_a_no_op(
    tmp_path: Path,
) -> None:
    one, two, target = tmp_path / "one", tmp_path / "two", tmp_path / "target"
    build(one, 2)
    build(two, 5)
    build(target, 1)
    snaps_one, snaps_two = DirectoryStore(tmp_path / "s1"), DirectoryStore(tmp_path / "s2")
    create_snapshot(one, snaps_one)
    create_snapshot(two, snaps_two)

    with pytest.raises(DataDirNotEmptyError, match="--force"):
        restore_snapshot(snaps_one, target)
    skipped = restore_snapshot(snaps_one, target, if_empty=True)
    assert not skipped.restored and "already holds data" in skipped.message
    assert view(target).sessions == {"s00000"}

    assert restore_snapshot(snaps_two, target, force=True).restored
    assert view(target).sessions == {f"s{n:05d}" for n in range(5)}
    assert not [n for n in os.listdir(target) if n.startswith(".sessionq-restore")]


def test_no_snapshot_is_an_error_unless_if_empty(tmp_path: Path) -> None:
    empty = DirectoryStore(tmp_path / "nothing-here")
    with pytest.raises(SnapshotNotFoundError):
        restore_snapshot(empty, tmp_path / "data")
    outcome = restore_snapshot(empty, tmp_path / "data", if_empty=True)
    assert not outcome.restored and "no snapshot" in outcome.message
    assert not (tmp_path / "data").exists()


def test_a_parent_gives_its_newest_complete_snapshot(tmp_path: Path) -> None:
    data = tmp_path / "data"
    build(data, 1)
    snaps = DirectoryStore(tmp_path / "snaps")
    create_snapshot(data, snaps)
    store = Store(data)
    try:
        add_sessions(store, 1, 2)
    finally:
        store.close()
    newest = create_snapshot(data, snaps)
    # a newer upload that never finished: files, no manifest
    incomplete = tmp_path / "snaps" / new_name(datetime.now(UTC) + timedelta(minutes=5))
    (incomplete / "tantivy").mkdir(parents=True)
    (incomplete / "store.sqlite3").write_bytes(b"half")
    (tmp_path / "snaps" / "not-a-snapshot").mkdir()

    assert complete_snapshots(snaps)[0] == newest.name
    outcome = restore_snapshot(snaps, tmp_path / "restored")
    assert outcome.name == newest.name
    assert view(tmp_path / "restored").sessions == {"s00000", "s00001", "s00002"}


def test_prune_keeps_the_newest_complete_and_young_incomplete_snapshots(tmp_path: Path) -> None:
    data = tmp_path / "data"
    build(data, 1)
    root = tmp_path / "snaps"
    snaps = DirectoryStore(root)
    names = [create_snapshot(data, snaps).name for _ in range(4)]
    young = root / new_name()
    old = root / new_name(datetime.now(UTC) - timedelta(days=2))
    young.mkdir()
    old.mkdir()
    last = create_snapshot(data, snaps, keep=2)
    assert complete_snapshots(snaps) == [last.name, names[-1]]
    assert sorted(last.pruned) == sorted([*names[:3], old.name])
    assert young.is_dir() and not old.exists()
    assert prune(snaps, 1) == [names[-1]]


def test_an_interrupted_restore_is_redone(tmp_path: Path) -> None:
    data, target = tmp_path / "data", tmp_path / "target"
    build(data, 3)
    snaps = DirectoryStore(tmp_path / "snaps")
    create_snapshot(data, snaps)
    target.mkdir()
    (target / MARKER).write_bytes(b"")
    (target / "tantivy").mkdir()  # moved in before the interruption; no tables yet
    assert restore_snapshot(snaps, target, if_empty=True).restored
    assert view(target).sessions == {"s00000", "s00001", "s00002"}
    assert MARKER not in os.listdir(target)


def test_a_manifest_cannot_write_outside_the_data_dir(tmp_path: Path) -> None:
    data = tmp_path / "data"
    build(data, 1)
    snaps = DirectoryStore(tmp_path / "snaps")
    created = create_snapshot(data, snaps)
    manifest_path = tmp_path / "snaps" / created.name / MANIFEST_NAME
    raw = manifest_path.read_text().replace('"tantivy/meta.json"', '"../escaped.json"')
    manifest_path.write_text(raw)
    with pytest.raises(SnapshotCorruptError, match="unsafe file path"):
        restore_snapshot(snaps, tmp_path / "restored")
    assert not (tmp_path / "escaped.json").exists()


def test_snapshot_of_a_missing_data_dir_fails_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(SnapshotError, match="no sessionq data directory"):
        create_snapshot(tmp_path / "none", DirectoryStore(tmp_path / "snaps"))


def test_a_second_snapshot_of_one_dir_waits_for_the_first_or_says_why(tmp_path: Path) -> None:
    import fcntl

    from indexer.snapshot.copy import SNAPSHOT_LOCK

    data, snaps = tmp_path / "data", DirectoryStore(tmp_path / "snaps")
    build(data, 3)
    fd = os.open(data / SNAPSHOT_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)  # as a running snapshot holds it
    released = threading.Timer(0.3, os.close, (fd,))
    try:
        with pytest.raises(SnapshotError, match=r"another snapshot of .* is in progress"):
            create_snapshot(data, snaps)
        assert complete_snapshots(snaps) == []
        released.start()
        started = time.monotonic()
        created = create_snapshot(data, snaps, wait_s=30)
        assert time.monotonic() - started >= 0.2  # it waited for the holder
        assert complete_snapshots(snaps) == [created.name]
    finally:
        released.cancel()
        if not released.is_alive() and not released.finished.is_set():
            os.close(fd)


def test_a_directory_snapshot_shares_no_inode_with_the_live_index(tmp_path: Path) -> None:
    """Writing into a snapshot (same file system) must not change the data dir."""
    data = tmp_path / "data"
    build(data, 4)
    snaps = DirectoryStore(tmp_path / "snaps")
    created = create_snapshot(data, snaps)
    live = {p.stat().st_ino for p in (data / "tantivy").iterdir()}
    copies = [tmp_path / "snaps" / created.name / f.path for f in created.manifest.files]
    assert not live & {p.stat().st_ino for p in copies}
    before = snapshot(data)
    segment = next(p for p in copies if p.name.endswith(".term") and p.stat().st_size)
    with segment.open("r+b") as f:
        f.write(b"\0" * 16)
    assert snapshot(data) == before


@pytest.mark.parametrize("kind", ["symlink", "fifo", "linked-dir"])
def test_restore_refuses_links_and_special_files(tmp_path: Path, kind: str) -> None:
    data = tmp_path / "data"
    build(data, 2)
    snaps = DirectoryStore(tmp_path / "snaps")
    created = create_snapshot(data, snaps)
    folder = tmp_path / "snaps" / created.name
    outside = tmp_path / "outside"
    if kind == "symlink":  # a listed file pointing anywhere (/etc/passwd)
        secret = tmp_path / "passwd"
        secret.write_bytes((folder / "tantivy" / "meta.json").read_bytes())  # same bytes
        (folder / "tantivy" / "meta.json").unlink()
        (folder / "tantivy" / "meta.json").symlink_to(secret)
    elif kind == "fifo":
        (folder / "tantivy" / "meta.json").unlink()
        os.mkfifo(folder / "tantivy" / "meta.json")
    else:  # the index folder itself a link to a copy elsewhere
        (folder / "tantivy").rename(outside)
        (folder / "tantivy").symlink_to(outside, target_is_directory=True)
    with pytest.raises(SnapshotCorruptError, match="refused"):
        restore_snapshot(snaps, tmp_path / "restored")
    assert not (tmp_path / "restored").exists()


def test_a_file_longer_than_listed_stops_at_its_listed_size(tmp_path: Path) -> None:
    data = tmp_path / "data"
    build(data, 2)
    snaps = DirectoryStore(tmp_path / "snaps")
    created = create_snapshot(data, snaps)
    db = tmp_path / "snaps" / created.name / "store.sqlite3"
    listed = db.stat().st_size
    with db.open("ab") as f:  # 64 MiB more than the manifest lists
        f.truncate(listed + (64 << 20))
    written: list[int] = []
    real_write = HashingWriter.write

    def counting(self: HashingWriter, chunk: bytes | memoryview) -> int:
        n = real_write(self, chunk)
        written.append(self.size)
        return n

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(HashingWriter, "write", counting)
        with pytest.raises(SnapshotCorruptError, match=r"store\.sqlite3 has more than \d+ bytes"):
            restore_snapshot(snaps, tmp_path / "restored")
    assert max(written, default=0) <= listed  # never wrote past the listed size
