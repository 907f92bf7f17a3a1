"""``session_event_trace``: replacements and provenance of one event (SPEC §9.8, §10.4)."""

from __future__ import annotations

from indexer.query.protocol import QueryService
from worker import boundary, render
from worker.auth import ResolvedCaller, assert_observed, authorize_target, read_title, target_id
from worker.deadline import CancelToken
from worker.input import EventTraceArgs


async def run(
    service: QueryService, caller: ResolvedCaller, args: EventTraceArgs, token: CancelToken
) -> str:
    """Preflight, trace, re-check, title, rendering (``seq`` was checked before the caller)."""
    target = target_id(args.session_id, caller)
    await authorize_target(service, caller, target, token)
    seq = args.seq
    trace = await boundary.call(token, "event trace", lambda: service.trace_event(target, seq))
    assert_observed(caller, target, trace.session)
    title = await read_title(service, caller, target, token)
    return render.event_trace(target, title, trace)
