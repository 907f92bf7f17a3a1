"""A full disk, for real (issue 10, item 6): SQLite's writer connection gets a small
``PRAGMA max_page_count``, so writes fail with a genuine ``SQLITE_FULL``. The cause
comes out in one line (``disk full: …``), the store stays consistent (no index
document without its rows), and the next run after space is freed stores everything."""

from __future__ import annotations

import base64
import json
import random
import sqlite3
from pathlib import Path

import pytest

import indexer.sources.kafka as indexer_module
import indexer.store.tables.sqlite_tables as sqlite_tables
from indexer.query.service import StoreQueryService
from indexer.stats import store_stats
from indexer.store.failure import describe, is_disk_full
from tests.builders import assistant, header, user
from tests.fixtures.kafka import TopicFactory
from tests.fixtures.waiting import wait_until
from tests.kafka.harness import create_topics, publish, running_indexer
from worker.cli.main import main

SQLITE_FULL = "disk full: SQLite could not write (database or disk is full)"
MAX_PAGES = 60  # the schema plus a few sessions; 4 KiB pages


def write_logs(root: Path, n: int) -> list[str]:
    root.mkdir(parents=True, exist_ok=True)
    ids = []
    # Random text: the store compresses events, repeated filler would not fill the pages.
    rng = random.Random(n)
    for i in range(n):
        sid = f"full-{i:02d}"
        lines = [json.dumps({"type": "session", **header(sid, cwd="/w/full")})]
        for seq in range(0, 20, 2):
            filler = [base64.b64encode(rng.randbytes(300)).decode() for _ in range(2)]
            lines.append(json.dumps(user(seq, f"capybara question {i} {seq} " + filler[0])))
            lines.append(json.dumps(assistant(seq + 1, f"capybara answer {i} " + filler[1])))
        (root / f"{sid}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        ids.append(sid)
    return ids


def limit_sqlite(mp: pytest.MonkeyPatch, pages: int) -> None:
    real = sqlite_tables.connect

    def connect(path: Path, *, readonly: bool = False) -> sqlite3.Connection:
        conn = real(path, readonly=readonly)
        if not readonly:
            conn.execute(f"PRAGMA max_page_count = {pages}")
        return conn

    mp.setattr(sqlite_tables, "connect", connect)


def assert_consistent(data: Path) -> set[str]:
    """Every session a search finds has its rows; returns the stored sessions."""
    service = StoreQueryService(data)
    try:
        page = service.search_sessions("capybara", [], [], limit=100)
        found = {hit.record.header.id for hit in page.items}
        stored = {s for s in found if service.get_session(s) is not None}
        assert found == stored, "index documents without rows"
        stats = store_stats(data)
        assert (stats.sessions == 0) <= (stats.documents == 0), stats
        return found
    finally:
        service.close()


def test_the_cause_is_named_whatever_carries_it() -> None:
    full = sqlite3.OperationalError("database or disk is full")
    try:
        try:
            raise full
        except sqlite3.Error as first:
            raise sqlite3.OperationalError("cannot rollback - no transaction is active") from first
    except sqlite3.Error as masked:
        assert describe(masked) == SQLITE_FULL
    assert is_disk_full(OSError(28, "No space left on device"))
    assert describe(ValueError("An IO error occurred: 'No space left on device'")).startswith(
        "disk full: the index could not write"
    )
    assert describe(RuntimeError("boom")) == "RuntimeError: boom"


def test_ingest_on_a_full_disk_exits_non_zero_with_the_cause_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    logs, data = tmp_path / "logs", tmp_path / "data"
    ids = write_logs(logs, 30)
    with monkeypatch.context() as mp:
        limit_sqlite(mp, MAX_PAGES)
        rc = main(["ingest", str(logs), "--data", str(data), "--commit-every", "40"])
    out, err = capsys.readouterr()
    assert rc != 0
    lines = [line for line in err.splitlines() if line.startswith("sessionq ingest:")]
    assert len(lines) == 1, err
    assert lines[0].endswith(SQLITE_FULL), lines[0]
    assert "Traceback" not in err and "no transaction is active" not in err + out
    stored = assert_consistent(data)
    assert stored < set(ids), "the disk was not full after all"

    # Space freed: the next ingest stores everything, and the store is consistent.
    assert main(["ingest", str(logs), "--data", str(data)]) == 0
    assert assert_consistent(data) == set(ids)
    assert store_stats(data).sessions == len(ids)


@pytest.mark.kafka
async def test_the_kafka_indexer_is_not_ready_on_a_full_disk_and_recovers(
    kafka_bootstrap: str,
    topic_factory: TopicFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(indexer_module, "RETRY_FIRST_S", 0.01)
    monkeypatch.setattr(indexer_module, "RETRY_MAX_S", 0.05)
    topics = await create_topics(kafka_bootstrap, topic_factory, events=1)
    data = tmp_path / "data"
    logs = tmp_path / "logs"
    ids = write_logs(logs, 30)
    limit_sqlite(monkeypatch, MAX_PAGES)
    await publish(topics.kafka(), topics.events, sorted(logs.glob("*.jsonl")))
    async with running_indexer(data, topics.kafka(), batch_ms=20) as running:
        indexer = running.indexer
        await wait_until(lambda: indexer.failing is not None, timeout=30, what="the disk to fill")
        assert indexer.failing is not None and indexer.failing.endswith(SQLITE_FULL)
        assert not await indexer.caught_up()
        assert indexer.readiness_notes() == {"failing": indexer.failing}
        assert indexer.counters.dead_lettered == 0, "a record was dead-lettered for a full disk"
        assert not running.died()
        assert_consistent(data)
        # Space freed: the indexer recovers by itself, becomes ready, stores everything.
        indexer.store.tables.conn.execute("PRAGMA max_page_count = 1073741823")
        await wait_until(indexer.caught_up, timeout=60, what="the indexer to recover")
        assert indexer.failing is None and indexer.readiness_notes() == {}
    assert assert_consistent(data) == set(ids)
    assert store_stats(data).sessions == len(ids)


async def test_serve_on_a_full_disk_names_the_cause_and_stores_everything_once_freed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.fixtures.serve import running_embedded

    logs, data = tmp_path / "logs", tmp_path / "data"
    ids = write_logs(logs, 30)
    limit_sqlite(monkeypatch, MAX_PAGES)
    async with running_embedded(logs, data) as (embedded, base, http):
        async with http.get(f"{base}/readyz") as response:
            body = await response.json()
        assert body["store_error"].endswith(SQLITE_FULL), body
        assert "no transaction is active" not in body["store_error"]
        assert_consistent(data)
        # Space freed: the watcher reads the lost sessions again by itself.
        store = embedded.local.source.store if embedded.local.source else None
        assert store is not None
        store.tables.conn.execute("PRAGMA max_page_count = 1073741823")

        async def recovered() -> bool:
            async with http.get(f"{base}/readyz") as response:
                ready = await response.json()
            return "store_error" not in ready and store_stats(data).sessions == len(ids)

        await wait_until(recovered, timeout=60, what="serve to store every session")
    assert assert_consistent(data) == set(ids)
