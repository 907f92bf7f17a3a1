"""``session_search``: cross-session full-text search in the caller's workspace (SPEC §9.8)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from indexer.model.search import (
    Availability,
    AvailabilityFilter,
    CreatedAtFilter,
    CwdFilter,
    IdFilter,
    ParentFilter,
    SessionFilter,
    Surface,
)
from indexer.query.types import SessionHit
from worker.contract import boundary
from worker.contract.arguments import (
    Number,
    event_filters,
    normalize_query,
    parent_session_ids,
    require_values,
    strings,
    timestamp_range,
)
from worker.contract.deadline import CancelToken
from worker.contract.errors import no_workspace
from worker.tools import render
from worker.tools.access import (
    ResolvedCaller,
    authorize_session_ids,
    read_titles,
    record_authorized,
)
from worker.tools.paging import collect
from worker.tools.registry import Tool, ToolContext
from worker.tools.source_agents import agent_session_ids


@dataclass(frozen=True, slots=True)
class SessionSearchArgs:
    query: str
    session_ids: tuple[str, ...] | None = None
    created_at_from: str | None = None
    created_at_to: str | None = None
    parent_session_ids: tuple[str, ...] | None = None
    include_root_sessions: bool | None = None
    availability: tuple[Availability, ...] | None = None
    event_seq_from: Number | None = None
    event_seq_to: Number | None = None
    event_time_from: str | None = None
    event_time_to: str | None = None
    event_types: tuple[str, ...] | None = None
    event_surfaces: tuple[Surface, ...] | None = None


def parse(raw: dict[str, Any]) -> SessionSearchArgs:
    return SessionSearchArgs(
        query=raw["query"],
        session_ids=strings(raw, "session_ids"),
        created_at_from=raw.get("created_at_from"),
        created_at_to=raw.get("created_at_to"),
        parent_session_ids=strings(raw, "parent_session_ids"),
        include_root_sessions=raw.get("include_root_sessions"),
        availability=strings(raw, "availability"),
        event_seq_from=raw.get("event_seq_from"),
        event_seq_to=raw.get("event_seq_to"),
        event_time_from=raw.get("event_time_from"),
        event_time_to=raw.get("event_time_to"),
        event_types=strings(raw, "event_types"),
        event_surfaces=strings(raw, "event_surfaces"),
    )


def card(raw: dict[str, Any]) -> dict[str, Any]:
    return {
        "card": "generic",
        "kind": "search",
        "title": "Search prior sessions",
        "rawInput": raw["query"],
    }


def session_filters(args: SessionSearchArgs) -> list[SessionFilter]:
    """``id``, ``created-at``, ``availability`` clauses, in this order (no dedup)."""
    filters: list[SessionFilter] = []
    if args.session_ids is not None:
        filters.append(IdFilter(require_values("session_ids", args.session_ids)))
    created = timestamp_range("created_at", args.created_at_from, args.created_at_to)
    if created is not None:
        filters.append(CreatedAtFilter(from_=created[0], to=created[1]))
    if args.availability is not None:
        filters.append(AvailabilityFilter(require_values("availability", args.availability)))
    return filters


def run(
    ctx: ToolContext, caller: ResolvedCaller, args: SessionSearchArgs, token: CancelToken
) -> str:
    """Steps of SPEC §9.8 in order: workspace, arguments, parent authorization, search,
    hit-parent authorization, one title batch, rendering.

    Every argument rule runs before the first service call, so an invalid request never
    reveals whether a guessed parent id exists.
    """
    service, max_results, mode = ctx.service, ctx.max_search_results, ctx.search_mode
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
            set() if requested is None else authorize_session_ids(service, caller, requested, token)
        )
        parents: list[str | None] = [i for i in requested or () if i in allowed]
        if args.include_root_sessions is True:
            parents.append(None)
        if not parents:
            # Hidden and nonexistent parents answer the same, without searching.
            return render.EMPTY_SESSION_SEARCH
        filters.append(ParentFilter(tuple(parents)))
    filters.append(CwdFilter((cwd,)))
    if ctx.source_agents is not None:
        filters.append(IdFilter(agent_session_ids(service, caller, ctx.source_agents, token)))
    session_clauses, event_clauses = tuple(filters), tuple(events)
    exclude = frozenset({caller.id})

    def fetch(limit: int) -> tuple[Sequence[SessionHit], bool]:
        page = boundary.call(
            token,
            "session search",
            lambda: service.search_sessions(
                query,
                session_clauses,
                event_clauses,
                limit=limit,
                exclude_session_ids=exclude,
                mode=mode,
            ),
        )
        return page.items, page.more

    def accept(hit: SessionHit) -> bool:
        return hit.record.header.id != caller.id and record_authorized(hit.record, caller)

    collected = collect(fetch, accept, max_results)
    hit_parents = [
        hit.record.header.parent_session
        for hit in collected.items
        if hit.record.header.parent_session is not None
    ]
    authorized_parents = authorize_session_ids(service, caller, hit_parents, token)
    titles = read_titles(service, caller, [hit.record.header.id for hit in collected.items], token)
    return render.session_search(collected.items, collected.capped, titles, authorized_parents)


TOOL: Tool[SessionSearchArgs] = Tool(
    "session_search", parse, run, mode="exclusive", budget="search", card=card
)
