"""The Tantivy full-text index (DESIGN.md "Index"; SPEC §7.3-§7.8, differences 2 and 3).

This is the only module that imports ``tantivy``: ``IndexDoc`` goes in, ``EventHit``
comes out, and filters arrive as the query layer's dataclasses.

One Tantivy document per semantic event, carrying the event metadata and the
session's immutable header fields so that a search is one Tantivy query:

* ``key``        raw term of ``<seq>:<session id>``; upsert = delete-by-key, then add.
* ``session``    raw term of the session id (id filter, availability, exclusions).
* ``sid``        u64 fast field, a per-index session ordinal: grouping hits by session
                 reads a column instead of loading stored documents.
* ``seq``, ``time``, ``created_at``: i64, indexed and fast (ranges, tie keys).
* ``type``, ``surface``: raw terms. ``cwd``, ``parent``: raw terms, ``NULL_TERM`` for
  "no cwd" / "root session", so ``IN [x, null]`` is a single term-set query.
* ``text``       the ``sessionq`` analyzer with positions, stored (snippets).
* ``pairs``      every adjacent token pair of ``text`` as one term, with frequencies. A
                 two-token phrase is the pair's term query (the same documents, scored
                 by BM25 on the pair's frequency: a 10x cheaper query than a phrase
                 over common words). A longer phrase also requires its pairs (with
                 score 0): the rarest pair drives the intersection and only the
                 phrase clause scores.
* ``meta``       stored-only bytes: the ``IndexDoc`` fields except ``text`` (JSON array).

Raw terms are tagged — ``v<value>``, or ``h<sha256>`` for a value too long to be a
Tantivy term (the indexer silently drops longer tokens, which could then never match)
or holding a lone surrogate (no Rust string can) — so ``NULL_TERM`` (``n``) can equal
no value.

Queries are literal: the normalized query is tokenized with the documents' analyzer;
one token is a term query, two or more a phrase query. No query parser sees model
text, and a one-term phrase (Tantivy panics, and pyo3's ``PanicException`` is a
``BaseException``) is never built; neither is a zero-limit search, which panics too.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
import time as _time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, cast

import orjson
import tantivy

from indexer.query.snippet import MATCH_END, MATCH_START, make_snippet
from indexer.query.types import (
    AvailabilityFilter,
    CreatedAtFilter,
    CwdFilter,
    EventHit,
    EventMetadataFilter,
    IdFilter,
    ParentFilter,
    SeqFilter,
    SessionFilter,
    Surface,
    SurfaceFilter,
    TimeFilter,
    TypeFilter,
)

# ---- analyzer (SPEC deliberate difference 3) ----------------------------------------------------
ANALYZER_NAME: Final = "sessionq"

_CJK: Final = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}"
TOKEN_PATTERN: Final = rf"[{_CJK}]|[[\p{{L}}\p{{N}}\p{{Mn}}\p{{Mc}}\p{{Co}}]--[{_CJK}]]+"
"""One token per Han/Kana/Hangul character; otherwise a maximal run of letters, numbers,
combining marks and private-use characters (``unicode61``'s token characters plus marks,
so Indic words stay whole). Everything else — ``_``, punctuation, symbols, emoji,
whitespace — separates tokens. The second class subtracts CJK so that ``é中x`` is
three tokens rather than one letter run."""


def build_analyzer() -> tantivy.TextAnalyzer:
    """``TOKEN_PATTERN``, then ASCII-fold, lowercase, ASCII-fold.

    Folding before lowercasing turns ``İ`` into ``i`` (lowercasing first yields ``i`` +
    U+0307, which no query types); the second fold catches lowercase forms whose
    uppercase the table lacks. Folding maps ``é``→``e``, ``ß``→``ss``, ``æ``→``ae`` — a
    superset of ``unicode61``'s diacritic removal, applied alike to documents and queries.
    """
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.regex(TOKEN_PATTERN))
        .filter(tantivy.Filter.ascii_fold())
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.ascii_fold())
        .build()
    )


_ANALYZER: Final = build_analyzer()


_SURROGATE: Final = re.compile("[\ud800-\udfff]")
"""Lone surrogates: JavaScript strings (a split stream delta) carry them; Rust strings
cannot, so they never reach Tantivy."""


def _without_surrogates(text: str) -> str:
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def analyze(text: str) -> list[str]:
    """The normalized tokens of ``text`` in order: the terms a document or query holds.

    A lone surrogate separates tokens, as the U+FFFD that replaces it in documents does.
    """
    return list(_ANALYZER.analyze(_without_surrogates(text)))


def sanitize_text(text: str) -> str:
    """The indexed and stored form of document text.

    SPEC §7.4: U+0000, U+FDD0 and U+FDD1 become U+FFFD — the two non-characters are the
    highlight markers of §7.8, so stored text must never contain them. Lone surrogates
    become U+FFFD too (see ``_SURROGATE``); code-point offsets are unchanged.
    """
    for ch in ("\u0000", MATCH_START, MATCH_END):
        if ch in text:
            text = text.replace(ch, "\ufffd")
    return _without_surrogates(text)


# ---- documents and terms -------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class IndexDoc:
    """One semantic event with non-empty text, as the index stores it."""

    session_id: str
    seq: int
    type: str
    time: int
    surface: Surface
    text: str
    cwd: str | None
    parent: str | None
    created_at: int


NULL_TERM: Final = "n"
"""The ``cwd``/``parent`` term of a session without cwd / without parent."""

_MAX_TERM_CHARS: Final = 16_000
"""At most 64,000 UTF-8 bytes: below Tantivy's 65,530-byte token limit."""


