"""Session lineage (SPEC §8.1): ancestors nearest first, descendants as a sorted forest.

Built iteratively with one indexed lookup per visited session, so a 3 000-deep chain
needs no recursion and a trace never scans the whole corpus. The sessions come from a
``Lineage``: one data dir's table (``StoreLineage``), or a partition's table plus the
global lineage of the other partitions (``indexer.query.partitioned``).
"""

from __future__ import annotations

from typing import Protocol

from indexer.errors import INVALID_LINEAGE, SESSION_NOT_FOUND, SessionQueryError
from indexer.query.collation import locale_key
from indexer.query.generation import Generation
from indexer.query.types import LineageNode, SessionRecord, SessionTrace


class Lineage(Protocol):
    def record(self, session_id: str) -> SessionRecord | None: ...

    def children(self, parent_id: str) -> list[SessionRecord]:
        """Every session whose parent is ``parent_id``, in any order."""
        ...


class StoreLineage:
    """The lineage one data dir holds, read through a commit generation's rows."""

    def __init__(self, rows: Generation) -> None:
        self.rows = rows

    def record(self, session_id: str) -> SessionRecord | None:
        row = self.rows.row(session_id)
        return None if row is None else row.record

    def children(self, parent_id: str) -> list[SessionRecord]:
        return [row.record for row in self.rows.children(parent_id)]


def _children(lineage: Lineage, parent_id: str) -> list[SessionRecord]:
    kids = lineage.children(parent_id)
    kids.sort(key=lambda r: locale_key(r.header.id))
    kids.sort(key=lambda r: r.header.created_at)
    return kids


def trace_session(lineage: Lineage, session_id: str) -> SessionTrace:
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
