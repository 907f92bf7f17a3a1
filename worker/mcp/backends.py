"""Where an MCP tool call is answered: the embedded store or a Kafka cluster.

Both give the reply envelope ``sessionq call`` prints, so the MCP text is the CLI's:

* ``EmbeddedBackend`` — a data dir, read through ``Pipeline.answer`` like ``sessionq
  call --data``; with ``--sessions`` it is ``sessionq serve``'s ``Embedded`` (first
  ingest in the background, then the watcher), and calls wait for the first ingest.
  A cancelled MCP request cancels the pipeline's ``CancelToken``: the call stops at its
  next check and its (unsent) reply says ``SESSION_QUERY_ABORTED``.
* ``KafkaBackend`` — the host client ``SessionqClient`` (signing callers when a key is
  given); a cancelled MCP request cancels the awaiting task, which publishes the cancel
  record. With ``--data`` (a replica's data dir, read only) callers can be discovered.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, Protocol, TypeVar

from indexer.query.protocol import QueryService
from indexer.query.service import StoreQueryService
from indexer.redact import DEFAULT, Redaction
from indexer.settings import KafkaSettings
from worker.authn.tokens import CallerSigner
from worker.contract.deadline import CancelToken
from worker.contract.envelopes import Reply, reply_for
from worker.limits import ToolLimits
from worker.mcp.binding import BoundCaller
from worker.tools.access import Caller

log = logging.getLogger("sessionq.mcp")
T = TypeVar("T")
CANCEL_REASON = "the MCP client cancelled the request"


class Backend(Protocol):
    """Answers one call for a bound caller; ``service`` (or None) serves discovery."""

    limits: ToolLimits

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def service(self) -> QueryService | None: ...

    async def call(
        self, tool: str, arguments: Any, caller: BoundCaller, *, timeout_ms: int | None
    ) -> Reply: ...


class EmbeddedBackend:
    """The data dir in this process (module docstring)."""

    def __init__(
        self,
        data: Path,
        sessions: list[Path],
        limits: ToolLimits,
        *,
        poll_ms: int = 200,
        redaction: Redaction = DEFAULT,
    ) -> None:
        self.data = data
        self.sessions = sessions
        self.redaction = redaction  # what a writer (--sessions) redacts
        self.limits = limits
        self.poll_s = poll_ms / 1000
        self._ready = asyncio.Event()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._embedded: Any = None
        self._service: StoreQueryService | None = None
        self.pipeline: Any = None
        self.running = 0  # calls in the pipeline, an abandoned (cancelled) one included
        self.cancelled = 0  # calls whose MCP request was cancelled

    async def start(self) -> None:
        from worker.pipeline import Pipeline

        if not self.sessions:
            self._service = StoreQueryService(self.data)
            self.pipeline = Pipeline(self._service, self.limits)
            self._ready.set()
            return
        from worker.http.embedded import Embedded

        self._embedded = Embedded(
            self.sessions, self.data, limits=self.limits, redaction=self.redaction
        )
        self.pipeline = self._embedded.pipeline
        self._spawn(self._ingest_then_watch())

    async def _ingest_then_watch(self) -> None:
        embedded = self._embedded
        await embedded.initial_ingest()
        for reason in embedded.status.rejected.values():
            log.warning("rejected: %s", reason)
        log.info("ready: %d records applied", embedded.status.applied_records)
        self._ready.set()
        await embedded.watch(self.poll_s)

    def _spawn(self, coro: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        task = asyncio.ensure_future(coro)  # held until done (the loop keeps weak refs)
        self._tasks.add(task)
        task.add_done_callback(self._finished)
        return task

    def _finished(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("background task failed: %s", task.exception())

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self._embedded is not None:
            self._embedded.close()
        if self._service is not None:
            self._service.close()

    async def service(self) -> QueryService | None:
        await self._ready.wait()
        return self._embedded.service if self._embedded is not None else self._service

    async def _counted(self, call: Coroutine[Any, Any, T]) -> T:
        self.running += 1
        try:
            return await call
        finally:
            self.running -= 1

    async def call(
        self, tool: str, arguments: Any, caller: BoundCaller, *, timeout_ms: int | None
    ) -> Reply:
        await self._ready.wait()
        token = CancelToken()
        request_id = str(uuid.uuid4())
        running = self._spawn(
            self._counted(
                self.pipeline.call(
                    tool, arguments, Caller(caller.session_id), timeout_ms=timeout_ms, token=token
                )
            )
        )
        try:
            result = await asyncio.shield(running)
        except asyncio.CancelledError:
            # The MCP request was cancelled: the pipeline stops cooperatively; the
            # reply nobody waits for any more is logged, never sent.
            token.cancel(CANCEL_REASON)
            self.cancelled += 1
            running.add_done_callback(lambda t: _log_abandoned(t, request_id))
            raise
        return reply_for(request_id, result)


def _log_abandoned(task: asyncio.Task[Any], request_id: str) -> None:
    if task.cancelled() or task.exception() is not None:
        return
    result = task.result()
    outcome = "ok" if result.error is None else result.error.code
    log.info("cancelled MCP call %s ended: %s", request_id, outcome)


class KafkaBackend:
    """A Kafka cluster through the host client (module docstring)."""

    def __init__(
        self,
        kafka: KafkaSettings,
        limits: ToolLimits,
        *,
        signer: CallerSigner | None = None,
        data: Path | None = None,
    ) -> None:
        from worker.kafka.client import SessionqClient

        self.limits = limits
        self.client = SessionqClient(kafka, signer=signer)
        self.data = data
        self._service: StoreQueryService | None = None

    async def start(self) -> None:
        await self.client.start()
        if self.data is not None:
            self._service = StoreQueryService(self.data)

    async def stop(self) -> None:
        try:
            await self.client.stop()
        finally:
            if self._service is not None:
                self._service.close()

    async def service(self) -> QueryService | None:
        return self._service

    async def call(
        self, tool: str, arguments: Any, caller: BoundCaller, *, timeout_ms: int | None
    ) -> Reply:
        # Cancelling this task publishes the cancel record (SessionqClient.call).
        return await self.client.call(
            tool,
            arguments,
            session_id=caller.session_id,
            timeout_ms=timeout_ms if timeout_ms is not None else self.limits.max_timeout_ms,
            workspace=caller.workspace,
        )
