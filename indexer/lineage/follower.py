"""Keeps a node's lineage copy (``indexer.lineage.table``) up to date from the whole
compacted lineage topic, and writes this node's own entries to it.

Reading: every partition of the topic, assigned manually, from the copy's stored next
offsets (the beginning for a new copy); each poll is applied with its offsets in one
transaction. ``caught_up`` turns true once the copy reached the topic's end offsets
that existed when it started (then stays true): a node answers only after that, so a
trace sees every cross-partition parent and child known at its start.

Writing (``LineageWriter``): an owner enqueues an entry when it applies a session's
header, and a tombstone when it applies its delete; the store commit that follows
waits for their acknowledgements first (``flush``), so a committed batch never holds a
session the lineage topic does not know.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from indexer.kafka.client import EventsSource, Producer
from indexer.lineage.entry import LineageEntry, decode_entry, encode_entry
from indexer.lineage.table import LineageTable
from indexer.settings import KafkaSettings

log = logging.getLogger("sessionq.lineage")
POLL_MS = 200


class LineageFollower:
    """Reads the lineage topic into a ``LineageTable`` (module docstring)."""

    def __init__(self, kafka: KafkaSettings, table: LineageTable) -> None:
        self.table = table
        self.topic = kafka.lineage_topic
        self.source = EventsSource(kafka, kafka.lineage_topic, client_id="sessionq-node-lineage")
        self._targets: dict[int, int] | None = None
        self.caught_up = False
        self.applied = 0
        self.skipped = 0

    async def start(self) -> None:
        stored = self.table.offsets()
        await self.source.start({(self.topic, p): o for p, o in stored.items()})

    async def step(self, timeout_ms: int = POLL_MS) -> int:
        """One poll applied; the number of records it held."""
        records = await self.source.poll(timeout_ms=timeout_ms, max_records=5000)
        if records:
            changes: list[LineageEntry | str] = []
            offsets: dict[int, int] = {}
            for r in records:
                decoded = decode_entry(r.key, r.value)
                if decoded is None:
                    self.skipped += 1
                    log.warning("lineage record %s[%d]@%d skipped", r.topic, r.partition, r.offset)
                else:
                    changes.append(decoded)
                offsets[r.partition] = r.offset + 1
            await asyncio.to_thread(self.table.apply, changes, offsets)
            self.applied += len(changes)
        if not self.caught_up:
            await self._check_caught_up()
        return len(records)

    async def _check_caught_up(self) -> None:
        if self._targets is None:
            ends = await self.source.lag()  # lag from the start position = what is to read
            if not ends and self.source.partitions:
                return  # the broker did not answer; the next step asks again
            stored = self.table.offsets()
            self._targets = {p: stored.get(p, 0) + lag for p, lag in ends.items()}
        stored = self.table.offsets()
        if all(stored.get(p, 0) >= end for p, end in self._targets.items()):
            self.caught_up = True
            log.info("lineage copy caught up (%d sessions)", self.table.count())

    async def run(self, stopping: asyncio.Event) -> None:
        while not stopping.is_set():
            try:
                await self.step()
            except Exception as exc:  # the broker away: the next poll retries
                log.warning("lineage poll failed: %s", exc)
                await asyncio.sleep(1.0)

    async def stop(self) -> None:
        await self.source.stop()


class LineageWriter:
    """This node's writes to the lineage topic (module docstring)."""

    def __init__(self, kafka: KafkaSettings) -> None:
        self.topic = kafka.lineage_topic
        self.producer = Producer(kafka, client_id="sessionq-node-lineage-writer")
        self._pending: list[asyncio.Future[Any]] = []

    async def start(self) -> None:
        await self.producer.start()

    async def put(self, entry: LineageEntry) -> None:
        key = entry.session_id.encode()
        self._pending.append(await self.producer.enqueue(self.topic, encode_entry(entry), key=key))

    async def remove(self, session_id: str) -> None:
        self._pending.append(await self.producer.enqueue(self.topic, None, key=session_id.encode()))

    async def flush(self) -> None:
        """Wait for every entry enqueued so far (raises the first failure)."""
        pending, self._pending = self._pending, []
        if pending:
            await asyncio.gather(*pending)

    async def stop(self) -> None:
        await self.producer.stop()
