"""``session_event_trace``: replacements and provenance of one event (SPEC §9.8, §10.4)."""

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
class EventTraceArgs:
    """``seq`` is already a checked non-negative safe integer (SPEC §9.8: before the caller)."""

    seq: int
    session_id: str | None = None


def parse(raw: dict[str, Any]) -> EventTraceArgs:
    seq = non_negative_safe_int("seq", raw["seq"])
    return EventTraceArgs(seq=seq, session_id=raw.get("session_id"))


def card(raw: dict[str, Any]) -> dict[str, Any]:
    return render.event_card("Trace event", raw)


def run(
    ctx: ToolContext, caller: ResolvedCaller, args: EventTraceArgs, token: CancelToken
) -> str:
    """Preflight, trace, re-check, title, rendering (``seq`` was checked before the caller)."""
    service = ctx.service
    target = target_id(args.session_id, caller)
    authorize_target(service, caller, target, token)
    seq = args.seq
    trace = boundary.call(token, "event trace", lambda: service.trace_event(target, seq))
    assert_observed(caller, target, trace.session)
    title = read_title(service, caller, target, token)
    return render.event_trace(target, title, trace)


TOOL: Tool[EventTraceArgs] = Tool(
    "session_event_trace", parse, run, mode="parallel", budget="read", card=card,
    placement="loop",
)
