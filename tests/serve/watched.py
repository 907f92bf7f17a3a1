"""The local source's writer half driven by hand: one store, the applier over one root,
a query service and the pipeline over it. Each ``sync_once`` is one pass (the first
one reconciles with the stored state), so a test decides exactly when logs are read."""

from __future__ import annotations

import asyncio
from pathlib import Path

from indexer.logs.watch import LogWatcher, WatchRoot
from indexer.query.service import StoreQueryService
from indexer.sources.local.applier import Applier, ApplyStatus
from indexer.sources.loop import RecordLoop
from indexer.store.records.store import Store
from worker.calls.pipeline import Pipeline


class WatchedStore:
    def __init__(self, root: Path, data: Path) -> None:
        self.data = data
        self.store = Store(data)
        self.status = ApplyStatus()
        self.applier = Applier(
            self.store, RecordLoop(self.store), [WatchRoot(root)], self.status, lambda: False
        )
        self.service = StoreQueryService(data)
        self.pipeline = Pipeline(self.service)
        self._passes = 0

    @property
    def watcher(self) -> LogWatcher:
        return self.applier.watcher

    async def sync_once(self) -> int:
        """One pass; returns the records it applied (re-deliveries not counted)."""
        before = self.status.applied_records
        first = self._passes == 0
        self._passes += 1
        await asyncio.to_thread(self.applier.first_pass if first else self.applier.rescan)
        return self.status.applied_records - before

    def close(self) -> None:
        self.service.close()
        self.store.close()
