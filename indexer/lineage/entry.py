"""One record of the compacted ``sessionq.lineage`` topic (DESIGN.md "Partitioned nodes").

Key: the session id (UTF-8). Value: ``{"v":1,"session_id":"…","parent":"…"|null,
"workspace":"<routing key>","created_at":<ms>}``; a deleted session is a tombstone (no
value), so compaction removes what an erasure removed. The owner of the session's
partition writes it when it applies the session's header or delete record.
"""

from __future__ import annotations

from dataclasses import dataclass

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError

from indexer.model import SessionHeader

SESSION_KEY_PREFIX = "session:"  # the workspace key of a session without a cwd


class _Value(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    v: int
    session_id: str
    parent: str | None = None
    workspace: str
    created_at: int


@dataclass(frozen=True, slots=True)
class LineageEntry:
    """What every node knows of a session of any partition."""

    session_id: str
    parent: str | None
    workspace: str  # the routing key: the cwd, or ``session:<id>``
    created_at: int

    @classmethod
    def of(cls, header: SessionHeader) -> LineageEntry:
        return cls(header.id, header.parent_session, header.routing_key, header.created_at)

    def header(self) -> SessionHeader:
        """A stand-in header for a session of another partition: enough to sort it and
        to see it is outside the caller's workspace (it is never rendered)."""
        own_key = self.workspace == f"{SESSION_KEY_PREFIX}{self.session_id}"
        return SessionHeader(
            id=self.session_id,
            createdAt=self.created_at,
            cwd=None if own_key else self.workspace,
            parentSession=self.parent,
        )


def encode_entry(entry: LineageEntry) -> bytes:
    return orjson.dumps(
        {
            "v": 1,
            "session_id": entry.session_id,
            "parent": entry.parent,
            "workspace": entry.workspace,
            "created_at": entry.created_at,
        }
    )


def decode_entry(key: bytes | None, value: bytes | None) -> LineageEntry | str | None:
    """An entry; the session id of a tombstone; None for a record that is neither (it
    is skipped: one bad record never stops the table)."""
    if key is None:
        return None
    try:
        session_id = key.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if value is None:
        return session_id
    try:
        raw = _Value.model_validate_json(value)
    except ValidationError:
        return None
    if raw.v != 1 or raw.session_id != session_id:
        return None
    return LineageEntry(raw.session_id, raw.parent, raw.workspace, raw.created_at)
