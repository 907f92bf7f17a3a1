"""SQLite side of the store: sessions, events (raw JSON), source links, replacements,
titles and consumed offsets. The only module that writes SQL.

One writer connection (the indexer's) holds an open transaction for the whole batch so
later records of a batch see earlier ones; readers open their own WAL connections and
only ever see committed batches.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import orjson

from indexer.errors import PERSISTENCE_FAILED, SessionqError
from indexer.store.failure import describe

SCHEMA_VERSION = "1"


def connect(path: Path, *, readonly: bool = False) -> sqlite3.Connection:
    """Open the store database in WAL mode; ``readonly`` connections never write."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30.0)
    conn.execute("PRAGMA busy_timeout = 30000")
    if readonly:
        conn.execute("PRAGMA query_only = ON")
    else:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA cache_size = -65536")
    return conn


@dataclass(slots=True)
class SessionState:
    """What continuing a session's log needs: the stored header and fold state."""

    id: str
    header_json: str
    next_seq: int
    surface: list[int]
    live: bool
    held: str | None


@dataclass(frozen=True, slots=True)
class EventRow:
    session_id: str
    seq: int
    type: str
    time: int
    surface: str
    replaced_by: int | None
    indexed: bool
    raw: bytes


CAUGHT_UP_KEY = "indexer_caught_up_at"


