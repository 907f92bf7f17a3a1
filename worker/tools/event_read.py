"""``session_event_read``: one full event plus neighbour summaries (SPEC §9.8, §10.5)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from worker.contract import boundary
from worker.contract.arguments import non_negative_safe_int
from worker.contract.deadline import CancelToken
from worker.tools import render
from worker.tools.access import (
    ResolvedCaller,
    assert_observed,
    authorize_target,
    read_title,
    target_id,
)
from worker.tools.registry import Tool, ToolContext


@dataclass(frozen=True, slots=True)
class EventReadArgs:
    """``seq``/``before``/``after`` are already checked (SPEC §9.8: before the caller)."""

    seq: int
    session_id: str | None = None
    before: int | None = None
    after: int | None = None


def parse(raw: dict[str, Any]) -> EventReadArgs:
    seq = non_negative_safe_int("seq", raw["seq"])
    before = None if raw.get("before") is None else non_negative_safe_int("before", raw["before"])
    after = None if raw.get("after") is None else non_negative_safe_int("after", raw["after"])
    return EventReadArgs(seq=seq, session_id=raw.get("session_id"), before=before, after=after)


def card(raw: dict[str, Any]) -> dict[str, Any]:
    return render.event_card("Read event", raw)


def run(
    ctx: ToolContext, caller: ResolvedCaller, args: EventReadArgs, token: CancelToken
) -> str:
    """Preflight, window read, re-check, title, rendering.

    ``seq``/``before``/``after`` were checked before the caller; omitted window sides
    are 0, and sides above the service's ``readWindowMax`` fail there (INVALID_WINDOW).
    """
    service = ctx.service
    target = target_id(args.session_id, caller)
    authorize_target(service, caller, target, token)
    seq, before, after = args.seq, args.before or 0, args.after or 0
    window = boundary.call(
        token,
        "event read",
        lambda: service.read_event(target, seq, before=before, after=after),
    )
    assert_observed(caller, target, window.session)
    title = read_title(service, caller, target, token)
    return render.event_read(target, title, window)


TOOL: Tool[EventReadArgs] = Tool(
    "session_event_read", parse, run, mode="parallel", budget="read", card=card,
    placement="loop",
)
