"""What a data directory holds, for ``sessionq stats`` and the console."""

from __future__ import annotations

import os
import sqlite3
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from indexer.logs.importers.common import AGENTS
from indexer.model.header import DSH_AGENT
from indexer.redact.counts import totals
from indexer.redact.state import recorded
from indexer.store.layout import index_path, sqlite_path
from indexer.store.tables.connection import connect
from indexer.store.tables.schema import stored_version
from indexer.store.tantivy import TantivyIndex


@dataclass(frozen=True, slots=True)
class StoreStats:
    sessions: int
    live_sessions: int
    held_sessions: int
    events: int
    documents: int
    workspaces: int
    offsets: dict[str, int]
    sqlite_bytes: int
    index_bytes: int
    # source agent -> {"sessions": n, "events": m}: every agent an importer writes
    # (indexer.logs.importers.common.AGENTS, zero when none), then any other tag; a
    # header without one is "dsh"
    agents: dict[str, dict[str, int]]
    redaction: str  # the dir's --redact-secrets mode (indexer.redact.state)
    redactions: dict[str, int]  # secrets the writer redacted, per kind

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _dir_bytes(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            try:
                total += (Path(root) / f).stat().st_size
            except OSError:
                continue
    return total


def _agent_counts(conn: sqlite3.Connection) -> dict[str, dict[str, int]]:
    """Sessions and events per source agent, from the stored header JSON; a session's
    ``next_seq`` is its event count (events are contiguous from seq 0)."""
    rows = conn.execute(
        "SELECT COALESCE(json_extract(header, '$.sourceAgent'), ?), COUNT(*),"
        " COALESCE(SUM(next_seq), 0) FROM sessions GROUP BY 1 ORDER BY 1",
        (DSH_AGENT,),
    )
    counts = {agent: {"sessions": 0, "events": 0} for agent in AGENTS}
    counts.update({agent: {"sessions": n, "events": e} for agent, n, e in rows})
    return counts


def store_stats(data_dir: Path) -> StoreStats:
    """What ``data_dir`` holds; a dir whose writer has not created the tables yet holds
    nothing."""
    conn = connect(sqlite_path(data_dir), readonly=True)
    try:
        if stored_version(conn) is None:
            return StoreStats(0, 0, 0, 0, 0, 0, {}, 0, 0, {}, "off", {})
        sessions, live, held, workspaces = conn.execute(
            "SELECT COUNT(*), COALESCE(SUM(live), 0), COUNT(held), COUNT(DISTINCT cwd)"
            " FROM sessions"
        ).fetchone()
        # Seqs are contiguous from 0: a session holds next_seq events.
        (events,) = conn.execute("SELECT COALESCE(SUM(next_seq), 0) FROM sessions").fetchone()
        agents = _agent_counts(conn)
        mode = recorded(conn)
        redactions = totals(conn)
        offsets = {
            f"{t}[{p}]": o
            for t, p, o in conn.execute(
                "SELECT topic, partition, next_offset FROM offsets ORDER BY topic, partition"
            )
        }
    finally:
        conn.close()
    index = TantivyIndex(index_path(data_dir), writable=False)
    try:
        documents = index.num_docs()
    finally:
        index.close()
    sqlite_bytes = sum(
        p.stat().st_size for p in data_dir.glob(sqlite_path(data_dir).name + "*") if p.is_file()
    )
    return StoreStats(
        sessions=sessions,
        live_sessions=live,
        held_sessions=held,
        events=events,
        documents=documents,
        workspaces=workspaces,
        offsets=offsets,
        sqlite_bytes=sqlite_bytes,
        index_bytes=_dir_bytes(index_path(data_dir)),
        agents=agents,
        redaction="off" if mode is None else mode[0],
        redactions=redactions,
    )
