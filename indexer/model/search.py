"""Search values below both the store and the query layer (SPEC §6, §7).

The filters a search accepts and the event hit it returns: the Tantivy store takes and
returns them, the query layer passes them through, the worker builds and renders them.
Plain frozen dataclasses; nothing here touches storage.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

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
@dataclass(frozen=True, slots=True)
class EventHit:
    session_id: str
    seq: int
    type: str
    time: int
    surface: Surface
    snippet: str
