"""The five tools over a local data dir, with or without watched logs: what ``serve``
and ``mcp --data`` run, the same way.

``LocalService`` puts together a query service over the data dir, the request pipeline
over it, and (when logs are given) the local source (``indexer.sources.local``) that
applies them — in this process while it holds the data dir's writer lease, in another
one otherwise. The transports (HTTP, MCP) only start it and ask it for status.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from indexer.logs.watch import WatchRoot
from indexer.metrics import Metrics
from indexer.query.service import StoreQueryService
from indexer.redact import DEFAULT, Redaction
from indexer.sources.local import LocalSource
from indexer.store.lease import Role
from worker.limits import ToolLimits
from worker.pipeline import Pipeline

log = logging.getLogger("sessionq.local")


class LocalService:
    """Query service + pipeline (+ local source) over one data dir."""

    def __init__(
        self,
        data: Path,
        roots: Sequence[WatchRoot] = (),
        *,
        role: Role,
        limits: ToolLimits | None = None,
        metrics: Metrics | None = None,
        retain_days: int | None = None,
        retention_check_s: float = 60.0,
        force_polling: bool = False,
        redaction: Redaction = DEFAULT,
    ) -> None:
        self.data = data
        self.metrics = metrics if metrics is not None else Metrics(role)
        self.source = (
            LocalSource(
                data,
                roots,
                role=role,
                metrics=self.metrics,
                retain_days=retain_days,
                retention_check_s=retention_check_s,
                force_polling=force_polling,
                redaction=redaction,
            )
            if roots
            else None
        )
        self.service = StoreQueryService(data)
        self.pipeline = Pipeline(self.service, limits, metrics=self.metrics)
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start the local source (a background task); without one, ready at once."""
        if self.source is not None and self._task is None:
            self._task = asyncio.create_task(self.source.run(), name="sessionq-local-source")
            self._task.add_done_callback(_report)
        elif self.source is None:
            self.metrics.ready.set(1)

    @property
    def ready(self) -> bool:
        return self.source is None or self.source.ready

    async def wait_ready(self, timeout: float | None = None) -> bool:
        return True if self.source is None else await self.source.wait_ready(timeout)

    async def stop(self) -> None:
        """Stop the source at its next step and wait for it (the caller bounds the wait)."""
        if self.source is not None:
            self.source.stop()
        task, self._task = self._task, None
        if task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def close(self) -> None:
        if self.source is not None:
            self.source.close()
        self.service.close()


def _report(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("the local source stopped: %s", task.exception())
