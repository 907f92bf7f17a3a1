"""What a data dir holds, read as a reader would (read-only SQLite), and a data dir whose
store cannot start: the shared helpers of the tests that check what a run stored."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from indexer.store.layout import SQLITE_NAME

__all__ = ["stored_headers", "stored_ids", "stored_titles", "unstartable_data_dir"]


def _rows(data: Path, query: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(f"file:{data / SQLITE_NAME}?mode=ro", uri=True)
    try:
        return conn.execute(query).fetchall()
    finally:
        conn.close()


def stored_ids(data: Path) -> set[str]:
    return {sid for (sid,) in _rows(data, "SELECT id FROM sessions")}


def stored_headers(data: Path) -> dict[str, dict[str, Any]]:
    return {sid: json.loads(h) for sid, h in _rows(data, "SELECT id, header FROM sessions")}


def stored_titles(data: Path) -> dict[str, str | None]:
    """Each session's stored title snapshot (its JSON text), by id."""
    return {sid: title for sid, title in _rows(data, "SELECT id, title FROM sessions")}


def unstartable_data_dir(path: Path) -> Path:
    """A data dir whose database is no SQLite file: the writer cannot open it."""
    path.mkdir(parents=True)
    (path / SQLITE_NAME).write_bytes(b"this is not an SQLite database" * 100)
    return path
