"""``session_trace``: the visible lineage around one authorized session (SPEC §9.8, §10.3)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from indexer.query.types import LineageNode, SessionRecord
from worker.contract import boundary
from worker.contract.deadline import CancelToken
from worker.tools import render
from worker.tools.access import (
    ResolvedCaller,
    assert_observed,
    authorize_target,
    read_titles,
    record_authorized,
    target_id,
)
from worker.tools.registry import Tool, ToolContext
from worker.tools.render import VisibleNode, walk_descendants


@dataclass(frozen=True, slots=True)
class SessionTraceArgs:
    session_id: str | None = None


def parse(raw: dict[str, Any]) -> SessionTraceArgs:
    return SessionTraceArgs(session_id=raw.get("session_id"))


def card(raw: dict[str, Any]) -> dict[str, Any]:
    session_id = raw.get("session_id")
    if session_id is None:
        return {"card": "generic", "kind": "read", "title": "Trace current session"}
    return {
        "card": "generic",
        "kind": "read",
        "title": f"Trace session {session_id}",
        "rawInput": session_id,
    }


def visible_ancestors(
    ancestors: Sequence[SessionRecord], complete: bool, caller: ResolvedCaller
) -> tuple[list[SessionRecord], bool]:
    """Nearest-first ancestors up to the first hidden one; the flag marks a boundary.

    An unresolved parent above fully visible ancestors is a boundary too, so a missing
    id and a foreign one read the same.
    """
    visible: list[SessionRecord] = []
    for record in ancestors:
        if not record_authorized(record, caller):
            return visible, True
        visible.append(record)
    return visible, not complete


def project_descendants(
    nodes: Sequence[LineageNode], caller: ResolvedCaller
) -> list[VisibleNode | None]:
    """The forest with each hidden subtree replaced by one marker (``None``), iteratively.

    Nothing below a hidden node survives, even nodes the caller could see.
    """
    result: list[VisibleNode | None] = []
    pending: list[tuple[LineageNode, list[VisibleNode | None]]] = [
        (node, result) for node in reversed(nodes)
    ]
    while pending:
        node, siblings = pending.pop()
        if not record_authorized(node.session, caller):
            siblings.append(None)
            continue
        projected = VisibleNode(node.session)
        siblings.append(projected)
        pending.extend((child, projected.children) for child in reversed(node.descendants))
    return result


def run(
    ctx: ToolContext, caller: ResolvedCaller, args: SessionTraceArgs, token: CancelToken
) -> str:
    """Preflight, trace, re-check, projection, one title batch, rendering."""
    service = ctx.service
    target = target_id(args.session_id, caller)
    authorize_target(service, caller, target, token)
    trace = boundary.call(
        token, "session lineage trace", lambda: service.trace_session(target)
    )
    assert_observed(caller, target, trace.target.header)
    ancestors, at_boundary = visible_ancestors(trace.ancestors, trace.complete, caller)
    descendants = project_descendants(trace.descendants, caller)
    ids = [
        trace.target.header.id,
        *(record.header.id for record in ancestors),
        *(node.record.header.id for node, _ in walk_descendants(descendants) if node is not None),
    ]
    titles = read_titles(service, caller, ids, token)
    return render.session_trace(trace.target, ancestors, at_boundary, descendants, titles)


TOOL: Tool[SessionTraceArgs] = Tool(
    "session_trace", parse, run, mode="parallel", budget="read", card=card
)
