"""The writer's half of the local source: watched logs -> records -> the record loop.

Runs only in the process that holds the writer lease, in worker threads (the store is
synchronous). Order of one pass: the watcher reads what changed (``LogWatcher``), lazily,
``CHUNK_RECORDS`` records at a time -> each record goes through the record loop
(``indexer.sources.loop``) -> after each chunk the batch commits, together with the
signature of each log whose records all applied (``Store.note_source``), so a later
writer reads again exactly the logs that changed since. What a pass holds is a chunk of
records and the piece of a log being read, however long the logs are.

Policy on the loop's outcomes:

* applied — counted; the log's signature is recorded with its last record;
* refused by the store, the record's content (``RecordRejectedError``) — logged and
  counted, the rest goes on; the log is read again when it changes. A conflict with what
  the store holds for a session *this log provided* (``SEQ_CONFLICT``,
  ``SOURCE_CONFLICT``), or a log shorter than what it provided, means the log was
  rewritten: the session is deleted and read again from the file, which is the truth
  for a watched session. So does a conflict with a session an older release imported
  (``stale_imports``: its events are in that release's mapping). A conflict with a
  session another log provided is an ordinary rejection (two copies of one session);
* failed for another reason (``Result.failed``) — the session is read again on the
  next pass (``LogWatcher.rewind``);
* the batch lost (``BatchAbortedError``) — every session of the batch is read again on
  the next pass; ``store_error`` names the cause until a batch commits again.

Reconcile (the first pass after taking the lease): a session the store recorded as
applied from a log under a watched root, whose log is gone (or, for a session of an
Aider history, whose session is no longer in it), is deleted — unless its root could
not be walked. Sessions ingested from other paths, or watched under roots
nobody watches now, have no such log and are never reconciled away.
"""

from __future__ import annotations

import itertools
import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from indexer.errors import SEQ_CONFLICT, SOURCE_CONFLICT, BatchAbortedError
from indexer.logs.emitted import Emitted
from indexer.logs.reader import PIECE_EVENTS
from indexer.logs.watch import LogWatcher, WatchRoot
from indexer.model.records import DeleteRecord, record_session_id
from indexer.sources.loop import RecordLoop
from indexer.store.records.store import Store

log = logging.getLogger("sessionq.sources")
CHUNK_RECORDS: Final = 200  # records between two commits (and two checks to stop)
CHUNK_EVENTS: Final = PIECE_EVENTS  # or this many events, so a chunk holds about a piece
REWRITTEN_CODES: Final = frozenset({SEQ_CONFLICT, SOURCE_CONFLICT})


@dataclass(slots=True)
class ApplyStatus:
    """What the writer did so far (``/v1/status``, ``/readyz``)."""

    applied_records: int = 0
    rejected_records: int = 0
    last_applied_at: float | None = None
    last_scan_at: float | None = None
    pending_changes: int = 0
    rejected: dict[str, str] = field(default_factory=dict)
    store_error: str | None = None  # why the latest batch was not stored (e.g. disk full)


def _delete(session_id: str) -> Emitted:
    return Emitted(f"session:{session_id}", DeleteRecord(v=1, kind="delete", session_id=session_id))


def _under(path: str, roots: Sequence[WatchRoot]) -> bool:
    target = Path(path)
    return any(target.is_relative_to(r.path.resolve()) for r in roots)


