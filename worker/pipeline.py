"""The request pipeline: one tool call in, exactly one reply out (SPEC §9, DESIGN "worker").

``Pipeline.answer`` is the one function every transport calls (the Kafka worker, the
embedded HTTP API, ``sessionq call``); transports only move bytes. It reads top to
bottom as the steps:

1. decode — done by the transport: its envelope becomes a ``ToolCall``;
2. deadline — computed once (``deadline_for``): the request's ``timeout_ms`` capped by
   the tool's budget and the deployment cap, counted from when the request was sent;
   a call already past it is answered ``TOOL_TIMEOUT`` without any work;
3. wait — read-your-writes: until the caller's log is applied through ``min_seq`` (and,
   over Kafka, until the caller exists at all), within the deadline;
4. gate — the tool's execution mode per caller: searches exclusive, reads parallel;
5. arguments — schema, then the rules upstream runs before resolving the caller
   (upstream validates arguments before the tool runs, SPEC §9.8);
6. caller — resolved to its stored header (its ``cwd`` is the workspace);
7. authorization → query → rendering — the tool's own steps (``Tool.run``, SPEC §9.8);
8. reply — exactly one. Once the call is cancelled or past its deadline, that is the
   reply whatever the tool produced meanwhile; tool-owned errors reply verbatim;
   anything else is sanitized to ``SESSION_QUERY_TOOL_FAILED`` (SPEC §9.10).
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Final

import orjson

from indexer.metrics import Metrics
from indexer.query.protocol import QueryService
from worker.contract import boundary
from worker.contract.deadline import CancelToken, Deadline
from worker.contract.envelopes import ToolRequest
from worker.contract.errors import HarnessError, ToolAbortError
from worker.contract.outcome import ToolReply
from worker.execution import ExecutionGates
from worker.limits import ToolLimits
from worker.tools.access import Caller, resolve_caller
from worker.tools.registry import TOOLS, Tool, ToolContext, lookup, parse_arguments

CANCEL_REASON_MAX_BYTES: Final = 1024
"""A cancel reason is kept (and echoed in the reply) only up to this many bytes of JSON."""
OVERSIZED_REASON: Final = "[cancel reason omitted: over 1024 bytes of JSON]"
"""What a non-string reason over ``CANCEL_REASON_MAX_BYTES`` (or one that is not JSON)
becomes."""
EARLY_CANCELS: Final = 1_000
"""At most this many cancels whose request has not arrived (yet) are remembered..."""
EARLY_CANCEL_BYTES: Final = 1024 * 1024
"""...and at most this many bytes of them (ids as UTF-8, reasons as JSON); oldest go first."""
RYW_POLL_S: Final = 0.01
_PASSTHROUGH: Final = (asyncio.CancelledError, KeyboardInterrupt, SystemExit, GeneratorExit)


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One decoded call, whatever the transport.

    ``sent_ms`` is when the caller sent it (wall clock, e.g. the record timestamp); the
    deadline counts from there. ``min_seq`` asks for read-your-writes.
    """

    id: str
    tool: Any
    arguments: Any
    caller: Caller | None
    min_seq: int | None = None
    timeout_ms: int | None = None
    sent_ms: float | None = None

    @classmethod
    def from_request(cls, request: ToolRequest, *, sent_ms: float | None) -> ToolCall:
        """A request envelope (Kafka, HTTP) as a call; no ``caller.session_id``, no caller."""
        ref = request.caller
        caller = (
            Caller(ref.session_id, ref.step_seq)
            if ref is not None and ref.session_id is not None
            else None
        )
        return cls(
            request.id,
            request.tool,
            request.arguments,
            caller,
            min_seq=ref.min_seq if ref is not None else None,
            timeout_ms=request.timeout_ms,
            sent_ms=sent_ms,
        )


def deadline_for(
    limits: ToolLimits, tool: Tool[Any] | None, timeout_ms: Any, sent_ms: float | None
) -> Deadline:
    """The one deadline computation: ``timeout_ms`` (ignored unless an int), capped by the
    tool's budget (``searchTimeoutMs`` for searches) and ``max_timeout_ms``."""
    budget = limits.max_timeout_ms
    if tool is not None and tool.budget == "search":
        budget = min(budget, limits.search_timeout_ms)
    if isinstance(timeout_ms, int) and not isinstance(timeout_ms, bool):
        budget = min(budget, timeout_ms)
    if sent_ms is None:
        return Deadline.after(budget)
    age_s = time.time() - sent_ms / 1000.0
    return Deadline.after(budget, start=time.monotonic() - age_s)


