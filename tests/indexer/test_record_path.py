"""The one record path (issue 8) under injected failures, without a broker.

``Store.apply`` runs each record in a savepoint and an index mark: a failure at any
step of a record — its rows, its index documents — rolls back the record alone and the
rest of the batch commits; a failure of the commit (or SQLite ending the transaction
itself) loses the whole batch, typed ``BatchAbortedError``. A seq-gap rejection leaves
only the session *held*. Then ``ingest_files``, the first caller: the bad file is
reported with its cause, the good files are stored, a lost batch reports its files and
later batches still get stored.

Every failure is injected into the real classes (``tests.injection``) and every test
checks that it fired; the stores are compared with reference stores built from the good
records only (``tests.snapshots``: rows, raw JSON, index documents, offsets).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest

import indexer.store.tantivy.index as index_module
from indexer.errors import (
    INDEX_FAILED,
    PERSISTENCE_FAILED,
    SEQ_CONFLICT,
    SEQ_GAP,
    BatchAbortedError,
    IndexFailedError,
    RecordFailedError,
    RecordRejectedError,
    SessionqError,
)
from indexer.logs.reader import read_log
from indexer.model.records import EventStreamRecord
from indexer.query.service import StoreQueryService
from indexer.sources.files import Rejection, ingest_files
from indexer.stats import store_stats
from indexer.store.layout import sqlite_path
from indexer.store.records.store import Store
from indexer.store.tables.connection import connect
from indexer.store.tables.sqlite_tables import SqliteTables
from indexer.store.tables.transaction import Transaction
from indexer.store.tantivy import TantivyIndex
from tests.builders import assistant, events_record, header, header_record, plain, user
from tests.fixtures.stores import SessionSpec, build_store
from tests.injection import (
    Injection,
    TransactionLoss,
    doc_of,
    docs_of,
    error_chain,
    events_batch_of,
    in_transaction,
    inject,
    session_arg,
)
from tests.snapshots import snapshot

A = header("ok-a", cwd="/w/a")
A_EVENTS = [
    plain(0, "turn/start", {"turn": 1}),
    user(1, "alpha apricot question"),
    assistant(2, "alpha apricot answer"),
]
# A replace, source links and a shadowed event: the record writes replacement, source
# and shadow rows before and after its event rows, and re-classifies within the batch.
B = header("bad-b", cwd="/w/b")
B_EVENTS = [
    plain(0, "turn/start", {"turn": 1}),
    user(1, "bravo bluebird question"),
    assistant(2, "bravo bluebird summary", op=(1, 1), sources=[1]),
    user(3, "bravo bluebird follow-up"),
]
C = header("ok-c", cwd="/w/c")
C_EVENTS = [user(0, "charlie cherry question"), assistant(1, "charlie cherry answer")]
D = header("ok-d", cwd="/w/d")
D_EVENTS = [user(0, "delta damson question")]

E = TypeVar("E", bound=SessionqError)

DISK_IO = "disk I/O error"
NO_SPACE = "No space left on device"
# What a full disk is reported as, whichever error carried it (indexer/store/failure.py).
INDEX_FULL = f"disk full: the index could not write ({NO_SPACE})"
INDEX_IO = "index writer failed: Input/output error"  # an I/O error that is not a full disk
SQLITE_FULL = "disk full: SQLite could not write (database or disk is full)"


def _records(h: dict[str, Any], events: Sequence[dict[str, Any]]) -> list[EventStreamRecord]:
    return [header_record(h), events_record(h["id"], events)]


def write_log(path: Path, head: dict[str, Any], events: Sequence[dict[str, Any]]) -> Path:
    """A dsh JSONL session log: the header line, then one event per line."""
    lines = [json.dumps({"type": "session", **head}, ensure_ascii=False)]
    lines += [json.dumps(event, ensure_ascii=False) for event in events]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def reference(tmp_path: Path, name: str, sessions: Sequence[SessionSpec]) -> dict[str, Any]:
    """The snapshot of a store built from ``sessions`` alone, no failure anywhere."""
    data = tmp_path / f"ref-{name}"
    build_store(data, sessions)
    return snapshot(data)


def found(data: Path, word: str) -> set[str]:
    """Sessions a search for ``word`` finds through the query service."""
    service = StoreQueryService(data)
    try:
        page = service.search_sessions(word, [], [], limit=20)
        return {hit.record.header.id for hit in page.items}
    finally:
        service.close()


def stored_rows(data: Path) -> dict[str, int]:
    """Committed event rows per session (sessions without events count 0)."""
    conn = connect(sqlite_path(data), readonly=True)
    try:
        out = {sid: 0 for (sid,) in conn.execute("SELECT id FROM sessions")}
        for sid, n in conn.execute(
            "SELECT s.id, SUM(b.last_seq - b.first_seq + 1) FROM blocks b"
            " JOIN sessions s ON s.key = b.session_key GROUP BY 1"
        ):
            out[sid] = n
        return out
    finally:
        conn.close()


def held(data: Path) -> dict[str, str]:
    conn = connect(sqlite_path(data), readonly=True)
    try:
        rows = conn.execute("SELECT id, held FROM sessions WHERE held IS NOT NULL").fetchall()
    finally:
        conn.close()
    return {str(sid): str(reason) for sid, reason in rows}


# ---- Store.apply: a failing record ----------------------------------------------------------

# (method of SqliteTables, predicate factory): every row-writing step of B's events.
ROW_STEPS: dict[str, Callable[[str], Callable[..., bool]]] = {
    "insert_session": session_arg,
    "insert_replacement": session_arg,
    "insert_events": session_arg,
    "mark_shadowed": session_arg,
    "insert_source_runs": session_arg,
    "update_fold_state": session_arg,
}


def _b_units(unit: str, tmp_path: Path) -> list[Any]:
    """B as two records (header, events) or as one whole log read from a file."""
    if unit == "records":
        return _records(B, B_EVENTS)
    return [read_log(write_log(tmp_path / "logs" / "b.jsonl", B, B_EVENTS))]


def _apply_batch_with_failing_b(
    data: Path, units: list[Any], expect: type[E]
) -> pytest.ExceptionInfo[E]:
    """One batch: A (good), B (its last unit fails), C (good), then commit."""
    store = Store(data)
    try:
        for r in _records(A, A_EVENTS):
            store.apply(r)
        for u in units[:-1]:
            store.apply(u)
        mark = store.index.mark()
        with pytest.raises(expect) as err:
            store.apply(units[-1])
        assert store.index.mark() == mark, "the failing record left staged index documents"
        for r in _records(C, C_EVENTS):
            store.apply(r)
        store.commit()
    finally:
        store.close()
    return err


def _expected_after_failing_b(tmp_path: Path, unit: str) -> dict[str, Any]:
    # B's header record is a record of its own: it stays when only B's events fail.
    b: list[SessionSpec] = [(B, [])] if unit == "records" else []
    return reference(tmp_path, unit, [(A, A_EVENTS), *b, (C, C_EVENTS)])


# As records, B's session row is written by its header record, which does not fail.
ROW_CASES = [
    (step, unit)
    for step in sorted(ROW_STEPS)
    for unit in ("records", "log")
    if (step, unit) != ("insert_session", "records")
]


@pytest.mark.parametrize(("step", "unit"), ROW_CASES)
def test_a_row_failure_rolls_back_the_record_and_the_batch_commits_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str, unit: str
) -> None:
    injection = inject(
        monkeypatch,
        SqliteTables,
        step,
        lambda: sqlite3.OperationalError(DISK_IO),
        when=ROW_STEPS[step]("bad-b"),
    )
    data = tmp_path / "data"
    err = _apply_batch_with_failing_b(data, _b_units(unit, tmp_path), RecordFailedError)

    assert injection.fired == 1
    assert type(err.value) is RecordFailedError
    assert err.value.code == "SESSIONQ_INTERNAL"
    assert err.value.message == f"internal error: OperationalError: {DISK_IO}"
    assert isinstance(err.value.__cause__, sqlite3.OperationalError)
    assert snapshot(data) == _expected_after_failing_b(tmp_path, unit)
    b_rows = {"bad-b": 0} if unit == "records" else {}
    assert stored_rows(data) == {"ok-a": 3, "ok-c": 2, **b_rows}
    assert found(data, "bluebird") == set()
    assert found(data, "apricot") == {"ok-a"} and found(data, "cherry") == {"ok-c"}


@pytest.mark.parametrize("unit", ["records", "log"])
def test_a_document_tantivy_refuses_fails_the_record_as_index_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unit: str
) -> None:
    """Every row of B's events is written by then (fold state included): all roll back."""
    injection = inject(
        monkeypatch,
        index_module,
        "document",
        lambda: ValueError("term too long for the index"),
        when=doc_of("bad-b", 3),
    )
    data = tmp_path / "data"
    err = _apply_batch_with_failing_b(data, _b_units(unit, tmp_path), IndexFailedError)

    assert injection.fired == 1
    assert not isinstance(err.value, RecordRejectedError)
    assert err.value.code == INDEX_FAILED == "SESSION_QUERY_INDEX_FAILED"
    assert err.value.message == "index document bad-b#3: term too long for the index"
    assert snapshot(data) == _expected_after_failing_b(tmp_path, unit)
    assert found(data, "bluebird") == set()


