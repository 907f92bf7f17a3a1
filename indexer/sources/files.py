"""Logs once: ingest session log files (dsh logs and roots, Claude Code and Codex trees
through ``indexer.logs.importers``) into a data directory (``sessionq ingest``).

Each file is one unit of the record loop (``indexer.sources.loop``): its header and its
events apply together or not at all, so a rejected file leaves nothing behind and never
stops the others. Policy on the loop's outcomes: a file refused by the store (or one
that cannot be read) is reported with its reason; a lost batch reports every file of
that batch, and ingest carries on with the next ones. The caller holds the data dir's
writer lease (``indexer.store.lease``) for the whole run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from indexer.errors import BatchAbortedError
from indexer.logs.importers.detect import LogSource, read_source
from indexer.logs.reader import LogRejectedError
from indexer.sources.loop import RecordLoop, Result
from indexer.sources.parallel import Compression, Outcome, PoolStats, prepared, worth_a_pool
from indexer.store.records.store import Store


@dataclass(slots=True)
class Rejection:
    path: Path
    reason: str


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
    # CPU seconds the worker processes spent (``jobs`` > 1), besides this process's own.
    worker_cpu_seconds: float = 0.0

    @property
    def readable(self) -> bool:
        """False only when files were given and none of them could be read."""
        return self.files == 0 or len(self.rejected) < self.files

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


def _commit(loop: RecordLoop, batch: _Batch, summary: IngestSummary) -> None:
    try:
        loop.commit()
    except BatchAbortedError as exc:
        summary.rejected.extend(_lost(batch.files, exc, summary))
    else:
        summary.add(batch.counts)
    batch.clear()


def ingest_files(
    store: Store,
    files: Iterable[Path | LogSource],
    *,
    commit_every_events: int = 200_000,
    on_file: Callable[[Path], None] | None = None,
    jobs: int = 1,
) -> IngestSummary:
    """Apply every log (a bare path is a dsh log); commit every ``commit_every_events``
    events and at the end. ``jobs`` > 1 reads and plans the files in that many worker
    processes (``indexer.sources.parallel``); the result is the same, file for file."""
    items = list(files)
    loop = RecordLoop(store)
    summary = IngestSummary()
    batch = _Batch()
    pool = PoolStats()
    if jobs > 1 and worth_a_pool(items):
        outcomes: Iterable[tuple[Path | LogSource, Outcome]] = prepared(
            items, jobs, lambda: _compression(store), pool, store.redaction
        )
    else:
        outcomes = ((item, LOCAL) for item in items)
    for item, outcome in outcomes:
        path = item.path if isinstance(item, LogSource) else item
        summary.files += 1
        try:
            result = _apply(loop, item, outcome)
        except LogRejectedError as exc:
            summary.rejected.append(Rejection(path, str(exc)))
        except OSError as exc:
            summary.rejected.append(Rejection(path, f"{path}: cannot read: {exc}"))
        except BatchAbortedError as exc:
            summary.rejected.extend(_lost([*batch.files, path], exc, summary))
            batch.clear()
        else:
            if result is None:
                summary.rejected.append(Rejection(path, outcome.reason))
            elif result.error is not None:
                summary.rejected.append(Rejection(path, f"{path}: {result.error.message}"))
            else:
                applied = result.applied
                assert applied is not None
                batch.files.append(path)
                if applied.noop:
                    batch.counts.unchanged += 1
                else:
                    batch.counts.sessions += 1
                    batch.counts.events += applied.events
                    batch.counts.documents += applied.documents
                if batch.counts.events >= commit_every_events:
                    _commit(loop, batch, summary)
        if on_file is not None:
            on_file(path)
    _commit(loop, batch, summary)
    summary.worker_cpu_seconds = pool.cpu_seconds
    return summary


LOCAL: Final = Outcome("local")


def _compression(store: Store) -> Compression:
    did, data = store.tables.block_dictionary()
    return Compression(did, data, store.tables.blocks.sealed_level)


def _apply(loop: RecordLoop, item: Path | LogSource, outcome: Outcome) -> Result | None:
    """Apply one file's outcome; ``None`` = a worker's rejection (``outcome.reason``)."""
    if outcome.kind == "rejected":
        return None
    if outcome.fresh is not None:
        applied = loop.apply_fresh(outcome.fresh)
        if applied is not None:
            return applied
    return loop.apply(read_source(item))
