"""The store-backed query service the five tools call (``QueryService`` protocol).

Reads only: each thread gets its own read-only SQLite connection (WAL readers never
block the indexer), and the Tantivy reader reloads to the newest commit before a search.
A connection is only kept once the data dir has this release's store schema: while the
indexer migrates an older dir (``indexer.store.tables.migrate``), calls fail with a clear
SESSION_QUERY_PERSISTENCE_FAILED instead of reading half-known tables; so do they while the
index of a dir has another format than this release's (``indexer.store.maintenance.index_format``).

Each method first asks for its thread's current commit generation
(``indexer.query.generation``: one ``PRAGMA data_version``): the session rows every call
reads again (callers, targets, hits' sessions, titles, lineage members) and the dir's
recorded redaction are remembered while no other connection commits, and read again
after any commit — so a writer that re-indexed the dir under another redaction mode is
honoured at once. Events and titles are returned as that redaction says
(``indexer.query.redacted``).
"""

from __future__ import annotations

import dataclasses
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

from indexer.errors import INVALID_CONFIG, PERSISTENCE_FAILED, SessionQueryError
from indexer.model.search import EventMetadataFilter, Query, SessionFilter
from indexer.query import events as event_reads
from indexer.query import lineage, search, sessions, titles
from indexer.query.filters import check_filters
from indexer.query.generation import Generation, current
from indexer.query.protocol import RANGE_MAX
from indexer.query.redacted import redacted_titles, redacted_window
from indexer.query.types import (
    EventRange,
    EventRecord,
    EventSearchPage,
    EventTrace,
    EventWindow,
    SessionRecord,
    SessionSearchPage,
    SessionTrace,
    TitleObservation,
)
from indexer.search_modes import SearchMode
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
    def reading(self) -> _Reading:
        """A scope of reads of this thread over one commit generation
        (``QueryService.reading``)."""
        return _Reading(self)

    def _generation(self) -> Generation:
        """This thread's connection's current commit generation (module docstring): in
        a ``reading`` scope, the one its first read checked, in the read transaction it
        began; else checked now."""
        local = self._local
        if getattr(local, "depth", 0) == 0:
            return self._checked()
        pinned: Generation | None = local.pinned
        if pinned is None:
            conn = self._conn
            if not conn.in_transaction:
                conn.execute("BEGIN")
                local.snapshot = conn
            pinned = local.pinned = self._checked()
        return pinned

    def _checked(self) -> Generation:
        known: Generation | None = getattr(self._local, "generation", None)
        generation = current(self._conn, known)
        if generation is not known:
            self._local.generation = generation
        return generation

    def filter_sessions(self, filters: Sequence[SessionFilter]) -> list[SessionRecord]:
        check_filters(filters, ())
        generation = self._generation()
        ids = sessions.listed_ids(filters)
        if ids is None:
            return sessions.filter_sessions(generation.conn, filters)
        rows = generation.rows(ids).values()  # an id list bounds the matches: rows in hand
        return sessions.newest_first(r.record for r in rows if sessions.row_matches(r, filters))

    def get_session(self, session_id: str) -> SessionRecord | None:
        row = self._generation().row(session_id)
        return None if row is None else row.record

    def recent_sessions(self, limit: int) -> list[SessionRecord]:
        return sessions.recent_sessions(self._conn, limit)

    def last_step_start_seq(self, session_id: str) -> int | None:
        row = self._generation().row(session_id)
        return None if row is None else row.last_step_start

    def last_seq(self, session_id: str) -> int | None:
        row = self._generation().row(session_id)
        return None if row is None else row.next_seq - 1

    # ---- search --------------------------------------------------------------------------------
    def search_sessions(
        self,
        query: str | Query,
        session_filters: Sequence[SessionFilter],
        event_filters: Sequence[EventMetadataFilter],
        *,
        limit: int,
        exclude_session_ids: frozenset[str] = frozenset(),
        mode: SearchMode = "phrase",
    ) -> SessionSearchPage:
        return search.search_sessions(
            self._generation(),
            self._fresh_index(),
            query,
            session_filters,
            event_filters,
            limit=limit,
            exclude_session_ids=exclude_session_ids,
            snippet_chars=self.snippet_chars,
            mode=mode,
        )

    def search_events(
        self,
        session_id: str,
        query: str | Query,
        filters: Sequence[EventMetadataFilter],
        *,
        limit: int,
        mode: SearchMode = "phrase",
    ) -> EventSearchPage:
        return search.search_events(
            self._generation(),
            self._fresh_index(),
            session_id,
            query,
            filters,
            limit=limit,
            snippet_chars=self.snippet_chars,
            mode=mode,
        )

    # ---- exact reads ---------------------------------------------------------------------------
    def list_events(self, session_id: str) -> list[EventRecord]:
        row = self._generation().row(session_id)
        return event_reads.list_events(self._blocks, session_id, row)

    def trace_session(self, session_id: str) -> SessionTrace:
        return lineage.trace_session(lineage.StoreLineage(self._generation()), session_id)

    def trace_event(self, session_id: str, seq: int) -> EventTrace:
        row = self._generation().row(session_id)
        return event_reads.trace_event(self._blocks, session_id, row, seq)

    def read_event(
        self, session_id: str, seq: int, *, before: int = 0, after: int = 0
    ) -> EventWindow:
        generation = self._generation()
        row = generation.row(session_id)
        # the window, then the stored events around a delta target: its blocks parsed once
        blocks = EventBlocks(self._conn, self._codec, remember=True)
        window = event_reads.read_event(
            blocks, session_id, row, seq, before, after, self.read_window_max
        )
        return redacted_window(
            generation.redaction,
            window,
            lambda first, last: event_reads.read_groups(blocks, session_id, row, first, last),
        )

    def read_range(self, session_id: str, first: int, count: int) -> EventRange:
        generation = self._generation()
        row = generation.row(session_id)
        found = event_reads.read_range(self._blocks, session_id, row, first, count, RANGE_MAX)
        redaction = generation.redaction
        if not redaction.active:
            return found
        return dataclasses.replace(found, events=redaction.events(found.events))

    def shown_text(self, text: str) -> str:
        redaction = self._generation().redaction
        return redaction.text(text) if redaction.active else text

    def read_title_snapshots(self, session_ids: Sequence[str]) -> list[TitleObservation]:
        """Observations as shown, each built once per commit generation."""
        generation = self._generation()
        shown = generation.titles
        unique = list(dict.fromkeys(session_ids))
        missing = [i for i in unique if i not in shown]
        if missing:
            observed = titles.observations(generation.rows(missing), missing)
            for observation in redacted_titles(generation.redaction, observed):
                shown[observation.session_id] = observation
        return [shown[i] for i in unique]

    def close(self) -> None:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None


class _Reading:
    """``StoreQueryService.reading``: the first read inside begins one SQLite read
    transaction and checks this thread's generation in it; every later read uses both
    (so a scope that reads nothing touches nothing, and a failing check fails that read,
    inside its own boundary); scopes nest. One transaction is one snapshot: the rows,
    blocks and dictionaries a call reads are of one commit, and the WAL read lock is
    taken once per call (each statement on its own takes and releases it, two ``fcntl``
    calls each time; the cost is measured in ``bench/README.md``)."""

    __slots__ = ("_local",)

    def __init__(self, service: StoreQueryService) -> None:
        self._local = service._local

    def __enter__(self) -> None:
        local = self._local
        depth = getattr(local, "depth", 0)
        if depth == 0:
            local.pinned = None
            local.snapshot = None
        local.depth = depth + 1

    def __exit__(self, *_exc: object) -> None:
        local = self._local
        local.depth -= 1
        if local.depth == 0:
            local.pinned = None
            conn: sqlite3.Connection | None = local.snapshot
            if conn is not None:
                local.snapshot = None
                if conn.in_transaction:  # an error may have ended it already
                    conn.execute("ROLLBACK")