def _raw_term(value: str) -> str:
    if len(value) <= _MAX_TERM_CHARS and _SURROGATE.search(value) is None:
        return "v" + value
    return "h" + hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()


def _nullable_term(value: str | None) -> str:
    return NULL_TERM if value is None else _raw_term(value)


def _doc_key(session_id: str, seq: int) -> str:
    return _raw_term(f"{seq}:{session_id}")


_PAIR_SPLIT: Final = re.compile(r"[\t\n\x0c\r ]")
"""What Tantivy's whitespace tokenizer (the ``pairs`` field) splits on."""


def _pairable(a: str, b: str) -> bool:
    """Whether the pair ``a_b`` is indexed as one term — decided alike for docs and queries.

    Analyzer tokens never contain whitespace and are rarely long; the check keeps the
    query side from requiring a pair that indexing split or dropped.
    """
    if len(a) + len(b) >= _MAX_TERM_CHARS:
        return False
    return _PAIR_SPLIT.search(a) is None and _PAIR_SPLIT.search(b) is None


_ASCII_WORD: Final = re.compile(r"[a-z0-9]+")


def doc_tokens(text: str) -> list[str]:
    """The analyzer's tokens of ``text``. For ASCII text (most of it) the analyzer is
    exactly "runs of [A-Za-z0-9], lowercased", which Python computes without a round trip
    into Tantivy."""
    if text.isascii():
        return _ASCII_WORD.findall(text.lower())
    return list(_ANALYZER.analyze(text))


PAIR_GAP: Final = "_"
"""Stands for an unpairable pair, so pair positions stay aligned with token positions
(a real pair ``a_b`` always has text on both sides of the underscore)."""


def _pairs_text(tokens: list[str]) -> str:
    """The ``pairs`` field value: the adjacent pairs ``a_b`` in order, space-separated;
    pair i sits at position i, so a phrase over pairs is a phrase over tokens."""
    if len(tokens) < 2:
        return ""
    joined = " ".join(tokens)
    if (
        max(map(len, tokens)) < _MAX_TERM_CHARS // 2
        and joined.count(" ") == len(tokens) - 1
        and _PAIR_SPLIT.search(joined.replace(" ", "")) is None
    ):
        return " ".join(f"{a}_{b}" for a, b in itertools.pairwise(tokens))
    return " ".join(
        f"{a}_{b}" if _pairable(a, b) else PAIR_GAP for a, b in itertools.pairwise(tokens)
    )


def _build_schema() -> tantivy.Schema:
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("key", tokenizer_name="raw", index_option="basic")
    sb.add_text_field("session", tokenizer_name="raw", index_option="basic")
    sb.add_unsigned_field("sid", indexed=True, fast=True)
    sb.add_integer_field("seq", indexed=True, fast=True)
    sb.add_text_field("type", tokenizer_name="raw", index_option="basic")
    sb.add_integer_field("time", indexed=True, fast=True)
    sb.add_text_field("surface", tokenizer_name="raw", index_option="basic")
    sb.add_text_field("text", stored=True, tokenizer_name=ANALYZER_NAME, index_option="position")
    sb.add_text_field("pairs", tokenizer_name="whitespace", index_option="position")
    sb.add_text_field("cwd", tokenizer_name="raw", index_option="basic")
    sb.add_text_field("parent", tokenizer_name="raw", index_option="basic")
    sb.add_integer_field("created_at", indexed=True, fast=True)
    sb.add_bytes_field("meta", stored=True)
    return sb.build()


# ---- filters (SPEC §6, §7.6) ---------------------------------------------------------------------
_I64_MIN: Final = -(2**63)
_I64_MAX: Final = 2**63 - 1


class _Nothing(Exception):
    """A filter no document can satisfy: the search returns an empty page."""


def _int_range(from_: float | None, to: float | None) -> tuple[int | None, int | None]:
    """Integer bounds equivalent to an inclusive float range over integer values.

    ``x >= from_`` over integers is ``x >= ceil(from_)`` and ``x <= to`` is
    ``x <= floor(to)`` (SPEC §9.6 hands in bounds such as ``123.0002``). A bound beyond
    the i64 domain either excludes nothing (dropped) or everything. Raises ``_Nothing``
    when no integer is in range.
    """
    lo: int | None = None
    hi: int | None = None
    if from_ is not None:
        if math.isnan(from_) or from_ == math.inf:
            raise _Nothing
        if from_ != -math.inf:
            lo = math.ceil(from_)
            if lo > _I64_MAX:
                raise _Nothing
            if lo <= _I64_MIN:
                lo = None
    if to is not None:
        if math.isnan(to) or to == -math.inf:
            raise _Nothing
        if to != math.inf:
            hi = math.floor(to)
            if hi < _I64_MIN:
                raise _Nothing
            if hi >= _I64_MAX:
                hi = None
    if lo is not None and hi is not None and lo > hi:
        raise _Nothing
    return lo, hi


