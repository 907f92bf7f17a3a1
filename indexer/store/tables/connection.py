"""Connections to a data dir's SQLite database (WAL mode: readers never block the
writer and only ever see committed transactions)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Final

from indexer.store.private import create_file

PAGE_SIZE: Final = 1024
READER_CACHE_KIB: Final = 65536
WRITER_CACHE_KIB: Final = 16384
"""A writer's page cache: what it writes goes to the WAL file when the cache is full,
so more cache only holds dirty pages longer (ingest is as fast at 16 MiB as at 64)."""


def connect(path: Path, *, readonly: bool = False) -> sqlite3.Connection:
    """Open the store database in WAL mode; ``readonly`` connections never write.

    A new database gets ``PAGE_SIZE`` pages (it must be set before WAL mode writes the
    first page; an existing file keeps its own). Small pages because most of the file is
    compressed blocks of a few KiB: a blob's last overflow page is on average half
    empty, which at 4 KiB pages wasted a sixth of the blocks table (bench/README.md).

    A writer's database file is made owner-only before SQLite opens it: SQLite gives the
    ``-wal`` and ``-shm`` the same bits (``indexer.store.private``)."""
    if not readonly:
        create_file(path)
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30.0)
    conn.execute("PRAGMA busy_timeout = 30000")
    if readonly:
        conn.execute("PRAGMA query_only = ON")
    else:
        conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute(f"PRAGMA cache_size = -{READER_CACHE_KIB if readonly else WRITER_CACHE_KIB}")
    return conn