def indexer_caught_up(conn: sqlite3.Connection) -> bool:
    """Whether the Kafka indexer of this data dir has reached the end of its topic once."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (CAUGHT_UP_KEY,)).fetchone()
    return row is not None


class SqliteTables:
    """Writer-side table access. Every method runs inside the open batch transaction."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.conn = connect(path)
        # Freed cells and pages are zeroed as they are freed (indexer.store.purge).
        self.conn.execute("PRAGMA secure_delete = ON")
        schema = resources.files("indexer.store").joinpath("schema.sql").read_text()
        self.conn.executescript(schema)
        self.conn.execute(
            "INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', ?)", (SCHEMA_VERSION,)
        )
        self._in_tx = False

    # ---- transaction ---------------------------------------------------------------------------
    def begin(self) -> None:
        if not self._in_tx:
            self.conn.execute("BEGIN IMMEDIATE")
            self._in_tx = True

    def commit(self) -> None:
        if self._in_tx:
            self.conn.execute("COMMIT")
            self._in_tx = False

    def rollback(self) -> None:
        """Roll the batch back; a transaction SQLite already ended itself is not an error
        (that would mask the error that ended it)."""
        if self._in_tx:
            self._in_tx = False
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")

    def forget_transaction(self) -> None:
        """SQLite ended the transaction itself; the next write begins a new one."""
        self._in_tx = False

    def close(self) -> None:
        self.rollback()
        self.conn.close()

    # ---- sessions ------------------------------------------------------------------------------
    def session_state(self, session_id: str) -> SessionState | None:
        row = self.conn.execute(
            "SELECT id, header, next_seq, surface, live, held FROM sessions WHERE id = ?",
            (session_id,),
        ).fetchone()
        if row is None:
            return None
        return SessionState(row[0], row[1], row[2], orjson.loads(row[3]), bool(row[4]), row[5])

    def insert_session(
        self,
        session_id: str,
        header_json: str,
        cwd: str | None,
        parent: str | None,
        created_at: int,
    ) -> None:
        self.conn.execute(
            "INSERT INTO sessions(id, header, cwd, parent, created_at) VALUES (?, ?, ?, ?, ?)",
            (session_id, header_json, cwd, parent, created_at),
        )

    def update_fold_state(
        self,
        session_id: str,
        next_seq: int,
        surface: Sequence[int],
        last_step_start: int | None,
        title_json: str | None,
    ) -> None:
        """Advance a session after a batch; ``None`` keeps the stored step/title."""
        self.conn.execute(
            "UPDATE sessions SET next_seq = ?, surface = ?, held = NULL,"
            " last_step_start = COALESCE(?, last_step_start), title = COALESCE(?, title)"
            " WHERE id = ?",
            (
                next_seq,
                orjson.dumps(list(surface)).decode(),
                last_step_start,
                title_json,
                session_id,
            ),
        )

    def set_live(self, session_id: str, live: bool) -> None:
        self.conn.execute("UPDATE sessions SET live = ? WHERE id = ?", (int(live), session_id))

    def set_held(self, session_id: str, reason: str) -> None:
        self.conn.execute("UPDATE sessions SET held = ? WHERE id = ?", (reason, session_id))

    def delete_session(self, session_id: str) -> None:
        for table, col in (
            ("events", "session_id"),
            ("sources", "session_id"),
            ("replacements", "session_id"),
            ("watched_sources", "session_id"),
            ("sessions", "id"),
        ):
            self.conn.execute(f"DELETE FROM {table} WHERE {col} = ?", (session_id,))

    def set_watched_source(self, session_id: str, path: str) -> None:
        """The log file the embedded watcher applied this session from."""
        self.conn.execute(
            "INSERT INTO watched_sources(session_id, path) VALUES (?, ?)"
            " ON CONFLICT(session_id) DO UPDATE SET path = excluded.path",
            (session_id, path),
        )

    def watched_sources(self) -> dict[str, str]:
        """Session id -> log file of every session the embedded watcher applied."""
        return dict(
            self.conn.execute(
                "SELECT w.session_id, w.path FROM watched_sources w"
                " JOIN sessions s ON s.id = w.session_id"
            )
        )

    # ---- events --------------------------------------------------------------------------------
    def insert_events(self, rows: Iterable[tuple[str, int, str, int, str, int, bytes]]) -> None:
        """Rows of (session_id, seq, type, time, surface, indexed, raw)."""
        self.conn.executemany(
            "INSERT INTO events(session_id, seq, type, time, surface, indexed, raw)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            rows,
        )

    def raw_events(self, session_id: str, seqs: Sequence[int]) -> dict[int, EventRow]:
        if not seqs:
            return {}
        out: dict[int, EventRow] = {}
        for chunk_start in range(0, len(seqs), 500):
            chunk = list(seqs[chunk_start : chunk_start + 500])
            marks = ",".join("?" * len(chunk))
            for r in self.conn.execute(
                "SELECT session_id, seq, type, time, surface, replaced_by, indexed, raw"
                f" FROM events WHERE session_id = ? AND seq IN ({marks})",
                (session_id, *chunk),
            ):
                out[r[1]] = EventRow(r[0], r[1], r[2], r[3], r[4], r[5], bool(r[6]), r[7])
        return out

    def indexed_events(self, session_id: str) -> list[EventRow]:
        """Every event of a session that has an index document, in seq order."""
        return [
            EventRow(r[0], r[1], r[2], r[3], r[4], r[5], bool(r[6]), r[7])
            for r in self.conn.execute(
                "SELECT session_id, seq, type, time, surface, replaced_by, indexed, raw"
                " FROM events WHERE session_id = ? AND indexed = 1 ORDER BY seq",
                (session_id,),
            )
        ]

    def mark_shadowed(self, session_id: str, seqs: Sequence[int], replaced_by: int) -> None:
        self.conn.executemany(
            "UPDATE events SET surface = 'shadowed', replaced_by = ?"
            " WHERE session_id = ? AND seq = ?",
            [(replaced_by, session_id, s) for s in seqs],
        )

    def insert_sources(self, rows: Iterable[tuple[str, int, int]]) -> None:
        """Rows of (session_id, source_seq, seq)."""
        self.conn.executemany(
            "INSERT OR IGNORE INTO sources(session_id, source_seq, seq) VALUES (?, ?, ?)", rows
        )

    def insert_replacement(
        self, session_id: str, seq: int, start: int, end: int, shadowed: Sequence[int]
    ) -> None:
        self.conn.execute(
            "INSERT INTO replacements(session_id, seq, start_seq, end_seq, shadowed)"
            " VALUES (?, ?, ?, ?, ?)",
            (session_id, seq, start, end, orjson.dumps(list(shadowed)).decode()),
        )

    def mark_caught_up(self, when: float) -> None:
        self.conn.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO NOTHING",
            (CAUGHT_UP_KEY, repr(when)),
        )

    # ---- erasure (indexer.store.purge, indexer.store.retention) --------------------------------
    def get_meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?)"
            " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def truncate_wal(self, wait_ms: int = 1000) -> bool:
        """Copy the WAL into the database and truncate it to zero bytes, so no page image
        older than the last commit stays on disk. False when a reader's open snapshot
        kept it from completing within ``wait_ms`` (the next attempt retries)."""
        self.conn.execute(f"PRAGMA busy_timeout = {int(wait_ms)}")
        try:
            busy, _, _ = self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        finally:
            self.conn.execute("PRAGMA busy_timeout = 30000")
        return int(busy) == 0

    def idle_sessions(self, before_ms: int, limit: int) -> list[tuple[str, str | None, int]]:
        """(id, cwd, last event time) of the sessions whose newest event (highest seq; the
        header's ``createdAt`` for a session without events) is older than ``before_ms``,
        oldest first, at most ``limit``."""
        return [
            (str(r[0]), r[1], int(r[2]))
            for r in self.conn.execute(
                "SELECT s.id, s.cwd, COALESCE(e.time, s.created_at) AS last FROM sessions s"
                " LEFT JOIN events e ON e.session_id = s.id AND e.seq = s.next_seq - 1"
                " WHERE COALESCE(e.time, s.created_at) < ? ORDER BY last, s.id LIMIT ?",
                (before_ms, limit),
            )
        ]

    # ---- offsets -------------------------------------------------------------------------------
    def offsets(self) -> dict[tuple[str, int], int]:
        return {
            (t, p): o
            for t, p, o in self.conn.execute("SELECT topic, partition, next_offset FROM offsets")
        }

    def store_offsets(self, offsets: dict[tuple[str, int], int]) -> None:
        self.conn.executemany(
            "INSERT INTO offsets(topic, partition, next_offset) VALUES (?, ?, ?)"
            " ON CONFLICT(topic, partition) DO UPDATE SET next_offset = excluded.next_offset",
            [(t, p, o) for (t, p), o in offsets.items()],
        )


class TransactionLostError(SessionqError):
    """SQLite ended the batch transaction on its own (it does on a full disk or an I/O
    error): the savepoint is gone and so is every row since the last commit."""

    code = PERSISTENCE_FAILED


class Savepoint:
    """A nested, named rollback point inside the batch transaction."""

    def __init__(self, tables: SqliteTables, name: str) -> None:
        self.tables = tables
        self.name = name

    def __enter__(self) -> Savepoint:
        self.tables.begin()
        self.tables.conn.execute(f"SAVEPOINT {self.name}")
        return self

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        conn = self.tables.conn
        if exc_type is None:
            conn.execute(f"RELEASE {self.name}")
            return
        cause = describe(exc, typed=False) if exc is not None else "lost"
        if not conn.in_transaction:
            self.tables.forget_transaction()
            raise TransactionLostError(cause) from exc
        try:
            conn.execute(f"ROLLBACK TO {self.name}")
            conn.execute(f"RELEASE {self.name}")
        except sqlite3.Error as rollback_error:
            self.tables.rollback()
            raise TransactionLostError(
                f"{cause} (rollback failed: {describe(rollback_error, typed=False)})"
            ) from exc
