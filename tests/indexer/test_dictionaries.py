"""A data dir's own zstd dictionary (``indexer.store.blocks.dictionaries``): trained once the dir
holds the threshold of raw events, every block recompressed with it and read back byte
for byte, kept by a reopened dir and by snapshots; a dir left with blocks under several
dictionaries (a failed recompression) reads and finishes later; deleting a session the
dictionary was sampled from replaces the dictionary, so its text leaves every file.

The threshold is lowered for these tests: the real corpus holds about 3.2 MB of raw
events (less than the threshold: other tests never train)."""

from __future__ import annotations

import os
import random
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from indexer.logs.roots import discover
from indexer.model.records import DeleteRecord, HeaderRecord, LifecycleRecord
from indexer.query.service import StoreQueryService
from indexer.snapshot.create import create_snapshot
from indexer.snapshot.restore import restore_snapshot
from indexer.snapshot.stores import DirectoryStore
from indexer.sources.files import ingest_files
from indexer.store.blocks import dictionaries
from indexer.store.blocks import format as block_format
from indexer.store.blocks.format import Codec, dictionary_id, shipped_dictionary
from indexer.store.blocks.table import EventBlocks, MissingDictionaryError
from indexer.store.layout import sqlite_path
from indexer.store.records.store import Store
from indexer.store.tables.connection import PAGE_SIZE, connect
from tests.builders import header
from tests.data_paths import CORPUS_DIR
from tests.erasure_scan import cell_values, marker, scan, unique_fragments
from tests.indexer.test_purge import apply_all, session
from tests.snapshots import event_rows, query

THRESHOLD = 1024 * 1024
VICTIM_EVENTS = 3000  # with a control of 1000, over the threshold


@pytest.fixture(autouse=True)
def low_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dictionaries, "TRAIN_AT_BYTES", THRESHOLD)


def _meta(data: Path) -> dict[str, str]:
    return dict(query(data, "SELECT key, value FROM meta"))


def _blocks(data: Path) -> dict[int, int]:
    """dict id -> compressed bytes of the blocks under it."""
    return dict(query(data, "SELECT dict_id, SUM(length(data)) FROM blocks GROUP BY 1"))


def _dictionary_ids(data: Path) -> set[int]:
    conn = sqlite3.connect(sqlite_path(data))
    try:
        return {int(r[0]) for r in conn.execute("SELECT id FROM dictionaries")}
    finally:
        conn.close()


def _rows(data: Path) -> list[tuple[Any, ...]]:
    conn = connect(sqlite_path(data), readonly=True)
    try:
        return event_rows(conn)
    finally:
        conn.close()


@pytest.fixture(scope="module")
def untrained_rows(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Any, ...]]:
    """Every event of the corpus as a dir that never trains stores it."""
    data = tmp_path_factory.mktemp("untrained") / "data"
    store = Store(data)
    try:
        store.dictionaries._train_at = 2**62
        ingest_files(store, discover([CORPUS_DIR]))
    finally:
        store.close()
    return _rows(data)


def test_the_dir_trains_at_the_threshold_and_reads_back_byte_for_byte(
    tmp_path: Path, untrained_rows: list[tuple[Any, ...]]
) -> None:
    data = tmp_path / "data"
    files = discover([CORPUS_DIR])
    shipped = dictionary_id(shipped_dictionary())
    store = Store(data)
    try:
        while store.tables.blocks.raw_appended < THRESHOLD // 2:
            ingest_files(store, [files.pop(0)])  # a commit each
        assert dictionaries.TRAINED_KEY not in _meta(data)  # under the threshold
        assert set(_blocks(data)) == {shipped}
        before = _rows(data)
        assert before == [r for r in untrained_rows if r[0] in {b[0] for b in before}]
        ingest_files(store, files)
        meta = _meta(data)
        trained = int(meta[dictionaries.TRAINED_KEY].split(",")[0].split(":")[1])
        assert int(meta["zstd_dict_id"]) == trained != shipped
        assert dictionaries.RECOMPRESS_KEY not in meta
        assert set(_blocks(data)) == {trained}  # every block was recompressed
        assert _dictionary_ids(data) == {trained, shipped}
        assert store.tables.block_dictionary()[0] == trained
    finally:
        store.close()
    assert _rows(data) == untrained_rows  # every event's raw JSON, byte for byte

    # A reopened dir compresses new blocks with the trained dictionary.
    store = Store(data)
    try:
        did, raw = store.tables.block_dictionary()
        assert did == trained and dictionary_id(raw) == trained
        store.apply(HeaderRecord(v=1, kind="header", header=header("later")))
        apply_all(store, session("later", "later words")[1:])
    finally:
        store.close()
    assert set(_blocks(data)) == {trained}
    service = StoreQueryService(data)
    try:
        assert service.read_event("later", 3) is not None
    finally:
        service.close()


