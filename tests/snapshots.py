"""Whole-store snapshots for equality checks (rows, raw JSON, index documents, offsets)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from indexer.store.data_dir import index_path, sqlite_path
from indexer.store.sqlite_tables import connect
from indexer.store.tantivy import TantivyIndex
from tests.indexer.tantivy_helpers import dump_docs

TABLES = {
    "sessions": "SELECT id, header, cwd, parent, created_at, live, next_seq, surface,"
    " last_step_start, title FROM sessions ORDER BY id",
    "events": "SELECT session_id, seq, type, time, surface, replaced_by, indexed, raw"
    " FROM events ORDER BY session_id, seq",
    "sources": "SELECT * FROM sources ORDER BY session_id, source_seq, seq",
    "replacements": "SELECT * FROM replacements ORDER BY session_id, seq",
    "offsets": "SELECT * FROM offsets ORDER BY topic, partition",
}


def snapshot(data_dir: Path, *, offsets: bool = True) -> dict[str, Any]:
    conn = connect(sqlite_path(data_dir), readonly=True)
    try:
        out: dict[str, Any] = {
            name: conn.execute(sql).fetchall()
            for name, sql in TABLES.items()
            if offsets or name != "offsets"
        }
    finally:
        conn.close()
    index = TantivyIndex(index_path(data_dir), writable=False)
    try:
        out["documents"] = dump_docs(index)
    finally:
        index.close()
    return out
