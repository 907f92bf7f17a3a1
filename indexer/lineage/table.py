"""A node's copy of the global lineage: one SQLite file beside its partition stores.

One writer (the node's follower of the lineage topic) applies each polled batch of
entries and the topic's next offsets in one transaction, so a restart resumes where the
copy ends; readers (the query threads) use their own read-only connections (WAL).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path

from indexer.lineage.entry import LineageEntry
from indexer.store.private import create_file, make_dirs, own_dir

SCHEMA = """
CREATE TABLE IF NOT EXISTS lineage (
    id TEXT PRIMARY KEY,
    parent TEXT,
    workspace TEXT NOT NULL,
    created_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS lineage_parent ON lineage(parent);
CREATE TABLE IF NOT EXISTS lineage_offsets (
    partition INTEGER PRIMARY KEY,
    next_offset INTEGER NOT NULL
);
"""
FILE_NAME = "lineage.sqlite3"
COLUMNS = "id, parent, workspace, created_at"


def lineage_path(node_dir: Path) -> Path:
    return node_dir / FILE_NAME


def _entry(row: tuple[str, str | None, str, int]) -> LineageEntry:
    return LineageEntry(row[0], row[1], row[2], int(row[3]))


class LineageTable:
    """The lineage copy of one node dir (module docstring)."""

    def __init__(self, node_dir: Path, *, writable: bool = True) -> None:
        self.path = lineage_path(node_dir)
        self._local = threading.local()
        self._writer: sqlite3.Connection | None = None
        if not writable:
            make_dirs(node_dir)
            return
        own_dir(node_dir)  # the node's writer: owner-only, an older release's 0755 too
        create_file(self.path)  # SQLite gives the -wal and -shm the file's bits
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.executescript(SCHEMA)
        self._writer = conn

    @property
    def _reader(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=30.0)
            conn.execute("PRAGMA query_only = ON")
            self._local.conn = conn
        return conn

    def apply(self, changes: Iterable[LineageEntry | str], offsets: Mapping[int, int]) -> None:
        """Entries (upserts) and tombstones (a session id: removed), then the next
        offsets, in one transaction."""
        conn = self._writer
        assert conn is not None, "a read-only lineage table"
        conn.execute("BEGIN IMMEDIATE")
        try:
            for change in changes:
                if isinstance(change, str):
                    conn.execute("DELETE FROM lineage WHERE id = ?", (change,))
                else:
                    conn.execute(
                        f"INSERT OR REPLACE INTO lineage ({COLUMNS}) VALUES (?, ?, ?, ?)",
                        (change.session_id, change.parent, change.workspace, change.created_at),
                    )
            conn.executemany(
                "INSERT OR REPLACE INTO lineage_offsets (partition, next_offset) VALUES (?, ?)",
                sorted(offsets.items()),
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def offsets(self) -> dict[int, int]:
        conn = self._writer or self._reader
        rows = conn.execute("SELECT partition, next_offset FROM lineage_offsets")
        return {int(p): int(o) for p, o in rows}

    def get(self, session_id: str) -> LineageEntry | None:
        row = self._reader.execute(
            f"SELECT {COLUMNS} FROM lineage WHERE id = ?", (session_id,)
        ).fetchone()
        return None if row is None else _entry(row)

    def children(self, parent_id: str) -> list[LineageEntry]:
        rows = self._reader.execute(f"SELECT {COLUMNS} FROM lineage WHERE parent = ?", (parent_id,))
        return [_entry(r) for r in rows]

    def count(self) -> int:
        return int(self._reader.execute("SELECT count(*) FROM lineage").fetchone()[0])

    def close(self) -> None:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
        if self._writer is not None:
            self._writer.close()
            self._writer = None
