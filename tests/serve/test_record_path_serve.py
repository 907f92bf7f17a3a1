"""WatchedStore ``serve`` on the one record path (issue 8), under injected failures.

``WatchedStore.sync_once`` runs one pass of the local source's writer over a dsh root:
what changed is applied through the record loop (``indexer.sources.local.applier``).
Its policy: a record that failed (rows, index documents) and a lost batch (a failed
commit, SQLite ending the transaction) are retried from the watcher's last applied
position, i.e. the watcher re-emits those sessions on its next scan. The tests inject a
failure at each step, show that nothing partial is visible through the query service
and the tools while it lasts, then clear it and show that the next ``sync_once``
catches up: every event (appended ones too) stored and searchable, the next append not
taken for a seq gap, and the store equal to a clean ingest of the same logs.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import indexer.store.tantivy.index as index_module
from indexer.logs.roots import discover
from indexer.sources.files import ingest_files
from indexer.stats import store_stats
from indexer.store.records.store import Store
from indexer.store.tables.sqlite_tables import SqliteTables
from indexer.store.tables.transaction import Transaction
from indexer.store.tantivy import TantivyIndex
from tests.builders import assistant, header, plain, user
from tests.injection import (
    Injection,
    TransactionLoss,
    doc_of,
    docs_of,
    events_batch_of,
    in_transaction,
    inject,
    session_arg,
)
from tests.serve.watched import WatchedStore
from tests.snapshots import snapshot
from worker.devtools.demo_corpus.layout import session_path
from worker.tools.access import Caller

WS = "/w/serve"
SESSIONS: dict[str, list[dict[str, Any]]] = {
    "caller": [
        plain(0, "turn/start", {"turn": 1}),
        plain(1, "step/start", {"turn": 1, "step": 1}),
        user(2, "what did the others find"),
    ],
    "ok-a": [plain(0, "turn/start", {"turn": 1}), user(1, "alpha apricot question")],
    # A replace with source links: the failing record writes several kinds of rows.
    "bad-b": [
        plain(0, "turn/start", {"turn": 1}),
        user(1, "bravo bluebird question"),
        assistant(2, "bravo bluebird summary", op=(1, 1), sources=[1]),
        user(3, "bravo bluebird follow-up"),
    ],
    "ok-c": [user(0, "charlie cherry question"), assistant(1, "charlie cherry answer")],
}
DISK_IO = "disk I/O error"
NO_SPACE = "No space left on device"


def log_path(root: Path, sid: str) -> Path:
    return root / session_path(WS, sid)


def write_root(root: Path) -> None:
    for sid, events in SESSIONS.items():
        path = log_path(root, sid)
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = [json.dumps({"type": "session", **header(sid, cwd=WS)})]
        lines += [json.dumps(e) for e in events]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def append(root: Path, sid: str, event: dict[str, Any]) -> None:
    with log_path(root, sid).open("a", encoding="utf-8") as f:
        f.write(json.dumps(event) + "\n")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    out = tmp_path / "sessions"
    write_root(out)
    return out


@pytest.fixture
def embedded(root: Path, tmp_path: Path) -> Iterator[WatchedStore]:
    emb = WatchedStore(root, tmp_path / "data")
    yield emb
    emb.close()


def events_of(emb: WatchedStore, sid: str) -> list[int] | None:
    """The seqs the query service lists for ``sid`` (None: no such session)."""
    if emb.service.get_session(sid) is None:
        return None
    return [e.seq for e in emb.service.list_events(sid)]


def found(emb: WatchedStore, word: str) -> set[str]:
    page = emb.service.search_sessions(word, [], [], limit=20)
    return {hit.record.header.id for hit in page.items}


async def tool_finds(emb: WatchedStore, word: str, sid: str) -> bool:
    """Whether ``session_search`` (the tool, for the caller session) names ``sid``."""
    reply = await emb.pipeline.call("session_search", {"query": word}, Caller("caller"))
    assert reply.ok, reply
    return sid in reply.text


def held(emb: WatchedStore) -> int:
    return store_stats(emb.data).held_sessions


def clean_ingest(root: Path, data: Path) -> dict[str, Any]:
    """The store a clean ``sessionq ingest`` of the same logs builds."""
    store = Store(data)
    try:
        summary = ingest_files(store, discover([root]))
    finally:
        store.close()
    assert summary.rejected == []
    return snapshot(data, offsets=False)


async def assert_caught_up(emb: WatchedStore, root: Path, tmp_path: Path, name: str) -> None:
    """Every event of every log stored and searchable, the next append applied (not a
    seq gap), and the store equal to a clean ingest."""
    assert events_of(emb, "bad-b") == list(range(len(SESSIONS["bad-b"])))
    assert found(emb, "bluebird") == {"bad-b"}
    assert await tool_finds(emb, "bluebird", "bad-b")
    rejected = emb.status.rejected_records
    seq = len(SESSIONS["bad-b"])
    append(root, "bad-b", user(seq, "bluebird yak appended after the failure"))
    assert await emb.sync_once() == 1
    assert events_of(emb, "bad-b") == list(range(seq + 1))
    assert found(emb, "yak") == {"bad-b"}
    assert await tool_finds(emb, "yak", "bad-b")
    assert emb.status.rejected_records == rejected, "the append was rejected"
    assert emb.status.rejected == {}
    assert held(emb) == 0
    assert snapshot(emb.data, offsets=False) == clean_ingest(root, tmp_path / f"ref-{name}")


# ---- a failing record -----------------------------------------------------------------------


class _Failure:
    """An injected failure that lasts until ``clear()``; ``fired()`` counts it."""

    def __init__(self, fired: Callable[[], int], clear: Callable[[], None]) -> None:
        self.fired = fired
        self.clear = clear


def _injection(inj: Injection) -> _Failure:
    return _Failure(lambda: inj.fired, inj.disarm)


def _fail_record(mp: pytest.MonkeyPatch, step: str) -> _Failure:
    """B's record holding seq 1 fails at ``step``."""
    if step == "rows":
        exc: Callable[[], BaseException] = lambda: sqlite3.OperationalError(DISK_IO)  # noqa: E731
        return _injection(
            inject(mp, SqliteTables, "insert_events", exc, when=events_batch_of("bad-b", 1))
        )
    if step == "index-document":
        exc = lambda: ValueError("term too long for the index")  # noqa: E731
        return _injection(inject(mp, index_module, "document", exc, when=doc_of("bad-b", 1)))
    if step == "index-upsert":
        exc = lambda: OSError(NO_SPACE)  # noqa: E731
        return _injection(
            inject(mp, TantivyIndex, "upsert", exc, when=docs_of("bad-b", 1), after=True)
        )
    assert step == "rows-transaction-lost"
    loss = TransactionLoss("bad-b", times=None)
    loss.install(mp)
    return _Failure(lambda: loss.fired, loss.disarm)


