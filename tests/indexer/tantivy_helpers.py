"""Test-only views of a ``TantivyIndex``: the product never needs them.

They reach into the index's searcher and writer, and build their queries with the
store's own query module, so they see exactly what a search would.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import tantivy

from indexer.model.search import EventMetadataFilter, SessionFilter
from indexer.store.tantivy import IndexDoc, TantivyIndex, analyze
from indexer.store.tantivy.queries import Nothing, base_clauses, term, text_query
from indexer.store.tantivy.schema import doc_key, load_meta, raw_term, stored_text


def dump_docs(ix: TantivyIndex) -> list[IndexDoc]:
    """Every document of the visible snapshot, by (session id, seq).

    ``text`` is the stored (sanitized) text; ``cwd`` and ``parent`` are ``None`` (the
    index keeps them as filter terms only). For store snapshots; it reads every stored
    document.
    """
    searcher = ix._searcher()
    if searcher is None or searcher.num_docs == 0:
        return []
    hits = searcher.search(
        tantivy.Query.all_query(), limit=int(searcher.num_docs), count=False
    ).hits
    out = []
    for _, addr in hits:
        stored = searcher.doc(addr)
        sid, type_, surface, seq, time = load_meta(stored)
        text = stored_text(stored)
        created_at = searcher.fast_field_values("created_at", [addr])[0]
        # cwd and parent are indexed terms only (filters), not stored: not in the view.
        out.append(IndexDoc(sid, seq, type_, time, surface, text, None, None, created_at))
    out.sort(key=lambda d: (d.session_id, d.seq))
    return out


def scored_matches(
    ix: TantivyIndex,
    query: str,
    session_filters: Sequence[SessionFilter],
    event_filters: Sequence[EventMetadataFilter],
    *,
    live_ids: frozenset[str] = frozenset(),
    exclude_session_ids: frozenset[str] = frozenset(),
) -> list[tuple[float, str, int, int]]:
    """Every matching document as (BM25 score, session id, seq, time), unordered.

    Exhaustive and unranked: the tests compare the grouped search against a brute-force
    grouping of these.
    """
    searcher = ix._searcher()
    tokens = analyze(query)
    if searcher is None or not tokens:
        return []
    try:
        text = text_query(ix._schema, tokens)
        clauses = base_clauses(
            ix._schema, text, session_filters, event_filters, live_ids, exclude_session_ids
        )
    except Nothing:
        return []
    total = max(1, int(searcher.num_docs))
    hits = searcher.search(tantivy.Query.boolean_query(clauses), limit=total, count=False).hits
    out: list[tuple[float, str, int, int]] = []
    for score, addr in hits:
        session_id, _type, _surface, seq, time = load_meta(searcher.doc(addr))[:5]
        out.append((float(score), session_id, int(seq), int(time)))
    return out


def session_doc_count(ix: TantivyIndex, session_id: str) -> int:
    """Documents of one session in the visible snapshot."""
    searcher = ix._searcher()
    if searcher is None:
        return 0
    result: Any = searcher.search(
        term(ix._schema, "session", raw_term(session_id)), limit=1, count=True
    )
    return int(result.count or 0)


def delete_event(ix: TantivyIndex, session_id: str, seq: int) -> None:
    """Stage the removal of one event's document (a no-op when it has none)."""
    ix._stage_delete("key", doc_key(session_id, seq))