@pytest.mark.parametrize("unit", ["records", "log"])
def test_documents_staged_by_a_failing_record_are_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unit: str
) -> None:
    """The upsert stages B's documents, then fails: the mark drops them, A's and C's
    staged documents of the same batch are committed."""
    injection = inject(
        monkeypatch,
        TantivyIndex,
        "upsert",
        lambda: OSError(INDEX_IO),
        when=docs_of("bad-b"),
        after=True,
    )
    data = tmp_path / "data"
    err = _apply_batch_with_failing_b(data, _b_units(unit, tmp_path), RecordFailedError)

    assert injection.fired == 1
    assert err.value.message == f"internal error: OSError: {INDEX_IO}"
    expected = _expected_after_failing_b(tmp_path, unit)
    assert snapshot(data) == expected
    assert store_stats(data).documents == len(expected["documents"]) == 4  # A: 2, C: 2
    assert found(data, "bluebird") == set()


@pytest.mark.parametrize("unit", ["records", "log"])
def test_a_full_disk_inside_a_record_loses_the_batch_not_the_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unit: str
) -> None:
    """The store decides whose fault a failure is: a full disk is never a record's, so
    every source replays the batch instead of dead-lettering or reporting the record."""
    injection = inject(
        monkeypatch,
        TantivyIndex,
        "upsert",
        lambda: OSError(NO_SPACE),
        when=docs_of("bad-b"),
        after=True,
    )
    data = tmp_path / "data"
    store = Store(data)
    try:
        for r in _records(A, A_EVENTS):
            store.apply(r)
        store.commit()
        for r in _records(C, C_EVENTS):
            store.apply(r)
        with pytest.raises(BatchAbortedError) as err:
            for b in _b_units(unit, tmp_path):
                store.apply(b)
        assert injection.fired == 1
        assert err.value.message == INDEX_FULL
        store.commit()  # nothing left of the lost batch to commit
    finally:
        store.close()
    assert found(data, "apricot") == {"ok-a"}
    assert found(data, "cherry") == set(), "the rest of the lost batch was stored"
    assert found(data, "bluebird") == set()