RECORD_STEPS = ["rows", "index-document", "index-upsert", "rows-transaction-lost"]
BATCH_STEPS = frozenset({"index-upsert", "rows-transaction-lost"})  # the store: the batch's


@pytest.mark.parametrize("split", ["one-record", "record-per-event"])
@pytest.mark.parametrize("step", RECORD_STEPS)
async def test_a_failing_record_shows_nothing_partial_and_serve_catches_up(
    embedded: WatchedStore,
    root: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    step: str,
    split: str,
) -> None:
    if split == "record-per-event":
        embedded.watcher.max_record_bytes = 1  # every event its own events record
    failure = _fail_record(monkeypatch, step)

    # Two scans while the failure lasts: the watcher re-emits B, it fails again.
    for scan in (1, 2):
        await embedded.sync_once()
        assert failure.fired() == scan
        assert found(embedded, "bluebird") == set()
        if step in BATCH_STEPS:
            # The batch is lost (SQLite lost the transaction; a full disk is never a
            # record's fault): nothing of it is visible, and it is retried.
            assert embedded.service.filter_sessions([]) == []
            continue
        assert not await tool_finds(embedded, "bluebird", "bad-b")
        # B's failing record is rolled back whole; what precedes it in B stays.
        expected_b = [0] if split == "record-per-event" else []
        assert events_of(embedded, "bad-b") == expected_b
        for sid in ("caller", "ok-a", "ok-c"):
            assert events_of(embedded, sid) == list(range(len(SESSIONS[sid])))
        assert found(embedded, "apricot") == {"ok-a"}
        assert await tool_finds(embedded, "cherry", "ok-c")
        if split == "one-record":
            assert embedded.status.rejected_records == 0
            assert held(embedded) == 0
        else:
            # B's later records do not follow on the stored log: seq gaps, B is held
            # (the one state change a rejection leaves) until the retry fills the gap.
            assert embedded.status.rejected_records > 0
            assert held(embedded) == 1

    failure.clear()
    await embedded.sync_once()
    await assert_caught_up(embedded, root, tmp_path, f"{step}-{split}")
    assert failure.fired() == 2


