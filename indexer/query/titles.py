"""Title observations (SPEC §4, §5.4): one result per unique id, first-occurrence order."""

from __future__ import annotations

import functools
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
        title = stored_title(row[1])
        if isinstance(title, str):
            out.append(TitleObservation(sid, error=TitleMalformedError(title)))
            continue
        out.append(TitleObservation(sid, header=header, title=title))
    return out


@functools.lru_cache(maxsize=1 << 13)
def stored_title(title_json: str) -> TitleSnapshot | str:
    """The snapshot of a ``sessions.title`` value, or the fold's error text of a title it
    could not copy. Like ``stored_header``, the snapshot of a given JSON text is
    remembered (it is frozen; nothing changes its lists): every search reads the titles
    of its hits' sessions again."""
    stored = orjson.loads(title_json)
    if "error" in stored:
        return str(stored["error"])
    return TitleSnapshot(
        title=stored["title"],
        message_seqs=list(stored["messageSeqs"]),
        source=dict(stored["source"]),
        event_seq=stored["eventSeq"],
        updated_at=stored["updatedAt"],
    )
