"""``session_event_search``: full-text search inside one authorized session (SPEC §9.8)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from indexer.model.search import EventHit, Surface
from worker.contract import boundary
from worker.contract.arguments import (
    MAX_SAFE_INTEGER,
    Number,
    event_filters,
    normalize_query,
    sequence_range,
    strings,
)
from worker.contract.deadline import CancelToken
from worker.tools import render
from worker.tools.access import (
    ResolvedCaller,
    assert_observed,
    authorize_target,
    current_step,
    read_title,
    target_id,
)
from worker.tools.paging import collect
from worker.tools.registry import Tool, ToolContext


@dataclass(frozen=True, slots=True)
class EventSearchArgs:
    query: str
    session_id: str | None = None
    seq_from: Number | None = None
    seq_to: Number | None = None
    time_from: str | None = None
    time_to: str | None = None
    event_types: tuple[str, ...] | None = None
    surfaces: tuple[Surface, ...] | None = None


def parse(raw: dict[str, Any]) -> EventSearchArgs:
    return EventSearchArgs(
        query=raw["query"],
        session_id=raw.get("session_id"),
        seq_from=raw.get("seq_from"),
        seq_to=raw.get("seq_to"),
        time_from=raw.get("time_from"),
        time_to=raw.get("time_to"),
        event_types=strings(raw, "event_types"),
        surfaces=strings(raw, "surfaces"),
    )


def card(raw: dict[str, Any]) -> dict[str, Any]:
    return {
        "card": "generic",
        "kind": "search",
        "title": "Search session events",
        "rawInput": raw["query"],
    }


def run(
    ctx: ToolContext, caller: ResolvedCaller, args: EventSearchArgs, token: CancelToken
) -> str:
    """Steps of SPEC §9.8 in order: preflight, query, sequence range, current-step cut,
    title, empty-range shortcut, remaining filters, search, rendering.

    On the caller's own session the range ends before the current ``step/start``, so
    the call never finds the step that is performing it. The empty-range shortcut
    precedes the time/type/surface checks (upstream quirk, kept).
    """
    service, max_results, mode = ctx.service, ctx.max_search_results, ctx.search_mode
    target = target_id(args.session_id, caller)
    authorize_target(service, caller, target, token)
    query = normalize_query(args.query)
    low, high = sequence_range(args.seq_from, args.seq_to)
    if target == caller.id:
        step = current_step(service, caller, token)
        high = min(MAX_SAFE_INTEGER if high is None else high, step - 1)
    title = read_title(service, caller, target, token)
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

    def fetch(limit: int) -> tuple[Sequence[EventHit], bool]:
        page = boundary.call(
            token,
            "event search",
            lambda: service.search_events(target, query, filters, limit=limit, mode=mode),
        )
        assert_observed(caller, target, page.session)
        return page.items, page.more

    collected = collect(fetch, lambda _hit: True, max_results)
    return render.event_search(target, title, collected.items, collected.capped)


TOOL: Tool[EventSearchArgs] = Tool(
    "session_event_search", parse, run, mode="exclusive", budget="search", card=card
)
