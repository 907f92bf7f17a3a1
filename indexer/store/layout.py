"""The files of a data directory, named in one place.

``store.sqlite3`` (with its ``-wal``/``-shm``) holds the tables and the consumed
offsets; ``tantivy/`` the full-text index; ``commit.lock`` serialises a commit's steps
with a snapshot's view of both (``indexer.store.locks.CommitLock``). ``writer.lock``,
``writer.queue`` and ``writer.json`` are the writer lease (``indexer.store.lease``);
``watch/`` holds one registration per process that asks for log files to be watched
(``indexer.sources.registry``); ``mcp/`` the sockets, locks and logs of the daemons that
serve agent windows (``worker.transports.mcp.rendezvous``). Snapshots copy the tables and the index
only. All of them are owner-only (``indexer.store.private``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

SQLITE_NAME: Final = "store.sqlite3"
INDEX_DIR_NAME: Final = "tantivy"
COMMIT_LOCK_NAME: Final = "commit.lock"
WRITER_LOCK_NAME: Final = "writer.lock"
WRITER_QUEUE_NAME: Final = "writer.queue"
WRITER_INFO_NAME: Final = "writer.json"
WATCH_DIR_NAME: Final = "watch"
MCP_DIR_NAME: Final = "mcp"
# Files of the running processes (locks, the lease holder's record): never part of a copy.
RUNTIME_FILES: Final = frozenset(
    {COMMIT_LOCK_NAME, WRITER_LOCK_NAME, WRITER_QUEUE_NAME, WRITER_INFO_NAME}
)


def sqlite_path(data_dir: Path) -> Path:
    return data_dir / SQLITE_NAME


def index_path(data_dir: Path) -> Path:
    return data_dir / INDEX_DIR_NAME


def watch_dir(data_dir: Path) -> Path:
    return data_dir / WATCH_DIR_NAME
