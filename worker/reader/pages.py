"""The reader's reads, for one resolved caller: a transcript page and an export.

Order of a read (in a worker thread, as the tools read): the target is authorized under
the tools' workspace rule (``access.authorize_target``: a foreign and a missing session
look the same), then its events are read (``read_range``, redacted), and the header
that read observed is checked again (``assert_observed``), so a session that left the
workspace meanwhile shows nothing. Children and the parent are the workspace's sessions
the caller may name, as ``/v1/sessions`` lists them.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass
from typing import Any, Final

from indexer.model import SessionHeader
from indexer.model.search import ParentFilter
from indexer.query.protocol import RANGE_MAX, QueryService
from indexer.query.types import EventRange, SessionRecord
from worker.contract import boundary
from worker.contract.deadline import CancelToken
from worker.reader.blocks import Block, transcript_blocks
from worker.reader.export import SessionExport, export_markdown
from worker.reader.markdown import shown_markdown
from worker.tools.access import (
    ResolvedCaller,
    assert_observed,
    authorize_session_ids,
    authorize_target,
    visible_titles,
    workspace_records,
)
from worker.tools.render import shown_parent

__all__ = ["EXPORT_MAX_EVENTS", "EXPORT_MAX_SESSIONS", "PAGE_EVENTS", "Reader"]

PAGE_EVENTS: Final = 200
PAGE_BYTES: Final = 4 << 20
EXPORT_MAX_SESSIONS: Final = 50
EXPORT_MAX_EVENTS: Final = 100_000
EXPORT_MAX_CHARS: Final = 16 << 20
_CHUNK: Final = "assistant/chunk"
_MARKDOWN_KINDS: Final = frozenset({"user", "assistant", "partial"})
_DELEGATING: Final = re.compile(r"(?i)agent|task|delegate")
_LINK_SLACK_MS: Final = 1_000


@dataclass(frozen=True, slots=True)
class _Page:
    header: SessionHeader
    blocks: list[Block]
    next: int | None
    last_seq: int


class Reader:
    """Transcript pages and exports over one query service, for one caller."""

    def __init__(self, service: QueryService, caller: ResolvedCaller) -> None:
        self.service = service
        self.caller = caller
        self.token = CancelToken()

    def _call(self, what: str, fn: Any) -> Any:
        return boundary.call(self.token, what, fn)

    def _read(self, session_id: str, first: int, count: int) -> EventRange:
        found: EventRange = self._call(
            "transcript read", lambda: self.service.read_range(session_id, first, count)
        )
        assert_observed(self.caller, session_id, found.session)
        return found

    def _page(self, session_id: str, first: int, count: int, *, authorized: bool = False) -> _Page:
        """The blocks of at most ``count`` events from ``first`` (``PAGE_BYTES`` of them
        at most, one at least), a stream cut by the page's end left to the next page.
        ``authorized``: the caller's read already authorized the session (an export's
        later pages); each read's header is checked again either way."""
        if not authorized:
            authorize_target(self.service, self.caller, session_id, self.token)
        found = self._read(session_id, first, count)
        events = found.events
        if events and all(e.type == _CHUNK for e in events) and count < RANGE_MAX:
            # a page inside one stream: read on to its end
            found = self._read(session_id, first, RANGE_MAX)
            ended = next(
                (i for i, e in enumerate(found.events) if e.type != _CHUNK), len(found.events)
            )
            events = found.events[: max(ended + 1, count)]
        used = 0
        for i, event in enumerate(events):
            used += len(event.raw)
            if used > PAGE_BYTES and i > 0:
                events = events[:i]
                break
        end = events[-1].seq + 1 if events else found.next_seq
        tail = len(events)
        while tail > 0 and events[tail - 1].type == _CHUNK:
            tail -= 1
        if 0 < tail < len(events) and end < found.next_seq:
            events, end = events[:tail], events[tail].seq
        head_open = bool(events) and events[0].type == _CHUNK and first > 0
        if head_open:  # the stream began before the page unless the event before it is none
            before = self._read(session_id, first - 1, 1).events
            head_open = bool(before) and before[0].type == _CHUNK
        tail_open = bool(events) and events[-1].type == _CHUNK and end < found.next_seq
        blocks = transcript_blocks(
            events, self.service.shown_text, head_open=head_open, tail_open=tail_open
        )
        return _Page(
            found.session, blocks, end if end < found.next_seq else None, found.next_seq - 1
        )

    def _titles(self, ids: list[str]) -> dict[str, str | None]:
        titles: dict[str, str | None] = self._call(
            "titles", lambda: visible_titles(self.service, ids, self.caller)
        )
        return titles

    def _children(self, session_id: str) -> list[SessionRecord]:
        """The session's children the caller may see, oldest first."""
        parent = ParentFilter((session_id,))
        shown = workspace_records(self.service, self.caller, self.token, parent, what="children")
        return sorted(shown, key=lambda r: r.header.created_at)

    def _facts(
        self, header: SessionHeader, last_seq: int, *, with_children: bool = True
    ) -> dict[str, Any]:
        """The session's facts as a page shows them; an export's heading shows no
        children, so it looks none up."""
        children = self._children(header.id) if with_children else []
        parent = header.parent_session
        shown = authorize_session_ids(
            self.service, self.caller, [parent] if parent else [], self.token
        )
        parent_id = shown_parent(parent, shown)
        ids = [header.id, *(r.header.id for r in children), *([parent] if parent in shown else [])]
        titles = self._titles([i for i in ids if i])
        return {
            "id": header.id,
            "title": titles.get(header.id),
            "source_agent": header.agent,
            "created_at": header.created_at,
            "cwd": None if header.cwd is None else self.service.shown_text(header.cwd),
            "last_seq": last_seq,
            "parent": parent_id,
            "parent_title": titles.get(parent_id) if parent_id else None,
            "children": [
                {
                    "id": r.header.id,
                    "title": titles.get(r.header.id),
                    "created_at": r.header.created_at,
                    "source_agent": r.header.agent,
                }
                for r in children
            ],
        }

    def transcript(self, session_id: str, first: int, count: int) -> dict[str, Any]:
        """One page from ``first``: blocks (message text as Markdown trees), where the
        next page starts (``None``: the last), and the session's facts."""
        page = self._page(session_id, first, count)
        facts = self._facts(page.header, page.last_seq)
        _link_children(page.blocks, facts["children"])
        for block in page.blocks:
            text = block.pop("text", None) if block["kind"] in _MARKDOWN_KINDS else None
            if text is not None:
                block["md"] = shown_markdown(text, self.service.shown_text)[0]
        return {"session": facts, "from": first, "next": page.next, "blocks": page.blocks}

    def export(self, session_id: str, subtree: bool) -> str:
        """The session (with ``subtree``, its subagents below it, depth first in time
        order), at most ``EXPORT_MAX_SESSIONS`` sessions, ``EXPORT_MAX_EVENTS`` events
        and ``EXPORT_MAX_CHARS`` characters; a note says where it stopped."""
        authorize_target(self.service, self.caller, session_id, self.token)
        workspace = workspace_records(self.service, self.caller, self.token) if subtree else []
        kids: dict[str, list[SessionRecord]] = {}
        for r in sorted(workspace, key=lambda r: r.header.created_at):
            if r.header.parent_session:
                kids.setdefault(r.header.parent_session, []).append(r)
        todo: deque[tuple[str, int]] = deque([(session_id, 0)])
        seen: set[str] = set()
        parts: list[SessionExport] = []
        events = chars = 0
        while todo and len(parts) < EXPORT_MAX_SESSIONS:
            sid, depth = todo.popleft()
            if sid in seen:
                continue
            seen.add(sid)
            first: int | None = 0
            part: SessionExport | None = None
            while first is not None:
                if events >= EXPORT_MAX_EVENTS or chars >= EXPORT_MAX_CHARS:
                    return export_markdown(parts, _stopped(len(parts), events, chars))
                count = min(RANGE_MAX, EXPORT_MAX_EVENTS - events)
                page = self._page(sid, first, count, authorized=True)
                if part is None:
                    facts = self._facts(page.header, page.last_seq, with_children=False)
                    part = SessionExport(facts, depth)
                    parts.append(part)
                for block in page.blocks:
                    text = block.get("text") if block["kind"] in _MARKDOWN_KINDS else None
                    if isinstance(text, str):
                        block["text"] = shown_markdown(text, self.service.shown_text)[1]
                chars += part.add(page.blocks)
                events += (page.last_seq + 1 if page.next is None else page.next) - first
                first = page.next
            todo.extendleft((r.header.id, depth + 1) for r in reversed(kids.get(sid, [])))
        note = _stopped(len(parts), events, chars) if todo else None
        return export_markdown(parts, note)