def bounded_reason(reason: Any) -> Any:
    """A cancel reason as the pipeline keeps and echoes it: unchanged (the same object)
    when its JSON is at most ``CANCEL_REASON_MAX_BYTES``; a longer string is cut to its
    longest prefix that, followed by ``…``, fits in that many bytes of JSON; any other
    reason over the limit, or one that is not JSON at all, becomes ``OVERSIZED_REASON``
    (so it no longer carries a ``code``/``message``: the reply says ``TOOL_CANCELLED``)."""
    size = _json_size(reason)
    if size is not None and size <= CANCEL_REASON_MAX_BYTES:
        return reason
    if size is None or not isinstance(reason, str):
        return OVERSIZED_REASON
    lo, hi = 0, min(len(reason), CANCEL_REASON_MAX_BYTES)  # a character is >= 1 byte
    while lo < hi:  # the JSON size of a prefix grows with its length
        mid = (lo + hi + 1) // 2
        cut = _json_size(reason[:mid] + "…")
        if cut is not None and cut <= CANCEL_REASON_MAX_BYTES:
            lo = mid
        else:
            hi = mid - 1
    return reason[:lo] + "…"


def _json_size(value: Any) -> int | None:
    try:
        return len(orjson.dumps(value))
    except (TypeError, orjson.JSONEncodeError):
        return None


class EarlyCancels:
    """Cancels that overtook their request, bounded by count (``EARLY_CANCELS``) and by
    size (``EARLY_CANCEL_BYTES``: an entry weighs its id's UTF-8 bytes plus its reason's
    JSON bytes); the oldest are evicted first. Reasons must be bounded already."""

    def __init__(self, max_entries: int = EARLY_CANCELS, max_bytes: int = EARLY_CANCEL_BYTES):
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.bytes = 0
        self._entries: OrderedDict[str, tuple[Any, int]] = OrderedDict()

    def __contains__(self, request_id: object) -> bool:
        return request_id in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def add(self, request_id: str, reason: Any) -> None:
        """Remember (or renew, as the newest) the cancel of ``request_id``."""
        if request_id in self._entries:
            self.pop(request_id)
        size = len(request_id.encode("utf-8", "surrogatepass")) + (_json_size(reason) or 0)
        self._entries[request_id] = (reason, size)
        self.bytes += size
        while self._entries and (
            len(self._entries) > self.max_entries or self.bytes > self.max_bytes
        ):
            _, (_, evicted) = self._entries.popitem(last=False)
            self.bytes -= evicted

    def pop(self, request_id: str) -> Any:
        """The remembered reason, forgotten (``KeyError`` when there is none)."""
        reason, size = self._entries.pop(request_id)
        self.bytes -= size
        return reason