# ---- ranking -------------------------------------------------------------------------------------
@dataclass(slots=True)
class _Cand:
    """A matching document with the fast-field values its rank depends on."""

    score: float
    time: int
    seq: int
    sid: int
    addr: Any  # tantivy.DocAddress


def _rank_in_session(c: _Cand) -> tuple[float, int, int]:
    """Larger is better: score desc, time desc, seq desc (deliberate difference 2)."""
    return (c.score, c.time, c.seq)


@dataclass(slots=True)
class _Batch:
    """One fetch of top documents as parallel columns (no object per document)."""

    scores: list[float]
    times: list[int]
    seqs: list[int]
    sids: list[int]
    addrs: list[Any]
    exhaustive: bool

    def cand(self, i: int) -> _Cand:
        return _Cand(self.scores[i], self.times[i], self.seqs[i], self.sids[i], self.addrs[i])

    def threshold(self) -> float:
        """Unfetched documents score at most this (nothing is unfetched if exhaustive)."""
        return -math.inf if self.exhaustive or not self.scores else min(self.scores)

    def final(self) -> list[_Cand]:
        """Documents whose rank no unfetched document can change: score > threshold."""
        t = self.threshold()
        return [self.cand(i) for i, score in enumerate(self.scores) if score > t]

    def session_bests(self) -> dict[int, _Cand]:
        """Per session, the best fetched document — only sessions that are settled, i.e.
        whose best scores above the threshold (an unfetched document cannot beat it)."""
        scores, times, seqs = self.scores, self.times, self.seqs
        best: dict[int, int] = {}
        for i, sid in enumerate(self.sids):
            j = best.get(sid)
            if (
                j is None
                or scores[i] > scores[j]
                or (scores[i] == scores[j] and (times[i], seqs[i]) > (times[j], seqs[j]))
            ):
                best[sid] = i
        t = self.threshold()
        return {sid: self.cand(i) for sid, i in best.items() if scores[i] > t}


_NO_IDS: Final[frozenset[str]] = frozenset()
_MIN_FETCH: Final = 64
_GROWTH: Final = 4
_OPEN_ATTEMPTS: Final = 5


