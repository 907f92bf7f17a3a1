"""Exact event reads: records, event traces (SPEC §8.2) and event windows (§8.3).

A window's events pass the message-shape check of SPEC §1.3 (``indexer.model.shapes``,
the one copy of that rule; importers check every event they make against it too, so an
imported event is always readable here).
"""

from __future__ import annotations

from typing import Any, cast

import orjson

from indexer.errors import (
    EVENT_NOT_FOUND,
    INVALID_WINDOW,
    SESSION_NOT_FOUND,
    SessionQueryError,
)
from indexer.model import SessionEvent, SessionHeader
from indexer.model.event import load_json
from indexer.model.header import is_safe_int
from indexer.model.search import Surface
from indexer.model.shapes import EventShapeError, check_message_shape
from indexer.query.sessions import SessionRow
from indexer.query.types import EventRange, EventRecord, EventTrace, EventWindow
from indexer.store.blocks.payload import StoredGroup
from indexer.store.blocks.table import EventBlocks

__all__ = [
    "EventShapeError",
    "check_message_shape",
    "check_window_bound",
    "list_events",
    "read_event",
    "read_range",
    "session_header",
    "trace_event",
]


def session_header(session_id: str, row: SessionRow | None) -> tuple[SessionHeader, int, int]:
    """The header, next seq and integer key of a session's row (the caller read it:
    ``indexer.query.generation``); SESSION_NOT_FOUND when it has none."""
    if row is None:
        raise SessionQueryError(f'session "{session_id}" not found', SESSION_NOT_FOUND)
    return row.record.header, row.next_seq, row.key


def _not_found(session_id: str, seq: int) -> SessionQueryError:
    return SessionQueryError(f'session "{session_id}" has no event at seq {seq}', EVENT_NOT_FOUND)


def list_events(blocks: EventBlocks, session_id: str, row: SessionRow | None) -> list[EventRecord]:
    _, next_seq, key = session_header(session_id, row)
    return [
        EventRecord(session_id, e.seq, e.type, e.time, cast(Surface, e.surface))
        for e in blocks.read_range(key, 0, next_seq - 1)
    ]


def trace_event(
    blocks: EventBlocks, session_id: str, row: SessionRow | None, seq: int
) -> EventTrace:
    """One block decoded (the target's), then index lookups for the replacement chain,
    the replaced nodes and the derived events."""
    conn = blocks.conn
    header, _, key = session_header(session_id, row)
    target = blocks.read(key, seq) if is_safe_int(seq) else None
    if target is None:
        raise _not_found(session_id, seq)
    chain: list[int] = []
    nxt = target.replaced_by
    seen: set[int] = set()
    while nxt is not None and nxt not in seen:
        seen.add(nxt)
        chain.append(nxt)
        nxt = blocks.replaced_by(key, nxt)
    rep = conn.execute(
        "SELECT shadowed FROM replacements WHERE session_key = ? AND seq = ?", (key, seq)
    ).fetchone()
    obj = load_json(target.raw)
    sources = obj.get("sourceEventSeqs")
    derived = [
        r[0]
        for r in conn.execute(
            "SELECT seq FROM source_runs WHERE session_key = ? AND first <= ? AND last >= ?"
            " ORDER BY seq",
            (key, seq, seq),
        )
    ]
    return EventTrace(
        session=header,
        target=EventRecord(
            session_id, seq, target.type, target.time, cast(Surface, target.surface)
        ),
        replaced_by=target.replaced_by,
        replacement_chain=chain,
        replaced_event_seqs=list(orjson.loads(rep[0])) if rep else [],
        source_event_seqs=[int(s) for s in sources] if isinstance(sources, list) else [],
        derived_event_seqs=derived,
    )


def read_groups(
    blocks: EventBlocks, session_id: str, row: SessionRow | None, first: int, last: int
) -> list[StoredGroup]:
    """The session's stored events ``first``..``last`` (clipped to the log), undecoded,
    a chunk run's members as one group (``EventBlocks.read_groups``)."""
    _, next_seq, key = session_header(session_id, row)
    return blocks.read_groups(key, max(0, first), min(next_seq - 1, last))


def check_window_bound(name: str, value: Any, window_max: int) -> int:
    if not is_safe_int(value) or not 0 <= value <= window_max:
        raise SessionQueryError(
            f"{name} must be an integer between 0 and {window_max}", INVALID_WINDOW
        )
    return int(value)


def read_event(
    blocks: EventBlocks,
    session_id: str,
    row: SessionRow | None,
    seq: int,
    before: int,
    after: int,
    window_max: int,
) -> EventWindow:
    """The window's blocks only: the target's block, and its neighbours when the window
    crosses a block boundary."""
    b = check_window_bound("before", before, window_max)
    a = check_window_bound("after", after, window_max)
    header, next_seq, key = session_header(session_id, row)
    if not is_safe_int(seq) or not 0 <= seq < next_seq:
        raise _not_found(session_id, seq)
    start, end = max(0, seq - b), min(next_seq - 1, seq + a)
    events = [
        SessionEvent.from_obj(load_json(e.raw), e.raw) for e in blocks.read_range(key, start, end)
    ]
    for event in events:
        check_message_shape(event)
    target = next(e for e in events if e.seq == seq)
    return EventWindow(header, target, events, start, end)


def read_range(
    blocks: EventBlocks,
    session_id: str,
    row: SessionRow | None,
    first: int,
    count: int,
    range_max: int,
) -> EventRange:
    """At most ``count`` (≤ ``range_max``) events from ``first`` on, decoded; past the
    last event the list is empty. No message-shape check (SPEC §1.3): that is the tools'
    refusal of one event, and a reader shows an odd event as it can, beside the others."""
    c = check_window_bound("count", count, range_max)
    header, next_seq, key = session_header(session_id, row)
    if not is_safe_int(first) or first < 0:
        raise SessionQueryError("first must be a non-negative integer", INVALID_WINDOW)
    last = min(next_seq - 1, first + c - 1)
    return EventRange(
        header,
        [
            SessionEvent.from_obj(load_json(e.raw), e.raw)
            for e in (blocks.read_range(key, first, last) if first <= last else [])
        ],
        next_seq,
    )