class Applier:
    """Watched logs applied to one store (module docstring). Not thread-safe: one pass
    at a time (the local source runs them one after another)."""

    def __init__(
        self,
        store: Store,
        loop: RecordLoop,
        roots: Sequence[WatchRoot],
        status: ApplyStatus,
        stopping: Callable[[], bool],
    ) -> None:
        self.store = store
        self.loop = loop
        self.status = status
        self.stopping = stopping
        self.watcher = LogWatcher(list(roots))
        self._resolved: dict[Path, str] = {}

    @property
    def roots(self) -> tuple[WatchRoot, ...]:
        return tuple(self.watcher.roots)

    def _real(self, path: Path) -> str:
        real = self._resolved.get(path)
        if real is None:
            real = self._resolved[path] = str(path.resolve())
        return real

    # ---- passes -------------------------------------------------------------------------------
    def first_pass(self) -> bool:
        """Seed from the stored state, reconcile, read what changed; False when it was
        cut short (stopping)."""
        recorded = self.store.tables.watched_sources()
        by_path = {w.path: (sid, w) for sid, w in recorded.items()}
        sources, failed = self.watcher.discover()
        for source in sources.values():
            sid = source.session_id  # an Aider history's session: one file, many sessions
            known = by_path.get(self._real(source.path)) if sid is None else None
            if sid is not None and sid in recorded:
                known = sid, recorded[sid]
            if known is not None and known[1].signature is not None:
                sid, w = known
                assert w.signature is not None
                self.watcher.seed(source, sid, f"session:{sid}", w.next_seq, w.signature)
        present = {self._real(s.path) for s in sources.values()}
        listed = {s.session_id for s in sources.values() if s.section is not None}
        histories = {self._real(s.path) for s in sources.values() if s.section is not None}
        gone = [
            sid
            for sid, w in sorted(recorded.items())
            if (w.path not in present or (w.path in histories and sid not in listed))
            and _under(w.path, self.roots)
            and not any(Path(w.path).is_relative_to(f.resolve()) for f in failed)
        ]
        for sid in gone:
            log.info(
                "log of session %s (%s) is gone: deleting the session", sid, recorded[sid].path
            )
        deletes = [_delete(sid) for sid in gone]
        return self._run(itertools.chain(deletes, self.watcher.scan((sources, failed))))

    def rescan(self, roots: Sequence[WatchRoot] | None = None) -> bool:
        """Walk every root (new roots given: watch those from now on), their layouts
        probed again."""
        self.watcher.forget_layouts()
        if roots is not None and tuple(roots) != self.roots:
            self.watcher.roots = list(roots)
        return self._run(self.watcher.scan())

    def changed(self, paths: Iterable[Path]) -> bool:
        """Read again the logs the notifications named; walk when they name more."""
        items, walk = self.watcher.scan_paths(paths)
        if walk:  # the walk starts once the named logs are read
            items = itertools.chain(items, _later(self.watcher.scan))
        return self._run(items)

    @property
    def retry_due(self) -> bool:
        """Records failed or a batch was lost: their logs are to be read again."""
        return self.watcher.rewound()

    def retry(self) -> bool:
        """Read again what a failed record or a lost batch left (``retry_due``)."""
        return self._run(self.watcher.retry())

    # ---- one pass -----------------------------------------------------------------------------
    def _run(self, items: Iterable[Emitted]) -> bool:
        self.status.last_scan_at = time.time()
        recorded = {sid: w.path for sid, w in self.store.tables.watched_sources().items()}
        rewritten: set[str] = set()
        for chunk in _chunks(items, self._status):
            self.status.rejected = dict(self.watcher.rejected)
            if self.stopping():
                return False
            for item in chunk:
                if item.final and item.whole and self._shortened(item, recorded):
                    rewritten.add(record_session_id(item.record))
            self._apply_chunk(chunk, rewritten, recorded)
        self.status.rejected = dict(self.watcher.rejected)
        self.status.pending_changes = 0
        if rewritten:
            self._reread(rewritten)
        return True

    def _status(self, held: int) -> None:
        self.status.pending_changes = held + self.watcher.pending

    def _shortened(self, item: Emitted, recorded: dict[str, str]) -> bool:
        """Whether the log of ``item``, read whole in this pass (its last record), holds
        fewer events than the store has from it: rewritten. The earlier records of that
        log are identical re-deliveries (or conflicts: rewritten too), so asking the
        store now is asking what it held before the pass."""
        sid, path = record_session_id(item.record), item.path
        assert path is not None
        state = self.store.tables.session_state(sid)
        read = self.watcher.sources().get(sid, (path, 0))[1]
        if state is None or state.next_seq <= read or recorded.get(sid) != self._real(path):
            return False
        log.warning("log of session %s (%s) is shorter than stored: reading it again", sid, path)
        return True

    def _apply_chunk(
        self,
        items: Sequence[Emitted],
        rewritten: set[str],
        recorded: dict[str, str],
    ) -> None:
        retry: set[str] = set()
        broken: set[str] = set()  # sessions with a record not applied in this pass
        applied_now = 0
        try:
            for item in items:
                sid = record_session_id(item.record)
                if sid in rewritten:
                    continue
                result = self.loop.apply(item.record)
                if result.error is None:
                    assert result.applied is not None
                    applied_now += 0 if result.applied.noop else 1
                    if item.path is not None and item.final and sid not in broken:
                        self.store.note_source(sid, self._real(item.path), item.signature)
                    continue
                broken.add(sid)
                error = result.error
                if result.failed:
                    log.error(
                        "failed %s record of %s, reading it again: %s",
                        item.record.kind,
                        item.key,
                        error.message,
                    )
                    self.status.store_error = error.message
                    retry.add(sid)
                elif (
                    error.code in REWRITTEN_CODES
                    and item.path is not None
                    and (
                        recorded.get(sid) == self._real(item.path)
                        or self.store.tables.stale_import(sid)
                    )
                ):
                    log.warning(
                        "log of session %s was rewritten (%s): reading it again", sid, error.message
                    )
                    rewritten.add(sid)
                else:
                    self.status.rejected_records += 1
                    log.warning("rejected %s record of %s: %s", item.record.kind, item.key, error)
            self.loop.commit()
        except BatchAbortedError as exc:
            log.error("batch lost, reading its logs again: %s", exc.message)
            self.status.store_error = exc.message
            self.watcher.rewind({record_session_id(i.record) for i in items})
            return
        if not retry:
            self.status.store_error = None
        self.watcher.rewind(retry)
        self.status.applied_records += applied_now
        self.status.last_applied_at = time.time()

    def _reread(self, session_ids: set[str]) -> None:
        """Delete rewritten sessions, then read their logs again from the start."""
        deletes = [_delete(sid) for sid in sorted(session_ids)]
        self._apply_chunk(deletes, set(), {})
        self.watcher.rewind(session_ids)
        paths = [p for sid, (p, _) in self.watcher.sources().items() if sid in session_ids]
        items, _ = self.watcher.scan_paths(paths)
        for chunk in _chunks(items, self._status):
            self._apply_chunk(chunk, set(), {})


def _later(scan: Callable[[], Iterator[Emitted]]) -> Iterator[Emitted]:
    """``scan()``, called once the first record is asked for."""
    yield from scan()


def _chunks(items: Iterable[Emitted], status: Callable[[int], None]) -> Iterator[list[Emitted]]:
    """``items`` in lists of ``CHUNK_RECORDS`` records or ``CHUNK_EVENTS`` events, taken
    as they are needed; ``status`` is told how many records are in hand before each
    list goes out."""
    chunk: list[Emitted] = []
    events = 0
    for item in items:
        chunk.append(item)
        events += item.events
        if len(chunk) == CHUNK_RECORDS or events >= CHUNK_EVENTS:
            status(len(chunk))
            yield chunk
            chunk, events = [], 0
    if chunk:
        status(len(chunk))
        yield chunk


def file_count(roots: Sequence[WatchRoot]) -> int:
    """Regular files under the roots (for the log line of a start)."""
    n = 0
    for root in roots:
        for _dirpath, _dirnames, filenames in os.walk(root.path):
            n += len(filenames)
    return n
