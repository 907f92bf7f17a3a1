"""The query service of one partition of a partitioned node (DESIGN.md "Partitioned
nodes"): the partition's own store answers everything, and a trace also sees the
sessions of other partitions through the node's global lineage copy.

A caller sees only its own workspace, and a workspace lives in one partition, so only
lineage crosses partitions: a parent or child in another workspace is outside the
caller's workspace, and a trace shows it as a boundary or a hidden marker, exactly as a
full replica does. For that it needs each such session's id, parent, created time and
workspace — what the lineage holds. Sessions whose workspace key routes to this
partition come only from the store (the lineage may lag it); the others only from the
lineage.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from indexer.lineage.table import LineageTable
from indexer.query import lineage
from indexer.query.service import StoreQueryService
from indexer.query.types import SessionRecord, SessionTrace


class _PartitionLineage:
    """``indexer.query.lineage.Lineage`` over a partition's store + the global copy."""

    def __init__(
        self,
        local: lineage.StoreLineage,
        table: LineageTable,
        is_foreign: Callable[[str], bool],
    ) -> None:
        self.local = local
        self.table = table
        self.is_foreign = is_foreign

    def record(self, session_id: str) -> SessionRecord | None:
        found = self.local.record(session_id)
        if found is not None:
            return found
        entry = self.table.get(session_id)
        if entry is None or not self.is_foreign(entry.workspace):
            return None
        return SessionRecord(entry.header(), live=False)

    def children(self, parent_id: str) -> list[SessionRecord]:
        kids = self.local.children(parent_id)
        known = {k.header.id for k in kids}
        for entry in self.table.children(parent_id):
            if entry.session_id not in known and self.is_foreign(entry.workspace):
                kids.append(SessionRecord(entry.header(), live=False))
        return kids


class PartitionQueryService(StoreQueryService):
    """``StoreQueryService`` over partition ``partition``'s data dir, with traces that
    cross partitions (module docstring). ``home(key)`` is the partition a workspace key
    routes to (the producers' partitioner)."""

    def __init__(
        self,
        data_dir: Path,
        *,
        partition: int,
        lineage_table: LineageTable,
        home: Callable[[str], int],
        read_window_max: int = 50,
        snippet_chars: int = 240,
    ) -> None:
        super().__init__(data_dir, read_window_max=read_window_max, snippet_chars=snippet_chars)
        self.partition = partition
        self.lineage_table = lineage_table
        self._home = home

    def _foreign(self, workspace: str) -> bool:
        return self._home(workspace) != self.partition

    def trace_session(self, session_id: str) -> SessionTrace:
        local = lineage.StoreLineage(self._generation())
        return lineage.trace_session(
            _PartitionLineage(local, self.lineage_table, self._foreign), session_id
        )
