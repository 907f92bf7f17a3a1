"""Values the query layer returns and the filters it accepts (SPEC §5-§8).

Plain frozen dataclasses: the worker renders them; nothing here touches storage.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from indexer.model import SessionEvent, SessionHeader

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


# ---- records and hits ------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class SessionRecord:
    """A stored session: ``persisted`` is always true in sessionq (deliberate difference 1)."""

    header: SessionHeader
    live: bool
    persisted: bool = True


@dataclass(frozen=True, slots=True)
class EventRecord:
    session_id: str
    seq: int
    type: str
    time: int
    surface: Surface


@dataclass(frozen=True, slots=True)
class EventHit:
    session_id: str
    seq: int
    type: str
    time: int
    surface: Surface
    snippet: str


@dataclass(frozen=True, slots=True)
class SessionHit:
    record: SessionRecord
    best: EventHit


@dataclass(frozen=True, slots=True)
class SessionSearchPage:
    """Hits in rank order; ``more`` is true when hits beyond ``limit`` exist."""

    items: list[SessionHit]
    more: bool


@dataclass(frozen=True, slots=True)
class EventSearchPage:
    session: SessionHeader
    items: list[EventHit]
    more: bool


# ---- lineage, event trace, event window (SPEC §8) ----------------------------------------------
@dataclass(frozen=True, slots=True)
class LineageNode:
    session: SessionRecord
    descendants: list[LineageNode] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class SessionTrace:
    target: SessionRecord
    ancestors: list[SessionRecord]  # nearest first
    descendants: list[LineageNode]
    complete: bool
    root: SessionRecord | None = None  # set when complete
    unresolved_parent_id: str | None = None  # set when not complete


@dataclass(frozen=True, slots=True)
class EventTrace:
    session: SessionHeader
    target: EventRecord
    replaced_by: int | None
    replacement_chain: list[int]
    replaced_event_seqs: list[int]
    source_event_seqs: list[int]
    derived_event_seqs: list[int]


@dataclass(frozen=True, slots=True)
class EventWindow:
    session: SessionHeader
    target: SessionEvent
    events: list[SessionEvent]  # start_seq..end_seq inclusive, target included
    start_seq: int
    end_seq: int


# ---- titles (SPEC §4, §5.4) -------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class TitleSnapshot:
    title: str
    message_seqs: list[int]
    source: dict[str, Any]
    event_seq: int
    updated_at: int


@dataclass(frozen=True, slots=True)
class TitleObservation:
    """One per unique requested id: fulfilled (``error is None``) or rejected."""

    session_id: str
    header: SessionHeader | None = None
    title: TitleSnapshot | None = None
    error: BaseException | None = None
