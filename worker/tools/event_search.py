"""``session_event_search``: full-text search inside one authorized session (SPEC §9.8)."""

from __future__ import annotations

from collections.abc import Sequence

from indexer.query.protocol import QueryService
from indexer.query.types import EventHit
from worker import boundary, render
from worker.auth import (
    ResolvedCaller,
    assert_observed,
    authorize_target,
    current_step,
    read_title,
    target_id,
)
from worker.deadline import CancelToken
from worker.input import (
    MAX_SAFE_INTEGER,
    EventSearchArgs,
    event_filters,
    normalize_query,
    sequence_range,
)
from worker.tools.paging import collect


async def run(
    service: QueryService,
    caller: ResolvedCaller,
    args: EventSearchArgs,
    token: CancelToken,
    *,
    max_results: int,
) -> str:
    """Steps of SPEC §9.8 in order: preflight, query, sequence range, current-step cut,
    title, empty-range shortcut, remaining filters, search, rendering.

    On the caller's own session the range ends before the current ``step/start``, so
    the call never finds the step that is performing it. The empty-range shortcut
    precedes the time/type/surface checks (upstream quirk, kept).
    """
    target = target_id(args.session_id, caller)
    await authorize_target(service, caller, target, token)
    query = normalize_query(args.query)
    low, high = sequence_range(args.seq_from, args.seq_to)
    if target == caller.id:
        step = await current_step(service, caller, token)
        high = min(MAX_SAFE_INTEGER if high is None else high, step - 1)
    title = await read_title(service, caller, target, token)
    if low is not None and high is not None and low > high:
        return render.event_search(target, title, [], False)
    filters = tuple(
        event_filters(
            seq_from=low,
            seq_to=high,
            time_from=args.time_from,
            time_to=args.time_to,
            event_types=args.event_types,
            surfaces=args.surfaces,
        )
    )

    async def fetch(limit: int) -> tuple[Sequence[EventHit], bool]:
        page = await boundary.call(
            token,
            "event search",
            lambda: service.search_events(target, query, filters, limit=limit),
        )
        assert_observed(caller, target, page.session)
        return page.items, page.more

    collected = await collect(fetch, lambda _hit: True, max_results)
    return render.event_search(target, title, collected.items, collected.capped)