# ---- Store.apply: rejections ----------------------------------------------------------------


def test_a_seq_gap_rejection_leaves_only_the_session_held(tmp_path: Path) -> None:
    data = tmp_path / "data"
    store = Store(data)
    try:
        for r in _records(A, A_EVENTS):
            store.apply(r)
        store.commit()
        # One batch: a good record, a gap, a conflicting overlap, another good record.
        for r in _records(C, C_EVENTS):
            store.apply(r)
        with pytest.raises(RecordRejectedError) as gap:
            store.apply(events_record("ok-a", [user(5, "gap gecko"), assistant(6, "gap gecko")]))
        with pytest.raises(RecordRejectedError) as conflict:
            store.apply(events_record("ok-c", [user(1, "conflicting cherry"), user(2, "gecko")]))
        for r in _records(D, D_EVENTS):
            store.apply(r)
        store.commit()
    finally:
        store.close()

    reason = "session event seq 5 is not contiguous; expected 3"
    assert type(gap.value) is RecordRejectedError
    assert (gap.value.code, gap.value.message, gap.value.hold) == (SEQ_GAP, reason, reason)
    assert (conflict.value.code, conflict.value.hold) == (SEQ_CONFLICT, None)
    assert held(data) == {"ok-a": reason}
    assert store_stats(data).held_sessions == 1
    # Nothing else changed: rows, documents and fold state equal a store without them
    # (the snapshot leaves ``held`` out).
    assert snapshot(data) == reference(
        tmp_path, "gap", [(A, A_EVENTS), (C, C_EVENTS), (D, D_EVENTS)]
    )
    assert found(data, "gecko") == set()

    # The missing events repair the session and release it.
    store = Store(data)
    try:
        store.apply(events_record("ok-a", [user(3, "three"), assistant(4, "four")]))
        store.apply(events_record("ok-a", [user(5, "gap gecko"), assistant(6, "gap gecko")]))
        store.commit()
    finally:
        store.close()
    assert held(data) == {}
    assert stored_rows(data)["ok-a"] == 7
    assert found(data, "gecko") == {"ok-a"}


