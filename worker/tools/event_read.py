"""``session_event_read``: one full event plus neighbour summaries (SPEC §9.8, §10.5)."""

from __future__ import annotations

from indexer.query.protocol import QueryService
from worker import boundary, render
from worker.auth import ResolvedCaller, assert_observed, authorize_target, read_title, target_id
from worker.deadline import CancelToken
from worker.input import EventReadArgs


async def run(
    service: QueryService, caller: ResolvedCaller, args: EventReadArgs, token: CancelToken
) -> str:
    """Preflight, window read, re-check, title, rendering.

    ``seq``/``before``/``after`` were checked before the caller; omitted window sides
    are 0, and sides above the service's ``readWindowMax`` fail there (INVALID_WINDOW).
    """
    target = target_id(args.session_id, caller)
    await authorize_target(service, caller, target, token)
    seq, before, after = args.seq, args.before or 0, args.after or 0
    window = await boundary.call(
        token,
        "event read",
        lambda: service.read_event(target, seq, before=before, after=after),
    )
    assert_observed(caller, target, window.session)
    title = await read_title(service, caller, target, token)
    return render.event_read(target, title, window)
