"""Title observations (SPEC §4, §5.4): one result per unique id, first-occurrence order."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence

from indexer.errors import SESSION_NOT_FOUND, SessionQueryError
from indexer.model.event import load_json
from indexer.query.sessions import SessionRow
from indexer.query.types import TitleObservation
from indexer.surface.titles import TitleMalformedError, TitleSnapshot


def observations(
    rows: Mapping[str, SessionRow], session_ids: Sequence[str]
) -> list[TitleObservation]:
    """The observation of each of ``session_ids`` (unique) from its row, if it has one."""
    out: list[TitleObservation] = []
    for sid in session_ids:
        row = rows.get(sid)
        if row is None:
            out.append(
                TitleObservation(
                    sid, error=SessionQueryError(f'session "{sid}" not found', SESSION_NOT_FOUND)
                )
            )
            continue
        header = row.record.header
        if row.title is None:
            out.append(TitleObservation(sid, header=header))
            continue
        title = stored_title(row.title)
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
    stored = load_json(title_json)
    if "error" in stored:
        return str(stored["error"])
    return TitleSnapshot(
        title=stored["title"],
        message_seqs=list(stored["messageSeqs"]),
        source=dict(stored["source"]),
        event_seq=stored["eventSeq"],
        updated_at=stored["updatedAt"],
    )
