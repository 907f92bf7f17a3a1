"""``TantivyIndex``: the index directory's lifecycle, writes and searches.

Thin over the concern modules: documents are built by ``schema``, queries by
``queries``, ranked by ``ranking`` and turned into hits by ``highlight``.
"""

from __future__ import annotations

import json
import time as _time
from collections.abc import Callable, Collection, Iterable, Sequence
from pathlib import Path
from typing import Any, Final

import tantivy

from indexer.errors import IndexFailedError
from indexer.model.search import EventHit, EventMetadataFilter, IdFilter, SessionFilter
from indexer.store.tantivy.analyzer import ANALYZER, ANALYZER_NAME, analyze
from indexer.store.tantivy.highlight import event_hit
from indexer.store.tantivy.queries import Nothing, base_clauses, term
from indexer.store.tantivy.ranking import rank_events, rank_sessions
from indexer.store.tantivy.schema import IndexDoc, build_schema, document, load_meta, raw_term

_NO_IDS: Final[frozenset[str]] = frozenset()
_OPEN_ATTEMPTS: Final = 5


def _schema_of(meta_json: bytes | None) -> Any:
    """The schema part of a ``meta.json`` (``None`` for no index)."""
    if meta_json is None:
        return None
    try:
        return json.loads(meta_json).get("schema")
    except ValueError:  # a torn read cannot happen (atomic replace); be safe anyway
        return None


DOCSTORE_BLOCK_BYTES: Final = 64 * 1024
"""Tantivy compresses stored documents (LZ4) in blocks of this size; its 16 KiB default
compresses this index's texts (many short documents) 11 % worse, and a read decompresses
one block either way (bench/README.md)."""


def _create(schema: tantivy.Schema, path: Path) -> tantivy.Index:
    """Open the index at ``path``, creating it with ``DOCSTORE_BLOCK_BYTES`` if it does not
    exist. tantivy-py takes no index settings: they are Tantivy's own ``meta.json`` field,
    set before any segment exists and kept by every later commit."""
    meta = path / "meta.json"
    fresh = not meta.exists()
    index = tantivy.Index(schema, path=str(path), reuse=True)
    if not fresh:
        return index
    doc = json.loads(meta.read_text(encoding="utf-8"))
    doc["index_settings"]["docstore_blocksize"] = DOCSTORE_BLOCK_BYTES
    tmp = meta.with_name("meta.json.tmp")
    tmp.write_text(json.dumps(doc), encoding="utf-8")
    tmp.replace(meta)
    return tantivy.Index(schema, path=str(path), reuse=True)


