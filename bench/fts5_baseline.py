"""The upstream provider's approach, reduced to what the benchmark compares: SQLite FTS5.

* Ingest: read each log with ``read_log`` (same validation as sessionq), classify the
  surfaces (the fold, SPEC §2.2), extract each event's text (SPEC §3), insert one FTS5
  row per non-empty text plus one ``sessions`` row, and commit once at the end.
* Search: the normalized query as ONE quoted FTS5 phrase (``"`` + query with ``"``
  doubled + ``"``), ``bm25(docs)`` ranking, each session's best row picked with
  ``ROW_NUMBER() OVER (PARTITION BY session_id ORDER BY rank)``, optional cwd / type /
  surface / time predicates, ``LIMIT 101``; then ``highlight()`` for the returned rows
  and the SPEC §7.8 snippet built from the highlighted text (as upstream does).

It stores far less than sessionq (no raw events, sources, replacements, titles), so its
ingest is a lower bound of the upstream provider's cost.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from indexer.logs.reader import LogRejectedError, read_log
from indexer.model.search import Query
from indexer.store.tantivy.snippet import MATCH_END, MATCH_START, make_snippet
from indexer.surface.fold import classify
from indexer.surface.text import extract_text

SCHEMA: Final = (
    "CREATE VIRTUAL TABLE docs USING fts5("
    "text, session_id UNINDEXED, seq UNINDEXED, type UNINDEXED, time UNINDEXED, "
    "surface UNINDEXED, tokenize='unicode61')",
    "CREATE TABLE sessions(id TEXT PRIMARY KEY, cwd TEXT, parent TEXT, created_at INTEGER)",
    "CREATE INDEX sessions_cwd ON sessions(cwd)",
)
LIMIT: Final = 101

_SANITIZE: Final = str.maketrans({"\u0000": "\ufffd", MATCH_START: "\ufffd", MATCH_END: "\ufffd"})


@dataclass(slots=True)
class IngestCounts:
    files: int = 0
    sessions: int = 0
    events: int = 0
    documents: int = 0
    rejected: int = 0


def connect(db_path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(db_path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    return conn


def ingest(db_path: Path, files: Sequence[Path]) -> IngestCounts:
    """Create a fresh database at ``db_path`` and index every readable log."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db_path}{suffix}").unlink(missing_ok=True)
    conn = connect(db_path)
    for stmt in SCHEMA:
        conn.execute(stmt)
    counts = IngestCounts()
    insert_doc = "INSERT INTO docs(text, session_id, seq, type, time, surface) VALUES (?,?,?,?,?,?)"
    insert_session = "INSERT OR IGNORE INTO sessions(id, cwd, parent, created_at) VALUES (?,?,?,?)"
    conn.execute("BEGIN")
    for path in files:
        counts.files += 1
        try:
            log = read_log(path)
        except (LogRejectedError, OSError):
            counts.rejected += 1
            continue
        header = log.header
        sid = header.id
        rows: list[tuple[Any, ...]] = []
        for event, surface in zip(log.events, classify(log.events), strict=True):
            text = extract_text(event.type, event.data)
            if text:
                rows.append(
                    (text.translate(_SANITIZE), sid, event.seq, event.type, event.time, surface)
                )
        conn.executemany(insert_doc, rows)
        conn.execute(insert_session, (sid, header.cwd, header.parent_session, header.created_at))
        counts.sessions += 1
        counts.events += len(log.events)
        counts.documents += len(rows)
    conn.execute("COMMIT")
    conn.close()
    return counts


@dataclass(frozen=True, slots=True)
class Fts5Hit:
    session_id: str
    seq: int
    type: str
    time: int
    surface: str
    snippet: str
    cwd: str | None
    parent: str | None
    created_at: int


def phrase(query: str) -> str:
    """SPEC §7.3: one FTS5 phrase string, FTS syntax inert."""
    return '"' + query.replace('"', '""') + '"'


class Fts5Search:
    """Session search over a database written by :func:`ingest`."""

    def __init__(self, db_path: Path, *, snippet_chars: int = 240) -> None:
        self.conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, check_same_thread=False)
        self.snippet_chars = snippet_chars

    def close(self) -> None:
        self.conn.close()

    def search_sessions(
        self,
        query: str,
        *,
        cwd: str | None = None,
        types: Sequence[str] | None = None,
        surfaces: Sequence[str] | None = None,
        time_from: int | None = None,
        time_to: int | None = None,
        limit: int = LIMIT,
    ) -> list[Fts5Hit]:
        match = phrase(Query.parse(query).text)
        where = ["docs MATCH ?"]
        params: list[Any] = [match]
        if types is not None:
            where.append(f"type IN ({','.join('?' * len(types))})")
            params += list(types)
        if surfaces is not None:
            where.append(f"surface IN ({','.join('?' * len(surfaces))})")
            params += list(surfaces)
        if time_from is not None:
            where.append("CAST(time AS INTEGER) >= ?")
            params.append(time_from)
        if time_to is not None:
            where.append("CAST(time AS INTEGER) <= ?")
            params.append(time_to)
        if cwd is not None:
            where.append("session_id IN (SELECT id FROM sessions WHERE cwd = ?)")
            params.append(cwd)
        sql = f"""
            SELECT b.rid, b.session_id, b.seq, b.type, b.time, b.surface,
                   s.cwd, s.parent, s.created_at
            FROM (
                SELECT rid, session_id, seq, type, time, surface, score,
                       ROW_NUMBER() OVER (
                           PARTITION BY session_id ORDER BY score, time DESC, seq DESC
                       ) AS rn
                FROM (
                    SELECT rowid AS rid, session_id, seq, type, time, surface,
                           bm25(docs) AS score
                    FROM docs WHERE {" AND ".join(where)}
                )
            ) AS b JOIN sessions AS s ON s.id = b.session_id
            WHERE b.rn = 1
            ORDER BY b.score, b.time DESC, b.session_id, b.seq DESC
            LIMIT ?
        """
        params.append(limit)
        rows = self.conn.execute(sql, params).fetchall()
        if not rows:
            return []
        rids = [r[0] for r in rows]
        marked = dict(
            self.conn.execute(
                "SELECT rowid, highlight(docs, 0, ?, ?) FROM docs WHERE docs MATCH ? "
                f"AND rowid IN ({','.join('?' * len(rids))})",
                [MATCH_START, MATCH_END, match, *rids],
            ).fetchall()
        )
        return [
            Fts5Hit(
                session_id=r[1],
                seq=int(r[2]),
                type=r[3],
                time=int(r[4]),
                surface=r[5],
                snippet=make_snippet(marked.get(r[0], ""), self.snippet_chars),
                cwd=r[6],
                parent=r[7],
                created_at=int(r[8]),
            )
            for r in rows
        ]

    def count(self, query: str) -> int:
        """Documents matching the phrase (for the report)."""
        row = self.conn.execute(
            "SELECT count(*) FROM docs WHERE docs MATCH ?", [phrase(Query.parse(query).text)]
        ).fetchone()
        return int(row[0])