class Pipeline:
    """The five session-query tools over one ``QueryService``, behind one entry point."""

    def __init__(
        self,
        service: QueryService,
        limits: ToolLimits | None = None,
        *,
        metrics: Metrics | None = None,
        wait_for_caller: bool = False,
    ) -> None:
        """``wait_for_caller``: a caller session not indexed yet is waited for (within the
        deadline) instead of failing — over Kafka the caller's own events may still be in
        flight (DESIGN.md "Caller, consistency, deadlines")."""
        self.service = service
        self.limits = limits if limits is not None else ToolLimits()
        self.metrics = metrics
        self.wait_for_caller = wait_for_caller
        self.gates = ExecutionGates()
        self._context = ToolContext(service, self.limits.max_search_results)
        self._tokens: dict[str, list[CancelToken]] = {}  # every in-flight copy of an id
        self._early_cancels = EarlyCancels()

    def cancel(self, request_id: str, reason: Any) -> None:
        """Abort every in-flight call with this id (a redelivered request may run twice);
        a cancel that overtakes its request is remembered (``EarlyCancels``, bounded).
        The reason is bounded first (``bounded_reason``): that is what replies echo."""
        reason = bounded_reason(reason)
        tokens = self._tokens.get(request_id)
        if tokens:
            for token in tokens:
                token.cancel(reason)
            return
        self._early_cancels.add(request_id, reason)

    def _untrack(self, request_id: str, token: CancelToken) -> None:
        """Forget exactly this in-flight copy of ``request_id``."""
        tokens = [t for t in self._tokens.get(request_id, ()) if t is not token]
        if tokens:
            self._tokens[request_id] = tokens
        else:
            self._tokens.pop(request_id, None)

    async def answer(
        self, call: ToolCall, *, token: CancelToken | None = None, deadline: Deadline | None = None
    ) -> ToolReply:
        """Steps 2-8 of the module docstring; never raises (but asyncio cancellation).

        ``token`` links an outside cancellation; ``deadline`` replaces step 2's (tests).
        """
        started = time.perf_counter()
        tool = TOOLS.get(call.tool) if isinstance(call.tool, str) else None
        # 2. deadline
        deadline = deadline or deadline_for(self.limits, tool, call.timeout_ms, call.sent_ms)
        call_token = (token if isinstance(token, CancelToken) else CancelToken()).child(deadline)
        if call.id in self._early_cancels:
            call_token.cancel(self._early_cancels.pop(call.id))
        aborted = call_token.failure
        if aborted is not None:  # past its deadline (or cancelled) already: no work
            if self.metrics is not None and deadline.expired():
                self.metrics.deadline_sheds.inc()
            reply = ToolReply(error=aborted, cancel_reason=call_token.reason)
        else:
            self._tokens.setdefault(call.id, []).append(call_token)
            self._count_in_flight(+1)
            try:
                reply = await self._run(call, call_token)
            finally:
                self._untrack(call.id, call_token)
                self._count_in_flight(-1)
        self._observe(tool, reply, started)
        return reply

    async def _run(self, call: ToolCall, token: CancelToken) -> ToolReply:
        try:
            # 3. wait for the caller and min_seq
            await self._wait_for_caller(call, token)
            caller_id = call.caller.session_id if call.caller is not None else ""
            tool = lookup(call.tool)
            # 4. gate
            async with self.gates.run(caller_id, exclusive=tool.exclusive):
                token.check()
                # 5. arguments
                args = parse_arguments(tool, call.arguments)
                # 6. caller
                caller = await resolve_caller(self.service, call.caller, token)
                # 7. authorization -> query -> rendering
                text = await tool.run(self._context, caller, args, token)
            # 8. exactly one reply
            token.check()
            return ToolReply(output=text)
        except ToolAbortError as abort:
            return ToolReply(error=abort.failure(), cancel_reason=abort.reason)
        except HarnessError as error:
            return self._failed(token, error)
        except _PASSTHROUGH:
            raise
        except BaseException as error:  # a bug must still produce one safe reply
            return self._failed(token, boundary.sanitize("tool execution", error))

    @staticmethod
    def _failed(token: CancelToken, error: HarnessError) -> ToolReply:
        abort = token.failure
        if abort is not None:
            return ToolReply(error=abort, cancel_reason=token.reason)
        return ToolReply(error=error.failure())

    async def _wait_for_caller(self, call: ToolCall, token: CancelToken) -> None:
        """Read-your-writes: wait until the caller's log is applied through ``min_seq``
        (or, with ``wait_for_caller``, until the caller exists at all); the deadline or a
        cancel ends the wait with its own reply.

        ``last_seq`` is one primary-key lookup, cheaper than a thread hand-off, so it runs
        on the loop; only the waiting sleeps.
        """
        caller = call.caller
        if caller is None or (call.min_seq is None and not self.wait_for_caller):
            return
        target = call.min_seq if call.min_seq is not None else -1
        while True:
            last = self.service.last_seq(caller.session_id)
            if last is not None and last >= target:
                return
            token.check()
            await asyncio.sleep(RYW_POLL_S)

    async def call(
        self,
        tool: Any,
        arguments: Any,
        caller: Caller | None,
        *,
        timeout_ms: int | None = None,
        token: CancelToken | None = None,
        deadline: Deadline | None = None,
    ) -> ToolReply:
        """An in-process call (``sessionq call``, tests): a ``ToolCall`` sent now."""
        request = ToolCall("in-process", tool, arguments, caller, timeout_ms=timeout_ms)
        return await self.answer(request, token=token, deadline=deadline)

    # ---- metrics --------------------------------------------------------------------------------
    def _count_in_flight(self, delta: int) -> None:
        if self.metrics is not None:
            self.metrics.in_flight.inc(delta)

    def _observe(self, tool: Tool[Any] | None, reply: ToolReply, started: float) -> None:
        if self.metrics is None:
            return
        name = tool.name if tool is not None else "unknown"
        outcome = "ok" if reply.error is None else reply.error.code
        self.metrics.requests.labels(name, outcome).inc()
        self.metrics.request_seconds.labels(name).observe(time.perf_counter() - started)
