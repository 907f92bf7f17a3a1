"""Publish session logs as event-stream records, so an existing dsh installation (or a
Claude Code or Codex log tree, ``indexer.logs.importers``) can feed sessionq without
code (``sessionq publish``).

Every record of a session carries the session's routing key (its cwd, or
``session:<id>``), so one session's records stay in order in one partition. ``--follow``
keeps scanning: appended events, new sessions and removed logs (a ``delete`` record) are
published as they appear. A restarted publisher re-sends from seq 0; the indexer drops
identical re-deliveries.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from indexer.kafka.group import Producer
from indexer.logs.importers.detect import LogFormat
from indexer.logs.watch import LogWatcher
from indexer.model.records import encode_record


@dataclass(slots=True)
class PublishSummary:
    sessions: int = 0
    events: int = 0
    records: int = 0


class Publisher:
    def __init__(self, producer: Producer, topic: str, *, format: LogFormat | None = None) -> None:
        self.producer = producer
        self.topic = topic
        self.format = format
        self.summary = PublishSummary()
        self.watcher: LogWatcher | None = None
        self._stopping = asyncio.Event()

    async def stop(self) -> None:
        self._stopping.set()

    async def run(self, paths: Sequence[Path], *, follow: bool, interval_s: float = 0.5) -> None:
        self.watcher = LogWatcher.of(paths, self.format)
        while True:
            # Pipelined: the idempotent producer keeps each partition's order, so records
            # are queued back to back and acknowledged together at the end of the scan.
            pending = []
            for item in self.watcher.scan():
                pending.append(
                    await self.producer.enqueue(
                        self.topic, encode_record(item.record), key=item.key.encode()
                    )
                )
                self.summary.records += 1
                self.summary.events += item.events
                self.summary.sessions += item.record.kind == "header"
            if pending:
                await asyncio.gather(*pending)
            if not follow or self._stopping.is_set():
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), interval_s)

    @property
    def rejected(self) -> dict[str, str]:
        return {} if self.watcher is None else self.watcher.rejected
