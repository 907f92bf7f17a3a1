"""The in-place migration of a data dir written by schema version 1 (the committed fixture
``tests/data/store-v1``, see ``store_fixture.py``): every tool output stays what the old
release answered, a second open changes nothing, and a migration that dies halfway
leaves the old dir intact and migrates on the next open."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from indexer.errors import SessionQueryError
from indexer.model.records import HeaderRecord
from indexer.query.service import StoreQueryService
from indexer.stats import store_stats
from indexer.store.blocks.format import dictionary_id, shipped_dictionary
from indexer.store.layout import sqlite_path
from indexer.store.maintenance import index_format
from indexer.store.maintenance.index_format import INDEX_FORMAT_KEY
from indexer.store.records.store import Store
from indexer.store.records.writer import StoreWriter
from indexer.store.tables import migrate as migration
from indexer.store.tables.schema import SCHEMA_VERSION
from indexer.store.tantivy.schema import INDEX_FORMAT
from tests.builders import header
from tests.data_paths import REPO_ROOT
from tests.indexer.store_fixture import FIXTURE_DATA, FIXTURE_OUTPUTS, build, outputs
from tests.injection import inject
from tests.snapshots import query, snapshot


def _expected() -> dict[str, Any]:
    expected: dict[str, Any] = json.loads(FIXTURE_OUTPUTS.read_text())
    return expected


def _fixture_copy(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    shutil.copytree(FIXTURE_DATA, data)
    return data


def _tables(data: Path) -> dict[str, str]:
    return dict(query(data, "SELECT name, sql FROM sqlite_master WHERE type = 'table'"))


def _meta(data: Path) -> dict[str, str]:
    return dict(query(data, "SELECT key, value FROM meta"))


def _digest(data: Path) -> str:
    digest = hashlib.sha256()
    digest.update(sqlite_path(data).read_bytes())
    return digest.hexdigest()


def _set_index_format(data: Path, value: str) -> None:
    conn = sqlite3.connect(sqlite_path(data))
    try:
        with conn:
            conn.execute("UPDATE meta SET value = ? WHERE key = ?", (value, INDEX_FORMAT_KEY))
    finally:
        conn.close()


def test_the_fixture_is_a_version_1_dir() -> None:
    tables = _tables(FIXTURE_DATA)
    assert "events" in tables and "blocks" not in tables
    meta = _meta(FIXTURE_DATA)
    assert meta["schema_version"] == "1" and INDEX_FORMAT_KEY not in meta  # index format 1


def test_opening_a_version_1_dir_migrates_it_and_every_output_stays_the_same(
    tmp_path: Path,
) -> None:
    data = _fixture_copy(tmp_path)
    Store(data).close()
    tables = _tables(data)
    assert {"blocks", "dictionaries", "replaced", "source_runs"} <= tables.keys()
    assert not {"events", "sources", "events_v1", "sessions_v1"} & tables.keys()
    meta = _meta(data)
    assert meta["schema_version"] == SCHEMA_VERSION == "3"
    assert int(meta["zstd_dict_id"]) == dictionary_id(shipped_dictionary())
    assert meta[INDEX_FORMAT_KEY] == INDEX_FORMAT  # the version 1 index was rebuilt
    got = outputs(data)
    expected = _expected()
    for name, text in expected["replies"].items():
        assert got["replies"][name] == text, name
    assert got == expected
    counts = expected["stats"]
    agents = store_stats(data).agents
    assert agents["dsh"] == {"sessions": counts["sessions"], "events": counts["events"]}
    assert all(a == {"sessions": 0, "events": 0} for name, a in agents.items() if name != "dsh")


def test_a_second_open_is_a_no_op(tmp_path: Path) -> None:
    data = _fixture_copy(tmp_path)
    Store(data).close()
    before = (_digest(data), snapshot(data))
    Store(data).close()
    assert (_digest(data), snapshot(data)) == before
    assert outputs(data) == _expected()


def test_a_fresh_ingest_of_the_same_logs_answers_the_same(tmp_path: Path) -> None:
    data = tmp_path / "fresh"
    build(data)
    assert outputs(data) == _expected()


def test_migrated_and_fresh_dirs_hold_the_same_rows(tmp_path: Path) -> None:
    migrated = _fixture_copy(tmp_path)
    Store(migrated).close()
    fresh = tmp_path / "fresh"
    build(fresh)
    a, b = snapshot(migrated), snapshot(fresh)
    assert a["events"] == b["events"]
    assert a["sources"] == b["sources"] and a["replacements"] == b["replacements"]
    assert a["offsets"] == b["offsets"] and a["documents"] == b["documents"]
    assert [r[:7] + r[8:] for r in a["sessions"]] == [r[:7] + r[8:] for r in b["sessions"]]


def test_a_failing_migration_leaves_the_version_1_dir_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _fixture_copy(tmp_path)
    before = _digest(data)
    injection = inject(monkeypatch, migration, "_source_runs", lambda: OSError("disk I/O error"))
    with pytest.raises(OSError, match="disk I/O error"):
        Store(data)
    assert injection.fired == 1
    assert _meta(data)["schema_version"] == "1"
    assert "events" in _tables(data) and "blocks" not in _tables(data)
    conn = sqlite3.connect(sqlite_path(data))
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        conn.close()
    injection.disarm()
    Store(data).close()
    assert outputs(data) == _expected()
    assert before != _digest(data)


def test_a_migration_killed_halfway_restarts_from_the_old_tables(tmp_path: Path) -> None:
    data = _fixture_copy(tmp_path)
    code = (
        "import sys; from pathlib import Path; from indexer.failpoints import FailPoints; "
        "from indexer.store.records.store import Store; "
        "Store(Path(sys.argv[1]), failpoints=FailPoints.parse(sys.argv[2]))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(data), "migrate-halfway:1"], cwd=REPO_ROOT, check=False
    )
    assert proc.returncode == 137  # died inside the migration transaction
    assert _meta(data)["schema_version"] == "1"
    assert "events" in _tables(data)
    Store(data).close()
    assert _meta(data)["schema_version"] == SCHEMA_VERSION
    assert outputs(data) == _expected()


def test_readers_refuse_a_dir_until_it_is_migrated(tmp_path: Path) -> None:
    data = _fixture_copy(tmp_path)
    service = StoreQueryService(data)
    try:
        with pytest.raises(SessionQueryError) as caught:
            service.read_event("2acbeda7-113a-5afa-9b65-82fdcac04c72", 0)
        assert caught.value.code == "SESSION_QUERY_PERSISTENCE_FAILED"
        assert "schema version 1" in caught.value.message
        Store(data).close()
        window = service.read_event("2acbeda7-113a-5afa-9b65-82fdcac04c72", 0)
        assert window.target.seq == 0
        # The reader had opened the version 1 index; it reopens the rebuilt one.
        got = [h.best for h in service.search_sessions("the", [], [], limit=5).items]
        fresh = StoreQueryService(data)
        try:
            assert got == [h.best for h in fresh.search_sessions("the", [], [], limit=5).items]
        finally:
            fresh.close()
        assert got
    finally:
        service.close()


def test_a_new_dir_records_the_index_format(tmp_path: Path) -> None:
    Store(tmp_path / "new").close()
    assert _meta(tmp_path / "new")[INDEX_FORMAT_KEY] == INDEX_FORMAT


def test_readers_refuse_an_older_index_format_until_the_writer_rebuilds_it(
    tmp_path: Path,
) -> None:
    """A reader opened before the rebuild refuses the dir, then answers from the rebuilt
    index (a new schema: it reopens the index) exactly what the old release answered."""
    data = _fixture_copy(tmp_path)
    Store(data).close()
    _set_index_format(data, "1")
    service = StoreQueryService(data)
    try:
        with pytest.raises(SessionQueryError) as caught:
            service.search_sessions("the", [], [], limit=5)
        assert caught.value.code == "SESSION_QUERY_PERSISTENCE_FAILED"
        assert "index format 1" in caught.value.message
        Store(data).close()
        assert _meta(data)[INDEX_FORMAT_KEY] == INDEX_FORMAT
        assert service.search_sessions("the", [], [], limit=5).items
    finally:
        service.close()
    assert outputs(data) == _expected()


def test_a_failing_index_rebuild_leaves_the_old_format_and_restarts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_format, "REBUILD_CHUNK", 3)
    data = _fixture_copy(tmp_path)
    injection = inject(  # after two chunks reached the writer
        monkeypatch, StoreWriter, "reindex", lambda: OSError("disk I/O error"), skip=2
    )
    with pytest.raises(OSError, match="disk I/O error"):
        Store(data)
    assert injection.fired == 1
    meta = _meta(data)
    assert meta["schema_version"] == SCHEMA_VERSION and INDEX_FORMAT_KEY not in meta
    injection.disarm()
    Store(data).close()
    assert _meta(data)[INDEX_FORMAT_KEY] == INDEX_FORMAT
    assert outputs(data) == _expected()


def test_the_rebuild_indexes_in_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index_format, "REBUILD_CHUNK", 3)
    data = _fixture_copy(tmp_path)
    Store(data).close()
    assert outputs(data) == _expected()


def test_a_version_2_dir_gets_the_watched_logs_signatures(tmp_path: Path) -> None:
    """Version 3 records each watched log's signature; a version 2 dir's rows get an
    unknown one (each such log is read once more), everything else stays."""
    data = tmp_path / "data"
    store = Store(data)
    try:
        store.apply(HeaderRecord(v=1, kind="header", header=header("w1", cwd="/w")))
        store.note_source("w1", "/logs/w1.jsonl", (10, 20))
        store.commit()
    finally:
        store.close()
    conn = sqlite3.connect(sqlite_path(data))
    try:  # what a version 2 release left
        conn.execute("ALTER TABLE watched_sources DROP COLUMN size")
        conn.execute("ALTER TABLE watched_sources DROP COLUMN mtime_ns")
        conn.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
        conn.commit()
    finally:
        conn.close()
    with pytest.raises(SessionQueryError, match="store schema version 2"):
        StoreQueryService(data).get_session("w1")
    store = Store(data)
    try:
        assert _meta(data)["schema_version"] == SCHEMA_VERSION == "3"
        watched = store.tables.watched_sources()
        assert watched["w1"].path == "/logs/w1.jsonl" and watched["w1"].signature is None
    finally:
        store.close()
    service = StoreQueryService(data)
    try:
        record = service.get_session("w1")
        assert record is not None and record.header.cwd == "/w"
    finally:
        service.close()


def _as_version_2(data: Path) -> None:
    """What a version 2 release left: no signatures, no stale-import marks."""
    conn = sqlite3.connect(sqlite_path(data))
    try:
        conn.execute("ALTER TABLE watched_sources DROP COLUMN size")
        conn.execute("ALTER TABLE watched_sources DROP COLUMN mtime_ns")
        conn.execute("DROP TABLE stale_imports")
        conn.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
        conn.commit()
    finally:
        conn.close()


@pytest.mark.parametrize("older", [True, False])
def test_an_import_of_an_older_release_is_replaced_by_its_log(tmp_path: Path, older: bool) -> None:
    """An older release mapped another agent's log differently: reading the log again
    replaces that session instead of conflicting with it (and the session reads back);
    a session this release imported still conflicts with a different log of its id."""
    from indexer.logs.importers.detect import LogSource, read_source
    from indexer.sources.files import ingest_files

    rollout = sorted((REPO_ROOT / "tests/data/codex/sessions").rglob("rollout-*.jsonl"))[0]
    lines = rollout.read_text(encoding="utf-8").splitlines()
    first_text = next(
        i for i, line in enumerate(lines) if '"input_text"' in line or '"output_text"' in line
    )
    earlier = tmp_path / "earlier" / rollout.name
    earlier.parent.mkdir()
    earlier.write_text(  # the same session mapped another way: one text differs
        "\n".join(
            line.replace('text":"', 'text":"(earlier mapping) ', 1) if i == first_text else line
            for i, line in enumerate(lines)
        )
        + "\n",
        encoding="utf-8",
    )
    data = tmp_path / "data"
    store = Store(data)
    try:
        assert ingest_files(store, [LogSource(earlier, "codex")]).rejected == []
    finally:
        store.close()
    if older:
        _as_version_2(data)
    store = Store(data)
    try:
        summary = ingest_files(store, [LogSource(rollout, "codex")])
    finally:
        store.close()
    sid = read_source(LogSource(rollout, "codex")).header.id
    if older:
        assert summary.rejected == [], summary.rejected
        service = StoreQueryService(data)
        try:
            stored = service.list_events(sid)
            assert len(stored) == len(read_source(LogSource(rollout, "codex")).events)
            for event in stored:
                service.read_event(sid, event.seq)  # every event reads back
        finally:
            service.close()
    else:
        assert [r.reason for r in summary.rejected] and "conflict" in summary.rejected[0].reason