# ---- Store: a failing commit ----------------------------------------------------------------


class _WriterCommitFails:
    """The Tantivy writer, except that ``commit`` refuses (after the staged operations
    reached the writer): a failure inside Tantivy's own commit."""

    def __init__(self, writer: Any) -> None:
        self._writer = writer
        self.armed = True
        self.fired = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._writer, name)

    def commit(self) -> Any:
        if self.armed:
            self.armed = False
            self.fired += 1
            raise ValueError("An IO error occurred: 'No space left on device'")
        return self._writer.commit()


COMMIT_STEPS = ["index-commit", "index-writer", "sqlite-commit"]


def _fail_commit(monkeypatch: pytest.MonkeyPatch, store: Store, step: str) -> Callable[[], int]:
    """Make the next ``store.commit`` fail at ``step``; returns how often it fired."""
    if step == "index-commit":
        inj = inject(monkeypatch, TantivyIndex, "commit", lambda: OSError(NO_SPACE), times=1)
        return lambda: inj.fired
    if step == "sqlite-commit":
        inj = inject(
            monkeypatch,
            Transaction,
            "commit",
            lambda: sqlite3.OperationalError(DISK_IO),
            when=in_transaction,
            times=1,
        )
        return lambda: inj.fired
    proxy = _WriterCommitFails(store.index._writer)
    monkeypatch.setattr(store.index, "_writer", proxy)
    return lambda: proxy.fired


COMMIT_MESSAGES = {
    "index-commit": f"commit failed: {INDEX_FULL}",
    "index-writer": f"commit failed: {INDEX_FULL}",
    "sqlite-commit": f"commit failed: OperationalError: {DISK_IO}",
}


# A's continuation re-classifies its committed event 1 (shadowed by a replace): a lost
# batch must leave event 1's committed document as it was.
A_MORE = [user(3, "alpha zulu more"), assistant(4, "alpha zulu reply", op=(1, 1), sources=[1])]


