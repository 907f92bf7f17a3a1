"""Title observations (SPEC §4, §5.4): one result per unique id, first-occurrence order."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

import orjson

from indexer.errors import SESSION_NOT_FOUND, SessionQueryError
from indexer.query.sessions import stored_header
from indexer.query.types import TitleObservation
from indexer.surface.titles import TitleMalformedError, TitleSnapshot


def read_title_snapshots(
    conn: sqlite3.Connection, session_ids: Sequence[str]
) -> list[TitleObservation]:
    unique = list(dict.fromkeys(session_ids))
    rows: dict[str, tuple[str, str | None]] = {}
    for i in range(0, len(unique), 500):
        chunk = unique[i : i + 500]
        marks = ",".join("?" * len(chunk))
        for sid, header_json, title in conn.execute(
            f"SELECT id, header, title FROM sessions WHERE id IN ({marks})", chunk
        ):
            rows[sid] = (header_json, title)
    out: list[TitleObservation] = []
    for sid in unique:
        row = rows.get(sid)
        if row is None:
            out.append(
                TitleObservation(
                    sid, error=SessionQueryError(f'session "{sid}" not found', SESSION_NOT_FOUND)
                )
            )
            continue
        header = stored_header(row[0])
        if row[1] is None:
            out.append(TitleObservation(sid, header=header))
            continue
        stored = orjson.loads(row[1])
        if "error" in stored:
            out.append(TitleObservation(sid, error=TitleMalformedError(stored["error"])))
            continue
        out.append(
            TitleObservation(
                sid,
                header=header,
                title=TitleSnapshot(
                    title=stored["title"],
                    message_seqs=list(stored["messageSeqs"]),
                    source=dict(stored["source"]),
                    event_seq=stored["eventSeq"],
                    updated_at=stored["updatedAt"],
                ),
            )
        )
    return out
