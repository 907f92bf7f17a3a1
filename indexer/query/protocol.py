"""The query-service surface the tools call (SPEC §5-§8, sessionq flavour).

Every method is synchronous and reads one consistent snapshot of the store; ``reading``
scopes several reads of one caller. Errors are
``SessionQueryError`` with a code from SPEC §5.6; anything else is a bug and is
sanitized at the tool boundary.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Protocol

from indexer.model.search import EventMetadataFilter, Query, SessionFilter
from indexer.query.types import (
    EventRange,
    EventRecord,
    EventSearchPage,
    EventTrace,
    EventWindow,
    SessionRecord,
    SessionSearchPage,
    SessionTrace,
    TitleObservation,
)
from indexer.search_modes import SearchMode

RANGE_MAX = 500
"""The most events one ``read_range`` returns (a transcript page)."""


class QueryService(Protocol):
    def reading(self) -> AbstractContextManager[None]:
        """A scope whose reads all use one commit generation of the store: what a reader
        remembers of it (``indexer.query.generation``) is checked against the store once,
        at the scope's first read, instead of at every read, and every read sees the
        store as of that commit (one read transaction). A tool call's caller resolution
        and its own reads run inside one (``worker.calls.pipeline``, steps 7-8)."""
        ...

    def filter_sessions(self, filters: Sequence[SessionFilter]) -> list[SessionRecord]:
        """SPEC §5.2/§6.1: newest first (createdAt desc, id asc)."""
        ...

    def get_session(self, session_id: str) -> SessionRecord | None:
        """The stored record of one session, or None."""
        ...

    def recent_sessions(self, limit: int) -> list[SessionRecord]:
        """At most ``limit`` sessions of any workspace: main before subagent, live before
        closed, newest first (for an operator choosing a caller, never for a tool)."""
        ...

    def last_step_start_seq(self, session_id: str) -> int | None:
        """Seq of the last ``step/start`` event of a session (the current step boundary)."""
        ...

    def last_seq(self, session_id: str) -> int | None:
        """Newest applied seq of a session (read-your-writes waits on it)."""
        ...

    def search_sessions(
        self,
        query: str | Query,
        session_filters: Sequence[SessionFilter],
        event_filters: Sequence[EventMetadataFilter],
        *,
        limit: int,
        exclude_session_ids: frozenset[str] = frozenset(),
        mode: SearchMode = "phrase",
    ) -> SessionSearchPage:
        """SPEC §7: a text ``query`` is normalized here (``Query.parse``: INVALID_QUERY on
        blank/NUL); a ``Query`` was normalized already. ``mode``: how its text matches
        (``SearchMode``)."""
        ...

    def search_events(
        self,
        session_id: str,
        query: str | Query,
        filters: Sequence[EventMetadataFilter],
        *,
        limit: int,
        mode: SearchMode = "phrase",
    ) -> EventSearchPage:
        """SPEC §7 within one session; SESSION_NOT_FOUND for an unknown id."""
        ...

    def list_events(self, session_id: str) -> list[EventRecord]: ...

    def trace_session(self, session_id: str) -> SessionTrace: ...

    def trace_event(self, session_id: str, seq: int) -> EventTrace: ...

    def read_event(
        self, session_id: str, seq: int, *, before: int = 0, after: int = 0
    ) -> EventWindow: ...

    def read_range(self, session_id: str, first: int, count: int) -> EventRange:
        """At most ``count`` (≤ ``RANGE_MAX``) events from ``first`` on, redacted as
        every read is, not shape-checked; SESSION_NOT_FOUND for an unknown id."""
        ...

    def shown_text(self, text: str) -> str:
        """Text a reader derived from several events (stream deltas joined), redacted as
        the data dir's events are shown: a secret split across deltas is whole here."""
        ...

    def read_title_snapshots(self, session_ids: Sequence[str]) -> list[TitleObservation]: ...
