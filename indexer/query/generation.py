"""What a reader remembers of one commit generation of its SQLite connection.

``PRAGMA data_version`` of a connection changes whenever another connection commits (a
reader's own connection never does), so what a reader read while the value stays the
same still describes the store. Every tool call reads the same few session rows again —
the caller, its target, the hits' sessions and their titles, a lineage's members — each
a primary-key read and a record built from it, repeated by every call.
A ``Generation`` remembers those rows, the children lists of lineage walks and the
recorded redaction until the value changes; the query service asks for the current one
once per tool call (``QueryService.reading``), else once per query method (one cheap
``PRAGMA``), and a new value drops everything.

A row read after a commit the check did not see yet is dropped at the next check, never
kept under the newer value. Rows of sessions that do not exist are remembered too (as
``None``): a caller not indexed yet is asked for every poll of a read-your-writes wait,
and it can only appear with a commit. At most ``MAX_ROWS`` rows are remembered per
generation; past that the memory starts over (a store of many sessions read at random
costs what it did without it).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Final

from indexer.model.header import storable_id
from indexer.query.sessions import ROW_COLUMNS, SessionRow, row_from
from indexer.query.types import TitleObservation
from indexer.redact import Redaction
from indexer.redact.state import reader_redaction

__all__ = ["MAX_ROWS", "Generation", "current"]

MAX_ROWS: Final = 8_192
_CHUNK: Final = 500  # ids per ``IN`` list (SQLite's default bound is far above it)


class Generation:
    """One commit generation of one read connection (module docstring). Used by the
    connection's own thread only."""

    __slots__ = ("_children", "_redaction", "_rows", "conn", "titles", "version")

    def __init__(self, conn: sqlite3.Connection, version: int) -> None:
        self.conn = conn
        self.version = version
        self._rows: dict[str, SessionRow | None] = {}
        self._children: dict[str, list[SessionRow]] = {}
        self._redaction: Redaction | None = None
        # title observations as shown (redacted), by session id; filled by the service
        self.titles: dict[str, TitleObservation] = {}

    @property
    def redaction(self) -> Redaction:
        """The dir's recorded redaction (it changes only with a commit)."""
        if self._redaction is None:
            self._redaction = reader_redaction(self.conn)
        return self._redaction

    def row(self, session_id: str) -> SessionRow | None:
        """The session's row, or None when it does not exist."""
        if session_id in self._rows:
            return self._rows[session_id]
        return self.rows((session_id,)).get(session_id)

    def rows(self, session_ids: Iterable[str]) -> dict[str, SessionRow]:
        """The rows of those of ``session_ids`` that exist (one ``IN`` read for the ones
        not remembered yet)."""
        known = self._rows
        wanted = list(dict.fromkeys(session_ids))
        missing = [i for i in wanted if i not in known and storable_id(i)]
        if missing:
            if self._make_room(len(missing)):
                missing = wanted
            for i in range(0, len(missing), _CHUNK):
                chunk = missing[i : i + _CHUNK]
                marks = ",".join("?" * len(chunk))
                for values in self.conn.execute(
                    f"SELECT {ROW_COLUMNS} FROM sessions WHERE id IN ({marks})", chunk
                ):
                    fetched = row_from(values)
                    known[fetched.record.header.id] = fetched
            for session_id in missing:
                known.setdefault(session_id, None)
        out: dict[str, SessionRow] = {}
        for session_id in wanted:
            found = known.get(session_id)
            if found is not None:
                out[session_id] = found
        return out

    def children(self, parent_id: str) -> list[SessionRow]:
        """Every session whose parent is ``parent_id``, in any order."""
        kids = self._children.get(parent_id)
        if kids is None and not storable_id(parent_id):
            return []
        if kids is None:
            rows = self.conn.execute(
                f"SELECT {ROW_COLUMNS} FROM sessions WHERE parent = ?", (parent_id,)
            )
            kids = [row_from(values) for values in rows]
            self._make_room(len(kids) + 1)
            for row in kids:
                self._rows[row.record.header.id] = row
            self._children[parent_id] = kids
        return list(kids)

    def _make_room(self, adding: int) -> bool:
        """Start over when ``adding`` more would pass ``MAX_ROWS``; True if it did."""
        if len(self._rows) + len(self._children) + len(self.titles) + adding <= MAX_ROWS:
            return False
        self._rows.clear()
        self._children.clear()
        self.titles.clear()
        return True


def current(conn: sqlite3.Connection, known: Generation | None) -> Generation:
    """``known`` while the connection's ``data_version`` is still its own, else a new
    generation of the current value."""
    version = int(conn.execute("PRAGMA data_version").fetchone()[0])
    if known is not None and known.version == version and known.conn is conn:
        return known
    return Generation(conn, version)
