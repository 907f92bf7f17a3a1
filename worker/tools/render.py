"""The exact text of every tool result (SPEC §10) and the call cards (SPEC §9.1).

Pure functions of already-authorized data: nothing here decides visibility. Lines are
joined with ``\\n`` and there is no trailing newline; every time goes through ``iso``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

from indexer.model import SessionEvent, SessionHeader
from indexer.model.search import EventHit
from indexer.query.types import EventTrace, EventWindow, SessionHit, SessionRecord
from indexer.surface.text import extract_text
from worker.contract.jsjson import js_number, js_stringify
from worker.contract.timefmt import iso

EMPTY_SESSION_SEARCH: Final = "No prior session matches found."
EMPTY_EVENT_SEARCH: Final = "No prior event matches found."
CAP_REACHED: Final = (
    "Result cap reached. Narrow the query or add filters to find additional matches."
)
OUTSIDE_PARENT: Final = "[outside workspace]"
ANCESTOR_BOUNDARY: Final = "- [outside workspace boundary]"
HIDDEN_SUBTREE: Final = "[outside workspace subtree]"


class TitleView(NamedTuple):
    """A title as shown: its text, or ``untitled`` plus why the title could not be read
    (a tuple: a search builds one per session found)."""

    text: str
    unavailable_code: str | None = None


@dataclass(slots=True)
class VisibleNode:
    """An authorized descendant; ``None`` in ``children`` marks one hidden subtree."""

    record: SessionRecord
    children: list[VisibleNode | None] = field(default_factory=list)


def title_text(view: TitleView) -> str:
    if view.unavailable_code is None:
        return view.text
    return f"{view.text} (title unavailable: {view.unavailable_code})"


def availability_text(record: SessionRecord) -> str:
    """The set flags of ``live, persisted`` in that order, or ``unavailable``."""
    return _AVAILABILITY[bool(record.live), bool(record.persisted)]


_AVAILABILITY: Final = {
    (True, True): "live, persisted",
    (False, True): "persisted",
    (True, False): "live",
    (False, False): "unavailable",
}


def source_agent_lines(header: SessionHeader, indent: str) -> list[str]:
    """``Source agent: <agent>`` for an imported session; none for a dsh session, whose
    text stays the upstream text byte for byte (docs/importers.md)."""
    if header.source_agent is None:
        return []
    return [f"{indent}Source agent: {header.source_agent}"]


def _source_agent_line(header: SessionHeader, indent: str) -> str:
    """``source_agent_lines`` as text to follow a line: a newline and the line, or ""."""
    lines = source_agent_lines(header, indent)
    return f"\n{lines[0]}" if lines else ""


def seq_list(values: Sequence[int]) -> str:
    return ", ".join(str(v) for v in values) if values else "none"


def walk_descendants(
    nodes: Sequence[VisibleNode | None],
) -> Iterator[tuple[VisibleNode | None, int]]:
    """Preorder (node, depth) over a projected forest, iteratively (depth 3000 is normal)."""
    pending: list[tuple[VisibleNode | None, int]] = [(node, 0) for node in reversed(nodes)]
    while pending:
        node, depth = pending.pop()
        yield node, depth
        if node is not None:
            pending.extend((child, depth + 1) for child in reversed(node.children))


def shown_parent(parent: str | None, authorized_parents: set[str]) -> str | None:
    """A session's parent as its caller may see it: None for a root session, the id when
    the caller may name it (``access.authorize_session_ids``), else ``OUTSIDE_PARENT``."""
    if parent is None:
        return None
    return parent if parent in authorized_parents else OUTSIDE_PARENT


# ---- session_search (§10.1) --------------------------------------------------------------------
def session_search(
    hits: Sequence[SessionHit],
    capped: bool,
    titles: dict[str, TitleView],
    authorized_parents: set[str],
) -> str:
    if not hits:
        return EMPTY_SESSION_SEARCH
    # one text per hit (a hit is most of a reply): a blank line, then its lines
    blocks = [f"Session search results ({len(hits)}):"]
    for index, hit in enumerate(hits, start=1):
        header, best = hit.record.header, hit.best
        parent_text = shown_parent(header.parent_session, authorized_parents) or "root"
        blocks.append(
            f"\n{index}. Session {header.id} — {title_text(titles[header.id])}"
            f"\n   Created: {iso(header.created_at)}{_source_agent_line(header, '   ')}"
            f"\n   Parent: {parent_text}"
            f"\n   Availability: {availability_text(hit.record)}"
            f"\n   Best match: seq {best.seq} | {best.type} | {best.surface} | {iso(best.time)}"
            f"\n   Snippet: {best.snippet}"
        )
    if capped:
        blocks.append(f"\n{CAP_REACHED}")
    return "\n".join(blocks)


# ---- session_event_search (§10.2) --------------------------------------------------------------
def event_search(target_id: str, title: TitleView, hits: Sequence[EventHit], capped: bool) -> str:
    lines = [f"Session {target_id} — {title_text(title)}", ""]
    if not hits:
        lines.append(EMPTY_EVENT_SEARCH)
        return "\n".join(lines)
    lines.append(f"Event search results ({len(hits)}):")
    for index, hit in enumerate(hits, start=1):
        lines += [
            f"{index}. seq {hit.seq} | {hit.type} | {hit.surface} | {iso(hit.time)}",
            f"   Snippet: {hit.snippet}",
        ]
    if capped:
        lines += ["", CAP_REACHED]
    return "\n".join(lines)


# ---- session_trace (§10.3) ---------------------------------------------------------------------
def _session_line(record: SessionRecord, titles: dict[str, TitleView]) -> str:
    header = record.header
    return (
        f"{header.id} — {title_text(titles[header.id])} | {iso(header.created_at)}"
        f" | {availability_text(record)}"
    )


def session_trace(
    target: SessionRecord,
    ancestors: Sequence[SessionRecord],
    boundary: bool,
    descendants: Sequence[VisibleNode | None],
    titles: dict[str, TitleView],
) -> str:
    header = target.header
    lines = [
        f"Session {header.id} — {title_text(titles[header.id])}",
        f"Created: {iso(header.created_at)}",
        *source_agent_lines(header, ""),
        f"Availability: {availability_text(target)}",
        "",
        "Ancestors (nearest first):",
    ]
    if not ancestors and not boundary:
        lines.append("- none (target is a root session)")
    lines += [f"- {_session_line(record, titles)}" for record in ancestors]
    if boundary:
        lines.append(ANCESTOR_BOUNDARY)
    lines += ["", "Descendants:"]
    if not descendants:
        lines.append("- none")
    for node, depth in walk_descendants(descendants):
        indent = "  " * depth
        if node is None:
            lines.append(f"{indent}- {HIDDEN_SUBTREE}")
        else:
            lines.append(f"{indent}- {_session_line(node.record, titles)}")
    return "\n".join(lines)


# ---- session_event_trace (§10.4) ---------------------------------------------------------------
def event_trace(target_id: str, title: TitleView, trace: EventTrace) -> str:
    target = trace.target
    replaced_by = "none" if trace.replaced_by is None else str(trace.replaced_by)
    return "\n".join(
        [
            f"Session {target_id} — {title_text(title)}",
            f"Target: seq {target.seq} | {target.type} | {target.surface} | {iso(target.time)}",
            f"Replaced by: {replaced_by}",
            f"Replacement chain: {seq_list(trace.replacement_chain)}",
            f"Events replaced by target: {seq_list(trace.replaced_event_seqs)}",
            f"Events cited directly as sources: {seq_list(trace.source_event_seqs)}",
            f"Direct derived events: {seq_list(trace.derived_event_seqs)}",
        ]
    )


# ---- session_event_read (§10.5) ----------------------------------------------------------------
def neighbor(event: SessionEvent) -> str:
    """``- seq <seq> | <type> | <iso>`` then the semantic text, each line indented two spaces."""
    text = extract_text(event.type, event.data)
    head = f"- seq {event.seq} | {event.type} | {iso(event.time)}"
    if not text:
        return f"{head} | (no semantic text)"
    return head + "\n  " + text.replace("\n", "\n  ")


def event_read(target_id: str, title: TitleView, window: EventWindow) -> str:
    target = window.target
    lines = [
        f"Session {target_id} — {title_text(title)}",
        f"Target event seq {target.seq}:",
        "```json",
        js_stringify(target.obj, 2),
        "```",
    ]
    before = [event for event in window.events if event.seq < target.seq]
    after = [event for event in window.events if event.seq > target.seq]
    if before:
        lines += ["", "Before:", *(neighbor(event) for event in before)]
    if after:
        lines += ["", "After:", *(neighbor(event) for event in after)]
    return "\n".join(lines)


def event_card(action: str, raw: dict[str, Any]) -> dict[str, Any]:
    """The pending-call card of the two one-event tools (``Trace event 3``, ``Read event 4``)."""
    shown: dict[str, Any] = {}
    if raw.get("session_id") is not None:
        shown["session_id"] = raw["session_id"]
    shown["seq"] = raw["seq"]
    return {
        "card": "generic",
        "kind": "read",
        "title": f"{action} {js_seq(raw['seq'])}",
        "rawInput": shown,
    }


def js_seq(value: Any) -> str:
    """A seq as JavaScript interpolates a number (``3.0`` prints ``3``)."""
    return js_number(value) if isinstance(value, (int, float)) else str(value)