def test_the_trained_dictionary_compresses_smaller(
    tmp_path: Path, untrained_rows: list[tuple[Any, ...]]
) -> None:
    trained, untrained = tmp_path / "trained", tmp_path / "untrained"
    for data, train in ((trained, True), (untrained, False)):
        store = Store(data)
        try:
            if not train:
                store.dictionaries._train_at = 2**62
            ingest_files(store, discover([CORPUS_DIR]))
        finally:
            store.close()
    assert sum(_blocks(trained).values()) < 0.9 * sum(_blocks(untrained).values())


def test_a_dir_with_blocks_under_several_dictionaries_reads_and_finishes_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, untrained_rows: list[tuple[Any, ...]]
) -> None:
    data = tmp_path / "data"
    monkeypatch.setattr(dictionaries, "RECOMPRESS_RUN", 16)
    store = Store(data)
    try:
        codec = store.tables.blocks.codec
        shipped = dictionary_id(shipped_dictionary())
        calls = {"n": 0}
        real = Codec.compress

        def failing(payload: bytes, did: int, level: int = block_format.LEVEL) -> bytes:
            if did != shipped:  # only the recompression uses the trained dictionary
                calls["n"] += 1
                if calls["n"] == 40:  # in its third run
                    raise OSError("disk went away")
            return real(codec, payload, did, level)

        monkeypatch.setattr(codec, "compress", failing)
        ingest_files(store, discover([CORPUS_DIR]))  # trains; the recompression fails
        monkeypatch.undo()
        meta = _meta(data)
        trained = int(meta["zstd_dict_id"])
        assert int(meta[dictionaries.RECOMPRESS_KEY]) == trained
        under = _blocks(data)
        assert len(under) == 2 and trained in under, under  # two dictionaries in use
    finally:
        store.close()
    assert _rows(data) == untrained_rows
    service = StoreQueryService(data)
    try:
        sid = untrained_rows[-1][0]
        assert service.read_event(sid, 0) is not None
    finally:
        service.close()

    store = Store(data)  # the next commit finishes the recompression
    try:
        store.apply(HeaderRecord(v=1, kind="header", header=header("later")))
        store.commit()
    finally:
        store.close()
    assert set(_blocks(data)) == {trained}
    assert dictionaries.RECOMPRESS_KEY not in _meta(data)
    assert _rows(data) == untrained_rows


def test_snapshots_carry_the_dictionaries(
    tmp_path: Path, untrained_rows: list[tuple[Any, ...]]
) -> None:
    data, restored = tmp_path / "data", tmp_path / "restored"
    store = Store(data)
    try:
        ingest_files(store, discover([CORPUS_DIR]))
    finally:
        store.close()
    snaps = DirectoryStore(tmp_path / "snaps")
    create_snapshot(data, snaps)
    restore_snapshot(snaps, restored)
    assert _dictionary_ids(restored) == _dictionary_ids(data)
    assert _meta(restored)["zstd_dict_id"] == _meta(data)["zstd_dict_id"]
    assert _rows(restored) == untrained_rows


def test_new_dirs_have_small_pages_and_old_ones_keep_theirs(tmp_path: Path) -> None:
    store = Store(tmp_path / "new")
    store.close()
    old = tmp_path / "old"
    old.mkdir()
    conn = sqlite3.connect(sqlite_path(old))
    conn.execute("PRAGMA page_size = 4096")
    conn.execute("VACUUM")
    conn.close()
    store = Store(old)
    store.close()
    for data, size in ((tmp_path / "new", PAGE_SIZE), (old, 4096)):
        conn = sqlite3.connect(sqlite_path(data))
        assert conn.execute("PRAGMA page_size").fetchone()[0] == size
        conn.close()


def test_a_not_live_session_keeps_its_events(tmp_path: Path) -> None:
    store = Store(tmp_path / "data")
    try:
        store.apply(HeaderRecord(v=1, kind="header", header=header("s")))
        apply_all(store, session("s", "some words")[1:])
        before = store.tables.indexed_events("s")
        store.apply(LifecycleRecord(v=1, kind="lifecycle", session_id="s", live=True))
        store.apply(LifecycleRecord(v=1, kind="lifecycle", session_id="s", live=False))
        store.commit()
        assert store.tables.indexed_events("s") == before
    finally:
        store.close()


# ---- erasure -----------------------------------------------------------------------------------
def _pieces(mark: str) -> list[bytes]:
    """Every 12-letter piece of a marker: the training keeps pieces of its samples, not
    always whole lines, and a piece of a marker can only come from its session."""
    raw = mark.encode()
    return [raw[i : i + 12] for i in range(len(raw) - 11)]


