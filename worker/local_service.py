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
from worker.calls.limits import ToolLimits
from worker.calls.pipeline import Pipeline
from worker.contract.deadline import Deadline
from worker.contract.errors import TOOL_FAILED, ToolFailure, timeout_failure

log = logging.getLogger("sessionq.local")
_STORE_CHECK_S = 0.5
"""How often a call waiting for readiness looks whether the store failed meanwhile."""


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

    def store_failure(self) -> ToolFailure | None:
        """What every call is answered while the store cannot start (the data dir cannot
        be opened or written: its cause, as ``/v1/status`` shows it), else ``None``. The
        local source retries meanwhile; a call that comes after it recovered is answered."""
        source = self.source
        if source is None or source.ready or source.status.store_error is None:
            return None
        cause = source.status.store_error
        return ToolFailure(TOOL_FAILED, f"the session store cannot start: {cause}")

    async def ready_within(self, deadline: Deadline) -> ToolFailure | None:
        """Wait, within ``deadline``, until this process's logs are in the store; the
        failure the call gets when they are not (``store_failure``, else its timeout).
        While the store cannot start the wait ends at once: the cause is the answer."""
        if self.source is None:
            return None
        while True:
            failure = self.store_failure()
            if failure is not None:
                return failure
            if await self.source.wait_ready(min(_STORE_CHECK_S, max(0.0, deadline.remaining()))):
                return None
            if deadline.remaining() <= 0:
                return timeout_failure(deadline.budget_ms)

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
