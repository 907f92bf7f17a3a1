"""Session records from the ``sessions`` table and the §6.1 session filters in SQL."""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
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
ROW_COLUMNS = "header, live, key, cwd, parent, created_at, next_seq, last_step_start, title"


@functools.lru_cache(maxsize=1 << 13)
def stored_header(header_json: str) -> SessionHeader:
    """The header of a ``sessions.header`` value. A header is immutable and its model
    frozen, so the model of a given JSON text is remembered: every call of every tool
    reads the caller's and its targets' headers again."""
    return SessionHeader.model_validate_json(header_json)


def record_from_row(header_json: str, live: int) -> SessionRecord:
    return SessionRecord(header=stored_header(header_json), live=bool(live))


@dataclass(frozen=True, slots=True)
class SessionRow:
    """A ``sessions`` row as readers use it: the record, the columns the session filters
    compare (``where_clause``), and the log's bounds and title."""

    record: SessionRecord
    key: int
    cwd: str | None
    parent: str | None
    created_at: int
    next_seq: int
    last_step_start: int | None
    title: str | None  # the stored title JSON


def row_from(values: Sequence[Any]) -> SessionRow:
    """The ``SessionRow`` of a row selected as ``ROW_COLUMNS``."""
    header, live, key, cwd, parent, created_at, next_seq, last_step_start, title = values
    return SessionRow(
        record_from_row(header, live),
        int(key),
        cwd,
        parent,
        created_at,
        int(next_seq),
        None if last_step_start is None else int(last_step_start),
        title,
    )


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


def _nullable_in_row(value: str | None, values: Sequence[str | None]) -> bool:
    return value in values  # None matches a None value (IS NULL), text equals exactly


def row_matches(row: SessionRow, filters: Sequence[SessionFilter]) -> bool:
    """Whether ``row`` passes ``filters``: ``where_clause``'s rule over the same columns,
    for rows already in hand (a list of ids names them)."""
    for f in filters:
        if isinstance(f, IdFilter):
            if row.record.header.id not in f.values:
                return False
        elif isinstance(f, CwdFilter):
            if not _nullable_in_row(row.cwd, f.values):
                return False
        elif isinstance(f, ParentFilter):
            if not _nullable_in_row(row.parent, f.values):
                return False
        elif isinstance(f, CreatedAtFilter):
            if (f.from_ is not None and not row.created_at >= f.from_) or (
                f.to is not None and not row.created_at <= f.to
            ):
                return False
        elif isinstance(f, AvailabilityFilter):
            wanted = set(f.values)
            if not wanted or (wanted == {"live"} and not row.record.live):
                return False
    return True


def listed_ids(filters: Sequence[SessionFilter]) -> tuple[str, ...] | None:
    """The ids of the first ``IdFilter`` (every match is among them), or None: no id
    list, or a listed value that is neither text nor (where a column may be NULL) None,
    which SQL would compare by its own type rules (``row_matches`` is for text only)."""
    ids: tuple[str, ...] | None = None
    for f in filters:
        if isinstance(f, IdFilter):
            if not all(isinstance(v, str) for v in f.values):
                return None
            if ids is None:
                ids = f.values
        elif isinstance(f, CwdFilter | ParentFilter) and not all(
            v is None or isinstance(v, str) for v in f.values
        ):
            return None
    return ids


def filter_sessions(
    conn: sqlite3.Connection, filters: Sequence[SessionFilter]
) -> list[SessionRecord]:
    where, params = where_clause(filters)
    rows = conn.execute(f"SELECT {RECORD_COLUMNS} FROM sessions WHERE {where}", params)
    return newest_first(record_from_row(h, live) for h, live in rows)


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
