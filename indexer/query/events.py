"""Exact event reads: records, event traces (SPEC §8.2) and event windows (§8.3)."""

from __future__ import annotations

import sqlite3
from typing import Any, cast

import orjson

from indexer.errors import (
    EVENT_NOT_FOUND,
    INVALID_WINDOW,
    SESSION_NOT_FOUND,
    SessionqError,
    SessionQueryError,
)
from indexer.model import SessionEvent, SessionHeader
from indexer.model.header import is_safe_int
from indexer.model.search import Surface
from indexer.query.types import EventRecord, EventTrace, EventWindow


class EventShapeError(SessionqError):
    """A stored message event whose shape a reader cannot trust (SPEC §8.3 step 5).

    Not a ``SessionQueryError`` on purpose: the tool boundary shows it as the generic
    SESSION_QUERY_TOOL_FAILED.
    """


def session_header(conn: sqlite3.Connection, session_id: str) -> tuple[SessionHeader, int]:
    row = conn.execute(
        "SELECT header, next_seq FROM sessions WHERE id = ?", (session_id,)
    ).fetchone()
    if row is None:
        raise SessionQueryError(f'session "{session_id}" not found', SESSION_NOT_FOUND)
    return SessionHeader.model_validate_json(row[0]), int(row[1])


def _not_found(session_id: str, seq: int) -> SessionQueryError:
    return SessionQueryError(f'session "{session_id}" has no event at seq {seq}', EVENT_NOT_FOUND)


def list_events(conn: sqlite3.Connection, session_id: str) -> list[EventRecord]:
    session_header(conn, session_id)
    return [
        EventRecord(session_id, seq, typ, time, cast(Surface, surface))
        for seq, typ, time, surface in conn.execute(
            "SELECT seq, type, time, surface FROM events WHERE session_id = ? ORDER BY seq",
            (session_id,),
        )
    ]


def trace_event(conn: sqlite3.Connection, session_id: str, seq: int) -> EventTrace:
    header, _ = session_header(conn, session_id)
    row = conn.execute(
        "SELECT type, time, surface, replaced_by, raw FROM events WHERE session_id = ? AND seq = ?",
        (session_id, seq),
    ).fetchone()
    if row is None:
        raise _not_found(session_id, seq)
    typ, time, surface, replaced_by, raw = row
    chain: list[int] = []
    nxt = replaced_by
    seen: set[int] = set()
    while nxt is not None and nxt not in seen:
        seen.add(nxt)
        chain.append(nxt)
        r = conn.execute(
            "SELECT replaced_by FROM events WHERE session_id = ? AND seq = ?", (session_id, nxt)
        ).fetchone()
        nxt = None if r is None else r[0]
    rep = conn.execute(
        "SELECT shadowed FROM replacements WHERE session_id = ? AND seq = ?", (session_id, seq)
    ).fetchone()
    obj = orjson.loads(raw)
    sources = obj.get("sourceEventSeqs")
    derived = [
        r[0]
        for r in conn.execute(
            "SELECT seq FROM sources WHERE session_id = ? AND source_seq = ? ORDER BY seq",
            (session_id, seq),
        )
    ]
    return EventTrace(
        session=header,
        target=EventRecord(session_id, seq, typ, time, cast(Surface, surface)),
        replaced_by=replaced_by,
        replacement_chain=chain,
        replaced_event_seqs=list(orjson.loads(rep[0])) if rep else [],
        source_event_seqs=[int(s) for s in sources] if isinstance(sources, list) else [],
        derived_event_seqs=derived,
    )


def check_window_bound(name: str, value: Any, window_max: int) -> int:
    if not is_safe_int(value) or not 0 <= value <= window_max:
        raise SessionQueryError(
            f"{name} must be an integer between 0 and {window_max}", INVALID_WINDOW
        )
    return int(value)


def read_event(
    conn: sqlite3.Connection, session_id: str, seq: int, before: int, after: int, window_max: int
) -> EventWindow:
    b = check_window_bound("before", before, window_max)
    a = check_window_bound("after", after, window_max)
    header, next_seq = session_header(conn, session_id)
    if not is_safe_int(seq) or not 0 <= seq < next_seq:
        raise _not_found(session_id, seq)
    start, end = max(0, seq - b), min(next_seq - 1, seq + a)
    events = [
        SessionEvent.from_obj(orjson.loads(raw), raw)
        for (raw,) in conn.execute(
            "SELECT raw FROM events WHERE session_id = ? AND seq BETWEEN ? AND ? ORDER BY seq",
            (session_id, start, end),
        )
    ]
    for event in events:
        check_message_shape(event)
    target = next(e for e in events if e.seq == seq)
    return EventWindow(header, target, events, start, end)


def _nonempty_str(v: Any) -> bool:
    return isinstance(v, str) and v != ""


def check_message_shape(event: SessionEvent) -> None:
    """SPEC §8.3 step 5, reading the older message shapes of deliberate difference 9.

    Current-shape events must be fully identified; an older-shape event (content directly
    in ``data``) only needs its content to be a list.
    """
    where = f"session event at seq {event.seq}"
    data = event.data
    if event.type not in ("user/message", "assistant/message", "tool/result"):
        return
    if not isinstance(data, dict):
        raise EventShapeError(f"{where} lacks an identified message")
    if event.type == "user/message":
        msg: Any = data
        if "id" not in msg and "role" not in msg:
            if not isinstance(msg.get("content"), list):
                raise EventShapeError(f"{where} message content must be an array")
            return
    else:
        if "message" not in data:
            if not isinstance(data.get("content"), list):
                raise EventShapeError(f"{where} lacks an identified message")
            return
        msg = data["message"]
    if not isinstance(msg, dict) or not _nonempty_str(msg.get("id")):
        raise EventShapeError(f"{where} lacks an identified message")
    role = "assistant" if event.type == "assistant/message" else "user"
    if msg.get("role") != role:
        raise EventShapeError(f'{where} message role must be "{role}"')
    source = msg.get("source")
    if not isinstance(source, dict) or not _nonempty_str(source.get("kind")):
        raise EventShapeError(f"{where} message source kind must be a non-empty string")
    content = msg.get("content")
    if not isinstance(content, list):
        raise EventShapeError(f"{where} message content must be an array")
    if event.type == "assistant/message":
        if source.get("kind") != "model" or not (
            _nonempty_str(source.get("provider")) and _nonempty_str(source.get("model"))
        ):
            raise EventShapeError(f"{where} assistant message must have a model source")
    elif event.type == "tool/result":
        call_id = source.get("callId")
        if source.get("kind") != "tool" or not _nonempty_str(call_id):
            raise EventShapeError(f"{where} tool result must have a tool source")
        if (
            len(content) != 1
            or not isinstance(content[0], dict)
            or content[0].get("type") != "tool-result"
            or not isinstance(content[0].get("content"), list)
            or content[0].get("toolCallId") != call_id
        ):
            raise EventShapeError(f"{where} message must contain one tool-result block")
