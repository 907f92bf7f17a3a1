"""Turn a set of log files (or roots: dsh, Claude Code, Codex) into event-stream records,
once or repeatedly.

``LogWatcher.scan()`` re-reads only logs whose size or mtime changed and yields what is
new since the last scan: a ``header`` record for a new session, ``events`` records for
the tail beyond what was already emitted, and a ``delete`` record when a log disappears.
The publisher sends these to Kafka; the embedded service applies them directly.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from indexer.logs.importers.detect import LogFormat, LogSource, discover_sources, read_source
from indexer.logs.reader import LogRejectedError
from indexer.model import SessionEvent
from indexer.model.records import DeleteRecord, EventsRecord, EventStreamRecord, HeaderRecord

log = logging.getLogger("sessionq.watch")
MAX_RECORD_BYTES = 1_000_000


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
class _Tracked:
    signature: tuple[int, int] = (-1, -1)
    session_id: str | None = None
    next_seq: int = 0
    resend_header: bool = False


@dataclass(slots=True)
class Emitted:
    """One record plus the routing key of its session."""

    key: str
    record: EventStreamRecord
    events: int = 0
    path: Path | None = None  # the log file a header/events record was read from


@dataclass(slots=True)
class LogWatcher:
    paths: Sequence[Path]
    max_record_bytes: int = MAX_RECORD_BYTES
    format: LogFormat | None = None  # None: recognised per root and per file
    rejected: dict[str, str] = field(default_factory=dict)
    _files: dict[Path, _Tracked] = field(default_factory=dict)
    _keys: dict[str, str] = field(default_factory=dict)
    # session id -> routing key: deletes to send on the next scan (rewound), and the
    # deletes the last scan emitted (so a rewind can send them again)
    _deletes: dict[str, str] = field(default_factory=dict)
    _emitted_deletes: dict[str, str] = field(default_factory=dict)

    def scan(self) -> list[Emitted]:
        out: list[Emitted] = []
        sources = {s.path: s for s in discover_sources(self.paths, self.format)}
        present = set(sources)
        for path in sorted(present):
            out.extend(self._scan_file(sources[path]))
        deletes, self._deletes = self._deletes, {}
        for path in [p for p in self._files if p not in present]:
            tracked = self._files.pop(path)
            self.rejected.pop(str(path), None)
            if tracked.session_id is not None:
                sid = tracked.session_id
                deletes[sid] = self._keys.pop(sid, f"session:{sid}")
        self._emitted_deletes = deletes
        out.extend(
            Emitted(key, DeleteRecord(v=1, kind="delete", session_id=sid))
            for sid, key in deletes.items()
        )
        return out

    def sources(self) -> dict[str, tuple[Path, int]]:
        """Session id -> (log file, next seq emitted) of every log the last scans read."""
        return {
            t.session_id: (path, t.next_seq)
            for path, t in self._files.items()
            if t.session_id is not None
        }

    def unread(self) -> set[Path]:
        """Present logs whose session is not known (rejected or unreadable so far)."""
        return {path for path, t in self._files.items() if t.session_id is None}

    def rewind(self, session_ids: Iterable[str]) -> None:
        """Emit these sessions again on the next scan: what was emitted for them was not
        applied (a failed record or a lost batch). A log still present is read again
        from its header (the store drops what it already holds: identical
        re-deliveries are no-ops); a removed log's delete record is sent again."""
        wanted = set(session_ids)
        for tracked in self._files.values():
            if tracked.session_id in wanted:
                tracked.signature, tracked.next_seq, tracked.resend_header = (-1, -1), 0, True
        for sid, key in self._emitted_deletes.items():
            if sid in wanted:
                self._deletes[sid] = key

    def _scan_file(self, source: LogSource) -> list[Emitted]:
        path = source.path
        tracked = self._files.setdefault(path, _Tracked())
        try:
            st = path.stat()
        except OSError:
            return []
        signature = (st.st_size, st.st_mtime_ns)
        if signature == tracked.signature:
            return []
        tracked.signature = signature
        try:
            session = read_source(source)
        except LogRejectedError as exc:
            if self.rejected.get(str(path)) != str(exc):
                log.warning("skipping %s", exc)
            self.rejected[str(path)] = str(exc)
            return []
        except OSError as exc:
            self.rejected[str(path)] = f"{path}: cannot read: {exc}"
            return []
        self.rejected.pop(str(path), None)
        header = session.header
        key = header.routing_key
        out: list[Emitted] = []
        if tracked.session_id != header.id or tracked.resend_header:
            if tracked.session_id != header.id:
                tracked.session_id, tracked.next_seq = header.id, 0
            tracked.resend_header = False
            self._keys[header.id] = key
            out.append(
                Emitted(key, HeaderRecord(v=1, kind="header", header=header.to_json()), 0, path)
            )
        fresh = [e for e in session.events if e.seq >= tracked.next_seq]
        for batch in event_batches(fresh, self.max_record_bytes):
            out.append(
                Emitted(
                    key,
                    EventsRecord(
                        v=1, kind="events", session_id=header.id, events=[e.obj for e in batch]
                    ),
                    len(batch),
                    path,
                )
            )
        if fresh:
            tracked.next_seq = fresh[-1].seq + 1
        return out