class TantivyIndex:
    """A Tantivy index directory: one long-lived writer (indexer) or a reader (workers).

    Writer and readers are separate processes over one directory. A reader never takes
    the writer lock; it sees the commit that was current at its latest ``reload()``. A
    reader of a directory without an index yet behaves as an empty index and opens it
    on a later ``reload()``; so does a reader whose index the writer rebuilt with another
    schema (``indexer.store.maintenance.index_format``): a ``meta.json`` of a new schema reopens it.

    Writes: ``upsert``/``delete_session`` build their documents at once (a document
    Tantivy refuses fails there, as ``IndexFailedError``) and stage them in order;
    ``mark``/``rollback_to`` drop what was staged after a mark (one record's writes,
    ``Store.apply``); ``flush`` hands the staged operations to the writer, in order,
    once their record succeeded (the writer indexes them in its own threads meanwhile);
    ``commit`` flushes and makes everything durable and visible (to this instance at
    once, to readers after ``reload``); ``rollback`` discards everything since the last
    commit. The writer is never a context manager: its ``__exit__`` commits even while
    an exception propagates.
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
        self._heap_bytes = heap_bytes
        self._threads = threads
        self._schema = build_schema()
        self._index: tantivy.Index | None = None
        self._writer: tantivy.IndexWriter | None = None
        self._meta_signature: bytes | None = None
        # Session ordinals, allocated by the writer: never reused within a process, and
        # reused across processes only once no live document carries them.
        self._ordinals: dict[str, int] = {}
        self._next_ordinal = 1
        self._closed = False
        # (field, term, document): delete the documents with this term, then add one.
        self._staged: list[tuple[str, str, tantivy.Document | None]] = []
        if writable:
            path.mkdir(parents=True, exist_ok=True)
            index = _create(self._schema, path)
            index.register_tokenizer(ANALYZER_NAME, ANALYZER)
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
            index.register_tokenizer(ANALYZER_NAME, ANALYZER)
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
        signature = self._signature()
        if signature == self._meta_signature:
            return
        if not self.writable and _schema_of(signature) != _schema_of(self._meta_signature):
            # The writer rebuilt the index (another format,
            # ``indexer.store.maintenance.index_format``): a new schema needs a new
            # ``Index``. While the old one is gone and the new one not committed yet, the
            # open snapshot goes on answering.
            if signature is not None:
                self._open_reader()
            return
        self._reload_index()

    def close(self) -> None:
        """Drop uncommitted changes, wait for merges and release the writer lock.

        Afterwards searches see an empty index and writes raise.
        """
        writer, self._writer = self._writer, None
        self._staged.clear()
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
            query = term(self._schema, "session", raw_term(session_id))
            hits = searcher.search(query, limit=1, count=False).hits
            if hits:
                value = searcher.fast_field_values("sid", [hits[0][1]])[0]
                ordinal = value if isinstance(value, int) else None
        if ordinal is None:
            return self._new_ordinal(session_id)
        self._ordinals[session_id] = ordinal
        return ordinal

    def _new_ordinal(self, session_id: str) -> int:
        ordinal = self._ordinals[session_id] = self._next_ordinal
        self._next_ordinal += 1
        return ordinal

    def upsert(self, docs: Iterable[IndexDoc], *, session: str | None = None) -> None:
        """Stage each document: delete the document with its (session id, seq), then add.

        Tantivy applies a delete to documents added before it, so the add survives and
        applying the same document twice leaves exactly one copy.

        ``session``: ``docs`` are all of that session's documents (its stored events are
        all new: a whole log, a first batch). Then one delete of the session replaces the
        delete per document (cheaper, and a leftover document of the session goes too),
        and the documents get a new ordinal unless this writer gave the session one
        already: none of the old documents survives the delete.
        """
        self._require_writer()
        staged: list[tuple[str, str, tantivy.Document | None]] = []
        ordinal: int | None = None
        if session is not None:
            staged.append(("session", raw_term(session), None))
            ordinal = self._ordinals.get(session)
            if ordinal is None:
                ordinal = self._new_ordinal(session)
        for d in docs:
            try:
                if ordinal is None:
                    key, doc = document(d, self._ordinal(d.session_id))
                    staged.append(("key", key, doc))
                else:
                    assert d.session_id == session, "a document of another session"
                    # field "": an add without a delete (the session's delete covers it)
                    staged.append(("", "", document(d, ordinal)[1]))
            except ValueError as exc:
                raise IndexFailedError(f"index document {d.session_id}#{d.seq}: {exc}") from exc
        self._staged.extend(staged)

    def delete_session(self, session_id: str) -> None:
        """Stage the removal of every document of a session."""
        self._stage_delete("session", raw_term(session_id))

    def _stage_delete(self, field: str, value: str) -> None:
        self._require_writer()
        self._staged.append((field, value, None))

    def mark(self) -> int:
        """A point in the staged operations to roll back to."""
        return len(self._staged)

    def rollback_to(self, mark: int) -> None:
        """Drop every operation staged after ``mark`` (nothing has reached the writer)."""
        del self._staged[mark:]

    def flush(self) -> None:
        """Hand the staged operations to the writer, in order (no longer undoable but by
        ``rollback``). On failure the caller rolls back."""
        writer = self._require_writer()
        staged, self._staged = self._staged, []
        try:
            for field, value, doc in staged:
                if field:
                    writer.delete_documents_by_term(field, value)
                if doc is not None:
                    writer.add_document(doc)
        except ValueError as exc:
            raise IndexFailedError(f"index write failed: {exc}") from exc

    def commit(self) -> None:
        """Flush, make everything durable, then visible to this instance's searches. On
        failure the caller rolls back."""
        self.flush()
        try:
            self._require_writer().commit()
        except ValueError as exc:
            raise IndexFailedError(f"index commit failed: {exc}") from exc
        self._reload_index()

    def rollback(self) -> None:
        """Discard every change staged since the last commit."""
        self._staged.clear()
        self._require_writer().rollback()

    # ---- purge (indexer.store.maintenance.purge) ------------------------------------------------
    def settle(self) -> None:
        """Let running merges finish, then collect the files no commit refers to any more.

        Nothing may be staged. Waiting consumes Tantivy's writer (``wait_merging_threads``),
        so a new one takes its place; afterwards this instance sees the final segments and
        ``meta.json`` lists exactly them.
        """
        writer = self._require_writer()
        if self._staged:
            raise RuntimeError("settle() with staged operations")
        index = self._index
        assert index is not None
        self._writer = None
        writer.wait_merging_threads()

        def reopen() -> None:
            self._writer = index.writer(heap_size=self._heap_bytes, num_threads=self._threads)

        self._retrying("reopen the writer of", reopen)
        self._reload_index()
        self._require_writer().garbage_collect_files()

    def segment_sessions(self, ordinals: Collection[int]) -> tuple[list[int], set[str]]:
        """Live documents per segment of the visible snapshot (in segment order, the order
        of ``meta.json``), and the sessions with a live document in the segments at
        ``ordinals``. Reads every document's ``sid`` column and one stored document per
        session found."""
        searcher = self._searcher()
        if searcher is None:
            return [], set()
        counts = [0] * int(searcher.num_segments)
        if searcher.num_docs == 0:
            return counts, set()
        hits = searcher.search(
            tantivy.Query.all_query(), limit=int(searcher.num_docs), count=False
        ).hits
        wanted = set(ordinals)
        one_per_sid: dict[int, Any] = {}
        addrs = [addr for _, addr in hits]
        for addr in addrs:
            counts[addr.segment_ord] += 1
        chosen = [addr for addr in addrs if addr.segment_ord in wanted]
        for addr, sid in zip(chosen, searcher.fast_field_values("sid", chosen), strict=True):
            one_per_sid.setdefault(int(sid or 0), addr)
        sessions = {str(load_meta(searcher.doc(addr))[0]) for addr in one_per_sid.values()}
        return counts, sessions

    # ---- counts ----------------------------------------------------------------------------------
    def num_docs(self) -> int:
        """Documents in the visible snapshot."""
        searcher = self._searcher()
        return 0 if searcher is None else int(searcher.num_docs)

    # ---- search ----------------------------------------------------------------------------------
    def _prepare(self, query: str, limit: int) -> tuple[tantivy.Searcher | None, list[str]]:
        """The snapshot to search and the query's tokens; no searcher when nothing can
        match (no index yet, or a query without tokens). A zero limit would panic."""
        if limit < 1:
            raise ValueError("limit must be positive")
        tokens = analyze(query)
        searcher = self._searcher() if tokens else None
        return searcher, tokens

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
        Returns at most ``limit`` hits and whether another qualifying session exists:
        ``ranking.rank_sessions`` settles ``limit + 1`` sessions over one snapshot.
        """
        searcher, tokens = self._prepare(query, limit)
        if searcher is None:
            return [], False
        try:
            base = base_clauses(
                self._schema, tokens, session_filters, event_filters, live_ids, exclude_session_ids
            )
        except Nothing:
            return [], False
        try:
            ordered = rank_sessions(searcher, self._schema, base, limit + 1)
            hits = [event_hit(searcher, c.addr, tokens, snippet_chars) for c in ordered[:limit]]
        except ValueError as exc:
            raise IndexFailedError(f"session search failed: {exc}") from exc
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
        """One session's documents by score desc, time desc, seq desc
        (``ranking.rank_events``)."""
        searcher, tokens = self._prepare(query, limit)
        if searcher is None:
            return [], False
        try:
            only = [IdFilter((session_id,))]
            clauses = base_clauses(self._schema, tokens, only, filters, _NO_IDS, _NO_IDS)
        except Nothing:
            return [], False
        try:
            cands = rank_events(searcher, clauses, limit + 1)
            hits = [event_hit(searcher, c.addr, tokens, snippet_chars) for c in cands[:limit]]
        except ValueError as exc:
            raise IndexFailedError(f"event search failed: {exc}") from exc
        return hits, len(cands) > limit
