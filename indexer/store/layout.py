"""The files of a data directory, named in one place.

``store.sqlite3`` (with its ``-wal``/``-shm``) holds the tables and the consumed
offsets; ``tantivy/`` the full-text index; ``commit.lock`` serialises a commit's steps
with a snapshot's view of both (``indexer.store.locks.CommitLock``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

SQLITE_NAME: Final = "store.sqlite3"
INDEX_DIR_NAME: Final = "tantivy"
COMMIT_LOCK_NAME: Final = "commit.lock"


def sqlite_path(data_dir: Path) -> Path:
    return data_dir / SQLITE_NAME


def index_path(data_dir: Path) -> Path:
    return data_dir / INDEX_DIR_NAME