@pytest.mark.parametrize("step", COMMIT_STEPS)
def test_a_failed_commit_loses_the_whole_batch_and_a_replay_converges(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    data = tmp_path / "data"
    batch = [events_record("ok-a", A_MORE), *_records(B, B_EVENTS), *_records(C, C_EVENTS)]
    store = Store(data)
    try:
        for r in _records(A, A_EVENTS):
            store.apply(r)
        store.commit({("events", 0): 2})
        before = snapshot(data)
        fired = _fail_commit(monkeypatch, store, step)
        for r in batch:
            store.apply(r)
        with pytest.raises(BatchAbortedError) as err:
            store.commit({("events", 0): 6})
        assert fired() == 1
        assert err.value.code == PERSISTENCE_FAILED
        assert err.value.message == COMMIT_MESSAGES[step]
        assert not store.tables.conn.in_transaction and store.index.mark() == 0

        # Nothing of the batch is committed: rows, offsets, index documents (when the
        # SQLite step fails after the Tantivy step landed, the store repairs the index
        # from the committed rows), and nothing a search sees.
        assert snapshot(data) == before
        assert stored_rows(data) == {"ok-a": 3}
        assert found(data, "bluebird") == found(data, "cherry") == found(data, "zulu") == set()

        # The caller replays the batch: the store equals one that never failed.
        for r in batch:
            store.apply(r)
        store.commit({("events", 0): 6})
    finally:
        store.close()
    expected = reference(
        tmp_path, step, [(A, [*A_EVENTS, *A_MORE]), (B, B_EVENTS), (C, C_EVENTS)]
    )
    expected["offsets"] = [("events", 0, 6)]
    assert snapshot(data) == expected
    assert found(data, "bluebird") == {"bad-b"} and found(data, "zulu") == {"ok-a"}


# ---- Store: SQLite ends the transaction itself ---------------------------------------------


class _RollbackToFails:
    """The batch connection, except that ``ROLLBACK TO`` (the savepoint undo) fails."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self.fired = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if sql.startswith("ROLLBACK TO"):
            self.fired += 1
            raise sqlite3.OperationalError(DISK_IO)
        return self._conn.execute(sql, *args)


@pytest.mark.parametrize("how", ["sqlite-rolled-back", "savepoint-undo-failed"])
def test_a_lost_transaction_aborts_the_batch_without_a_masking_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    data = tmp_path / "data"
    store = Store(data)
    try:
        for r in _records(A, A_EVENTS):
            store.apply(r)
        store.commit()
        fired: Callable[[], int]
        if how == "sqlite-rolled-back":
            loss = TransactionLoss("bad-b")
            loss.install(monkeypatch)
            fired = lambda: loss.fired  # noqa: E731
            cause = SQLITE_FULL
        else:
            inj = inject(
                monkeypatch,
                SqliteTables,
                "insert_events",
                lambda: sqlite3.OperationalError(DISK_IO),
                when=events_batch_of("bad-b"),
            )
            proxy = _RollbackToFails(store.tables.conn)
            monkeypatch.setattr(store.tables, "conn", proxy)
            monkeypatch.setattr(store.tables.tx, "conn", proxy)
            fired = lambda: min(inj.fired, proxy.fired)  # noqa: E731
            cause = f"{DISK_IO} (rollback failed: {DISK_IO})"
        # C applies within the batch, then B loses the whole transaction.
        for r in [*_records(C, C_EVENTS), header_record(B)]:
            store.apply(r)
        with pytest.raises(BatchAbortedError) as err:
            store.apply(events_record("bad-b", B_EVENTS))
        assert fired() == 1
        assert err.value.code == PERSISTENCE_FAILED
        assert err.value.message == f"the open batch was lost: {cause}"
        for e in error_chain(err.value):
            assert "no transaction is active" not in str(e), "a rollback error masks the cause"
        assert not store.tables.conn.in_transaction and not store.tables.tx.open
        assert store.index.mark() == 0, "the lost batch's staged documents survived"
        monkeypatch.undo()
        # The store goes on: the next batch commits, and holds nothing of the lost one.
        for r in _records(D, D_EVENTS):
            store.apply(r)
        store.commit()
    finally:
        store.close()
    assert snapshot(data) == reference(tmp_path, how, [(A, A_EVENTS), (D, D_EVENTS)])
    assert found(data, "cherry") == set()


# ---- ingest_files: the first caller -----------------------------------------------------------

WORDS = ["apricot", "bluebird", "cherry", "damson", "elderberry", "fig"]


def _ingest_sessions() -> list[SessionSpec]:
    return [
        (
            header(f"s{i}", cwd="/w/ingest"),
            [
                plain(0, "turn/start", {"turn": 1}),
                user(1, f"question about {word}"),
                assistant(2, f"answer about {word}"),
            ],
        )
        for i, word in enumerate(WORDS, start=1)
    ]


def _write_ingest_logs(root: Path, sessions: Sequence[SessionSpec]) -> list[Path]:
    return [write_log(root / f"{h['id']}.jsonl", h, events) for h, events in sessions]


def _ingest(data: Path, files: Sequence[Path], **kwargs: Any) -> Any:
    store = Store(data)
    try:
        return ingest_files(store, files, **kwargs)
    finally:
        store.close()


def _ingest_reference(tmp_path: Path, name: str, files: Sequence[Path]) -> dict[str, Any]:
    data = tmp_path / f"ingest-ref-{name}"
    summary = _ingest(data, files)
    assert summary.rejected == []
    return snapshot(data)


# step -> (inject the failure for session s3, the reason's text after "<path>: ")
def _fail_rows(mp: pytest.MonkeyPatch) -> Injection:
    exc = lambda: sqlite3.OperationalError(DISK_IO)  # noqa: E731
    return inject(mp, SqliteTables, "insert_events", exc, when=events_batch_of("s3"))


def _fail_document(mp: pytest.MonkeyPatch) -> Injection:
    exc = lambda: ValueError("term too long for the index")  # noqa: E731
    return inject(mp, index_module, "document", exc, when=doc_of("s3"))


def _fail_upsert(mp: pytest.MonkeyPatch) -> Injection:
    exc = lambda: OSError(INDEX_IO)  # noqa: E731
    return inject(mp, TantivyIndex, "upsert", exc, when=docs_of("s3"), after=True)


RECORD_FAILURES: dict[str, tuple[Callable[[pytest.MonkeyPatch], Injection], str]] = {
    "rows": (_fail_rows, f"internal error: OperationalError: {DISK_IO}"),
    "index-document": (_fail_document, "index document s3#1: term too long for the index"),
    "index-upsert": (_fail_upsert, f"internal error: OSError: {INDEX_IO}"),
}


@pytest.mark.parametrize("step", sorted(RECORD_FAILURES))
def test_ingest_reports_the_file_that_failed_and_stores_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    files = _write_ingest_logs(tmp_path / "logs", _ingest_sessions()[:5])
    expected = _ingest_reference(tmp_path, step, [p for p in files if p.stem != "s3"])
    make, reason = RECORD_FAILURES[step]
    injection = make(monkeypatch)

    summary = _ingest(tmp_path / "data", files)

    assert injection.fired == 1
    bad = files[2]
    assert summary.rejected == [Rejection(bad, f"{bad}: {reason}")]
    assert (summary.files, summary.sessions, summary.events, summary.documents) == (5, 4, 12, 8)
    assert snapshot(tmp_path / "data") == expected
    assert "s3" not in stored_rows(tmp_path / "data")
    assert found(tmp_path / "data", "cherry") == set()
    assert found(tmp_path / "data", "damson") == {"s4"}


@pytest.mark.parametrize("step", ["index-commit", "sqlite-commit"])
def test_ingest_reports_a_lost_batch_and_stores_the_later_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    """Three events a file, a commit every 6 events: batches of two files. The second
    batch's commit fails once; the third batch and the final one are stored."""
    files = _write_ingest_logs(tmp_path / "logs", _ingest_sessions())
    lost = files[2:4]
    expected = _ingest_reference(tmp_path, step, [p for p in files if p not in lost])
    if step == "index-commit":
        exc: Callable[[], BaseException] = lambda: OSError(NO_SPACE)  # noqa: E731
        injection = inject(monkeypatch, TantivyIndex, "commit", exc, skip=1, times=1)
        cause = INDEX_FULL
    else:
        exc = lambda: sqlite3.OperationalError(DISK_IO)  # noqa: E731
        injection = inject(
            monkeypatch, Transaction, "commit", exc, when=in_transaction, skip=1, times=1
        )
        cause = f"OperationalError: {DISK_IO}"

    summary = _ingest(tmp_path / "data", files, commit_every_events=6)

    assert (injection.fired, injection.calls) == (1, 4)  # three batches, then the final commit
    reason = f"not stored: commit failed: {cause}"
    assert summary.rejected == [Rejection(p, f"{p}: {reason}") for p in lost]
    assert (summary.sessions, summary.events, summary.documents) == (4, 12, 8)
    data = tmp_path / "data"
    assert snapshot(data) == expected
    assert set(stored_rows(data)) == {"s1", "s2", "s5", "s6"}
    assert found(data, "cherry") == found(data, "damson") == set()
    assert found(data, "elderberry") == {"s5"} and found(data, "fig") == {"s6"}

    # Ingesting again stores the lost files, and the store equals a clean ingest.
    again = _ingest(data, files, commit_every_events=6)
    assert again.rejected == [] and (again.sessions, again.unchanged) == (2, 4)
    assert snapshot(data) == _ingest_reference(tmp_path, f"{step}-all", files)


def test_ingest_reports_every_file_of_a_batch_sqlite_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = _write_ingest_logs(tmp_path / "logs", _ingest_sessions()[:5])
    expected = _ingest_reference(tmp_path, "lost", files[3:])
    loss = TransactionLoss("s3")
    loss.install(monkeypatch)

    summary = _ingest(tmp_path / "data", files)

    assert loss.fired == 1
    reason = f"not stored: the open batch was lost: {SQLITE_FULL}"
    assert summary.rejected == [Rejection(p, f"{p}: {reason}") for p in files[:3]]
    assert (summary.sessions, summary.events) == (2, 6)
    assert snapshot(tmp_path / "data") == expected


def test_ingest_a_lost_batch_leaves_no_searchable_documents_of_its_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file that grew since the last ingest: its new events are in the lost batch.

    The SQLite step of the commit fails after Tantivy committed; ingest reports the file
    "not stored" and carries on without replaying, so nothing may find the new events.
    """
    head, events = _ingest_sessions()[0]
    path = write_log(tmp_path / "logs" / "s1.jsonl", head, events)
    data = tmp_path / "data"
    assert _ingest(data, [path]).rejected == []
    write_log(path, head, [*events, user(3, "zebra grown later")])
    injection = inject(
        monkeypatch,
        Transaction,
        "commit",
        lambda: sqlite3.OperationalError(DISK_IO),
        when=in_transaction,
        times=1,
    )

    summary = _ingest(data, [path])

    assert injection.fired == 1
    assert summary.rejected == [
        Rejection(path, f"{path}: not stored: commit failed: OperationalError: {DISK_IO}")
    ]
    service = StoreQueryService(data)
    try:
        assert [e.seq for e in service.list_events("s1")] == [0, 1, 2]
        hits = service.search_events("s1", "zebra", [], limit=10).items
        assert [h.seq for h in hits] == [], "a search finds an event that was not stored"
    finally:
        service.close()
    assert found(data, "zebra") == set()
