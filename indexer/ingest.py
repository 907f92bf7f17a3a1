"""Ingest dsh session log files (or dsh persistence roots) into a data directory.

Each file is applied as a ``header`` record plus one ``events`` record, exactly what the
Kafka indexer would apply, inside a savepoint: a rejected file leaves nothing behind and
never stops the others.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from indexer.errors import RecordRejectedError
from indexer.logs.reader import LogRejectedError, read_log
from indexer.logs.roots import discover
from indexer.storage import Store
from indexer.store.sqlite_tables import Savepoint


@dataclass(slots=True)
class Rejection:
    path: Path
    reason: str


@dataclass(slots=True)
class IngestSummary:
    files: int = 0
    sessions: int = 0
    unchanged: int = 0
    events: int = 0
    documents: int = 0
    rejected: list[Rejection] = field(default_factory=list)

    @property
    def readable(self) -> bool:
        """False only when files were given and none of them could be read."""
        return self.files == 0 or len(self.rejected) < self.files


def ingest_files(
    store: Store,
    files: Iterable[Path],
    *,
    commit_every_events: int = 200_000,
    on_file: Callable[[Path], None] | None = None,
) -> IngestSummary:
    """Apply every log; commit every ``commit_every_events`` events and at the end."""
    summary = IngestSummary()
    pending = 0
    for path in files:
        summary.files += 1
        try:
            log = read_log(path)
        except LogRejectedError as exc:
            summary.rejected.append(Rejection(path, str(exc)))
        except OSError as exc:
            summary.rejected.append(Rejection(path, f"{path}: cannot read: {exc}"))
        else:
            try:
                with Savepoint(store.tables, "ingest_file"):
                    head = store.writer.apply_header(log.header)
                    applied = (
                        store.writer.apply_events(log.header.id, log.events, folded=log.fold)
                        if log.events
                        else None
                    )
            except RecordRejectedError as exc:
                summary.rejected.append(Rejection(path, f"{path}: {exc.message}"))
            else:
                if applied is None or applied.noop:
                    if head.noop:
                        summary.unchanged += 1
                    else:
                        summary.sessions += 1
                else:
                    summary.sessions += 1
                    summary.events += applied.events
                    summary.documents += applied.documents
                    pending += applied.events
            if pending >= commit_every_events:
                store.commit()
                pending = 0
        if on_file is not None:
            on_file(path)
    store.commit()
    return summary


def ingest_paths(
    store: Store,
    paths: Sequence[Path],
    *,
    on_file: Callable[[Path], None] | None = None,
) -> IngestSummary:
    return ingest_files(store, discover(paths), on_file=on_file)
