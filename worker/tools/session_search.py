"""``session_search``: cross-session full-text search in the caller's workspace (SPEC §9.8)."""

from __future__ import annotations

from collections.abc import Sequence

from indexer.query.protocol import QueryService
from indexer.query.types import CwdFilter, ParentFilter, SessionFilter, SessionHit
from worker import boundary, render
from worker.auth import ResolvedCaller, authorize_session_ids, read_titles, record_authorized
from worker.deadline import CancelToken
from worker.errors import no_workspace
from worker.input import (
    SessionSearchArgs,
    event_filters,
    normalize_query,
    parent_session_ids,
    session_filters,
)
from worker.tools.paging import collect


async def run(
    service: QueryService,
    caller: ResolvedCaller,
    args: SessionSearchArgs,
    token: CancelToken,
    *,
    max_results: int,
) -> str:
    """Steps of SPEC §9.8 in order: workspace, arguments, parent authorization, search,
    hit-parent authorization, one title batch, rendering.

    Every argument rule runs before the first service call, so an invalid request never
    reveals whether a guessed parent id exists.
    """
    cwd = caller.header.cwd
    if cwd is None:
        raise no_workspace()
    query = normalize_query(args.query)
    filters: list[SessionFilter] = session_filters(args)
    events = event_filters(
        seq_from=args.event_seq_from,
        seq_to=args.event_seq_to,
        time_from=args.event_time_from,
        time_to=args.event_time_to,
        event_types=args.event_types,
        surfaces=args.event_surfaces,
    )
    requested = parent_session_ids(args.parent_session_ids)
    if requested is not None or args.include_root_sessions is True:
        allowed = (
            set()
            if requested is None
            else await authorize_session_ids(service, caller, requested, token)
        )
        parents: list[str | None] = [i for i in requested or () if i in allowed]
        if args.include_root_sessions is True:
            parents.append(None)
        if not parents:
            # Hidden and nonexistent parents answer the same, without searching.
            return render.EMPTY_SESSION_SEARCH
        filters.append(ParentFilter(tuple(parents)))
    filters.append(CwdFilter((cwd,)))
    session_clauses, event_clauses = tuple(filters), tuple(events)
    exclude = frozenset({caller.id})

    async def fetch(limit: int) -> tuple[Sequence[SessionHit], bool]:
        page = await boundary.call(
            token,
            "session search",
            lambda: service.search_sessions(
                query, session_clauses, event_clauses, limit=limit, exclude_session_ids=exclude
            ),
        )
        return page.items, page.more

    def accept(hit: SessionHit) -> bool:
        return hit.record.header.id != caller.id and record_authorized(hit.record, caller)

    collected = await collect(fetch, accept, max_results)
    hit_parents = [
        hit.record.header.parent_session
        for hit in collected.items
        if hit.record.header.parent_session is not None
    ]
    authorized_parents = await authorize_session_ids(service, caller, hit_parents, token)
    titles = await read_titles(
        service, caller, [hit.record.header.id for hit in collected.items], token
    )
    return render.session_search(collected.items, collected.capped, titles, authorized_parents)
