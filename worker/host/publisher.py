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

Strings go as a JavaScript host writes them (``encode_record``): a lone surrogate is
its ``\\udxxx`` escape. A record that cannot be encoded at all (its routing key holds
a lone surrogate: no Kafka key, and no stored session either) costs its own log only
(``Publisher._publish``); the run goes on with the other logs.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from indexer.kafka.client import Producer
from indexer.logs.emitted import Emitted
from indexer.logs.importers.detect import LogFormat
from indexer.logs.notify import ChangeNotifier
from indexer.logs.watch import LogWatcher
from indexer.model.records import encode_record, record_session_id

log = logging.getLogger("sessionq.publish")
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
        self._unpublished: dict[str, str] = {}  # log -> why a record of it was not sent

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
        are queued back to back and acknowledged together.

        Each record is encoded (its value and its Kafka key) before it is queued, and a
        log's header waits for its first record of events, so a header never goes
        without its events. A record that cannot be encoded stops its log there: what
        went before it stands (as after a broken line past a log's first piece), the log
        is reported (``rejected``) and is read again, from its header, by the next scan
        (``--follow``); the other logs go on."""
        pending: list[asyncio.Future[Any]] = []
        held: list[tuple[Emitted, bytes, bytes]] = []  # a header, until its events encode
        stopped: set[str] = set()  # the logs (or deletes) given up in this pass
        again: set[str] = set()  # their sessions, to read again from their header
        for item in items:
            where = _where(item)
            if where in stopped:
                continue
            try:
                encoded = (item, encode_record(item.record), _kafka_key(item.key))
            except (TypeError, ValueError, RecursionError) as exc:
                held = [h for h in held if _where(h[0]) != where]
                stopped.add(where)
                again.add(record_session_id(item.record))
                self._report(where, f"{where}: not published: {exc}")
                continue
            if held and _where(held[0][0]) != where:  # a log of nothing but its header
                await self._send(held, pending)
            held.append(encoded)
            if item.record.kind != "header":
                await self._send(held, pending)
        await self._send(held, pending)
        if self.watcher is not None and again:
            self.watcher.rewind(again)
        if pending:
            await asyncio.gather(*pending)

    async def _send(
        self, encoded: list[tuple[Emitted, bytes, bytes]], pending: list[asyncio.Future[Any]]
    ) -> None:
        """Queue ``encoded`` (emptied): records whose value and key are encoded."""
        for item, value, key in encoded:
            pending.append(await self.producer.enqueue(self.topic, value, key=key))
            self._unpublished.pop(_where(item), None)
            self.summary.records += 1
            self.summary.events += item.events
            self.summary.sessions += item.record.kind == "header"
        encoded.clear()

    def _report(self, where: str, reason: str) -> None:
        """Remember why a log (or a delete) was not published; log each reason once."""
        if self._unpublished.get(where) != reason:
            log.warning("%s", reason)
        self._unpublished[where] = reason

    @property
    def rejected(self) -> dict[str, str]:
        """Log (or ``session:<id>`` of a delete) -> why it was not read or published."""
        read = {} if self.watcher is None else self.watcher.rejected
        return {**read, **self._unpublished}


def _where(item: Emitted) -> str:
    """The log a record was read from (one session of an Aider history is a log of its
    own); a delete (no log any more) names its session."""
    if item.log is not None:
        return item.log
    if item.path is not None:
        return str(item.path)
    return f"session:{record_session_id(item.record)}"


def _kafka_key(routing_key: str) -> bytes:
    """A routing key as its Kafka key (UTF-8). A key holding a lone surrogate has none:
    a cwd the store could not keep either (``sessionq ingest`` refuses its log too)."""
    try:
        return routing_key.encode()
    except UnicodeEncodeError:
        raise ValueError(
            f"its routing key {routing_key!r} holds a lone surrogate (no Kafka key)"
        ) from None