def test_deleting_a_sampled_session_replaces_the_dictionary_and_its_text_leaves(
    tmp_path: Path,
) -> None:
    """The victim's marker is in the trained dictionary (the control: else the scan
    proves nothing); after the delete's purge pass no piece of it is in any file."""
    rng = random.Random(5)
    victim = marker(rng)
    control = marker(rng, avoid=[victim])
    data = tmp_path / "data"
    store = Store(data, purge_interval_s=0)
    try:
        apply_all(store, session("victim", victim, events=VICTIM_EVENTS))
        apply_all(store, session("control", control, events=1000))  # reaches the threshold
        did, raw = store.tables.block_dictionary()
        assert did != dictionary_id(shipped_dictionary())
        assert victim.encode() in raw, "the dictionary must hold the victim's text"
        assert all(scan(data, _pieces(victim)).values())
        with_victim = cell_values(data)

        # A session the dictionary was not sampled from does not retire it.
        apply_all(store, session("late", "late words"))
        apply_all(store, [DeleteRecord(v=1, kind="delete", session_id="late")])
        assert store.tables.block_dictionary()[0] == did

        apply_all(store, [DeleteRecord(v=1, kind="delete", session_id="victim")])
        report = store.purger.last
        assert report is not None and report.complete, report
        new_did, new_raw = store.tables.block_dictionary()
        assert new_did != did and not any(p in new_raw for p in _pieces(victim))
        assert did not in _dictionary_ids(data)
        assert set(_blocks(data)) == {new_did}
        found = scan(data, [*_pieces(victim), victim.lower().encode(), control.encode()])
        assert found.pop(control.encode()), "the control must be found"
        assert not any(found.values()), {k: v for k, v in found.items() if v}
        # No piece of any value stored before the delete that is gone now (the victim's
        # blocks, the old dictionary, every block as compressed with it) is in a file.
        after = cell_values(data)
        gone = with_victim - after
        pieces = unique_fragments(gone, after | gone)
        hits = scan(data, [p for ps in pieces.values() for p in ps])
        assert not any(hits.values()), {k: v for k, v in hits.items() if v}
        assert store.tables.raw_events("control", [1])[1].raw.count(control.encode()) == 1
    finally:
        store.close()


def test_a_retired_dictionary_survives_a_restart_until_the_purge(tmp_path: Path) -> None:
    data = tmp_path / "data"
    rng = random.Random(6)
    victim = marker(rng)
    store = Store(data, purge_interval_s=None)  # the delete is applied, not purged
    try:
        apply_all(store, session("victim", victim, events=400))
        ingest_files(store, discover([CORPUS_DIR]))
        did = store.tables.block_dictionary()[0]
        apply_all(store, [DeleteRecord(v=1, kind="delete", session_id="victim")])
        assert _meta(data)[dictionaries.RETIRED_KEY] == "1"
        assert store.tables.block_dictionary()[0] == did
    finally:
        store.close()
    store = Store(data, purge_interval_s=0)  # a retired dictionary is a pending purge
    try:
        report = store.purge_if_due()
        assert report is not None and report.complete
        assert store.tables.block_dictionary()[0] != did
    finally:
        store.close()
    assert dictionaries.RETIRED_KEY not in _meta(data)
    assert not scan(data, [victim.encode()])[victim.encode()]


def test_a_read_that_races_a_dictionarys_deletion_reads_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    store = Store(data)
    try:
        apply_all(store, session("s", "some words"))
    finally:
        store.close()
    conn = connect(sqlite_path(data), readonly=True)
    try:
        reader = EventBlocks(conn, Codec())
        expected = reader.read_range(1, 0, 100)
        real = EventBlocks.payload
        raised = []

        def stale_once(self: EventBlocks, data: bytes, did: int) -> bytes:
            if not raised:
                raised.append(did)
                raise MissingDictionaryError(f"zstd dictionary {did} is missing")
            return real(self, data, did)

        monkeypatch.setattr(EventBlocks, "payload", stale_once)
        assert reader.read_range(1, 0, 100) == expected and raised
    finally:
        conn.close()


_CRASHING_INGEST = """
import sys
from pathlib import Path
from indexer.sources.files import ingest_files
from indexer.logs.roots import discover
from indexer.failpoints import FailPoints
from indexer.store.blocks import dictionaries
from indexer.store.records.store import Store
dictionaries.TRAIN_AT_BYTES = int(sys.argv[3])
dictionaries.RECOMPRESS_RUN = 16
store = Store(Path(sys.argv[2]), failpoints=FailPoints.parse(sys.argv[4]))
ingest_files(store, discover([Path(sys.argv[1])]))
"""


def test_a_crash_in_the_middle_of_the_recompression_leaves_a_readable_dir(
    tmp_path: Path, untrained_rows: list[tuple[Any, ...]]
) -> None:
    data = tmp_path / "data"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            _CRASHING_INGEST,
            str(CORPUS_DIR),
            str(data),
            str(THRESHOLD),
            "recompress-midway:3",
        ],
        env=env,
        capture_output=True,
        timeout=300,
    )
    assert done.returncode == 137, done.stderr.decode()
    meta = _meta(data)
    trained = int(meta["zstd_dict_id"])
    assert int(meta[dictionaries.RECOMPRESS_KEY]) == trained
    assert len(_blocks(data)) == 2  # killed with blocks under both dictionaries
    assert _rows(data) == untrained_rows

    store = Store(data)  # the next commit finishes the recompression
    try:
        store.commit()
    finally:
        store.close()
    assert set(_blocks(data)) == {trained}
    assert _rows(data) == untrained_rows
