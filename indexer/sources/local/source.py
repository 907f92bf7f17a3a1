"""The local source: session logs on this machine, watched, applied to a data dir that
any number of processes share (``serve``, every ``mcp --sessions`` server).

Each such process registers the roots it was given (``indexer.sources.registry``) and
then plays one of two parts, decided by the data dir's writer lease
(``indexer.store.lease``):

* **writer** (it holds the lease): opens the store, reads the stored state, reconciles
  it with the logs and reads what changed (``Applier.first_pass``), marks the
  registrations it covered as scanned, then waits for the operating system's file
  notifications (``indexer.logs.notify``) and applies each change; between passes it
  refreshes the registrations (new roots are walked and watched at once), runs the
  housekeeping (retention, a due purge pass), walks the roots every ``SWEEP_S`` in case
  a notification was lost, and hands the lease over when a one-shot writer
  (``sessionq ingest``, an admin delete) waits for it;
* **standby** (another process writes): no store of its own; it tries to take the lease
  over about every ``TAKEOVER_S`` (never while a one-shot writer waits). When the writer
  ends, ``kill -9`` included, a standby takes over within a few seconds and goes on from
  the stored state: every log whose signature changed since it was last applied is read
  again, so nothing the old writer had seen is lost.

A one-shot writer that queued and then stopped proceeding (an ``ingest`` stopped with
Ctrl-Z) is deferred to only until the lease's bound (``indexer.store.lease``): then this
process writes anyway, and says so once (a WARNING naming the queued pids); the status
shows the queue (``queued``) and since when this process has waited (``waiting_since``).

Either way the process reads the store through its own query service, so it sees each
commit of whichever process writes. It is ready once its registration is scanned.
``stop()`` ends the current pass at its next chunk and leaves the store consistent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal, TypeVar

from indexer.failpoints import DISARMED, FailPoints
from indexer.logs.notify import ChangeNotifier, Mode
from indexer.logs.watch import WatchRoot
from indexer.metrics import Metrics
from indexer.redact import DEFAULT, Redaction
from indexer.sources.local.applier import Applier, ApplyStatus
from indexer.sources.local.housekeeping import Housekeeping
from indexer.sources.loop import RecordLoop
from indexer.sources.registry import Registry, union
from indexer.store.failure import describe
from indexer.store.lease import QUEUE_STALE_S, Holder, Queue, Role, WriterLease
from indexer.store.maintenance.purge import PurgeReport
from indexer.store.records.store import Store

log = logging.getLogger("sessionq.sources")
T = TypeVar("T")
TICK_S: Final = 0.5  # the writer's idle tick: registrations, housekeeping, a waiting writer
TAKEOVER_S: Final = 0.5  # how often a standby tries to take the lease over
SWEEP_S: Final = 300.0  # a full walk in case a notification was lost
RETRY_S: Final = 5.0  # after a failure to write, the next attempt

Part = Literal["starting", "writer", "standby", "stopped"]


@dataclass(frozen=True, slots=True)
class Queued:
    """One-shot writers queued for the lease: their pids (when the kernel lists them) and
    whether they stopped proceeding."""

    pids: tuple[int, ...]
    stalled: bool


@dataclass(slots=True)
class SourceStatus(ApplyStatus):
    part: Part = "starting"
    writer: str | None = None  # who writes, when it is another process
    waiting_since: float | None = None  # when this process began waiting for the lease
    queued: Queued | None = None  # one-shot writers queued for the lease
    watching: Mode | None = None  # how this process watches, while it writes
    ready: bool = False


class LocalSource:
    """Watched logs applied to ``data`` (module docstring)."""

    def __init__(
        self,
        data: Path,
        roots: Sequence[WatchRoot],
        *,
        role: Role = "serve",
        metrics: Metrics | None = None,
        retain_days: int | None = None,
        retention_check_s: float = 60.0,
        force_polling: bool = False,
        failpoints: FailPoints = DISARMED,
        redaction: Redaction = DEFAULT,
    ) -> None:
        """``redaction``: what this process redacts when it writes (``indexer.redact``;
        the data dir records the mode of its writers)."""
        self.data = data
        self.roots = tuple(roots)
        self.metrics = metrics if metrics is not None else Metrics(role)
        self.lease = WriterLease(data, role)
        self.registry = Registry(data)
        self.status = SourceStatus()
        self.force_polling = force_polling
        self.failpoints = failpoints
        self.redaction = redaction
        self.housekeeping = Housekeeping(self.metrics, retain_days, retention_check_s)
        self._registration = self.registry.register(self.roots) if self.roots else None
        self._stopping = asyncio.Event()
        self._ready = asyncio.Event()
        self._store: Store | None = None
        self._applier: Applier | None = None
        self._notifier: ChangeNotifier | None = None
        self._lock = asyncio.Lock()  # one pass (or one admin write) at a time
        self._next_sweep = 0.0
        self._next_retry = 0.0  # failed records or a lost batch: read again from then on
        self._retry_s = TICK_S  # doubling up to RETRY_S while they keep failing

    # ---- the two parts ------------------------------------------------------------------------
    async def run(self) -> None:
        """Write or stand by until ``stop()``. A failure while writing (the store cannot
        be opened, say) is logged once per cause; the lease is released and taken again
        after ``RETRY_S``, so another process may write meanwhile."""
        try:
            while not self._stopping.is_set():
                if self._queue() != "waiting" and self.lease.try_acquire():
                    try:
                        await self._write()
                    except Exception as exc:
                        self._failed(exc)
                    finally:
                        await self._release()
                    if self.status.store_error is not None and not self._stopping.is_set():
                        await self._sleep(RETRY_S)
                    continue
                self._standby()
                await self._sleep(TAKEOVER_S)
        finally:
            self.status.part = "stopped"

    def _failed(self, exc: Exception) -> None:
        cause = describe(exc)
        if cause != self.status.store_error:
            log.error("cannot write %s, retrying every %.0f s: %s", self.data, RETRY_S, cause)
        self.status.store_error = cause

    def _queue(self) -> Queue:
        """The lease's queue, kept in the status; a queue that stalls is told once."""
        queue = self.lease.queue()
        if queue == "empty":
            self.status.queued = None
            return queue
        queued = Queued(self.lease.queued_pids(), stalled=queue == "stalled")
        if queued.stalled and not (self.status.queued and self.status.queued.stalled):
            pids = ", ".join(map(str, queued.pids)) or "unknown"
            log.warning(
                "a writer queued for %s (pid %s) has not proceeded for %.0f s (stopped, as"
                " with Ctrl-Z?): this process writes meanwhile and hands the lease over when"
                " it runs again",
                self.data,
                pids,
                QUEUE_STALE_S,
            )
        self.status.queued = queued
        return queue

    def _standby(self) -> None:
        holder = self.lease.holder()
        if self.status.part != "standby" or (holder and holder.describe() != self.status.writer):
            who = holder.describe() if holder is not None else "another process"
            log.info("standing by: %s writes %s", who, self.data)
        if self.status.part != "standby":
            self.status.waiting_since = time.time()
        self.status.part = "standby"
        self.status.writer = holder.describe() if holder is not None else None
        self._check_ready()

    async def _sleep(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), seconds)

    async def _write(self) -> None:
        self.status.part, self.status.writer, self.status.waiting_since = "writer", None, None
        store = await asyncio.to_thread(self._open_store)
        self._store = store
        loop = RecordLoop(store, self.metrics)
        registrations = self.registry.live()
        roots = union(registrations)
        applier = Applier(store, loop, roots, self.status, self._stopping.is_set)
        self._applier = applier
        self._notifier = self._watch(roots)
        log.info(
            "writing %s: %d roots from %d processes", self.data, len(roots), len(registrations)
        )
        async with self._lock:
            finished = await asyncio.to_thread(applier.first_pass)
        if not finished:
            return
        self.registry.mark_scanned(r.name for r in registrations)
        self._check_ready()
        self._next_sweep = time.monotonic() + SWEEP_S
        while not self._stopping.is_set():
            if self._queue() == "waiting":
                log.info("handing the writer lease of %s to a waiting writer", self.data)
                return
            changed = await self._notifier.wait(TICK_S) if self._notifier else set()
            async with self._lock:
                await self._tick(applier, changed)

    async def _tick(self, applier: Applier, changed: set[Path]) -> None:
        registrations = self.registry.live()
        roots = union(registrations)
        if roots != applier.roots:
            log.info("watching %d roots from %d processes", len(roots), len(registrations))
            if self._notifier is not None:
                self._notifier.close()
            self._notifier = self._watch(roots)
            await asyncio.to_thread(applier.rescan, roots)
            self._next_sweep = time.monotonic() + SWEEP_S
        elif time.monotonic() >= self._next_sweep:
            await asyncio.to_thread(applier.rescan)
            self._next_sweep = time.monotonic() + SWEEP_S
        elif changed:
            await asyncio.to_thread(applier.changed, changed)
        elif applier.retry_due and time.monotonic() >= self._next_retry:
            await asyncio.to_thread(applier.retry)
            failing = applier.retry_due
            self._retry_s = min(RETRY_S, self._retry_s * 2) if failing else TICK_S
            self._next_retry = time.monotonic() + self._retry_s
        self.registry.mark_scanned(r.name for r in registrations)
        self._check_ready()
        assert self._store is not None
        await asyncio.to_thread(self.housekeeping.run, self._store)

    def _watch(self, roots: Sequence[WatchRoot]) -> ChangeNotifier | None:
        if not roots:
            self.status.watching = None
            return None
        notifier = ChangeNotifier([r.path for r in roots], force_polling=self.force_polling)
        notifier.start()
        self.status.watching = notifier.mode
        return notifier

    def _open_store(self) -> Store:
        return Store(
            self.data,
            on_purge=self._purged,
            failpoints=self.failpoints,
            redaction=self.redaction,
        )

    def _purged(self, report: PurgeReport) -> None:
        self.metrics.purge_seconds.observe(report.seconds)
        self.metrics.purge_pending.set(0 if report.complete else 1)

    async def _release(self) -> None:
        notifier, self._notifier = self._notifier, None
        if notifier is not None:
            notifier.close()
        store, self._store, self._applier = self._store, None, None
        if store is not None:
            async with self._lock:
                await asyncio.to_thread(store.close)
        self.lease.release()
        self.status.watching = None

    # ---- readiness, status --------------------------------------------------------------------
    def _check_ready(self) -> None:
        reg = self._registration
        if (reg is None or reg.scanned) and not self._ready.is_set():
            self._ready.set()
            self.status.ready = True
            self.metrics.ready.set(1)

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    async def wait_ready(self, timeout: float | None = None) -> bool:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._ready.wait(), timeout)
        return self._ready.is_set()

    @property
    def store(self) -> Store | None:
        """The writer's store while this process writes, else None."""
        return self._store

    # ---- writes on request --------------------------------------------------------------------
    async def write(
        self, fn: Callable[[Store], T], *, on_wait: Callable[[Holder], None] | None = None
    ) -> T:
        """Run ``fn`` with a writable store: this process's own while it writes (between
        passes), else in a one-shot turn of the lease (the writer hands it over)."""
        async with self._lock:
            store = self._store
            if store is not None:
                return await asyncio.to_thread(fn, store)
        return await asyncio.to_thread(self._write_once, fn, on_wait)

    def _write_once(self, fn: Callable[[Store], T], on_wait: Callable[[Holder], None] | None) -> T:
        with self.lease.turn(on_wait=on_wait) as held:
            assert held
            store = self._open_store()
            try:
                return fn(store)
            finally:
                store.close()

    async def sync_once(self) -> None:
        """Walk the roots and apply what changed now (tests; the writer only)."""
        async with self._lock:
            if self._applier is not None:
                await asyncio.to_thread(self._applier.rescan)

    # ---- stop ---------------------------------------------------------------------------------
    def stop(self) -> None:
        self._stopping.set()

    def close(self) -> None:
        """Release what ``run`` did not (after it returned, or if it never ran)."""
        if self._notifier is not None:
            self._notifier.close()
            self._notifier = None
        if self._store is not None:
            self._store.close()
            self._store = None
        self.lease.release()
        if self._registration is not None:
            self._registration.close()
            self._registration = None
