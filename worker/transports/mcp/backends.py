"""Where an MCP tool call is answered: the embedded store or a Kafka cluster.

Both give the reply envelope ``sessionq call`` prints, so the MCP text is the CLI's, and
both compute a call's deadline once (``deadline``), which the server reports progress
against and hands to ``call``:

* ``EmbeddedBackend`` — a data dir through ``worker.local_service`` (the pipeline over
  the store, like ``sessionq call --data``); with ``--sessions`` the local source
  watches the logs (in this process while it writes the data dir, else in the one that
  does), and calls wait, within their deadline, until this process's logs are in the
  store. A cancelled MCP request cancels the pipeline's ``CancelToken``: the call stops
  at its next check and its (unsent) reply says ``SESSION_QUERY_ABORTED``.
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from indexer.logs.watch import WatchRoot
from indexer.query.protocol import QueryService
from indexer.query.service import StoreQueryService
from indexer.redact import DEFAULT, Redaction
from indexer.settings import KafkaSettings
from worker.authn.tokens import CallerSigner
from worker.calls.limits import ToolLimits
from worker.calls.tool_call import deadline_for
from worker.contract import boundary
from worker.contract.deadline import CancelToken, Deadline
from worker.contract.envelopes import Reply, reply_for
from worker.contract.errors import ToolFailure
from worker.contract.outcome import ToolReply
from worker.local_service import LocalService
from worker.tools.access import Caller
from worker.tools.registry import Tool
from worker.tools.source_agents import narrowed_arguments
from worker.transports.mcp.binding import BoundCaller

log = logging.getLogger("sessionq.mcp")
T = TypeVar("T")
CANCEL_REASON = "the MCP client cancelled the request"


@dataclass(frozen=True, slots=True)
class McpCall:
    """One call as the MCP server decided it: the tool, its arguments, the bound caller,
    the call's one deadline and its source-agent filter (``worker.transports.mcp.extensions``)."""

    tool: Tool[Any]
    arguments: Any
    caller: BoundCaller
    deadline: Deadline
    source_agents: frozenset[str] | None = None


class Backend(Protocol):
    """Answers one call for a bound caller; ``service`` (or None) serves discovery."""

    limits: ToolLimits

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    def service(self) -> QueryService | None: ...

    async def ready_within(self, deadline: Deadline) -> ToolFailure | None:
        """Wait within ``deadline`` until calls can be answered; the failure otherwise."""
        ...

    def deadline(self, tool: Tool[Any], timeout_ms: int | None) -> Deadline: ...

    async def call(self, call: McpCall) -> Reply: ...


class EmbeddedBackend:
    """The data dir in this process (module docstring)."""

    def __init__(
        self,
        data: Path,
        roots: list[WatchRoot],
        limits: ToolLimits,
        *,
        force_polling: bool = False,
        redaction: Redaction = DEFAULT,
    ) -> None:
        self.limits = limits
        self.local = LocalService(
            data,
            roots,
            role="mcp",
            limits=limits,
            force_polling=force_polling,
            redaction=redaction,
        )
        self.pipeline = self.local.pipeline
        self._tasks: set[asyncio.Task[Any]] = set()
        self.running = 0  # calls in the pipeline, an abandoned (cancelled) one included
        self.cancelled = 0  # calls whose MCP request was cancelled

    async def start(self) -> None:
        self.local.start()

    def _spawn(self, coro: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        task = asyncio.ensure_future(coro)  # held until done (the loop keeps weak refs)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self.local.stop()
        self.local.close()

    def service(self) -> QueryService | None:
        return self.local.service

    async def ready_within(self, deadline: Deadline) -> ToolFailure | None:
        return await self.local.ready_within(deadline)

    def deadline(self, tool: Tool[Any], timeout_ms: int | None) -> Deadline:
        return self.pipeline.deadline(tool, timeout_ms)

    async def _counted(self, call: Coroutine[Any, Any, T]) -> T:
        self.running += 1
        try:
            return await call
        finally:
            self.running -= 1

    async def _answer(self, call: McpCall, token: CancelToken) -> ToolReply:
        """Wait (within the deadline) until this process's logs are in the store, then
        run the pipeline."""
        failure = await self.local.ready_within(call.deadline)
        if failure is not None:
            return ToolReply(error=failure)
        return await self.pipeline.call(
            call.tool,
            call.arguments,
            Caller(call.caller.session_id),
            deadline=call.deadline,
            token=token,
            source_agents=call.source_agents,
        )

    async def call(self, call: McpCall) -> Reply:
        token = CancelToken()
        request_id = str(uuid.uuid4())
        running = self._spawn(self._counted(self._answer(call, token)))
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
        from worker.host.client import SessionqClient

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

    def service(self) -> QueryService | None:
        return self._service

    async def ready_within(self, deadline: Deadline) -> ToolFailure | None:
        return None  # the workers answer for their own readiness

    def deadline(self, tool: Tool[Any], timeout_ms: int | None) -> Deadline:
        """What the workers' pipeline will compute for this call (the host's limits)."""
        return deadline_for(self.limits, tool, timeout_ms, None)

    async def call(self, call: McpCall) -> Reply:
        """Over Kafka. The workers take no source-agent filter: it narrows the call's
        ``session_ids`` with this host's replica first (``check_extensions`` let it through
        only with one). Cancelling this task publishes the cancel record
        (``SessionqClient.call``)."""
        arguments = call.arguments
        agents, service = call.source_agents, self._service
        if agents is not None and service is not None:
            token = CancelToken(deadline=call.deadline)
            caller = Caller(call.caller.session_id)
            arguments = await boundary.in_thread(
                lambda: narrowed_arguments(service, caller, call.arguments, agents, token)
            )
        return await self.client.call(
            call.tool.name,
            arguments,
            session_id=call.caller.session_id,
            timeout_ms=call.deadline.budget_ms,
            workspace=call.caller.workspace,
        )
