"""Event-stream record envelopes (DESIGN.md, topic ``sessionq.events``).

Records are validated with pydantic; the events inside an ``events`` record stay plain
JSON objects (in their original key order) until the envelope checks of
``indexer.logs.envelope`` turn them into ``SessionEvent`` values.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from indexer.errors import INVALID_RECORD, RecordRejectedError
from indexer.model.event import dump_json, load_json


class _Envelope(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    v: Literal[1]


class HeaderRecord(_Envelope):
    """Declares a session: its immutable header (SPEC §1.1)."""

    kind: Literal["header"]
    header: dict[str, Any]


class EventsRecord(_Envelope):
    """A contiguous batch of one session's events."""

    kind: Literal["events"]
    session_id: str
    events: list[dict[str, Any]] = Field(min_length=1)


class LifecycleRecord(_Envelope):
    """The host has the session open (``live``) or closed it."""

    kind: Literal["lifecycle"]
    session_id: str
    live: bool


class DeleteRecord(_Envelope):
    """Remove every trace of a session."""

    kind: Literal["delete"]
    session_id: str


EventStreamRecord = Annotated[
    HeaderRecord | EventsRecord | LifecycleRecord | DeleteRecord, Field(discriminator="kind")
]
_ADAPTER: TypeAdapter[EventStreamRecord] = TypeAdapter(EventStreamRecord)


def record_session_id(record: EventStreamRecord) -> str:
    """The session a record is about (a header's id may be missing: it is then "")."""
    if isinstance(record, HeaderRecord):
        sid = record.header.get("id")
        return sid if isinstance(sid, str) else ""
    return record.session_id


def describe_validation_error(exc: ValidationError) -> str:
    """The first problem of an envelope, naming where it is: ``at events.0: ...``."""
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "record"
    return f"invalid record envelope at {where}: {first['msg']}"


MAX_NESTING = 128  # JSON nesting levels a record (or request) may have


def nesting_exceeds(obj: Any, limit: int = MAX_NESTING) -> bool:
    """Whether ``obj`` (parsed JSON) nests arrays/objects deeper than ``limit`` levels;
    iterative, so a hostile depth cannot exhaust the stack here (pydantic and the
    store's recursive walks would: a ``RecursionError`` near 1,000 levels)."""
    stack: list[tuple[Any, int]] = [(obj, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def decode_record(value: bytes | None) -> EventStreamRecord:
    """Parse one record value as JavaScript reads it (``load_json``: a lone surrogate
    escape is a string's code unit, not an error); a clear ``RecordRejectedError``
    names what is wrong."""
    if value is None:
        raise RecordRejectedError("record has no value")
    try:
        obj = load_json(value)
    except orjson.JSONDecodeError as exc:
        raise RecordRejectedError(f"record value is not JSON: {exc}") from exc
    if nesting_exceeds(obj):
        raise RecordRejectedError(
            f"record value is nested deeper than {MAX_NESTING} levels", INVALID_RECORD
        )
    try:
        return _ADAPTER.validate_python(obj)
    except ValidationError as exc:
        raise RecordRejectedError(describe_validation_error(exc)) from exc


def encode_record(record: EventStreamRecord) -> bytes:
    """Compact JSON of a record, key order as declared (``dump_json``: a lone surrogate
    is written as its escape, as JavaScript writes it). Its members are JSON values
    already, so they are dumped as they are (pydantic's JSON mode refuses a lone
    surrogate)."""
    return dump_json(record.model_dump())
