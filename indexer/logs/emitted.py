"""The records a log watcher emits (``indexer.logs.watch``), and how a log's events are
cut into records: each record names its session's routing key, the log it was read from
and the signature (size, mtime) the log had then, so a consumer that applied it can
remember which state of the file it holds.

A record of events stays under ``MAX_RECORD_BYTES`` of encoded events (one event at
least), so a long log becomes many records and none is larger than a Kafka message may be.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from indexer.model import SessionEvent
from indexer.model.records import EventStreamRecord

__all__ = ["MAX_RECORD_BYTES", "Emitted", "Signature", "event_batches", "file_signature"]

MAX_RECORD_BYTES = 1_000_000
Signature = tuple[int, int]  # (size, mtime_ns) of a log file when it was read


def event_batches(events: Sequence[SessionEvent], max_bytes: int) -> Iterator[list[SessionEvent]]:
    """Contiguous slices whose encoded size stays under ``max_bytes`` (one event at least)."""
    batch: list[SessionEvent] = []
    size = 0
    for e in events:
        if batch and size + len(e.raw) > max_bytes:
            yield batch
            batch, size = [], 0
        batch.append(e)
        size += len(e.raw) + 1
    if batch:
        yield batch


@dataclass(slots=True)
class Emitted:
    """One record plus the routing key of its session; header and events records name
    the log file and the signature it had when it was read, and ``log``: the log as
    reports name it (``LogSource.name``: the file, or one session of an Aider history)."""

    key: str
    record: EventStreamRecord
    events: int = 0
    path: Path | None = None
    signature: Signature | None = None
    final: bool = False  # the last record read from its log in this scan
    whole: bool = False  # the log was emitted from its header (not only a tail)
    log: str | None = None


def file_signature(st: os.stat_result) -> Signature:
    return (st.st_size, st.st_mtime_ns)
