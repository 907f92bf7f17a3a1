"""``TantivyIndex``: the index directory's lifecycle, writes and searches.

Thin over the concern modules: documents are built by ``schema``, queries by
``queries``, ranked by ``ranking`` and turned into hits by ``highlight``.
"""

from __future__ import annotations

import os
import time as _time
from collections.abc import Callable, Collection, Iterable, Sequence
from pathlib import Path
from typing import Final

import tantivy

from indexer.errors import IndexFailedError
from indexer.model.search import EventHit, EventMetadataFilter, SessionFilter
from indexer.search_modes import SearchMode
from indexer.store.bounds import INDEX_HEAP_BYTES
from indexer.store.private import make_dirs
from indexer.store.tantivy import search
from indexer.store.tantivy.analyzer import ANALYZER, ANALYZER_NAME
from indexer.store.tantivy.ordinals import Ordinals
from indexer.store.tantivy.queries import session_seqs
from indexer.store.tantivy.schema import (
    IndexDoc,
    build_schema,
    document,
    open_or_create,
    raw_term,
    schema_of,
)
from indexer.store.tantivy.segments import segment_sessions
from indexer.store.tantivy.staging import QUERY, Staging
from indexer.store.tantivy.words import STEMS_ANALYZER, STEMS_ANALYZER_NAME