class TantivyIndex:
    """A Tantivy index directory: one long-lived writer (indexer) or a reader (workers).

    Writer and readers are separate processes over one directory. A reader never takes
    the writer lock; it sees the commit that was current at its latest ``reload()``. A
    reader of a directory without an index yet behaves as an empty index and opens it
    on a later ``reload()``.

    Writes: ``upsert``/``delete_*`` stage changes in the writer; ``commit`` makes them
    durable and visible (to this instance at once, to readers after ``reload``);
    ``rollback`` discards everything staged since the last commit. The writer is never a
    context manager: its ``__exit__`` commits even while an exception propagates.
    """

    def __init__(
        self,
        path: Path,
        *,
        writable: bool,
        heap_bytes: int = 128_000_000,
        threads: int = 1,
    ) -> None:
        self.path = path
        self.writable = writable
        self._schema = _build_schema()
        self._index: tantivy.Index | None = None
        self._writer: tantivy.IndexWriter | None = None
        self._meta_signature: bytes | None = None
        # Session ordinals, allocated by the writer: never reused within a process, and
        # reused across processes only once no live document carries them.
        self._ordinals: dict[str, int] = {}
        self._next_ordinal = 1
        self._closed = False
        if writable:
            path.mkdir(parents=True, exist_ok=True)
            index = tantivy.Index(self._schema, path=str(path), reuse=True)
            index.register_tokenizer(ANALYZER_NAME, _ANALYZER)
            index.config_reader("Manual")
            self._index = index
            self._writer = index.writer(heap_size=heap_bytes, num_threads=threads)
            self._reload_index()
            self._next_ordinal = self._max_ordinal() + 1
        else:
            self._open_reader()

    # ---- lifecycle -------------------------------------------------------------------------------
    def _retrying(self, action: str, fn: Callable[[], None]) -> None:
        """Run ``fn``, retrying briefly on I/O errors.

        The writer process may garbage-collect segment files between a reader's read of
        ``meta.json`` and its opening of those files; the next attempt reads the newer
        ``meta.json``.
        """
        for attempt in range(_OPEN_ATTEMPTS):
            try:
                fn()
                return
            except (OSError, ValueError) as exc:
                if attempt == _OPEN_ATTEMPTS - 1:
                    raise OSError(f"cannot {action} Tantivy index at {self.path}: {exc}") from exc
                _time.sleep(0.01 * (attempt + 1))

    def _open_reader(self) -> None:
        if not (self.path / "meta.json").exists():
            return

        def open_() -> None:
            index = tantivy.Index.open(str(self.path))
            index.register_tokenizer(ANALYZER_NAME, _ANALYZER)
            index.config_reader("Manual")
            signature = self._signature()
            index.reload()
            # Field ids come from the on-disk schema, so queries are built against it.
            self._schema = index.schema
            self._index = index
            self._meta_signature = signature

        self._retrying("open", open_)

    def _signature(self) -> bytes | None:
        """The bytes of ``meta.json``: every commit rewrites it with a new opstamp.

        Read before reloading, so a commit landing in between is picked up next time.
        (File inode and mtime are not enough: inodes are reused and mtimes are coarse.)
        """
        try:
            return (self.path / "meta.json").read_bytes()
        except FileNotFoundError:
            return None

    def _reload_index(self) -> None:
        index = self._index
        assert index is not None
        signature = self._signature()
        self._retrying("reload", index.reload)
        self._meta_signature = signature

    def reload(self) -> None:
        """Make the latest commit visible to later searches.

        Cheap when nothing changed: one read of the small ``meta.json``, which Tantivy
        replaces atomically on every commit.
        """
        if self._index is None:
            if not self.writable and not self._closed:
                self._open_reader()
            return
        if self._signature() != self._meta_signature:
            self._reload_index()

    def close(self) -> None:
        """Drop uncommitted changes, wait for merges and release the writer lock.

        Afterwards searches see an empty index and writes raise.
        """
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.rollback()
            writer.wait_merging_threads()
        self._index = None
        self._closed = True

    def _searcher(self) -> tantivy.Searcher | None:
        return None if self._index is None else self._index.searcher()

    # ---- writes ----------------------------------------------------------------------------------
    def _require_writer(self) -> tantivy.IndexWriter:
        if self._writer is None:
            raise RuntimeError(f"Tantivy index at {self.path} is not open for writing")
        return self._writer

    def _max_ordinal(self) -> int:
        searcher = self._searcher()
        if searcher is None or searcher.num_docs == 0:
            return 0
        hits = searcher.search(
            tantivy.Query.all_query(), limit=1, count=False, order_by_field="sid"
        ).hits
        return int(hits[0][0]) if hits else 0

    def _ordinal(self, session_id: str) -> int:
        """The ordinal the session's committed documents carry, else a fresh one."""
        known = self._ordinals.get(session_id)
        if known is not None:
            return known
        ordinal: int | None = None
        searcher = self._searcher()
        if searcher is not None:
            query = self._term("session", _raw_term(session_id))
            hits = searcher.search(query, limit=1, count=False).hits
            if hits:
                value = searcher.fast_field_values("sid", [hits[0][1]])[0]
                ordinal = value if isinstance(value, int) else None
        if ordinal is None:
            ordinal = self._next_ordinal
            self._next_ordinal += 1
        self._ordinals[session_id] = ordinal
        return ordinal

    def upsert(self, docs: Iterable[IndexDoc]) -> None:
        """Stage each document: delete the document with its (session id, seq), then add.

        Tantivy applies a delete to documents added before it, so the add survives and
        applying the same document twice leaves exactly one copy.
        """
        writer = self._require_writer()
        for d in docs:
            text = sanitize_text(d.text)
            key = _doc_key(d.session_id, d.seq)
            doc = tantivy.Document()
            doc.add_text("key", key)
            doc.add_text("session", _raw_term(d.session_id))
            doc.add_unsigned("sid", self._ordinal(d.session_id))
            doc.add_integer("seq", d.seq)
            doc.add_text("type", _raw_term(d.type))
            doc.add_integer("time", d.time)
            doc.add_text("surface", _raw_term(d.surface))
            doc.add_text("text", text)
            pairs = _pairs_text(doc_tokens(text))
            if pairs:
                doc.add_text("pairs", pairs)
            doc.add_text("cwd", _nullable_term(d.cwd))
            doc.add_text("parent", _nullable_term(d.parent))
            doc.add_integer("created_at", d.created_at)
            doc.add_bytes(
                "meta",
                _dump_meta(
                    [d.session_id, d.type, d.surface, d.seq, d.time, d.cwd, d.parent, d.created_at]
                ),
            )
            writer.delete_documents_by_term("key", key)
            writer.add_document(doc)

    def delete_event(self, session_id: str, seq: int) -> None:
        """Stage the removal of one event's document (a no-op when it has none)."""
        self._require_writer().delete_documents_by_term("key", _doc_key(session_id, seq))

    def delete_session(self, session_id: str) -> None:
        """Stage the removal of every document of a session."""
        self._require_writer().delete_documents_by_term("session", _raw_term(session_id))

    def commit(self) -> None:
        """Make staged changes durable, then visible to this instance's searches."""
        self._require_writer().commit()
        self._reload_index()

    def rollback(self) -> None:
        """Discard every change staged since the last commit."""
        self._require_writer().rollback()

    # ---- counts ----------------------------------------------------------------------------------
    def num_docs(self) -> int:
        """Documents in the visible snapshot."""
        searcher = self._searcher()
        return 0 if searcher is None else int(searcher.num_docs)

    def session_doc_count(self, session_id: str) -> int:
        """Documents of one session in the visible snapshot."""
        searcher = self._searcher()
        if searcher is None:
            return 0
        result: Any = searcher.search(
            self._term("session", _raw_term(session_id)), limit=1, count=True
        )
        return int(result.count or 0)

    # ---- query building --------------------------------------------------------------------------
    def _text_query(self, tokens: list[str]) -> tantivy.Query:
        """Term query for one token. Longer phrases run over the pair field when every
        adjacent pair is pairable: two tokens are the scored term of their pair, more are
        a phrase over their pairs (the same documents as the token phrase, one term fewer
        and far rarer terms to intersect). Otherwise: the token phrase plus its pairs at
        score 0."""
        if len(tokens) == 1:
            return tantivy.Query.term_query(self._schema, "text", tokens[0])
        if all(_pairable(a, b) for a, b in itertools.pairwise(tokens)):
            pair_terms = [f"{a}_{b}" for a, b in itertools.pairwise(tokens)]
            if len(pair_terms) == 1:
                return tantivy.Query.term_query(
                    self._schema, "pairs", pair_terms[0], index_option="freq"
                )
            pair_words: list[str | tuple[int, str]] = list(pair_terms)
            return tantivy.Query.phrase_query(self._schema, "pairs", pair_words)
        words: list[str | tuple[int, str]] = list(tokens)
        clauses = [(tantivy.Occur.Must, tantivy.Query.phrase_query(self._schema, "text", words))]
        pairs = {f"{a}_{b}" for a, b in itertools.pairwise(tokens) if _pairable(a, b)}
        for pair in sorted(pairs):
            clauses.append((tantivy.Occur.Must, self._unscored(self._term("pairs", pair))))
        return tantivy.Query.boolean_query(clauses)

    def _term(self, field: str, term: str) -> tantivy.Query:
        return tantivy.Query.term_query(self._schema, field, term, index_option="basic")

    def _terms(self, field: str, terms: Iterable[str]) -> tantivy.Query:
        return tantivy.Query.term_set_query(self._schema, field, sorted(set(terms)))

    @staticmethod
    def _unscored(query: tantivy.Query) -> tantivy.Query:
        return tantivy.Query.const_score_query(query, 0.0)

    def _range(self, field: str, from_: float | None, to: float | None) -> tantivy.Query | None:
        lo, hi = _int_range(from_, to)
        if lo is None and hi is None:
            return None
        return tantivy.Query.range_query(self._schema, field, tantivy.FieldType.Integer, lo, hi)

    def _session_clause(self, f: SessionFilter, live_ids: frozenset[str]) -> tantivy.Query | None:
        """One SPEC §6.1 session filter as a query; ``None`` = no constraint."""
        if isinstance(f, IdFilter | CwdFilter | ParentFilter) and not f.values:
            raise _Nothing
        if isinstance(f, IdFilter):
            return self._terms("session", map(_raw_term, f.values))
        if isinstance(f, CwdFilter):
            return self._terms("cwd", map(_nullable_term, f.values))
        if isinstance(f, ParentFilter):
            return self._terms("parent", map(_nullable_term, f.values))
        if isinstance(f, CreatedAtFilter):
            return self._range("created_at", f.from_, f.to)
        if isinstance(f, AvailabilityFilter):
            wanted = set(f.values)
            if not wanted:
                raise _Nothing
            if "persisted" in wanted:  # every stored session is persisted (difference 1)
                return None
            if not live_ids:
                raise _Nothing
            return self._terms("session", map(_raw_term, live_ids))
        raise TypeError(f"unknown session filter {f!r}")

    def _event_clause(self, f: EventMetadataFilter) -> tantivy.Query | None:
        """One SPEC §6.2 event metadata filter as a query; ``None`` = no constraint."""
        if isinstance(f, SeqFilter):
            return self._range("seq", f.from_, f.to)
        if isinstance(f, TimeFilter):
            return self._range("time", f.from_, f.to)
        if isinstance(f, TypeFilter | SurfaceFilter) and not f.values:
            raise _Nothing
        if isinstance(f, TypeFilter):
            return self._terms("type", map(_raw_term, f.values))
        if isinstance(f, SurfaceFilter):
            return self._terms("surface", map(_raw_term, f.values))
        raise TypeError(f"unknown event metadata filter {f!r}")

    def _clauses(
        self,
        text: tantivy.Query,
        filters: Iterable[tantivy.Query | None],
        exclude: tantivy.Query | None = None,
    ) -> list[tuple[tantivy.Occur, tantivy.Query]]:
        """The text query is the only scored clause, so BM25 alone ranks."""
        clauses = [(tantivy.Occur.Must, text)]
        clauses += [(tantivy.Occur.Must, self._unscored(q)) for q in filters if q is not None]
        if exclude is not None:
            clauses.append((tantivy.Occur.MustNot, exclude))
        return clauses

    def _base_clauses(
        self,
        tokens: list[str],
        session_filters: Sequence[SessionFilter],
        event_filters: Sequence[EventMetadataFilter],
        live_ids: frozenset[str],
        exclude_session_ids: frozenset[str],
    ) -> list[tuple[tantivy.Occur, tantivy.Query]]:
        """Text query AND every filter AND NOT excluded sessions; raises ``_Nothing``."""
        filters = [self._session_clause(f, live_ids) for f in session_filters]
        filters += [self._event_clause(f) for f in event_filters]
        exclude = (
            self._terms("session", map(_raw_term, exclude_session_ids))
            if exclude_session_ids
            else None
        )
        return self._clauses(self._text_query(tokens), filters, exclude)

    # ---- search ----------------------------------------------------------------------------------
    def search_sessions(
        self,
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
        Returns at most ``limit`` hits and whether another qualifying session exists.

        In rounds over one searcher snapshot: fetch the top ``k`` documents by score.
        Unless the fetch was exhaustive, every unfetched document scores at most the
        ``k``-th score ``t``, so a session whose best fetched score exceeds ``t`` is
        *settled*: its best document and its place are final, score ties included. The
        next round excludes settled sessions and fetches ``4k`` (``16k`` after a round
        that settled nothing: a large tie). Stop once ``limit + 1`` sessions are settled
        (every other session scores ``<= t`` and ranks below them) or a fetch is
        exhaustive. Settled sessions are excluded by their ``sid`` ordinal.
        """
        if limit < 1:
            raise ValueError("limit must be positive")
        searcher = self._searcher()
        tokens = analyze(query)
        if searcher is None or not tokens:
            return [], False
        try:
            base = self._base_clauses(
                tokens, session_filters, event_filters, live_ids, exclude_session_ids
            )
        except _Nothing:
            return [], False
        need = limit + 1
        k = _GROWTH * need
        settled: dict[int, _Cand] = {}
        while True:
            clauses = list(base)
            if settled:
                done = tantivy.Query.term_set_query(self._schema, "sid", sorted(settled))
                clauses.append((tantivy.Occur.MustNot, done))
            batch = self._fetch(searcher, tantivy.Query.boolean_query(clauses), k)
            before = len(settled)
            settled.update(batch.session_bests())
            if batch.exhaustive or len(settled) >= need:
                break
            # No progress means a large group of documents ties at the threshold score:
            # all of it must be seen, so grow faster.
            k *= _GROWTH if len(settled) > before else _GROWTH**2
        ordered = self._order_sessions(searcher, list(settled.values()), need)
        hits = [self._hit(searcher, c, tokens, snippet_chars) for c in ordered[:limit]]
        return hits, len(ordered) > limit

    def search_events(
        self,
        session_id: str,
        query: str,
        filters: Sequence[EventMetadataFilter],
        *,
        limit: int,
        snippet_chars: int = 240,
    ) -> tuple[list[EventHit], bool]:
        """One session's documents by score desc, time desc, seq desc.

        The fetch-and-grow rule of ``search_sessions`` with every document its own group:
        documents scoring above the ``k``-th fetched score are final.
        """
        if limit < 1:
            raise ValueError("limit must be positive")
        searcher = self._searcher()
        tokens = analyze(query)
        if searcher is None or not tokens:
            return [], False
        try:
            only = [IdFilter((session_id,))]
            clauses = self._base_clauses(tokens, only, filters, _NO_IDS, _NO_IDS)
        except _Nothing:
            return [], False
        full = tantivy.Query.boolean_query(clauses)
        need = limit + 1
        k = _GROWTH * need
        progress = 0
        while True:
            batch = self._fetch(searcher, full, k)
            cands = batch.final()
            if batch.exhaustive or len(cands) >= need:
                break
            k *= _GROWTH if len(cands) > progress else _GROWTH**2
            progress = len(cands)
        cands.sort(key=_rank_in_session, reverse=True)
        hits = [self._hit(searcher, c, tokens, snippet_chars) for c in cands[:limit]]
        return hits, len(cands) > limit

    # ---- search internals ------------------------------------------------------------------------
    @staticmethod
    def _fetch(searcher: tantivy.Searcher, query: tantivy.Query, k: int) -> _Batch:
        """The top ``k`` documents by score with their rank fields (from fast fields)."""
        total = int(searcher.num_docs)
        fetch = max(_MIN_FETCH, min(k, total))
        hits = searcher.search(query, limit=fetch, count=False).hits
        if not hits:
            return _Batch([], [], [], [], [], exhaustive=True)
        addrs = [addr for _, addr in hits]

        def column(name: str) -> list[int]:
            # Every document has every rank field, so no value is None.
            return cast(list[int], searcher.fast_field_values(name, addrs))

        return _Batch(
            scores=[float(score) for score, _ in hits],
            times=column("time"),
            seqs=column("seq"),
            sids=column("sid"),
            addrs=addrs,
            exhaustive=len(hits) < fetch or fetch >= total,
        )

    def _order_sessions(
        self, searcher: tantivy.Searcher, bests: list[_Cand], need: int
    ) -> list[_Cand]:
        """The first ``need`` sessions by (score desc, time desc, session id asc).

        Session ids come from stored documents, read only for runs that tie on
        (score, time) within the first ``need`` places.
        """
        bests.sort(key=lambda c: (c.score, c.time), reverse=True)
        i = 0
        while i < min(need, len(bests)):
            key = (bests[i].score, bests[i].time)
            j = i + 1
            while j < len(bests) and (bests[j].score, bests[j].time) == key:
                j += 1
            if j - i > 1:
                bests[i:j] = sorted(bests[i:j], key=lambda c: self._meta(searcher, c)[0])
            i = j
        return bests[:need]

    @staticmethod
    def _meta(searcher: tantivy.Searcher, c: _Cand) -> list[Any]:
        return _load_meta(searcher.doc(c.addr))

    @staticmethod
    def _hit(
        searcher: tantivy.Searcher, c: _Cand, tokens: list[str], snippet_chars: int
    ) -> EventHit:
        doc = searcher.doc(c.addr)
        session_id, type_, surface, seq, time = _load_meta(doc)[:5]
        text = doc.get_first("text") or ""
        return EventHit(
            session_id=session_id,
            seq=int(seq),
            type=type_,
            time=int(time),
            surface=cast(Surface, surface),
            snippet=make_snippet(mark_first_occurrence(text, tokens), snippet_chars),
        )

    # ---- diagnostics -----------------------------------------------------------------------------
    def dump_docs(self) -> list[IndexDoc]:
        """Every document of the visible snapshot, by (session id, seq).

        ``text`` is the stored (sanitized) text. For store snapshots in tests and for
        diagnostics; it reads every stored document.
        """
        searcher = self._searcher()
        if searcher is None or searcher.num_docs == 0:
            return []
        hits = searcher.search(
            tantivy.Query.all_query(), limit=int(searcher.num_docs), count=False
        ).hits
        out = []
        for _, addr in hits:
            stored = searcher.doc(addr)
            sid, type_, surface, seq, time, cwd, parent, created_at = _load_meta(stored)
            text = stored.get_first("text") or ""
            out.append(IndexDoc(sid, seq, type_, time, surface, text, cwd, parent, created_at))
        out.sort(key=lambda d: (d.session_id, d.seq))
        return out

    def scored_matches(
        self,
        query: str,
        session_filters: Sequence[SessionFilter],
        event_filters: Sequence[EventMetadataFilter],
        *,
        live_ids: frozenset[str] = frozenset(),
        exclude_session_ids: frozenset[str] = frozenset(),
    ) -> list[tuple[float, str, int, int]]:
        """Every matching document as (BM25 score, session id, seq, time), unordered.

        Exhaustive and unranked: for verification and diagnostics (tests compare the
        grouped search against a brute-force grouping of these), never a request path.
        """
        searcher = self._searcher()
        tokens = analyze(query)
        if searcher is None or not tokens:
            return []
        try:
            clauses = self._base_clauses(
                tokens, session_filters, event_filters, live_ids, exclude_session_ids
            )
        except _Nothing:
            return []
        total = max(1, int(searcher.num_docs))
        hits = searcher.search(tantivy.Query.boolean_query(clauses), limit=total, count=False).hits
        out: list[tuple[float, str, int, int]] = []
        for score, addr in hits:
            session_id, _type, _surface, seq, time = _load_meta(searcher.doc(addr))[:5]
            out.append((float(score), session_id, int(seq), int(time)))
        return out


def _dump_meta(values: list[Any]) -> bytes:
    try:
        return orjson.dumps(values)
    except TypeError:  # a lone surrogate: the stdlib escapes it and reads it back
        return json.dumps(values).encode("ascii")


def _load_meta(doc: tantivy.Document) -> list[Any]:
    raw = doc.get_first("meta") or b"[]"
    try:
        meta: list[Any] = orjson.loads(raw)
    except orjson.JSONDecodeError:
        meta = json.loads(raw)
    return meta


# ---- highlight spans (SPEC §7.5, §7.8) -----------------------------------------------------------
_WINDOW: Final = 4_096
_ASCII_ALNUM: Final = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_ASCII_ALNUM_CI: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ") | _ASCII_ALNUM
_ASCII_LOWER: Final = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}
_ASCII_TOKEN: Final = re.compile("[a-z0-9]+")
_ASCII_TOKEN_CI: Final = re.compile("[A-Za-z0-9]+")
_NON_ASCII: Final = re.compile("[^\x00-\x7f]")
_SEPARATOR_CACHE: dict[str, bool] = {}
_SEPARATOR_CACHE_MAX: Final = 65_536


def _is_separator(ch: str) -> bool:
    """Whether the analyzer never puts ``ch`` in a token (asked of the analyzer itself:
    a character that forms no token alone belongs to neither token class)."""
    known = _SEPARATOR_CACHE.get(ch)
    if known is None:
        known = not _ANALYZER.pre_tokenize(ch).tokens
        if len(_SEPARATOR_CACHE) < _SEPARATOR_CACHE_MAX:
            _SEPARATOR_CACHE[ch] = known
    return known


def _clean_prefix_end(text: str) -> int:
    """End of the longest prefix whose tokens are all ``[A-Za-z0-9]`` runs, cut at a
    separator: before the first non-ASCII token character, every non-ASCII character
    separates tokens, so there the analyzer's tokens are the ASCII runs, lowercased
    (folding leaves ASCII alone). ``len(text)`` when no such character exists."""
    for m in _NON_ASCII.finditer(text):
        if not _is_separator(m.group()):
            cut = m.start()
            while cut > 0 and text[cut - 1] in _ASCII_ALNUM_CI:
                cut -= 1
            return cut
    return len(text)


def _resume_point(text: str, cut: int, n: int) -> int:
    """Start of the ``n-1``-th last token before ``cut``: the earliest start of an
    occurrence that is not inside ``text[:cut]`` but may begin there."""
    if n == 1:
        return cut
    lookback = 512
    while True:
        lo = max(0, cut - lookback)
        starts = [m.start() for m in _ASCII_TOKEN_CI.finditer(text, lo, cut)]
        if starts and lo > 0 and starts[0] == lo:
            starts = starts[1:]  # may be the tail of a longer token
        if len(starts) >= n - 1:
            return starts[-(n - 1)]
        if lo == 0:
            return 0
        lookback *= 4


def _find_ascii(text: str, tokens: Sequence[str]) -> tuple[int, int] | None:
    """First occurrence in text whose tokens are ASCII runs (see ``_clean_prefix_end``):
    ``str.find`` on the first token, a regex for the rest (separators in between)."""
    low = text.lower()
    if len(low) != len(text):  # a non-ASCII separator with a longer lowercase form
        low = text.translate(_ASCII_LOWER)
    first, size = tokens[0], len(tokens[0])
    rest = re.compile("".join(f"[^a-z0-9]+{t}" for t in tokens[1:]) + "(?![a-z0-9])")
    pos = low.find(first)
    while pos >= 0:
        end = pos + size
        if (pos == 0 or low[pos - 1] not in _ASCII_ALNUM) and (
            end == len(low) or low[end] not in _ASCII_ALNUM
        ):
            m = rest.match(low, end)
            if m:
                return pos, m.end()
        pos = low.find(first, pos + 1)
    return None


def _find_phrase(words: list[str], tokens: list[str], usable: int) -> int:
    """Index of the first ``i`` with ``words[i:i+len(tokens)] == tokens`` and
    ``i + len(tokens) <= usable``, else -1."""
    n = len(tokens)
    i = -1
    while True:
        try:
            i = words.index(tokens[0], i + 1, max(0, usable - n + 1))
        except ValueError:
            return -1
        if words[i : i + n] == tokens:
            return i


def _find_analyzed(text: str, tokens: list[str], base: int) -> tuple[int, int] | None:
    """First occurrence at or after ``base`` (a token start or a separator boundary) by
    the analyzer itself, window by window.

    Cost follows the position of the first occurrence, not the document's length. A
    window may cut its last token, so an occurrence must end before it; the next window
    starts at the first token an unseen occurrence could start with (which re-reads the
    cut token whole). Offsets are code points.
    """
    n = len(tokens)
    width = _WINDOW
    while True:
        complete = base + width >= len(text)
        toks = _ANALYZER.pre_tokenize(text[base:] if complete else text[base : base + width]).tokens
        usable = len(toks) if complete else len(toks) - 1
        i = _find_phrase([t.text for t in toks], tokens, usable)
        if i >= 0:
            first, last = toks[i], toks[i + n - 1]
            if last.position - first.position != n - 1:
                return None
            return base + first.char_offset_from, base + last.char_offset_to
        if complete:
            return None
        resume = max(usable - (n - 1), 0)
        step = toks[resume].char_offset_from if resume < len(toks) else width
        if step <= 0:  # one token (or phrase) wider than the window
            width *= _GROWTH
        else:
            base += step


def first_occurrence(text: str, tokens: Sequence[str]) -> tuple[int, int] | None:
    """Code-point span of the first occurrence of the token phrase in ``text``.

    Exact with respect to the index analyzer, and fast on the usual text: the longest
    prefix whose token characters are all ASCII (``_clean_prefix_end``; all of an ASCII
    text) is searched with ``str`` methods; only an occurrence not inside it makes the
    analyzer tokenize, from the last ``n-1`` tokens of that prefix on. ``None`` when there
    is no occurrence or offsets look wrong — the snippet then starts at the beginning
    instead of failing the search.
    """
    if not tokens:
        return None
    wanted = list(tokens)
    ascii_query = all(_ASCII_TOKEN.fullmatch(t) for t in wanted)
    if text.isascii():
        return _find_ascii(text, wanted) if ascii_query else None
    text = _without_surrogates(text)  # same length: offsets stay valid for the caller
    cut = _clean_prefix_end(text)
    if ascii_query:
        span = _find_ascii(text[:cut], wanted)
        if span is not None:
            return span
    if cut == len(text):
        return None
    span = _find_analyzed(text, wanted, _resume_point(text, cut, len(wanted)))
    if span is None or not 0 <= span[0] < span[1] <= len(text):
        return None
    return span


def mark_first_occurrence(text: str, tokens: Sequence[str]) -> str:
    """``text`` with ``MATCH_START``/``MATCH_END`` around the first phrase occurrence.

    Only the first span positions a snippet (SPEC §7.8 records the first marker), so
    later spans stay unmarked; the resulting snippet is the same.
    """
    span = first_occurrence(text, tokens)
    if span is None:
        return text
    start, end = span
    return text[:start] + MATCH_START + text[start:end] + MATCH_END + text[end:]
