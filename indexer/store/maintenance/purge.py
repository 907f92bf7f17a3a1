"""Physical purge: an erased session's text leaves the data dir's files, not only the
search results.

A delete record removes a session's rows and index documents, but both engines keep the
bytes for a while: Tantivy marks deleted documents in a bitset and keeps their stored
text, terms and positions in the segment files until the segment is rewritten; SQLite
keeps freed cells in its pages and older page images in the WAL. The policy:

* **SQLite**: the writer connection runs with ``secure_delete = ON`` (``SqliteTables``),
  so freed cells and pages are zeroed as they are freed; a pass then checkpoints the WAL
  into the database and truncates it (``wal_checkpoint(TRUNCATE)``), so no page image
  from before the delete survives. Before that, a zstd dictionary trained from a sample
  that held the deleted session is replaced and deleted (``indexer.store.blocks.dictionaries``).
  A reader holding an older snapshot can keep the
  checkpoint from completing: the pass then stays pending and the next one retries.
* **Tantivy** (tantivy-py exposes no merge call): a segment whose every document is
  deleted is dropped at the next commit and its files are garbage-collected. A pass waits
  for running merges, finds the segments that gained deleted documents since the last
  pass (*dirty*), re-indexes from the committed rows every session that still has a live
  document in one of them (delete-then-add moves its documents to a new segment), commits
  and waits again, then collects the unreferenced files. Search results do not change:
  the re-indexed documents are the ones the rows imply.

When: after the commit that applied a delete (``Store.commit``), at most one pass per
``min_interval_s``; a delete that arrives sooner is purged by the first commit or idle
tick (``Store.purge_if_due``) after the interval. The pending state is written to
``meta`` in the delete's own transaction, so a restart purges at its first commit or
tick; a data dir written before this policy that holds deleted documents gets one pass
over every segment with deletions.

The cost of a pass is re-indexing the sessions that share a dirty segment (measured in
``docs/operations.md``, "Retention and erasure").
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import orjson

from indexer.store.blocks.dictionaries import Dictionaries
from indexer.store.tables.sqlite_tables import SqliteTables
from indexer.store.tantivy import TantivyIndex

log = logging.getLogger("sessionq.purge")

PENDING_KEY: Final = "purge_pending"
MIN_INTERVAL_S: Final = 60.0  # at most one pass a minute while deletes keep coming


@dataclass(frozen=True, slots=True)
class Segment:
    """One segment as ``meta.json`` lists it."""

    id: str
    max_doc: int
    deleted: int

    @property
    def live(self) -> int:
        return self.max_doc - self.deleted


def read_segments(index_dir: Path) -> list[Segment]:
    """The committed segments, in ``meta.json`` order (the searcher's segment order)."""
    try:
        meta = orjson.loads((index_dir / "meta.json").read_bytes())
    except FileNotFoundError:
        return []
    out = []
    for seg in meta.get("segments", []):
        deletes = seg.get("deletes") or {}
        out.append(
            Segment(
                str(seg["segment_id"]), int(seg["max_doc"]), int(deletes.get("num_deleted_docs", 0))
            )
        )
    return out


def dirty_segments(segments: Iterable[Segment], baseline: dict[str, int]) -> list[int]:
    """Positions of the segments with more deleted documents than ``baseline`` knew
    (a segment the baseline does not list knew none)."""
    return [i for i, s in enumerate(segments) if s.deleted > baseline.get(s.id, 0)]


@dataclass(frozen=True, slots=True)
class PurgeReport:
    """What one pass did."""

    segments: int  # dirty segments rewritten
    sessions: int  # sessions re-indexed to empty them
    documents: int  # documents re-indexed
    wal_truncated: bool
    complete: bool  # nothing of an erasure is left for a later pass
    seconds: float


class Purger:
    """Runs purge passes over one data dir's tables and index (the writer side)."""

    def __init__(
        self,
        tables: SqliteTables,
        index: TantivyIndex,
        reindex: Callable[[list[str]], int],
        dictionaries: Dictionaries,
        *,
        min_interval_s: float | None = MIN_INTERVAL_S,
        on_pass: Callable[[PurgeReport], None] | None = None,
    ) -> None:
        """``reindex`` stages the documents of the given sessions anew from the committed
        rows (``StoreWriter.reindex``). ``min_interval_s`` None disables purging (the data
        dir then keeps erased bytes until Tantivy merges on its own: tests compare)."""
        self.tables = tables
        self.index = index
        self._reindex = reindex
        self.dictionaries = dictionaries
        self.min_interval_s = min_interval_s
        self._on_pass = on_pass
        recorded = tables.get_meta(PENDING_KEY)
        # Never recorded: a data dir from before this policy may hold erased documents.
        self.pending = (
            recorded == "1"
            or dictionaries.retired()
            or (recorded is None and any(s.deleted for s in read_segments(index.path)))
        )
        # Deleted-document counts known to hold no erased document. With a pass pending
        # from before the start nothing is known: every segment with deletions is dirty.
        self._baseline: dict[str, int] = (
            {} if self.pending else {s.id: s.deleted for s in read_segments(index.path)}
        )
        self._last_pass = float("-inf")
        self.passes = 0
        self.last: PurgeReport | None = None

    def note_erasure(self) -> None:
        """A delete was applied in the open batch: record it in the same transaction."""
        if self.min_interval_s is None:
            return
        self.pending = True
        self.tables.set_meta(PENDING_KEY, "1")

    def due(self, now: float | None = None) -> bool:
        if not self.pending or self.min_interval_s is None:
            return False
        now = time.monotonic() if now is None else now
        return now - self._last_pass >= self.min_interval_s

    def after_commit(self) -> PurgeReport | None:
        """After a batch committed: run a pass if one is due, else refresh the baseline
        (the deletions of a batch without erasures are re-delivered or re-classified
        documents, whose text is still the store's)."""
        if self.due():
            return self.run()
        if not self.pending:
            self._baseline = {s.id: s.deleted for s in read_segments(self.index.path)}
        return None

    def run_if_due(self) -> PurgeReport | None:
        """An idle tick; never while a batch is open (the pass commits on its own)."""
        if self.tables.tx.open:
            return None
        return self.run() if self.due() else None

    def run(self) -> PurgeReport:
        """One pass (module docstring); a failure is logged and leaves the pass pending."""
        started = time.perf_counter()
        now = time.monotonic()
        try:
            report = self._pass(started)
        except Exception:
            log.exception("purge pass failed; retrying at the next pass")
            try:
                self.index.rollback()
            except Exception:  # the writer itself is gone: the index cannot be written
                log.exception("purge: rolling the index writer back failed")
            report = PurgeReport(0, 0, 0, False, False, time.perf_counter() - started)
        if report.segments or not report.complete:
            self._last_pass = now  # a pass that found nothing to rewrite costs no interval
        self.passes += 1
        self.last = report
        if report.complete:
            self._settled()
        log.info(
            "purge pass: %d segments rewritten (%d sessions, %d documents re-indexed), WAL %s,"
            " %s in %.3f s",
            report.segments,
            report.sessions,
            report.documents,
            "truncated" if report.wal_truncated else "not truncated (a reader holds it)",
            "complete" if report.complete else "pending",
            report.seconds,
        )
        if self._on_pass is not None:
            self._on_pass(report)
        return report

    def _settled(self) -> None:
        """Record that nothing is pending; if that write fails, the pass counts as
        pending still (a later one finds nothing left and records it)."""
        try:
            with self.tables.tx.step():
                self.tables.set_meta(PENDING_KEY, "0")
        except sqlite3.Error:
            log.exception("purge: recording the finished pass failed")
            return
        self.pending = False

    def _pass(self, started: float) -> PurgeReport:
        path = self.index.path
        rewritten, sessions, documents = 0, 0, 0
        leftover: set[str] = set()
        if dirty_segments(read_segments(path), self._baseline):
            self.index.settle()  # merges done: meta.json and the searcher agree
            segments = read_segments(path)
            dirty = dirty_segments(segments, self._baseline)
            counts, found = self.index.segment_sessions(dirty)
            if counts != [s.live for s in segments]:
                # The segment order did not match meta.json: rewrite every session.
                log.warning("purge: segment layout not recognized; re-indexing every session")
                counts, found = self.index.segment_sessions(range(len(segments)))
            documents = self._reindex(sorted(found)) if found else 0
            self.index.commit()
            self.index.settle()
            dirty_ids = {segments[i].id for i in dirty}
            leftover = dirty_ids & {s.id for s in read_segments(path)}
            rewritten, sessions = len(dirty_ids) - len(leftover), len(found)
            if leftover:
                log.warning("purge: %d dirty segments remain after the pass", len(leftover))
        # A dictionary sampled from a deleted session goes before the WAL is truncated.
        dictionaries_clean = self.dictionaries.retire()
        wal_truncated = self.tables.truncate_wal()
        # A segment left dirty stays out of the baseline: the next pass rewrites it.
        self._baseline = {s.id: s.deleted for s in read_segments(path) if s.id not in leftover}
        complete = wal_truncated and not leftover and dictionaries_clean
        return PurgeReport(
            rewritten, sessions, documents, wal_truncated, complete, time.perf_counter() - started
        )
