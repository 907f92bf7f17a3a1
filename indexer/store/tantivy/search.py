"""Searches over one index snapshot: the query's tokens, the clauses of its filters
(``queries``), the ranking (``ranking``) and the hits with their snippets
(``highlight``). Queries are literal: built from the analyzer's tokens, never parsed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import tantivy

from indexer.errors import IndexFailedError
from indexer.model.search import EventHit, EventMetadataFilter, IdFilter, SessionFilter
from indexer.store.tantivy.analyzer import analyze
from indexer.store.tantivy.highlight import event_hit
from indexer.store.tantivy.queries import Nothing, base_clauses
from indexer.store.tantivy.ranking import rank_events, rank_sessions

_NO_IDS: Final[frozenset[str]] = frozenset()


def _prepare(
    searcher: tantivy.Searcher | None, query: str, limit: int
) -> tuple[tantivy.Searcher | None, list[str]]:
    """The snapshot to search and the query's tokens; no searcher when nothing can
    match (no index yet, or a query without tokens). A zero limit would panic."""
    if limit < 1:
        raise ValueError("limit must be positive")
    tokens = analyze(query)
    return (searcher if tokens else None), tokens


def search_sessions(
    searcher: tantivy.Searcher | None,
    schema: tantivy.Schema,
    query: str,
    session_filters: Sequence[SessionFilter],
    event_filters: Sequence[EventMetadataFilter],
    *,
    live_ids: frozenset[str],
    exclude_session_ids: frozenset[str],
    limit: int,
    snippet_chars: int = 240,
) -> tuple[list[EventHit], bool]:
    """Grouped search: each session's best document, best sessions first.

    ``query`` is normalized already (SPEC §7.2). Ranking (difference 2): a session's
    best document maximizes (BM25 score, time, seq); sessions order by that
    document's score desc, time desc, session id ascending (code points), seq desc.
    Returns at most ``limit`` hits and whether another qualifying session exists:
    ``ranking.rank_sessions`` settles ``limit + 1`` sessions over one snapshot.
    """
    searcher, tokens = _prepare(searcher, query, limit)
    if searcher is None:
        return [], False
    try:
        base = base_clauses(
            schema, tokens, session_filters, event_filters, live_ids, exclude_session_ids
        )
    except Nothing:
        return [], False
    try:
        ordered = rank_sessions(searcher, schema, base, limit + 1)
        hits = [event_hit(searcher, c.addr, tokens, snippet_chars) for c in ordered[:limit]]
    except ValueError as exc:
        raise IndexFailedError(f"session search failed: {exc}") from exc
    return hits, len(ordered) > limit


def search_events(
    searcher: tantivy.Searcher | None,
    schema: tantivy.Schema,
    session_id: str,
    query: str,
    filters: Sequence[EventMetadataFilter],
    *,
    limit: int,
    snippet_chars: int = 240,
) -> tuple[list[EventHit], bool]:
    """One session's documents by score desc, time desc, seq desc
    (``ranking.rank_events``)."""
    searcher, tokens = _prepare(searcher, query, limit)
    if searcher is None:
        return [], False
    try:
        only = [IdFilter((session_id,))]
        clauses = base_clauses(schema, tokens, only, filters, _NO_IDS, _NO_IDS)
    except Nothing:
        return [], False
    try:
        cands = rank_events(searcher, clauses, limit + 1)
        hits = [event_hit(searcher, c.addr, tokens, snippet_chars) for c in cands[:limit]]
    except ValueError as exc:
        raise IndexFailedError(f"event search failed: {exc}") from exc
    return hits, len(cands) > limit
