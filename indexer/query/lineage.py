"""Session lineage (SPEC §8.1): ancestors nearest first, descendants as a sorted forest.

Built iteratively with one indexed lookup per visited session, so a 3 000-deep chain
needs no recursion and a trace never scans the whole corpus. The sessions come from a
``Lineage``: one data dir's table (``StoreLineage``), or a partition's table plus the
global lineage of the other partitions (``indexer.query.partitioned``).
"""

from __future__ import annotations

import sqlite3
from typing import Protocol

from indexer.errors import INVALID_LINEAGE, SESSION_NOT_FOUND, SessionQueryError
from indexer.query.collation import locale_key
from indexer.query.sessions import RECORD_COLUMNS, get_record, record_from_row
from indexer.query.types import LineageNode, SessionRecord, SessionTrace


class Lineage(Protocol):
    def record(self, session_id: str) -> SessionRecord | None: ...

    def children(self, parent_id: str) -> list[SessionRecord]:
        """Every session whose parent is ``parent_id``, in any order."""
        ...


class StoreLineage:
    """The lineage one data dir holds."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def record(self, session_id: str) -> SessionRecord | None:
        return get_record(self.conn, session_id)

    def children(self, parent_id: str) -> list[SessionRecord]:
        rows = self.conn.execute(
            f"SELECT {RECORD_COLUMNS} FROM sessions WHERE parent = ?", (parent_id,)
        )
        return [record_from_row(h, live) for h, live in rows]


def _children(lineage: Lineage, parent_id: str) -> list[SessionRecord]:
    kids = lineage.children(parent_id)
    kids.sort(key=lambda r: locale_key(r.header.id))
    kids.sort(key=lambda r: r.header.created_at)
    return kids


def trace_session(source: sqlite3.Connection | Lineage, session_id: str) -> SessionTrace:
    lineage = StoreLineage(source) if isinstance(source, sqlite3.Connection) else source
    target = lineage.record(session_id)
    if target is None:
        raise SessionQueryError(f'session "{session_id}" not found', SESSION_NOT_FOUND)

    ancestors: list[SessionRecord] = []
    seen = {session_id}
    unresolved: str | None = None
    parent = target.header.parent_session
    while parent is not None:
        if parent in seen:
            raise SessionQueryError(
                f'session lineage contains a cycle at "{parent}"', INVALID_LINEAGE
            )
        seen.add(parent)
        rec = lineage.record(parent)
        if rec is None:
            unresolved = parent
            break
        ancestors.append(rec)
        parent = rec.header.parent_session

    roots: list[LineageNode] = []
    stack: list[tuple[str, list[LineageNode]]] = [(session_id, roots)]
    visited = {session_id}
    while stack:
        pid, into = stack.pop()
        for child in _children(lineage, pid):
            if child.header.id in visited:
                continue  # a cycle below the target: each session appears once
            visited.add(child.header.id)
            node = LineageNode(child, [])
            into.append(node)
            stack.append((child.header.id, node.descendants))

    if unresolved is not None:
        return SessionTrace(
            target, ancestors, roots, complete=False, unresolved_parent_id=unresolved
        )
    root = ancestors[-1] if ancestors else target
    return SessionTrace(target, ancestors, roots, complete=True, root=root)
