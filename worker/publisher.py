"""Publish dsh session logs as event-stream records, so an existing dsh installation can
feed sessionq without code (``sessionq publish``).

Every record of a session carries the session's routing key (its cwd, or
``session:<id>``), so one session's records stay in order in one partition. ``--follow``
re-reads logs whose size or mtime changed and publishes only the events beyond what it
already sent (a restarted publisher re-sends from seq 0; the indexer drops identical
re-deliveries).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from indexer.logs.reader import LogRejectedError, SessionLog, read_log
from indexer.logs.roots import discover
from indexer.model import SessionEvent
from worker.kafka import Producer

log = logging.getLogger("sessionq.publisher")
MAX_RECORD_BYTES = 1_000_000


def event_batches(events: Sequence[SessionEvent], max_bytes: int) -> Iterator[list[Any]]:
    """Contiguous slices whose encoded size stays under ``max_bytes`` (one event at least)."""
    batch: list[Any] = []
    size = 0
    for e in events:
        if batch and size + len(e.raw) > max_bytes:
            yield batch
            batch, size = [], 0
        batch.append(e.obj)
        size += len(e.raw) + 1
    if batch:
        yield batch


@dataclass(slots=True)
class _FileState:
    signature: tuple[int, int] = (-1, -1)
    header_sent: bool = False
    next_seq: int = 0


@dataclass(slots=True)
class PublishSummary:
    sessions: int = 0
    events: int = 0
    records: int = 0
    rejected: dict[str, str] = field(default_factory=dict)


class Publisher:
    def __init__(self, producer: Producer, topic: str, *, max_record_bytes: int = MAX_RECORD_BYTES):
        self.producer = producer
        self.topic = topic
        self.max_record_bytes = max_record_bytes
        self._files: dict[Path, _FileState] = {}
        self.summary = PublishSummary()

    async def publish_log(self, session: SessionLog, state: _FileState) -> None:
        key = session.header.routing_key.encode()
        if not state.header_sent:
            value = {"v": 1, "kind": "header", "header": session.header.to_json()}
            await self.producer.send(self.topic, orjson.dumps(value), key=key)
            state.header_sent = True
            self.summary.sessions += 1
            self.summary.records += 1
        fresh = [e for e in session.events if e.seq >= state.next_seq]
        for batch in event_batches(fresh, self.max_record_bytes):
            value = {"v": 1, "kind": "events", "session_id": session.header.id, "events": batch}
            await self.producer.send(self.topic, orjson.dumps(value), key=key)
            self.summary.records += 1
            self.summary.events += len(batch)
        if fresh:
            state.next_seq = fresh[-1].seq + 1

    async def scan(self, paths: Sequence[Path]) -> None:
        """Publish every new log and every new tail of a changed log once."""
        for path in discover(paths):
            state = self._files.setdefault(path, _FileState())
            try:
                st = path.stat()
            except OSError:
                continue
            signature = (st.st_size, st.st_mtime_ns)
            if signature == state.signature:
                continue
            try:
                session = read_log(path)
            except LogRejectedError as exc:
                if self.summary.rejected.get(str(path)) != str(exc):
                    log.warning("not publishing %s", exc)
                self.summary.rejected[str(path)] = str(exc)
                state.signature = signature
                continue
            self.summary.rejected.pop(str(path), None)
            await self.publish_log(session, state)
            state.signature = signature

    async def run(self, paths: Sequence[Path], *, follow: bool, interval_s: float = 0.5) -> None:
        while True:
            await self.scan(paths)
            if not follow:
                return
            await asyncio.sleep(interval_s)