_OPEN_ATTEMPTS: Final = 5


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
        heap_bytes: int = INDEX_HEAP_BYTES,
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
        self._meta_path = str(path / "meta.json")
        # Session ordinals, allocated by the writer: never reused within a process, and
        # reused across processes only once no live document carries them.
        self._ordinals = Ordinals(self._searcher, self._schema)
        self._closed = False
        self._staging = Staging()
        if writable:
            make_dirs(path)
            index = open_or_create(self._schema, path)
            index.register_tokenizer(ANALYZER_NAME, ANALYZER)
            index.register_tokenizer(STEMS_ANALYZER_NAME, STEMS_ANALYZER)
            index.config_reader("Manual")
            self._index = index
            self._writer = index.writer(heap_size=heap_bytes, num_threads=threads)
            self._reload_index()
            self._ordinals.start_after_the_largest()
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
            index.register_tokenizer(STEMS_ANALYZER_NAME, STEMS_ANALYZER)
            index.config_reader("Manual")
            signature = self._signature()
            index.reload()
            # Field ids come from the on-disk schema, so queries are built against it.
            self._schema = index.schema
            self._index = index
            self._meta_signature = signature

        self._retrying("open", open_)

    def _signature(self) -> bytes | None:
        """The bytes of ``meta.json``: every commit rewrites it with a new opstamp. Read
        before reloading, so a commit landing in between is picked up next time (inode
        and mtime are not enough: inodes are reused and mtimes are coarse), by os calls:
        every search asks."""
        try:
            fd = os.open(self._meta_path, os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            return b"".join(iter(lambda: os.read(fd, 1 << 16), b""))
        finally:
            os.close(fd)

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
        if not self.writable and schema_of(signature) != schema_of(self._meta_signature):
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
        self._staging.clear()
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

    def upsert(
        self,
        docs: Iterable[IndexDoc],
        *,
        session: str | None = None,
        new_seqs: tuple[str, int, int] | None = None,
    ) -> None:
        """Stage each document: delete the document with its (session id, seq), then add.

        Tantivy applies a delete to documents added before it, so the add survives and
        applying the same document twice leaves one copy.

        ``session``: ``docs`` are all of that session's documents (its stored events are
        all new: a whole log, a first batch). Then one delete of the session replaces the
        delete per document (cheaper, and a leftover document of the session goes too),
        and the documents get a new ordinal unless this writer gave the session one
        already: none of the old documents survives the delete.

        ``new_seqs`` ``(session, first, end)``: that session's documents with a seq in
        ``[first, end)`` are of new events (a later piece or record); one delete of the
        range stands for theirs (a document a crash left there goes too), the others
        (older events re-added as shadowed) are deleted one by one.
        """
        self._require_writer()
        staging = self._staging
        mark = staging.mark()
        ordinal: int | None = None
        if session is not None:
            staging.add("session", raw_term(session), None)
            ordinal = self._ordinals.given(session)
        elif new_seqs is not None:
            staging.add(QUERY, session_seqs(self._schema, *new_seqs), None)
        for d in docs:
            try:
                if ordinal is not None:
                    assert d.session_id == session, "a document of another session"
                    # field "": an add without a delete (the session's delete covers it)
                    staging.add("", "", document(d, ordinal)[1])
                elif (
                    new_seqs is not None
                    and d.session_id == new_seqs[0]
                    and (new_seqs[1] <= d.seq < new_seqs[2])
                ):
                    staging.add(
                        "",
                        "",
                        document(d, self._ordinals.of(d.session_id))[1],
                    )
                else:
                    key, doc = document(d, self._ordinals.of(d.session_id))
                    staging.add("key", key, doc)
            except ValueError as exc:
                staging.rollback_to(mark)
                raise IndexFailedError(f"index document {d.session_id}#{d.seq}: {exc}") from exc

    def delete_session(self, session_id: str) -> None:
        """Stage the removal of every document of a session."""
        self._stage_delete("session", raw_term(session_id))

    def _stage_delete(self, field: str, value: str) -> None:
        self._require_writer()
        self._staging.add(field, value, None)

    def mark(self) -> int:
        """A point in the staged operations to roll back to."""
        return self._staging.mark()

    def rollback_to(self, mark: int) -> None:
        """Drop every operation staged after ``mark`` (nothing has reached the writer)."""
        self._staging.rollback_to(mark)

    @property
    def pending_bytes(self) -> int:
        """What the operations since the last commit hold (``staging``)."""
        return self._staging.pending_bytes

    def flush(self) -> None:
        """Hand the staged operations to the writer, in order (no longer undoable but by
        ``rollback``). On failure the caller rolls back."""
        writer = self._require_writer()
        try:
            for field, value, doc in self._staging.take():
                if field == QUERY:
                    writer.delete_documents_by_query(value)
                elif field:
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
        self._staging.clear()
        self._reload_index()

    def rollback(self) -> None:
        """Discard every change staged since the last commit."""
        self._staging.clear()
        self._require_writer().rollback()

    # ---- purge (indexer.store.maintenance.purge) ------------------------------------------------
    def settle(self) -> None:
        """Let running merges finish, then collect the files no commit refers to any more.

        Nothing may be staged. Waiting consumes Tantivy's writer (``wait_merging_threads``),
        so a new one takes its place; afterwards this instance sees the final segments and
        ``meta.json`` lists exactly them.
        """
        writer = self._require_writer()
        if self._staging.ops:
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
        """``segments.segment_sessions`` over the visible snapshot."""
        return segment_sessions(self._searcher(), ordinals)

    # ---- counts ----------------------------------------------------------------------------------
    def num_docs(self) -> int:
        """Documents in the visible snapshot."""
        searcher = self._searcher()
        return 0 if searcher is None else int(searcher.num_docs)

    # ---- search (``indexer.store.tantivy.search``) ---------------------------------------------
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
        mode: SearchMode = "phrase",
    ) -> tuple[list[EventHit], bool]:
        """Grouped search over the visible snapshot (``search.search_sessions``)."""
        return search.search_sessions(
            self._searcher(),
            self._schema,
            query,
            session_filters,
            event_filters,
            live_ids=live_ids,
            exclude_session_ids=exclude_session_ids,
            limit=limit,
            snippet_chars=snippet_chars,
            mode=mode,
        )

    def search_events(
        self,
        session_id: str,
        query: str,
        filters: Sequence[EventMetadataFilter],
        *,
        limit: int,
        snippet_chars: int = 240,
        mode: SearchMode = "phrase",
    ) -> tuple[list[EventHit], bool]:
        """One session's documents over the visible snapshot (``search.search_events``)."""
        return search.search_events(
            self._searcher(),
            self._schema,
            session_id,
            query,
            filters,
            limit=limit,
            snippet_chars=snippet_chars,
            mode=mode,
        )
