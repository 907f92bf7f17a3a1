"""The store-backed query service the five tools call (``QueryService`` protocol).

Reads only: each thread gets its own read-only SQLite connection (WAL readers never
block the indexer), and the Tantivy reader reloads to the newest commit before a search.
A connection is only kept once the data dir has this release's store schema: while the
indexer migrates an older dir (``indexer.store.tables.migrate``), calls fail with a clear
SESSION_QUERY_PERSISTENCE_FAILED instead of reading half-known tables; so do they while the
index of a dir has another format than this release's (``indexer.store.maintenance.index_format``).

Events and titles are returned as the dir's recorded redaction says
(``indexer.query.redacted``); a connection reads it again whenever another connection
committed since its last read (``PRAGMA data_version``), so a writer that re-indexed the
dir under another mode is honoured at once.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

from indexer.errors import INVALID_CONFIG, PERSISTENCE_FAILED, SessionQueryError
from indexer.model.search import EventMetadataFilter, Query, SessionFilter
from indexer.query import events as event_reads
from indexer.query import lineage, search, sessions, titles
from indexer.query.filters import check_filters
from indexer.query.redacted import redacted_titles, redacted_window
from indexer.query.types import (
    EventRecord,
    EventSearchPage,
    EventTrace,
    EventWindow,
    SessionRecord,
    SessionSearchPage,
    SessionTrace,
    TitleObservation,
)
from indexer.redact import Redaction
from indexer.redact.state import reader_redaction
from indexer.store.blocks.format import Codec
from indexer.store.blocks.table import EventBlocks
from indexer.store.layout import index_path, sqlite_path
from indexer.store.maintenance.index_format import check_index_format
from indexer.store.tables.connection import connect
from indexer.store.tables.schema import SCHEMA_VERSION, stored_version
from indexer.store.tantivy import TantivyIndex


def check_version(conn: sqlite3.Connection) -> None:
    """Refuse a data dir of another store schema version (a new dir has none yet)."""
    version = stored_version(conn)
    if version is not None and version != SCHEMA_VERSION:
        raise SessionQueryError(
            f"the data dir has store schema version {version}, this release reads "
            f"{SCHEMA_VERSION}: the indexer (or `sessionq ingest`) of this release migrates "
            "it when it opens the dir",
            PERSISTENCE_FAILED,
        )


class StoreQueryService:
    """Query service over one data directory (SPEC §5-§8)."""

    def __init__(
        self, data_dir: Path, *, read_window_max: int = 50, snippet_chars: int = 240
    ) -> None:
        if (
            isinstance(read_window_max, bool)
            or not isinstance(read_window_max, int)
            or (read_window_max < 0)
        ):
            raise SessionQueryError(
                "session-query: readWindowMax must be a non-negative integer", INVALID_CONFIG
            )
        self.data_dir = data_dir
        self.read_window_max = read_window_max
        self.snippet_chars = snippet_chars
        self._sqlite_path = sqlite_path(data_dir)
        self._local = threading.local()
        self._index = TantivyIndex(index_path(data_dir), writable=False)
        self._index_lock = threading.Lock()
        self._codec = Codec()  # dictionaries load from the data dir as blocks need them

    @property
    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = connect(self._sqlite_path, readonly=True)
            try:
                check_version(conn)
                if stored_version(conn) is not None:
                    check_index_format(conn)
            except BaseException:
                conn.close()
                raise
            self._local.conn = conn
        return conn

    @property
    def _blocks(self) -> EventBlocks:
        return EventBlocks(self._conn, self._codec)

    def _fresh_index(self) -> TantivyIndex:
        with self._index_lock:
            self._index.reload()
        return self._index

    # ---- sessions ------------------------------------------------------------------------------
    def filter_sessions(self, filters: Sequence[SessionFilter]) -> list[SessionRecord]:
        check_filters(filters, ())
        return sessions.filter_sessions(self._conn, filters)

    def get_session(self, session_id: str) -> SessionRecord | None:
        return sessions.get_record(self._conn, session_id)

    def recent_sessions(self, limit: int) -> list[SessionRecord]:
        return sessions.recent_sessions(self._conn, limit)

    def last_step_start_seq(self, session_id: str) -> int | None:
        row = self._conn.execute(
            "SELECT last_step_start FROM sessions WHERE id = ?", (session_id,)
        ).fetchone()
        return None if row is None or row[0] is None else int(row[0])

    def last_seq(self, session_id: str) -> int | None:
        row = self._conn.execute(
            "SELECT next_seq FROM sessions WHERE id = ?", (session_id,)
        ).fetchone()
        return None if row is None else int(row[0]) - 1

    # ---- search --------------------------------------------------------------------------------
    def search_sessions(
        self,
        query: str | Query,
        session_filters: Sequence[SessionFilter],
        event_filters: Sequence[EventMetadataFilter],
        *,
        limit: int,
        exclude_session_ids: frozenset[str] = frozenset(),
    ) -> SessionSearchPage:
        return search.search_sessions(
            self._conn,
            self._fresh_index(),
            query,
            session_filters,
            event_filters,
            limit=limit,
            exclude_session_ids=exclude_session_ids,
            snippet_chars=self.snippet_chars,
        )

    def search_events(
        self,
        session_id: str,
        query: str | Query,
        filters: Sequence[EventMetadataFilter],
        *,
        limit: int,
    ) -> EventSearchPage:
        return search.search_events(
            self._conn,
            self._fresh_index(),
            session_id,
            query,
            filters,
            limit=limit,
            snippet_chars=self.snippet_chars,
        )

    # ---- exact reads ---------------------------------------------------------------------------
    def list_events(self, session_id: str) -> list[EventRecord]:
        return event_reads.list_events(self._blocks, session_id)

    def trace_session(self, session_id: str) -> SessionTrace:
        return lineage.trace_session(self._conn, session_id)

    def trace_event(self, session_id: str, seq: int) -> EventTrace:
        return event_reads.trace_event(self._blocks, session_id, seq)

    def read_event(
        self, session_id: str, seq: int, *, before: int = 0, after: int = 0
    ) -> EventWindow:
        window = event_reads.read_event(
            self._blocks, session_id, seq, before, after, self.read_window_max
        )
        return redacted_window(
            self._redaction(),
            window,
            lambda first, last: event_reads.read_stored(self._blocks, session_id, first, last),
        )

    def read_title_snapshots(self, session_ids: Sequence[str]) -> list[TitleObservation]:
        observations = titles.read_title_snapshots(self._conn, session_ids)
        return redacted_titles(self._redaction(), observations)

    def _redaction(self) -> Redaction:
        """The recorded redaction, read once per commit generation of this thread's
        connection: ``data_version`` changes with every commit of another connection."""
        conn = self._conn
        version = conn.execute("PRAGMA data_version").fetchone()[0]
        known: tuple[int, Redaction] | None = getattr(self._local, "redaction", None)
        if known is None or known[0] != version:
            known = (version, reader_redaction(conn))
            self._local.redaction = known
        return known[1]

    def close(self) -> None:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
