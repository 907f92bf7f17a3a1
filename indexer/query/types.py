"""Values the query layer returns (SPEC §5-§8).

Plain frozen dataclasses: the worker renders them; nothing here touches storage. The
filters it accepts and the event hit live one layer down, in ``indexer.model.search``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from indexer.model import SessionEvent, SessionHeader
from indexer.model.search import EventHit, Surface
from indexer.surface.titles import TitleSnapshot


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


class SessionHit(NamedTuple):
    """A session's best hit (a tuple: a search builds one per session found)."""

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


@dataclass(frozen=True, slots=True)
class EventRange:
    """Consecutive events of a session as readers show them (a console's page of a
    transcript); ``next_seq`` is one past the session's last event."""

    session: SessionHeader
    events: list[SessionEvent]
    next_seq: int


# ---- titles (SPEC §4, §5.4) -------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class TitleObservation:
    """One per unique requested id: fulfilled (``error is None``) or rejected."""

    session_id: str
    header: SessionHeader | None = None
    title: TitleSnapshot | None = None
    error: BaseException | None = None
