"""Logs once: ingest session log files (dsh logs and roots, Claude Code and Codex trees
through ``indexer.logs.importers``) into a data directory (``sessionq ingest``).

A file is read as a stream of bounded pieces (``indexer.logs.reader.LogPieces``: a dsh
log of any size; another agent's log is one piece), each applied through the record
loop (``indexer.sources.loop``) as soon as it is read — a header and events, as Kafka
records are — and the batch commits every ``commit_every_events`` events, inside a
file as between files, or sooner when the batch holds the store's bound of bytes
(``Store.batch_full``). What is held at once is a piece and the batch's index work, up
to that bound, whatever the files hold.

A log of one piece (``PIECE_EVENTS``, 20,000 events: nearly every log) is one unit of
work: its events apply together or not at all, so a rejected file leaves nothing
behind and never stops the others. A longer log is a stream, as its Kafka topic would
be: a rejection after its first piece — a broken line at event 900,000 — leaves every
event before the broken line stored and the session *held* there with the file's
reason, as a Kafka seq gap holds it (``indexer.store.records.store``); ingesting the
mended file drops the stored prefix as an identical re-delivery and goes on. Undoing
the whole file instead would keep the batch open across it, and Tantivy keeps every
staged delete until a commit (about 1.4 KB each), so memory would grow with the log;
deleting the session would lose what an earlier ingest stored of it.

Policy on the loop's outcomes: a file refused by the store (or one that cannot be read)
is reported with its reason; a lost batch reports every file of that batch, and ingest
carries on with the next ones. The caller holds the data dir's writer lease
(``indexer.store.lease``) for the whole run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from indexer.errors import BatchAbortedError
from indexer.logs.importers.detect import LogSource, read_source_pieces
from indexer.logs.reader import PIECE_EVENTS, LogRejectedError, NoConversationError
from indexer.sources.loop import RecordLoop, Result
from indexer.sources.parallel import Compression, Outcome, PoolStats, prepared, worth_a_pool
from indexer.store.records.store import Store


@dataclass(slots=True)
class Rejection:
    path: Path
    reason: str
    skipped: bool = False  # a file with no conversation, not a broken log

@dataclass(slots=True)
class _Counts:
    sessions: int = 0
    unchanged: int = 0
    events: int = 0
    documents: int = 0


@dataclass(slots=True)
class IngestSummary(_Counts):
    files: int = 0
    rejected: list[Rejection] = field(default_factory=list)
    # The first lost batch's cause (e.g. "disk full: …") and how many files it cost.
    lost: str | None = None
    lost_files: int = 0
    commits: int = 0  # batches made durable
    # CPU seconds the worker processes spent (``jobs`` > 1), besides this process's own.
    worker_cpu_seconds: float = 0.0

    @property
    def readable(self) -> bool:
        """False only when files holding a conversation were given and none of them could
        be read (a file with no conversation holds nothing to store, read or not)."""
        skipped = sum(r.skipped for r in self.rejected)
        conversations = self.files - skipped
        return conversations == 0 or len(self.rejected) - skipped < conversations

    def add(self, counts: _Counts) -> None:
        self.sessions += counts.sessions
        self.unchanged += counts.unchanged
        self.events += counts.events
        self.documents += counts.documents


class _Batch:
    """What the open (uncommitted) batch holds, so a lost batch is reported file by file."""

    def __init__(self) -> None:
        self.files: list[Path] = []
        self.counts = _Counts()

    def clear(self) -> None:
        self.files.clear()
        self.counts = _Counts()


def _lost(files: list[Path], exc: BatchAbortedError, summary: IngestSummary) -> list[Rejection]:
    if summary.lost is None:
        summary.lost = exc.message
    summary.lost_files += len(files)
    return [Rejection(p, f"{p}: not stored: {exc.message}") for p in files]


def _commit(loop: RecordLoop, batch: _Batch, summary: IngestSummary) -> bool:
    """Commit the open batch; False when it was lost (its files are reported)."""
    try:
        loop.commit()
    except BatchAbortedError as exc:
        summary.rejected.extend(_lost(batch.files, exc, summary))
        batch.clear()
        return False
    summary.add(batch.counts)
    summary.commits += 1
    batch.clear()
    return True


def ingest_files(
    store: Store,
    files: Iterable[Path | LogSource],
    *,
    commit_every_events: int = 200_000,
    on_file: Callable[[Path], None] | None = None,
    jobs: int = 1,
    piece_events: int = PIECE_EVENTS,
) -> IngestSummary:
    """Apply every log (a bare path is a dsh log); commit every ``commit_every_events``
    events and at the end. ``jobs`` > 1 reads and plans the files in that many worker
    processes (``indexer.sources.parallel``); the result is the same, file for file.
    ``piece_events``: the events of one piece (module docstring)."""
    items = list(files)
    loop = RecordLoop(store)
    summary = IngestSummary()
    batch = _Batch()
    pool = PoolStats()
    if jobs > 1 and worth_a_pool(items):
        outcomes: Iterable[tuple[Path | LogSource, Outcome]] = prepared(
            items, jobs, lambda: _compression(store), pool, store.redaction, piece_events
        )
    else:
        outcomes = ((item, LOCAL) for item in items)
    for item, outcome in outcomes:
        path = item.path if isinstance(item, LogSource) else item
        summary.files += 1
        _File(loop, batch, summary, path, commit_every_events).ingest(item, outcome, piece_events)
        if on_file is not None:
            on_file(path)
    _commit(loop, batch, summary)
    summary.worker_cpu_seconds = pool.cpu_seconds
    return summary


LOCAL: Final = Outcome("local")


def _compression(store: Store) -> Compression:
    did, data = store.tables.block_dictionary()
    return Compression(did, data, store.tables.blocks.sealed_level)


class _File:
    """One file through the loop: its pieces applied in order and counted in the open
    batch, which commits when it is due; a rejection after some of its events were
    applied holds the session (module docstring)."""

    def __init__(
        self, loop: RecordLoop, batch: _Batch, summary: IngestSummary, path: Path, every: int
    ) -> None:
        self.loop, self.batch, self.summary, self.path = loop, batch, summary, path
        self.every = every
        self.session: str | None = None
        self.next_seq = 0  # after the events applied from the file
        self.grew = False  # some of its events were new to the store

    def ingest(self, item: Path | LogSource, outcome: Outcome, piece_events: int) -> None:
        path, summary = self.path, self.summary
        try:
            if outcome.kind == "rejected":
                summary.rejected.append(Rejection(path, outcome.reason, outcome.skipped))
                return
            fresh = outcome.fresh
            result = None if fresh is None else self.loop.apply_fresh(fresh)
            if fresh is not None and result is not None:
                if not (self._applied(result, fresh.header.id, 0) and self._commit_if_due()):
                    return
            else:
                for piece in read_source_pieces(item, max_events=piece_events):
                    start = piece.fold.start if piece.fold is not None else 0
                    end = start + len(piece.events)
                    if not self._applied(self.loop.apply(piece), piece.header.id, end):
                        return
                    del piece  # applied: not held while the next one is read
                    if not self._commit_if_due():
                        return  # reported with its batch; the rest would be a gap
        except LogRejectedError as exc:
            self._reject(str(exc), skipped=isinstance(exc, NoConversationError))
            return
        except OSError as exc:
            self._reject(f"{path}: cannot read: {exc}")
            return
        except BatchAbortedError as exc:
            self._lost(exc)
            return
        except Exception as exc:  # whatever else reading one file raises is its rejection
            self._reject(f"{path}: cannot be read: {type(exc).__name__}: {exc}")
            return
        if not self.grew:
            self.batch.counts.unchanged += 1

    def _applied(self, result: Result, session: str, end: int) -> bool:
        """Count one piece in the open batch; False (the file rejected) when refused."""
        if result.error is not None:
            self._reject(f"{self.path}: {result.error.message}")
            return False
        applied = result.applied
        assert applied is not None
        batch = self.batch
        if batch.files[-1:] != [self.path]:
            batch.files.append(self.path)
        if not applied.noop:
            batch.counts.sessions += not self.grew
            batch.counts.events += applied.events
            batch.counts.documents += applied.documents
            self.grew = True
        self.session, self.next_seq = session, end
        return True

    def _commit_if_due(self) -> bool:
        """Commit when the open batch holds ``every`` events or the store's bound of
        bytes (``Store.batch_full``); False when it was lost."""
        if self.batch.counts.events < self.every and not self.loop.store.batch_full:
            return True
        return _commit(self.loop, self.batch, self.summary)

    def _reject(self, reason: str, *, skipped: bool = False) -> None:
        """Report the file; a session it grew is held after the last event applied."""
        if self.grew and self.session is not None:
            reason += f" (events before seq {self.next_seq} are stored; the session is held)"
            try:
                self.loop.store.hold(self.session, reason)
            except BatchAbortedError as exc:
                self._lost(exc)
                return
        self.summary.rejected.append(Rejection(self.path, reason, skipped))

    def _lost(self, exc: BatchAbortedError) -> None:
        files = self.batch.files + ([] if self.batch.files[-1:] == [self.path] else [self.path])
        self.summary.rejected.extend(_lost(files, exc, self.summary))
        self.batch.clear()
