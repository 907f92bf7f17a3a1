"""Search values below both the store and the query layer (SPEC §6, §7).

The query (normalized once: ``Query.parse``), the filters a search accepts and the event
hit it returns: the Tantivy store takes and returns them, the query layer passes them
through, the worker builds and renders them. Plain frozen dataclasses; nothing here
touches storage.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NamedTuple

from indexer.errors import INVALID_QUERY, SessionQueryError
from indexer.surface.jstext import js_collapse

Surface = Literal["current", "shadowed", "log-only"]
Availability = Literal["live", "persisted"]
SURFACES: tuple[Surface, ...] = ("current", "shadowed", "log-only")


# ---- session filters (SPEC §6.1) -------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class IdFilter:
    values: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CwdFilter:
    values: tuple[str | None, ...]


@dataclass(frozen=True, slots=True)
class CreatedAtFilter:
    from_: float | None = None
    to: float | None = None


@dataclass(frozen=True, slots=True)
class ParentFilter:
    values: tuple[str | None, ...]


@dataclass(frozen=True, slots=True)
class AvailabilityFilter:
    values: tuple[Availability, ...]


SessionFilter = IdFilter | CwdFilter | CreatedAtFilter | ParentFilter | AvailabilityFilter


# ---- event filters (SPEC §6.2) ---------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class SeqFilter:
    from_: float | None = None
    to: float | None = None


@dataclass(frozen=True, slots=True)
class TimeFilter:
    from_: float | None = None
    to: float | None = None


@dataclass(frozen=True, slots=True)
class TypeFilter:
    values: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SurfaceFilter:
    values: tuple[Surface, ...]


@dataclass(frozen=True, slots=True)
class TextFilter:
    text: str


EventMetadataFilter = SeqFilter | TimeFilter | TypeFilter | SurfaceFilter
EventFilter = EventMetadataFilter | TextFilter


# ---- hits ------------------------------------------------------------------------------------
class EventHit(NamedTuple):
    """One matching event with its snippet (a tuple: a search builds one per hit)."""

    session_id: str
    seq: int
    type: str
    time: int
    surface: Surface
    snippet: str


@dataclass(frozen=True, slots=True)
class Query:
    """A normalized search query (``Query.parse``: SPEC §7.2)."""

    text: str

    @classmethod
    def parse(cls, query: object) -> Query:
        """Text, trimmed and collapsed, non-empty, no NUL; U+FDD0/1 -> U+FFFD (the
        snippet markers). Raises ``SessionQueryError`` (INVALID_QUERY)."""
        if isinstance(query, Query):
            return query
        if not isinstance(query, str):
            raise SessionQueryError("session-search query must be text", INVALID_QUERY)
        q = js_collapse(query)
        if not q:
            raise SessionQueryError(
                "session-search query must contain non-whitespace text", INVALID_QUERY
            )
        if "\0" in q:
            raise SessionQueryError("session-search query must not contain NUL", INVALID_QUERY)
        return cls(q.replace("\ufdd0", "\ufffd").replace("\ufdd1", "\ufffd"))
