"""The index format a data dir's Tantivy index was built with, and its rebuild.

The index is derived data: every document is rebuilt from the stored rows
(``StoreWriter.reindex``). So a release whose index layout differs
(``indexer.store.tantivy.schema.INDEX_FORMAT``: the schema, and which pair terms
documents hold) does not migrate an index in place; the writer rebuilds it.

The format is recorded in the SQLite ``meta`` table (key ``index_format``) rather than
in a file beside the index: it is then in every snapshot of the dir and commits with the
tables, and readers check it on the connection they read with anyway. No record means
format 1 (every release before the selective pairs). A new database records the current
format when it is created (``indexer.store.schema.open_schema``).

The rebuild (``Store`` runs it when it opens a dir of another format) removes the index
directory, indexes every stored session anew, commits the index and only then records
the new format: a crash at any point leaves the old record, and the next open starts
over. Meanwhile readers of this release refuse the dir with a clear
SESSION_QUERY_PERSISTENCE_FAILED naming the format (``check_index_format``), as they do
for an older SQLite schema.
"""

from __future__ import annotations

import logging
import shutil
import sqlite3
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Final

from indexer.errors import PERSISTENCE_FAILED, SessionQueryError
from indexer.store.tantivy.schema import INDEX_FORMAT

log = logging.getLogger("sessionq.store")

INDEX_FORMAT_KEY: Final = "index_format"
IMPLIED_FORMAT: Final = "1"
"""The format of an index whose data dir records none (releases before the record)."""
REBUILD_CHUNK: Final = 200
"""Sessions whose documents are staged before they are handed to the Tantivy writer."""


def stored_index_format(conn: sqlite3.Connection) -> str:
    """The recorded format (``IMPLIED_FORMAT`` when none is). Needs the ``meta`` table."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (INDEX_FORMAT_KEY,)).fetchone()
    return IMPLIED_FORMAT if row is None else str(row[0])


def record_index_format(conn: sqlite3.Connection) -> None:
    """Record ``INDEX_FORMAT`` (in the caller's transaction, if one is open)."""
    conn.execute(
        "INSERT INTO meta(key, value) VALUES (?, ?)"
        " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (INDEX_FORMAT_KEY, INDEX_FORMAT),
    )


def check_index_format(conn: sqlite3.Connection) -> None:
    """Readers: refuse an index of another format (the writer rebuilds it on open)."""
    fmt = stored_index_format(conn)
    if fmt != INDEX_FORMAT:
        raise SessionQueryError(
            f"the data dir has index format {fmt}, this release reads {INDEX_FORMAT}: the "
            "indexer (or `sessionq ingest`) of this release rebuilds the index from the "
            "stored rows when it opens the dir",
            PERSISTENCE_FAILED,
        )


def clear_stale_index(conn: sqlite3.Connection, index_dir: Path, *, redacted: bool = False) -> bool:
    """Writer, before it opens the index: whether it must be rebuilt, and if so remove
    the old one (Tantivy refuses to open an index of another schema). ``redacted``: its
    documents were redacted otherwise than this writer redacts (``indexer.redact.state``),
    so it is rebuilt whatever its format."""
    fmt = stored_index_format(conn)
    if fmt == INDEX_FORMAT and not redacted:
        return False
    if fmt == INDEX_FORMAT:
        log.info("the data dir's index was redacted otherwise: rebuilding it")
    else:
        log.info("the data dir has index format %s: rebuilding it as %s", fmt, INDEX_FORMAT)
    shutil.rmtree(index_dir, ignore_errors=True)
    return True


def rebuild(
    conn: sqlite3.Connection,
    reindex: Callable[[Iterable[str]], int],
    flush: Callable[[], None],
    commit_index: Callable[[], None],
) -> int:
    """Index every stored session into the (new, empty) index, commit it, then record
    ``INDEX_FORMAT``. Returns the documents indexed."""
    ids = [str(r[0]) for r in conn.execute("SELECT id FROM sessions ORDER BY key")]
    docs = 0
    for start in range(0, len(ids), REBUILD_CHUNK):
        docs += reindex(ids[start : start + REBUILD_CHUNK])
        flush()
    commit_index()
    record_index_format(conn)
    log.info("rebuilt the index: %d sessions, %d documents", len(ids), docs)
    return docs
