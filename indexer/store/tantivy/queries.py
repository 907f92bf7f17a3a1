"""Query text and filters as Tantivy queries (SPEC §6, §7.6).

Queries are literal: the normalized query is tokenized with the documents' analyzer;
one token is a term query, two or more a phrase query. No query parser sees model
text, and a one-term phrase (Tantivy panics, and pyo3's ``PanicException`` is a
``BaseException``) is never built; neither is a zero-limit search, which panics too.

Every function takes the schema the index was opened with: field ids come from it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Final

import tantivy

from indexer.model.search import (
    AvailabilityFilter,
    CreatedAtFilter,
    CwdFilter,
    EventMetadataFilter,
    IdFilter,
    ParentFilter,
    SeqFilter,
    SessionFilter,
    SurfaceFilter,
    TimeFilter,
    TypeFilter,
)
from indexer.store.tantivy.analyzer import pair_terms
from indexer.store.tantivy.schema import nullable_term, raw_term

Clause = tuple[tantivy.Occur, tantivy.Query]

_I64_MIN: Final = -(2**63)
_I64_MAX: Final = 2**63 - 1


class Nothing(Exception):
    """A filter no document can satisfy: the search returns an empty page."""


def int_range(from_: float | None, to: float | None) -> tuple[int | None, int | None]:
    """Integer bounds equivalent to an inclusive float range over integer values.

    ``x >= from_`` over integers is ``x >= ceil(from_)`` and ``x <= to`` is
    ``x <= floor(to)`` (SPEC §9.6 hands in bounds such as ``123.0002``). A bound beyond
    the i64 domain either excludes nothing (dropped) or everything. Raises ``Nothing``
    when no integer is in range.
    """
    lo: int | None = None
    hi: int | None = None
    if from_ is not None:
        if math.isnan(from_) or from_ == math.inf:
            raise Nothing
        if from_ != -math.inf:
            lo = math.ceil(from_)
            if lo > _I64_MAX:
                raise Nothing
            if lo <= _I64_MIN:
                lo = None
    if to is not None:
        if math.isnan(to) or to == -math.inf:
            raise Nothing
        if to != math.inf:
            hi = math.floor(to)
            if hi < _I64_MIN:
                raise Nothing
            if hi >= _I64_MAX:
                hi = None
    if lo is not None and hi is not None and lo > hi:
        raise Nothing
    return lo, hi


def text_query(schema: tantivy.Schema, tokens: list[str]) -> tantivy.Query:
    """The query of a literal token phrase.

    One token: its term. Two tokens whose pair is indexed (both frequent): the scored
    term of the pair — the same documents as the phrase, scored by BM25 on the pair's
    frequency, and far cheaper than a positional phrase over two common words. Any other
    phrase: the positional phrase over ``text`` (the only scored clause, so the matches
    are exactly the phrase's) AND each indexed pair of the query at score 0 — a pair
    holds in every document the phrase matches, and its posting list is much shorter
    than its tokens', so it drives the intersection.
    """
    if len(tokens) == 1:
        return tantivy.Query.term_query(schema, "text", tokens[0])
    pairs = pair_terms(tokens)
    if len(tokens) == 2 and pairs:
        return tantivy.Query.term_query(schema, "pairs", pairs[0], index_option="freq")
    words: list[str | tuple[int, str]] = list(tokens)
    clauses = [(tantivy.Occur.Must, tantivy.Query.phrase_query(schema, "text", words))]
    for pair in sorted(set(pairs)):
        clauses.append((tantivy.Occur.Must, unscored(term(schema, "pairs", pair))))
    return tantivy.Query.boolean_query(clauses)


def term(schema: tantivy.Schema, field: str, value: str) -> tantivy.Query:
    return tantivy.Query.term_query(schema, field, value, index_option="basic")


def session_seqs(schema: tantivy.Schema, session_id: str, first: int, end: int) -> tantivy.Query:
    """The documents of ``session_id`` with a seq in ``[first, end)``."""
    seqs = tantivy.Query.range_query(
        schema, "seq", tantivy.FieldType.Integer, first, end, True, False
    )
    return tantivy.Query.boolean_query(
        [
            (tantivy.Occur.Must, term(schema, "session", raw_term(session_id))),
            (tantivy.Occur.Must, seqs),
        ]
    )


UNION_TERMS: Final = 16
"""Up to this many values, a value set is a union of term queries; more, a term set."""


def terms(schema: tantivy.Schema, field: str, values: Iterable[str]) -> tantivy.Query:
    """Documents whose ``field`` holds one of ``values`` (a filter: callers wrap it
    ``unscored``). A few values are term queries, alone or in a union: their postings
    skip ahead inside an intersection, so a search over a common word scores only the
    documents the filter lets through. A term set reads every posting of its values
    whole, whatever the other clauses keep."""
    wanted = sorted(set(values))
    if len(wanted) == 1:
        return term(schema, field, wanted[0])
    if len(wanted) <= UNION_TERMS:
        return tantivy.Query.boolean_query(
            [(tantivy.Occur.Should, term(schema, field, v)) for v in wanted]
        )
    return tantivy.Query.term_set_query(schema, field, wanted)


def unscored(query: tantivy.Query) -> tantivy.Query:
    return tantivy.Query.const_score_query(query, 0.0)


def _range(
    schema: tantivy.Schema, field: str, from_: float | None, to: float | None
) -> tantivy.Query | None:
    lo, hi = int_range(from_, to)
    if lo is None and hi is None:
        return None
    return tantivy.Query.range_query(schema, field, tantivy.FieldType.Integer, lo, hi)


def _session_clause(
    schema: tantivy.Schema, f: SessionFilter, live_ids: frozenset[str]
) -> tantivy.Query | None:
    """One SPEC §6.1 session filter as a query; ``None`` = no constraint."""
    if isinstance(f, IdFilter | CwdFilter | ParentFilter) and not f.values:
        raise Nothing
    if isinstance(f, IdFilter):
        return terms(schema, "session", map(raw_term, f.values))
    if isinstance(f, CwdFilter):
        return terms(schema, "cwd", map(nullable_term, f.values))
    if isinstance(f, ParentFilter):
        return terms(schema, "parent", map(nullable_term, f.values))
    if isinstance(f, CreatedAtFilter):
        return _range(schema, "created_at", f.from_, f.to)
    if isinstance(f, AvailabilityFilter):
        wanted = set(f.values)
        if not wanted:
            raise Nothing
        if "persisted" in wanted:  # every stored session is persisted (difference 1)
            return None
        if not live_ids:
            raise Nothing
        return terms(schema, "session", map(raw_term, live_ids))
    raise TypeError(f"unknown session filter {f!r}")


def _event_clause(schema: tantivy.Schema, f: EventMetadataFilter) -> tantivy.Query | None:
    """One SPEC §6.2 event metadata filter as a query; ``None`` = no constraint."""
    if isinstance(f, SeqFilter):
        return _range(schema, "seq", f.from_, f.to)
    if isinstance(f, TimeFilter):
        return _range(schema, "time", f.from_, f.to)
    if isinstance(f, TypeFilter | SurfaceFilter) and not f.values:
        raise Nothing
    if isinstance(f, TypeFilter):
        return terms(schema, "type", map(raw_term, f.values))
    if isinstance(f, SurfaceFilter):
        return terms(schema, "surface", map(raw_term, f.values))
    raise TypeError(f"unknown event metadata filter {f!r}")


def _clauses(
    text: tantivy.Query,
    filters: Iterable[tantivy.Query | None],
    exclude: tantivy.Query | None = None,
) -> list[Clause]:
    """The text query is the only scored clause, so BM25 alone ranks."""
    clauses = [(tantivy.Occur.Must, text)]
    clauses += [(tantivy.Occur.Must, unscored(q)) for q in filters if q is not None]
    if exclude is not None:
        clauses.append((tantivy.Occur.MustNot, exclude))
    return clauses


def base_clauses(
    schema: tantivy.Schema,
    text: tantivy.Query,
    session_filters: Sequence[SessionFilter],
    event_filters: Sequence[EventMetadataFilter],
    live_ids: frozenset[str],
    exclude_session_ids: frozenset[str],
) -> list[Clause]:
    """``text`` AND every filter AND NOT excluded sessions; raises ``Nothing``."""
    filters = [_session_clause(schema, f, live_ids) for f in session_filters]
    filters += [_event_clause(schema, f) for f in event_filters]
    exclude = (
        terms(schema, "session", map(raw_term, exclude_session_ids))
        if exclude_session_ids
        else None
    )
    return _clauses(text, filters, exclude)
