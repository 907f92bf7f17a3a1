"""SQLite side of the store: sessions, events (compressed blocks, ``event_blocks``),
source links, replacements, titles and consumed offsets. With ``event_blocks`` and
``migrate``, the only code that writes SQL.

One writer connection (the indexer's) holds an open transaction for the whole batch so
later records of a batch see earlier ones; readers open their own WAL connections and
only ever see committed batches.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import orjson

from indexer.failpoints import DISARMED, FailPoints
from indexer.store.blocks.format import StoredEvent
from indexer.store.blocks.table import BlockRow, EventBlocks, EventView
from indexer.store.tables.connection import connect
from indexer.store.tables.schema import (
    decode_surface,
    encode_surface,
    load_codec,
    open_schema,
)
from indexer.store.tables.transaction import Transaction

__all__ = ["SessionState", "SqliteTables", "WatchedSource"]


@dataclass(slots=True)
class SessionState:
    """What continuing a session's log needs: the stored header and fold state."""

    id: str
    header_json: str
    next_seq: int
    surface: list[int]
    live: bool
    held: str | None
    key: int = 0


@dataclass(frozen=True, slots=True)
class WatchedSource:
    """Where a watched session was applied from: the log, its signature then, and the
    session's next seq."""

    path: str
    signature: tuple[int, int] | None
    next_seq: int


CAUGHT_UP_KEY = "indexer_caught_up_at"


