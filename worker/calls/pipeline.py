"""The request pipeline: one tool call in, exactly one reply out (SPEC §9, DESIGN "worker").

``Pipeline.answer`` is the one function every transport calls (the Kafka worker, the
embedded HTTP API, ``sessionq call``); transports only move bytes. It reads top to
bottom as the steps:

1. decode — done by the transport: its envelope becomes a ``ToolCall``;
2. deadline — computed once (``deadline_for``): the request's ``timeout_ms`` capped by
   the tool's budget and the deployment cap, counted from when the request was sent;
   a call already past it is answered ``TOOL_TIMEOUT`` without any work;
3. authenticate — with a keyring, the host's token must vouch for this request, this
   caller and a workspace its key may speak for (``worker.authn``), before anything is
   read; else ``SESSION_QUERY_CALLER_UNAUTHENTICATED``; then a partitioned node's ``route``
   (``worker.transports.kafka.node_worker``), so only an authenticated caller learns where its
   workspace lives; then the call takes its place in its host key's and workspace's
   admission share (``worker.calls.admission``), held until it is answered; a call beyond it
   is answered ``SESSION_QUERY_BUSY`` at once;
4. wait — read-your-writes (``worker.calls.read_your_writes``): until the caller's log is applied
   through ``min_seq`` (and, over Kafka, until the caller exists at all), within the deadline;
5. slot and gate (``worker.calls.admission``) — a running slot (bounded overall and per workspace;
   a call waiting in step 4 holds none), then the tool's execution mode per caller:
   searches exclusive, reads parallel; steps 6-8 then run on the loop, or in one
   worker thread (``boundary.in_thread``, the call's only thread hand-off) for a tool
   placed there while another call is in flight or when its recent runs were long
   (``Pipeline._placed_on_loop``);
6. arguments — schema, then the rules upstream runs before resolving the caller
   (upstream validates arguments before the tool runs, SPEC §9.8);
7. caller — none is ``MISSING_AGENT``; else resolved to its stored header (its ``cwd``
   is the workspace, and must be the one the token names); steps 7-8 read the store
   inside one ``QueryService.reading`` scope (one check of its commit generation);
8. authorization → query → rendering — the tool's own steps (``Tool.run``, SPEC §9.8);
9. reply — exactly one. Once the call is cancelled or past its deadline, that is the
   reply whatever the tool produced meanwhile; tool-owned errors reply verbatim;
   anything else is sanitized to ``SESSION_QUERY_TOOL_FAILED`` (SPEC §9.10).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import TYPE_CHECKING, Any, Final

from indexer.query.protocol import QueryService
from worker.authn.binding import Binding
from worker.authn.principal import Principal
from worker.calls.admission import Admission, Admitted
from worker.calls.cancels import InFlight
from worker.calls.limits import ToolLimits
from worker.calls.read_your_writes import applied_through
from worker.calls.slots import Shares, Slots
from worker.calls.tool_call import Route, ToolCall, deadline_for
from worker.contract import boundary
from worker.contract.deadline import CancelToken, Deadline
from worker.contract.errors import (
    BusyError,
    HarnessError,
    ToolAbortError,
    caller_unauthenticated,
    missing_agent,
)
from worker.contract.outcome import ToolReply
from worker.tools.access import Caller, resolve_caller
from worker.tools.registry import Tool, ToolContext, lookup, parse_arguments

if TYPE_CHECKING:  # annotations only: a call without a keyring or metrics loads neither
    from indexer.metrics import Metrics
    from worker.authn.tokens import CallerAuthenticator

LOOP_RUN_MAX_S: Final = 0.02  # a tool whose recent runs took longer is handed to a thread
RECENT_WEIGHT: Final = 0.25  # the weight of a run's time in its tool's recent run time
_PASSTHROUGH: Final = (asyncio.CancelledError, KeyboardInterrupt, SystemExit, GeneratorExit)


class Pipeline:
    """The five session-query tools over one ``QueryService``, behind one entry point."""

    def __init__(
        self,
        service: QueryService,
        limits: ToolLimits | None = None,
        *,
        metrics: Metrics | None = None,
        wait_for_caller: bool = False,
        authenticator: CallerAuthenticator | None = None,
        slots: Slots | None = None,
        shares: Shares | None = None,
        route: Route | None = None,
    ) -> None:
        """``wait_for_caller``: a caller session not indexed yet is waited for (within the
        deadline) instead of failing — over Kafka the caller's own events may still be in
        flight (DESIGN.md "Caller, consistency, deadlines"). ``route``: raises the refusal
        of a call that is not this pipeline's partition's (step 3)."""
        self.service = service
        self.limits = limits if limits is not None else ToolLimits()
        self.metrics = metrics
        self.wait_for_caller = wait_for_caller
        self.authenticator = authenticator
        self.admission = Admission(shares=shares, slots=slots)
        self.route = route
        self._context = ToolContext(
            service, self.limits.max_search_results, self.limits.search_mode
        )
        self.in_flight = InFlight(bound=authenticator is not None)
        self._running = 0  # calls between step 3 and their reply (``_count_in_flight``)
        self._recent: dict[str, float] = {}  # tool -> recent run time, s (``_timed``)
        self._observed: dict[tuple[str, str], tuple[Any, Any]] = {}  # metrics' children

    def deadline(self, tool: object, timeout_ms: Any, sent_ms: float | None = None) -> Deadline:
        """Step 2 for a call not made yet: a transport that shows the deadline (MCP
        progress) reads it here and hands it to ``answer``, so both are the same one."""
        found = lookup(tool)
        return deadline_for(
            self.limits, found if isinstance(found, Tool) else None, timeout_ms, sent_ms
        )

    def cancel(
        self,
        request_id: str,
        reason: Any,
        *,
        session_id: str | None = None,
        token: str | None = None,
        binding: Binding | None = None,
    ) -> int:
        """Abort the in-flight calls with this id that the cancel's sender may abort
        (``worker.calls.cancels``): with authentication, its token must be its request's
        principal's, bound to the cancel's own envelope. Returns the calls aborted."""
        owner = None
        if self.authenticator is not None:
            try:
                owner = self.authenticator.verify(token, request_id, session_id, binding)
            except HarnessError:
                return 0  # a foreign or forged cancel is ignored
        return self.in_flight.cancel(request_id, reason, owner)

    async def answer(
        self, call: ToolCall, *, token: CancelToken | None = None, deadline: Deadline | None = None
    ) -> ToolReply:
        """Steps 2-9 of the module docstring; never raises (but asyncio cancellation).

        ``token`` links an outside cancellation; ``deadline`` replaces step 2's (tests).
        """
        started = time.perf_counter()
        found = lookup(call.tool)  # the one decision on the tool name (replied in step 5)
        tool = found if isinstance(found, Tool) else None
        # 2. deadline
        deadline = deadline or deadline_for(self.limits, tool, call.timeout_ms, call.sent_ms)
        call_token = (token if isinstance(token, CancelToken) else CancelToken()).child(deadline)
        aborted = call_token.failure
        if aborted is not None:  # past its deadline (or cancelled) already: no work
            if self.metrics is not None and deadline.expired():
                self.metrics.deadline_sheds.inc()
            reply = ToolReply(error=aborted, cancel_reason=call_token.reason)
        else:
            try:  # 3. authenticate: the host's proof, before anything is read
                principal = self._authenticate(call)
                if self.route is not None:  # routing is judged for authenticated callers only
                    self.route(call, principal)
                admitted = self.admission.admit(call, principal)
            except HarnessError as error:
                principal, reply = None, ToolReply(error=error.failure())
                if isinstance(error, BusyError) and self.metrics is not None:
                    self.metrics.requests_shed.labels(error.bound).inc()
            else:
                self.in_flight.start(call.id, call_token, principal)
                self._count_in_flight(+1)
                try:
                    reply = await self._run(call, found, call_token, principal, admitted)
                finally:
                    admitted.release()
                    self.in_flight.finish(call.id, call_token)
                    self._count_in_flight(-1)
        self._observe(tool, reply, started)
        return reply

    async def _run(
        self,
        call: ToolCall,
        found: Tool[Any] | HarnessError,
        token: CancelToken,
        principal: Principal | None,
        admitted: Admitted,
    ) -> ToolReply:
        try:
            # 4. wait for the caller and min_seq
            await self._wait_for_caller(call, token)
            if isinstance(found, HarnessError):
                raise found
            tool = found
            # 5. a running slot (none while waiting), then the caller's execution gate
            async with admitted.running(tool, token):
                token.check()
                if self._placed_on_loop(tool):
                    text = self._timed(tool, call, token, principal)
                else:
                    text = await boundary.in_thread(
                        lambda: self._timed(tool, call, token, principal)
                    )
            # 9. exactly one reply
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

    def _placed_on_loop(self, tool: Tool[Any]) -> bool:
        """Where steps 6-8 run: a tool placed on the loop runs there; a thread-placed one
        too while its call is the only one in flight and the tool's recent runs were
        short (``LOOP_RUN_MAX_S``). A hand-off lets the loop serve other calls meanwhile
        (and Tantivy search beside them, without the GIL) but costs more CPU than a small
        search (two wake-ups across cores, the call's data read again on the other one;
        ``bench/bench_handoff.py``): alone, a short call only delays one arriving meanwhile
        by as much; a longer one is worth the hand-off."""
        if tool.on_loop:
            return True
        return self._running <= 1 and self._recent.get(tool.name, 0.0) < LOOP_RUN_MAX_S

    def _timed(
        self, tool: Tool[Any], call: ToolCall, token: CancelToken, principal: Principal | None
    ) -> str:
        """``_execute``, its wall time folded into the tool's recent run time (an
        exponentially weighted mean). Two threads folding at once may lose one run's
        time: the mean is a placement hint, not a measure."""
        started = time.perf_counter()
        try:
            return self._execute(tool, call, token, principal)
        finally:
            took = time.perf_counter() - started
            recent = self._recent.get(tool.name, took)
            self._recent[tool.name] = recent + (took - recent) * RECENT_WEIGHT

    def _execute(
        self, tool: Tool[Any], call: ToolCall, token: CancelToken, principal: Principal | None
    ) -> str:
        """Steps 6-8, in the call's one worker thread or on the loop (``placement``)."""
        # 6. arguments
        args = parse_arguments(tool, call.arguments)
        # 7. caller (in the workspace its host vouched for); 7-8 read one commit generation
        if call.caller is None:
            raise missing_agent()
        with self.service.reading():
            caller = resolve_caller(self.service, call.caller, token)
            if principal is not None and caller.header.cwd != principal.workspace:
                raise caller_unauthenticated()
            # 8. authorization -> query -> rendering, with the call's options
            context = self._context
            if call.source_agents is not None:
                context = dataclasses.replace(context, source_agents=call.source_agents)
            return tool.run(context, caller, args, token)

    @staticmethod
    def _failed(token: CancelToken, error: HarnessError) -> ToolReply:
        abort = token.failure
        if abort is not None:
            return ToolReply(error=abort, cancel_reason=token.reason)
        return ToolReply(error=error.failure())

    def _authenticate(self, call: ToolCall) -> Principal | None:
        """The verified principal, or None when this pipeline does not authenticate
        (embedded loopback mode, in-process calls)."""
        if self.authenticator is None:
            return None
        session_id = call.caller.session_id if call.caller is not None else None
        return self.authenticator.verify(call.token, call.id, session_id, call.binding)

    async def _wait_for_caller(self, call: ToolCall, token: CancelToken) -> None:
        """Step 4 (``worker.calls.read_your_writes``) for a call asking for ``min_seq``, or for
        any caller when ``wait_for_caller``."""
        caller = call.caller
        if caller is not None and (call.min_seq is not None or self.wait_for_caller):
            await applied_through(self.service, caller.session_id, call.min_seq, token)

    async def call(
        self,
        tool: Any,
        arguments: Any,
        caller: Caller | None,
        *,
        timeout_ms: int | None = None,
        token: CancelToken | None = None,
        deadline: Deadline | None = None,
        source_agents: frozenset[str] | None = None,
    ) -> ToolReply:
        """An in-process call (``sessionq call``, the MCP server, tests): a ``ToolCall``
        sent now."""
        request = ToolCall(
            "in-process",
            tool,
            arguments,
            caller,
            timeout_ms=timeout_ms,
            source_agents=source_agents,
        )
        return await self.answer(request, token=token, deadline=deadline)

    # ---- counts and metrics ---------------------------------------------------------------------
    def _count_in_flight(self, delta: int) -> None:
        """The calls in flight: the placement's count (``_placed_on_loop``) and the gauge."""
        self._running += delta
        if self.metrics is not None:
            self.metrics.in_flight.inc(delta)

    def _observe(self, tool: Tool[Any] | None, reply: ToolReply, started: float) -> None:
        """Count the call and its time; each (tool, outcome)'s children are looked up once
        (outcomes are codes of a closed set)."""
        if self.metrics is None:
            return
        name = tool.name if tool is not None else "unknown"
        outcome = "ok" if reply.error is None else reply.error.code
        children = self._observed.get((name, outcome))
        if children is None:
            children = self._observed[name, outcome] = (
                self.metrics.requests.labels(name, outcome),
                self.metrics.request_seconds.labels(name),
            )
        children[0].inc()
        children[1].observe(time.perf_counter() - started)
