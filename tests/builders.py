"""Small builders for session logs used across tests (real event shapes of SPEC §1.3)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from indexer.model.records import EventsRecord, HeaderRecord

BASE_TIME = 1784851200000  # 2026-07-24T00:00:00.000Z


def header(
    sid: str,
    *,
    cwd: str | None = "/work",
    created_at: int = BASE_TIME,
    parent: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    h: dict[str, Any] = {"version": 0, "id": sid, "createdAt": created_at}
    if cwd is not None:
        h["cwd"] = cwd
    if parent is not None:
        h["parentSession"] = parent
    h["delegationDepth"] = 0
    h.update(extra)
    return h


def _surface(ev: dict[str, Any], op: Any, sources: list[int] | None) -> dict[str, Any]:
    if sources is not None:
        ev["sourceEventSeqs"] = sources
    if op == "append":
        ev["surfaceOp"] = "append"
    elif op is not None:
        ev["surfaceOp"] = {"op": "replace", "start": op[0], "end": op[1]}
    return ev


def user(
    seq: int, text: str, *, time: int | None = None, op: Any = "append",
    sources: list[int] | None = None, msg_id: str | None = None,
) -> dict[str, Any]:
    ev: dict[str, Any] = {
        "type": "user/message",
        "seq": seq,
        "time": BASE_TIME + seq * 1000 if time is None else time,
        "data": {
            "content": [{"type": "text", "text": text}],
            "source": {"kind": "user"},
            "role": "user",
            "id": msg_id or f"u-{seq}",
        },
    }
    return _surface(ev, op, sources)


def assistant(
    seq: int, text: str, *, time: int | None = None, op: Any = "append",
    sources: list[int] | None = None,
) -> dict[str, Any]:
    ev: dict[str, Any] = {
        "type": "assistant/message",
        "seq": seq,
        "time": BASE_TIME + seq * 1000 if time is None else time,
        "data": {
            "turn": 1,
            "step": 1,
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": text}],
                "source": {"kind": "model", "provider": "p", "model": "m"},
                "id": f"a-{seq}",
            },
        },
    }
    return _surface(ev, op, sources)


def plain(seq: int, typ: str, data: Any = None, *, time: int | None = None) -> dict[str, Any]:
    return {
        "type": typ,
        "seq": seq,
        "time": BASE_TIME + seq * 1000 if time is None else time,
        "data": {} if data is None else data,
    }


def chunk(seq: int, text: str = "x", *, time: int | None = None) -> dict[str, Any]:
    return plain(
        seq,
        "assistant/chunk",
        {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": text}},
        time=time,
    )


def title(seq: int, text: str, *, time: int | None = None) -> dict[str, Any]:
    return plain(
        seq,
        "session/title",
        {"title": text, "messageSeqs": [0], "source": {"kind": "fallback"}},
        time=time,
    )


def header_record(h: Mapping[str, Any]) -> HeaderRecord:
    """The event-stream record that stores a session's header."""
    return HeaderRecord(v=1, kind="header", header=dict(h))


def events_record(sid: str, events: Sequence[Mapping[str, Any]]) -> EventsRecord:
    """The event-stream record that appends events to session ``sid``."""
    return EventsRecord(v=1, kind="events", session_id=sid, events=[dict(e) for e in events])


def first_step(text: str) -> list[dict[str, Any]]:
    """A session's opening: turn 1 starts, the user says ``text``, its first step starts."""
    return [
        plain(0, "turn/start", {"turn": 1}),
        user(1, text),
        plain(2, "step/start", {"turn": 1, "step": 1}),
    ]
