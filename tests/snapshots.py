"""Whole-store snapshots for equality checks (rows, raw JSON, index documents, offsets)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from indexer.store.blocks.format import Codec
from indexer.store.blocks.table import EventBlocks
from indexer.store.layout import index_path, sqlite_path
from indexer.store.tables.connection import connect
from indexer.store.tantivy import TantivyIndex
from tests.indexer.tantivy_helpers import dump_docs

TABLES = {
    "sessions": "SELECT id, header, cwd, parent, created_at, live, next_seq, surface,"
    " last_step_start, title FROM sessions ORDER BY id",
    "sources": "SELECT s.id, r.first, r.last, r.seq FROM source_runs r"
    " JOIN sessions s ON s.key = r.session_key ORDER BY s.id, r.first, r.seq",
    "replacements": "SELECT s.id, r.seq, r.start_seq, r.end_seq, r.shadowed FROM replacements r"
    " JOIN sessions s ON s.key = r.session_key ORDER BY s.id, r.seq",
    "offsets": "SELECT * FROM offsets ORDER BY topic, partition",
}


def query(data_dir: Path, sql: str) -> list[Any]:
    """The rows of one query over a data dir's tables (a connection closed at once)."""
    conn = connect(sqlite_path(data_dir), readonly=True)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def snapshot(data_dir: Path, *, offsets: bool = True) -> dict[str, Any]:
    conn = connect(sqlite_path(data_dir), readonly=True)
    try:
        out: dict[str, Any] = {
            name: conn.execute(sql).fetchall()
            for name, sql in TABLES.items()
            if offsets or name != "offsets"
        }
        out["events"] = event_rows(conn)
    finally:
        conn.close()
    index = TantivyIndex(index_path(data_dir), writable=False)
    try:
        out["documents"] = dump_docs(index)
    finally:
        index.close()
    return out


def event_rows(conn: Any) -> list[tuple[Any, ...]]:
    """Every stored event as (session_id, seq, type, time, surface, replaced_by, indexed,
    raw), by session id and seq, read back from the blocks."""
    blocks = EventBlocks(conn, Codec())
    out: list[tuple[Any, ...]] = []
    for key, sid, next_seq in conn.execute("SELECT key, id, next_seq FROM sessions ORDER BY id"):
        out.extend(
            (sid, e.seq, e.type, e.time, e.surface, e.replaced_by, int(e.indexed), e.raw)
            for e in blocks.read_range(key, 0, next_seq - 1)
        )
    return out