def indexer_caught_up(conn: sqlite3.Connection) -> bool:
    """Whether the Kafka indexer of this data dir has reached the end of its topic once."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (CAUGHT_UP_KEY,)).fetchone()
    return row is not None


class SqliteTables:
    """Writer-side table access. Every method runs inside the open batch transaction."""

    def __init__(self, path: Path, failpoints: FailPoints = DISARMED) -> None:
        self.path = path
        self.conn = connect(path)
        # Freed cells and pages are zeroed as they are freed (indexer.store.maintenance.purge).
        self.conn.execute("PRAGMA secure_delete = ON")
        open_schema(self.conn, failpoints)
        codec, did = load_codec(self.conn)
        self.blocks = EventBlocks(self.conn, codec, did)
        self._keys: dict[str, int] = {}
        self.tx = Transaction(self.conn)
        self.tx.on_rollback(self.forget_keys)

    def _key(self, session_id: str) -> int | None:
        key = self._keys.get(session_id)
        if key is None:
            row = self.conn.execute(
                "SELECT key FROM sessions WHERE id = ?", (session_id,)
            ).fetchone()
            if row is None:
                return None
            key = self._keys[session_id] = int(row[0])
        return key

    def _require_key(self, session_id: str) -> int:
        key = self._key(session_id)
        if key is None:
            raise LookupError(f'session "{session_id}" is not stored')
        return key

    def forget_keys(self) -> None:
        """Drop cached session keys: a rollback may have removed the rows they named."""
        self._keys.clear()

    def close(self) -> None:
        self.tx.rollback()
        self.conn.close()

    # ---- sessions ------------------------------------------------------------------------------
    def session_state(self, session_id: str) -> SessionState | None:
        row = self.conn.execute(
            "SELECT id, header, next_seq, surface, live, held, key FROM sessions WHERE id = ?",
            (session_id,),
        ).fetchone()
        if row is None:
            return None
        self._keys[session_id] = int(row[6])
        return SessionState(
            row[0], row[1], row[2], decode_surface(row[3]), bool(row[4]), row[5], int(row[6])
        )

    def insert_session(
        self,
        session_id: str,
        header_json: str,
        cwd: str | None,
        parent: str | None,
        created_at: int,
    ) -> None:
        cursor = self.conn.execute(
            "INSERT INTO sessions(id, header, cwd, parent, created_at) VALUES (?, ?, ?, ?, ?)",
            (session_id, header_json, cwd, parent, created_at),
        )
        if cursor.lastrowid is not None:
            self._keys[session_id] = int(cursor.lastrowid)

    def update_fold_state(
        self,
        session_id: str,
        next_seq: int,
        surface: Sequence[int],
        last_step_start: int | None,
        title_json: str | None,
        last_time: int | None = None,
    ) -> None:
        """Advance a session after a batch; ``None`` keeps the stored step/title/time."""
        self.conn.execute(
            "UPDATE sessions SET next_seq = ?, surface = ?, held = NULL,"
            " last_step_start = COALESCE(?, last_step_start), title = COALESCE(?, title),"
            " last_time = COALESCE(?, last_time) WHERE id = ?",
            (
                next_seq,
                encode_surface(surface),
                last_step_start,
                title_json,
                last_time,
                session_id,
            ),
        )

    def set_live(self, session_id: str, live: bool) -> None:
        """A session that goes not-live gets its open block at the sealed level."""
        self.conn.execute("UPDATE sessions SET live = ? WHERE id = ?", (int(live), session_id))
        key = self._key(session_id)
        if not live and key is not None:
            self.blocks.settle(key)

    def set_held(self, session_id: str, reason: str) -> None:
        self.conn.execute("UPDATE sessions SET held = ? WHERE id = ?", (reason, session_id))

    def delete_session(self, session_id: str) -> int | None:
        """Every row of the session: its blocks, marks, links, replacements, redaction
        counts, watched source and the session row. Returns the session's key (None: it
        was not stored)."""
        key = self._key(session_id)
        if key is not None:
            self.blocks.delete(key)
            for table in ("source_runs", "replacements", "redactions", "stale_imports"):
                self.conn.execute(f"DELETE FROM {table} WHERE session_key = ?", (key,))
        self.conn.execute("DELETE FROM watched_sources WHERE session_id = ?", (session_id,))
        self.conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
        self._keys.pop(session_id, None)
        return key

    def stale_import(self, session_id: str) -> bool:
        """Whether an older release imported this session (``stale_imports``)."""
        key = self._key(session_id)
        if key is None:
            return False
        row = self.conn.execute(
            "SELECT 1 FROM stale_imports WHERE session_key = ?", (key,)
        ).fetchone()
        return row is not None

    def set_watched_source(
        self, session_id: str, path: str, signature: tuple[int, int] | None = None
    ) -> None:
        """The log file the local source applied this session from, and its (size,
        mtime_ns) when it was read (None: unknown)."""
        size, mtime = signature if signature is not None else (None, None)
        self.conn.execute(
            "INSERT INTO watched_sources(session_id, path, size, mtime_ns) VALUES (?, ?, ?, ?)"
            " ON CONFLICT(session_id) DO UPDATE SET path = excluded.path,"
            " size = excluded.size, mtime_ns = excluded.mtime_ns",
            (session_id, path, size, mtime),
        )

    def watched_sources(self) -> dict[str, WatchedSource]:
        """Session id -> its log file, signature and next seq, for every session the
        local source applied."""
        return {
            sid: WatchedSource(
                path, None if size is None or mtime is None else (int(size), int(mtime)), next_seq
            )
            for sid, path, size, mtime, next_seq in self.conn.execute(
                "SELECT w.session_id, w.path, w.size, w.mtime_ns, s.next_seq"
                " FROM watched_sources w JOIN sessions s ON s.id = w.session_id"
            )
        }

    # ---- events --------------------------------------------------------------------------------
    def insert_events(self, session_id: str, events: Sequence[StoredEvent]) -> None:
        """Events contiguous and continuing the session."""
        self.blocks.append(self._require_key(session_id), events)

    def insert_blocks(self, session_id: str, rows: Sequence[BlockRow]) -> None:
        """Built blocks (``event_blocks.block_rows``) of a session without events yet."""
        self.blocks.insert_rows(self._require_key(session_id), rows)

    def block_dictionary(self) -> tuple[int, bytes]:
        """(id, bytes) of the dictionary new blocks are compressed with
        (``EventBlocks.block_dictionary``)."""
        return self.blocks.block_dictionary()

    def raw_events(self, session_id: str, seqs: Sequence[int]) -> dict[int, EventView]:
        key = self._key(session_id)
        if key is None or not seqs:
            return {}
        return self.blocks.read_seqs(key, seqs)

    def indexed_events(self, session_id: str) -> list[EventView]:
        """Every event of a session that has an index document, in seq order."""
        state = self.session_state(session_id)
        if state is None:
            return []
        events = self.blocks.read_range(state.key, 0, state.next_seq - 1)
        return [e for e in events if e.indexed]

    def mark_shadowed(self, session_id: str, seqs: Sequence[int], replaced_by: int) -> None:
        self.blocks.mark_replaced(self._require_key(session_id), seqs, replaced_by)

    def insert_source_runs(self, session_id: str, runs: Iterable[tuple[int, int, int]]) -> None:
        """Rows of (first, last, seq): event ``seq`` cites source seqs first..last."""
        key = self._require_key(session_id)
        self.conn.executemany(
            "INSERT OR IGNORE INTO source_runs(session_key, first, last, seq) VALUES (?, ?, ?, ?)",
            [(key, first, last, seq) for first, last, seq in runs],
        )

    def insert_replacement(
        self, session_id: str, seq: int, start: int, end: int, shadowed: Sequence[int]
    ) -> None:
        self.conn.execute(
            "INSERT INTO replacements(session_key, seq, start_seq, end_seq, shadowed)"
            " VALUES (?, ?, ?, ?, ?)",
            (
                self._require_key(session_id),
                seq,
                start,
                end,
                orjson.dumps(list(shadowed)).decode(),
            ),
        )

    def mark_caught_up(self, when: float) -> None:
        self.conn.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO NOTHING",
            (CAUGHT_UP_KEY, repr(when)),
        )

    # ---- erasure (indexer.store.maintenance: purge, retention) ---------------------------------
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
                "SELECT id, cwd, COALESCE(last_time, created_at) AS last FROM sessions"
                " WHERE COALESCE(last_time, created_at) < ? ORDER BY last, id LIMIT ?",
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