def _stopped(sessions: int, events: int, chars: int) -> str:
    return (
        f"Export stopped at {sessions} sessions, {events:,} events, {chars:,} characters"
        f" (the bounds: {EXPORT_MAX_SESSIONS} sessions, {EXPORT_MAX_EVENTS:,} events,"
        f" {EXPORT_MAX_CHARS:,} characters)."
    )


def _link_children(blocks: list[Block], children: list[dict[str, Any]]) -> None:
    """A subagent's transcript one click from the call that started it: the call whose
    input or result names the child, else a delegating call (its name says agent or
    task) open when the child was created. Each child is linked once."""
    free = list(children)
    for block in blocks:
        if block["kind"] != "tool" or not free:
            continue
        result = block.get("result") or {}
        said = f"{block.get('input') or ''}\n{result.get('text') or ''}"
        child = next((c for c in free if c["id"] in said), None)
        if child is None and _DELEGATING.search(block.get("name") or ""):
            start = block["time"] - _LINK_SLACK_MS
            end = result["time"] + _LINK_SLACK_MS if result else None
            child = next(
                (
                    c
                    for c in free
                    if c["created_at"] >= start and (end is None or c["created_at"] <= end)
                ),
                None,
            )
        if child is not None:
            free.remove(child)
            block["child"] = {"id": child["id"], "title": child["title"]}
