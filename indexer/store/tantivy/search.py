"""Searches over one index snapshot: the query's text queries by mode, the clauses of its
filters (``queries``), the ranking (``ranking``) and the hits with their snippets
(``highlight``). Queries are literal: built from the analyzer's tokens, never parsed.

A mode gives the text queries to try in order (``_text_queries``): ``phrase`` one, the
literal phrase; ``words`` the query's words all together, then any of them
(``words.WordsQuery``). The first that finds anything is the answer, so a fallback never
mixes into a ranking that had matches of every word.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final, TypeVar

import tantivy

from indexer.errors import IndexFailedError
from indexer.model.search import (
    EventHit,
    EventMetadataFilter,
    IdFilter,
    SessionFilter,
)
from indexer.search_modes import SearchMode
from indexer.store.tantivy.analyzer import analyze
from indexer.store.tantivy.highlight import event_hit
from indexer.store.tantivy.queries import Clause, Nothing, base_clauses, text_query
from indexer.store.tantivy.ranking import rank_events, rank_sessions
from indexer.store.tantivy.words import WordsQuery

_NO_IDS: Final[frozenset[str]] = frozenset()
T = TypeVar("T")


def _text_queries(
    schema: tantivy.Schema, query: str, tokens: list[str], mode: SearchMode
) -> list[tantivy.Query]:
    phrase = text_query(schema, tokens)
    if mode == "phrase":
        return [phrase]
    words = WordsQuery(schema, query, tokens, phrase)
    return [q for q in (words.all_words, words.any_word) if q is not None] or [phrase]


def _first_found(
    schema: tantivy.Schema,
    query: str,
    tokens: list[str],
    mode: SearchMode,
    clauses: Callable[[tantivy.Query], list[Clause]],
    rank: Callable[[list[Clause]], list[T]],
) -> list[T]:
    """The ranking of the first of the mode's text queries that finds anything."""
    found: list[T] = []
    for text in _text_queries(schema, query, tokens, mode):
        found = rank(clauses(text))
        if found:
            break
    return found


def _tokens(query: str, limit: int) -> list[str]:
    """The query's tokens (none: nothing can match). A zero limit would panic."""
    if limit < 1:
        raise ValueError("limit must be positive")
    return analyze(query)


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
    mode: SearchMode = "phrase",
) -> tuple[list[EventHit], bool]:
    """Grouped search: each session's best document, best sessions first.

    ``query`` is normalized already (SPEC §7.2). Ranking (difference 2): a session's
    best document maximizes (BM25 score, time, seq); sessions order by that
    document's score desc, time desc, session id ascending (code points), seq desc.
    Returns at most ``limit`` hits and whether another qualifying session exists:
    ``ranking.rank_sessions`` settles ``limit + 1`` sessions over one snapshot.
    """
    tokens = _tokens(query, limit)
    if searcher is None or not tokens:
        return [], False

    def clauses(text: tantivy.Query) -> list[Clause]:
        return base_clauses(
            schema, text, session_filters, event_filters, live_ids, exclude_session_ids
        )

    try:
        ordered = _first_found(
            schema,
            query,
            tokens,
            mode,
            clauses,
            lambda c: rank_sessions(searcher, schema, c, limit + 1),
        )
        hits = [event_hit(searcher, c.addr, tokens, snippet_chars, mode) for c in ordered[:limit]]
    except Nothing:
        return [], False
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
    mode: SearchMode = "phrase",
) -> tuple[list[EventHit], bool]:
    """One session's documents by score desc, time desc, seq desc
    (``ranking.rank_events``)."""
    tokens = _tokens(query, limit)
    if searcher is None or not tokens:
        return [], False
    only = [IdFilter((session_id,))]

    def clauses(text: tantivy.Query) -> list[Clause]:
        return base_clauses(schema, text, only, filters, _NO_IDS, _NO_IDS)

    try:
        cands = _first_found(
            schema, query, tokens, mode, clauses, lambda c: rank_events(searcher, c, limit + 1)
        )
        hits = [event_hit(searcher, c.addr, tokens, snippet_chars, mode) for c in cands[:limit]]
    except Nothing:
        return [], False
    except ValueError as exc:
        raise IndexFailedError(f"event search failed: {exc}") from exc
    return hits, len(cands) > limit