# ---- a failing commit -----------------------------------------------------------------------


def _fail_commit(mp: pytest.MonkeyPatch, step: str) -> Injection:
    if step == "index-commit":
        return inject(mp, TantivyIndex, "commit", lambda: OSError(NO_SPACE))
    assert step == "sqlite-commit"
    return inject(
        mp, Transaction, "commit", lambda: sqlite3.OperationalError(DISK_IO), when=in_transaction
    )


@pytest.mark.parametrize("step", ["index-commit", "sqlite-commit"])
async def test_a_failing_first_commit_shows_nothing_and_serve_catches_up(
    embedded: WatchedStore, root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    injection = _fail_commit(monkeypatch, step)
    for scan in (1, 2):
        await embedded.sync_once()
        assert injection.fired == scan
        assert embedded.service.filter_sessions([]) == []
        for word in ("apricot", "bluebird", "cherry"):
            assert found(embedded, word) == set()
    injection.disarm()
    await embedded.sync_once()
    for sid in ("caller", "ok-a", "ok-c"):
        assert events_of(embedded, sid) == list(range(len(SESSIONS[sid])))
    await assert_caught_up(embedded, root, tmp_path, step)


@pytest.mark.parametrize("step", ["index-commit", "sqlite-commit"])
async def test_a_failing_commit_of_an_append_shows_nothing_of_it_and_serve_catches_up(
    embedded: WatchedStore, root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    await embedded.sync_once()
    assert events_of(embedded, "bad-b") == [0, 1, 2, 3]
    append(root, "bad-b", user(4, "bluebird walrus appended"))
    injection = _fail_commit(monkeypatch, step)

    await embedded.sync_once()

    assert injection.fired == 1
    assert events_of(embedded, "bad-b") == [0, 1, 2, 3]
    assert found(embedded, "walrus") == set(), "a search finds an event that is not stored"
    assert not await tool_finds(embedded, "walrus", "bad-b")
    injection.disarm()
    await embedded.sync_once()
    assert events_of(embedded, "bad-b") == [0, 1, 2, 3, 4]
    assert found(embedded, "walrus") == {"bad-b"}
    append(root, "bad-b", user(5, "bluebird yak appended after the failure"))
    assert await embedded.sync_once() == 1
    assert events_of(embedded, "bad-b") == [0, 1, 2, 3, 4, 5]
    assert found(embedded, "yak") == {"bad-b"}
    assert embedded.status.rejected_records == 0 and held(embedded) == 0
    assert snapshot(embedded.data, offsets=False) == clean_ingest(root, tmp_path / "ref")


# ---- a removed log whose delete fails -------------------------------------------------------


def _fail_delete(mp: pytest.MonkeyPatch, step: str) -> Injection:
    if step == "rows":
        exc: Callable[[], BaseException] = lambda: sqlite3.OperationalError(DISK_IO)  # noqa: E731
        return inject(mp, SqliteTables, "delete_session", exc, when=session_arg("bad-b"))
    return _fail_commit(mp, step)


@pytest.mark.parametrize("step", ["rows", "index-commit"])
async def test_a_removed_log_whose_delete_failed_is_deleted_once_the_failure_clears(
    embedded: WatchedStore, root: Path, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    await embedded.sync_once()
    assert found(embedded, "bluebird") == {"bad-b"}
    log_path(root, "bad-b").unlink()
    injection = _fail_delete(monkeypatch, step)

    await embedded.sync_once()

    assert injection.fired == 1
    # The delete was not applied: the session is still whole (nothing half-deleted).
    assert events_of(embedded, "bad-b") == [0, 1, 2, 3]
    assert found(embedded, "bluebird") == {"bad-b"}
    injection.disarm()
    await embedded.sync_once()
    await embedded.sync_once()
    assert events_of(embedded, "bad-b") is None, "the removed log's session is still stored"
    assert found(embedded, "bluebird") == set()
    assert not await tool_finds(embedded, "bluebird", "bad-b")
