"""Full-text search over the index, joined with session records (SPEC §7, sessionq flavour).

The query text is normalized here and only here (§7.2: ``Query.parse``) and handed to
the index as literal text, matched as its ``SearchMode`` says. A caller that needs the
refusal earlier (the tools check their arguments before they resolve the caller) parses
it first and passes the ``Query`` on, so the rule runs once per call.
"""

from __future__ import annotations

from collections.abc import Sequence

from indexer.errors import SESSION_NOT_FOUND, ErrorCode, SessionQueryError
from indexer.model.search import (
    AvailabilityFilter,
    EventMetadataFilter,
    Query,
    SessionFilter,
)
from indexer.query.filters import check_filters
from indexer.query.generation import Generation
from indexer.query.sessions import live_ids
from indexer.query.types import EventSearchPage, SessionHit, SessionSearchPage
from indexer.search_modes import SearchMode
from indexer.store.tantivy import TantivyIndex


def search_sessions(
    rows: Generation,
    index: TantivyIndex,
    query: str | Query,
    session_filters: Sequence[SessionFilter],
    event_filters: Sequence[EventMetadataFilter],
    *,
    limit: int,
    exclude_session_ids: frozenset[str],
    snippet_chars: int,
    mode: SearchMode = "phrase",
) -> SessionSearchPage:
    check_filters(session_filters, event_filters)
    q = Query.parse(query).text
    needs_live = any(
        isinstance(f, AvailabilityFilter) and set(f.values) == {"live"} for f in session_filters
    )
    hits, more = index.search_sessions(
        q,
        session_filters,
        event_filters,
        live_ids=live_ids(rows.conn) if needs_live else frozenset(),
        exclude_session_ids=exclude_session_ids,
        limit=limit,
        snippet_chars=snippet_chars,
        mode=mode,
    )
    found = rows.rows(h.session_id for h in hits)
    items = [
        SessionHit(row.record, h)
        for h in hits
        if (row := found.get(h.session_id)) is not None and committed(h.seq, row.next_seq)
    ]
    return SessionSearchPage(items, more)


def committed(seq: int, next_seq: int) -> bool:
    """Whether a hit's event is in the tables yet. The index commits before the tables
    (``indexer.store.records.checkpoint``), so for a moment a search can see a document
    whose session row or event row a read cannot find; such a hit is left out until the
    tables commit, so every hit shown can be read at once."""
    return seq < next_seq


def search_events(
    rows: Generation,
    index: TantivyIndex,
    session_id: str,
    query: str | Query,
    filters: Sequence[EventMetadataFilter],
    *,
    limit: int,
    snippet_chars: int,
    mode: SearchMode = "phrase",
) -> EventSearchPage:
    if not isinstance(session_id, str):
        raise SessionQueryError(
            "session-search session id must be text", ErrorCode.INVALID_FILTER
        )
    check_filters((), filters)
    q = Query.parse(query).text
    row = rows.row(session_id)
    if row is None:
        raise SessionQueryError(f'session "{session_id}" not found', SESSION_NOT_FOUND)
    hits, more = index.search_events(
        session_id, q, filters, limit=limit, snippet_chars=snippet_chars, mode=mode
    )
    shown = [h for h in hits if committed(h.seq, row.next_seq)]
    return EventSearchPage(row.record.header, shown, more)
