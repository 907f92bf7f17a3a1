"""Session records from the ``sessions`` table and the §6.1 session filters in SQL."""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from indexer.model import SessionHeader
from indexer.model.search import (
    AvailabilityFilter,
    CreatedAtFilter,
    CwdFilter,
    IdFilter,
    ParentFilter,
    SessionFilter,
)
from indexer.query.collation import locale_key
from indexer.query.types import SessionRecord

RECORD_COLUMNS = "header, live"


@functools.lru_cache(maxsize=1 << 13)
def stored_header(header_json: str) -> SessionHeader:
    """The header of a ``sessions.header`` value. A header is immutable and its model
    frozen, so the model of a given JSON text is remembered: every call of every tool
    reads the caller's and its targets' headers again."""
    return SessionHeader.model_validate_json(header_json)


def record_from_row(header_json: str, live: int) -> SessionRecord:
    return SessionRecord(header=stored_header(header_json), live=bool(live))


def newest_first(records: Iterable[SessionRecord]) -> list[SessionRecord]:
    """SPEC §5.2 order: createdAt descending, ties by id with locale-aware comparison."""
    out = sorted(records, key=lambda r: locale_key(r.header.id))
    out.sort(key=lambda r: r.header.created_at, reverse=True)
    return out


def _in_clause(column: str, values: Sequence[Any], params: list[Any]) -> str:
    if not values:
        return "0"
    params.extend(values)
    return f"{column} IN ({','.join('?' * len(values))})"


def _nullable_in(column: str, values: Sequence[str | None], params: list[Any]) -> str:
    present = [v for v in values if v is not None]
    parts = []
    if present:
        parts.append(_in_clause(column, present, params))
    if any(v is None for v in values):
        parts.append(f"{column} IS NULL")
    return "(" + " OR ".join(parts) + ")" if parts else "0"


def where_clause(filters: Sequence[SessionFilter]) -> tuple[str, list[Any]]:
    """Compile session filters (ANDed; list values ORed; empty list matches nothing)."""
    params: list[Any] = []
    parts: list[str] = []
    # With an id list, primary-key lookups beat scanning a workspace through the cwd
    # index (SQLite has no statistics to know): "+cwd" keeps the index out of the plan.
    cwd_column = "+cwd" if any(isinstance(f, IdFilter) for f in filters) else "cwd"
    for f in filters:
        if isinstance(f, IdFilter):
            parts.append(_in_clause("id", f.values, params))
        elif isinstance(f, CwdFilter):
            parts.append(_nullable_in(cwd_column, f.values, params))
        elif isinstance(f, ParentFilter):
            parts.append(_nullable_in("parent", f.values, params))
        elif isinstance(f, CreatedAtFilter):
            if f.from_ is not None:
                parts.append("created_at >= ?")
                params.append(f.from_)
            if f.to is not None:
                parts.append("created_at <= ?")
                params.append(f.to)
        elif isinstance(f, AvailabilityFilter):
            wanted = set(f.values)
            if not wanted:
                parts.append("0")
            elif wanted == {"live"}:
                parts.append("live = 1")
            # "persisted" holds for every stored session.
    return (" AND ".join(parts) or "1"), params


def filter_sessions(
    conn: sqlite3.Connection, filters: Sequence[SessionFilter]
) -> list[SessionRecord]:
    where, params = where_clause(filters)
    rows = conn.execute(f"SELECT {RECORD_COLUMNS} FROM sessions WHERE {where}", params)
    return newest_first(record_from_row(h, live) for h, live in rows)


def get_records(conn: sqlite3.Connection, ids: Sequence[str]) -> dict[str, SessionRecord]:
    out: dict[str, SessionRecord] = {}
    unique = list(dict.fromkeys(ids))
    for i in range(0, len(unique), 500):
        chunk = unique[i : i + 500]
        marks = ",".join("?" * len(chunk))
        for h, live in conn.execute(
            f"SELECT {RECORD_COLUMNS} FROM sessions WHERE id IN ({marks})", chunk
        ):
            rec = record_from_row(h, live)
            out[rec.header.id] = rec
    return out


def get_record(conn: sqlite3.Connection, session_id: str) -> SessionRecord | None:
    row = conn.execute(
        f"SELECT {RECORD_COLUMNS} FROM sessions WHERE id = ?", (session_id,)
    ).fetchone()
    return None if row is None else record_from_row(row[0], row[1])


def recent_sessions(conn: sqlite3.Connection, limit: int) -> list[SessionRecord]:
    """At most ``limit`` sessions of the whole store: main sessions (no parent) before
    subagents, live before closed, newest ``createdAt`` first, then the greatest id (the
    order ``sessionq mcp`` discovers a caller in). SQLite keeps the top ``limit`` keys
    while it scans; only those rows' headers are parsed."""
    order = "ORDER BY parent IS NULL DESC, live DESC, created_at DESC, id DESC"
    rows = conn.execute(
        f"SELECT {RECORD_COLUMNS} FROM sessions"
        f" WHERE key IN (SELECT key FROM sessions {order} LIMIT ?) {order}",
        (limit,),
    )
    return [record_from_row(h, live) for h, live in rows]


def live_ids(conn: sqlite3.Connection) -> frozenset[str]:
    return frozenset(r[0] for r in conn.execute("SELECT id FROM sessions WHERE live = 1"))
