"""One request to one reply, whatever the transport (Kafka worker or embedded HTTP).

``Dispatcher.answer`` reads as the pipeline: deadline (shed if already expired, no work)
-> read-your-writes wait for ``caller.min_seq`` -> execution gate (searches exclusive per
caller, reads parallel) -> tool call (caller -> arguments -> authorization -> query ->
rendering) -> reply + metrics. Cancel records reach in-flight calls through ``cancel``.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from typing import Any, Final

from indexer.metrics import Metrics
from indexer.query.protocol import QueryService
from worker.deadline import CancelToken, Deadline
from worker.envelopes import CallerRef, Reply, ToolRequest, error_reply, reply_for
from worker.execution import ExecutionGates
from worker.handler import Caller, ToolReply, ToolService

EARLY_CANCELS: Final = 10_000
RYW_POLL_S: Final = 0.01
KNOWN_TOOLS: Final = frozenset(
    {
        "session_search",
        "session_event_search",
        "session_trace",
        "session_event_trace",
        "session_event_read",
    }
)


def deadline_since(received_ms: float, budget_ms: int) -> Deadline:
    """``received_ms`` (wall clock, e.g. the record timestamp) + budget, on the monotonic clock."""
    age_s = time.time() - received_ms / 1000.0
    return Deadline.after(budget_ms, start=time.monotonic() - age_s)


class Dispatcher:
    def __init__(
        self,
        service: QueryService,
        tools: ToolService,
        metrics: Metrics,
        *,
        max_timeout_ms: int,
        wait_for_caller: bool = False,
    ) -> None:
        """``wait_for_caller``: a caller session not indexed yet is waited for (within the
        deadline) instead of failing — over Kafka the caller's own events may still be in
        flight (DESIGN.md "Caller, consistency, deadlines")."""
        self.service = service
        self.tools = tools
        self.metrics = metrics
        self.max_timeout_ms = max_timeout_ms
        self.wait_for_caller = wait_for_caller
        self.gates = ExecutionGates()
        self._tokens: dict[str, CancelToken] = {}
        self._early_cancels: OrderedDict[str, Any] = OrderedDict()

    def cancel(self, request_id: str, reason: Any) -> None:
        """Abort an in-flight call; a cancel that overtakes its request is remembered."""
        token = self._tokens.get(request_id)
        if token is not None:
            token.cancel(reason)
            return
        self._early_cancels[request_id] = reason
        while len(self._early_cancels) > EARLY_CANCELS:
            self._early_cancels.popitem(last=False)

    def budget_ms(self, request: ToolRequest) -> int:
        """The request's timeout, capped by the tool's own budget and the configured cap."""
        own = self.tools.budget_ms(request.tool) or self.max_timeout_ms
        asked = request.timeout_ms if request.timeout_ms is not None else own
        return min(asked, own, self.max_timeout_ms)

    async def answer(self, request: ToolRequest, received_ms: float) -> Reply:
        started = time.perf_counter()
        deadline = deadline_since(received_ms, self.budget_ms(request))
        token = CancelToken()
        if request.id in self._early_cancels:
            token.cancel(self._early_cancels.pop(request.id))
        if deadline.expired():
            self.metrics.deadline_sheds.inc()
            reply = error_reply(request.id, "TOOL_TIMEOUT", deadline.failure().message)
        else:
            self._tokens[request.id] = token
            self.metrics.in_flight.inc()
            try:
                reply = await self._call(request, token, deadline)
            finally:
                self._tokens.pop(request.id, None)
                self.metrics.in_flight.dec()
        outcome = "ok" if reply.ok else (reply.error.code if reply.error else "error")
        tool = request.tool if request.tool in KNOWN_TOOLS else "unknown"
        self.metrics.requests.labels(tool, outcome).inc()
        self.metrics.request_seconds.labels(tool).observe(time.perf_counter() - started)
        return reply

    async def _call(self, request: ToolRequest, token: CancelToken, deadline: Deadline) -> Reply:
        ref = request.caller
        if not await self._caught_up(ref, deadline, token):
            if token.failure is not None:
                aborted = ToolReply(error=token.failure, cancel_reason=token.reason)
                return reply_for(request.id, aborted)
            return error_reply(request.id, "TOOL_TIMEOUT", deadline.failure().message)
        caller = (
            Caller(ref.session_id, ref.step_seq)
            if ref is not None and ref.session_id is not None
            else None
        )
        async with self.gates.run(caller.session_id if caller else "", request.tool):
            result = await self.tools.call(
                request.tool, request.arguments, caller, token=token, deadline=deadline
            )
        return reply_for(request.id, result)

    async def _caught_up(
        self, ref: CallerRef | None, deadline: Deadline, token: CancelToken
    ) -> bool:
        """Read-your-writes: wait until the caller's log is applied through ``min_seq``
        (or, with ``wait_for_caller``, until the caller exists at all).

        ``last_seq`` is one primary-key lookup, cheaper than a thread hand-off, so it runs
        on the loop; only the waiting sleeps.
        """
        if ref is None or ref.session_id is None:
            return True
        if ref.min_seq is None and not self.wait_for_caller:
            return True
        target = ref.min_seq if ref.min_seq is not None else -1
        while True:
            last = self.service.last_seq(ref.session_id)
            if last is not None and last >= target:
                return True
            if deadline.expired() or token.failure is not None:
                return False
            await asyncio.sleep(RYW_POLL_S)
