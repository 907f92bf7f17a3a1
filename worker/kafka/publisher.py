"""Publish session logs as event-stream records, so an existing dsh installation (or a
Claude Code or Codex log tree, ``indexer.logs.importers``) can feed sessionq without
code (``sessionq publish``).

Every record of a session carries the session's routing key (its cwd, or
``session:<id>``), so one session's records stay in order in one partition. ``--follow``
keeps scanning: appended events, new sessions and removed logs (a ``delete`` record) are
published as they appear, as the operating system's file notifications report them
(``indexer.logs.notify``: a follower that waits costs nothing), with a walk of the
paths every ``SWEEP_S`` in case a notification was lost. A restarted publisher re-sends
from seq 0; the indexer drops identical re-deliveries.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from indexer.kafka.group import Producer
from indexer.logs.emitted import Emitted
from indexer.logs.importers.detect import LogFormat
from indexer.logs.notify import ChangeNotifier
from indexer.logs.watch import LogWatcher
from indexer.model.records import encode_record

TICK_S: Final = 0.5  # how often a follower looks whether it was asked to stop
SWEEP_S: Final = 300.0  # a full walk in case a notification was lost


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

    async def run(
        self, paths: Sequence[Path], *, follow: bool, force_polling: bool = False
    ) -> None:
        watcher = self.watcher = LogWatcher.of(paths, self.format)
        notifier = None
        if follow:  # watching starts before the first walk: nothing in between is missed
            notifier = ChangeNotifier([Path(p) for p in paths], force_polling=force_polling)
            notifier.start()
        try:
            await self._publish(watcher.scan())
            next_sweep = time.monotonic() + SWEEP_S
            while notifier is not None and not self._stopping.is_set():
                changed = await notifier.wait(TICK_S)
                if time.monotonic() >= next_sweep:
                    items, next_sweep = watcher.scan(), time.monotonic() + SWEEP_S
                elif changed:
                    items, walk = watcher.scan_paths(changed)
                    if walk:
                        items = itertools.chain(items, watcher.scan())
                else:
                    continue
                await self._publish(items)
        finally:
            if notifier is not None:
                notifier.close()

    async def _publish(self, items: Iterable[Emitted]) -> None:
        """Pipelined: the idempotent producer keeps each partition's order, so records
        are queued back to back and acknowledged together."""
        pending = []
        for item in items:
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

    @property
    def rejected(self) -> dict[str, str]:
        return {} if self.watcher is None else self.watcher.rejected
