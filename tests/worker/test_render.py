"""The §10 worked examples, byte for byte, from already-authorized values."""

from __future__ import annotations

from typing import Any

from indexer.model import SessionEvent, SessionHeader
from indexer.model.search import EventHit
from indexer.query.types import EventRecord, EventTrace, EventWindow, SessionHit, SessionRecord
from tests.worker.spec_examples import EVENT_READ_SESS_B_5
from worker.tools import render
from worker.tools.registry import TOOLS
from worker.tools.render import TitleView, VisibleNode

BASE = 1784851200000  # 2026-07-24T00:00:00.000Z
DAY = 86_400_000


def record(sid: str, created: int, *, live: bool = False, persisted: bool = True,
           parent: str | None = None) -> SessionRecord:
    header = SessionHeader(id=sid, createdAt=created, cwd="/work", parentSession=parent)
    return SessionRecord(header=header, live=live, persisted=persisted)


def session_hit(rec: SessionRecord, seq: int, typ: str, surface: Any, time: int,
                snippet: str) -> SessionHit:
    best = EventHit(rec.header.id, seq, typ, time, surface, snippet)
    return SessionHit(record=rec, best=best)


def test_session_search_worked_example() -> None:
    hits = [
        session_hit(record("sess-b", BASE, live=True), 12, "assistant/message", "current",
                    BASE + 60_000, "…the parser needle was a stale cache…"),
        session_hit(record("sess-c", BASE + DAY, parent="sess-b"), 3, "tool/result", "shadowed",
                    BASE + DAY + 5123, "parser needle found in tokenizer.ts"),
        session_hit(record("sess-d", BASE + 2 * DAY, parent="hidden-parent"), 7, "turn/end",
                    "log-only", BASE + 2 * DAY, "error parser needle overflow"),
    ]
    titles = {
        "sess-b": TitleView("Fix flaky parser"),
        "sess-c": TitleView("untitled"),
        "sess-d": TitleView("untitled", "SESSION_QUERY_PERSISTENCE_FAILED"),
    }
    assert render.session_search(hits, True, titles, {"sess-b"}) == """\
Session search results (3):

1. Session sess-b — Fix flaky parser
   Created: 2026-07-24T00:00:00.000Z
   Parent: root
   Availability: live, persisted
   Best match: seq 12 | assistant/message | current | 2026-07-24T00:01:00.000Z
   Snippet: …the parser needle was a stale cache…

2. Session sess-c — untitled
   Created: 2026-07-25T00:00:00.000Z
   Parent: sess-b
   Availability: persisted
   Best match: seq 3 | tool/result | shadowed | 2026-07-25T00:00:05.123Z
   Snippet: parser needle found in tokenizer.ts

3. Session sess-d — untitled (title unavailable: SESSION_QUERY_PERSISTENCE_FAILED)
   Created: 2026-07-26T00:00:00.000Z
   Parent: [outside workspace]
   Availability: persisted
   Best match: seq 7 | turn/end | log-only | 2026-07-26T00:00:00.000Z
   Snippet: error parser needle overflow

Result cap reached. Narrow the query or add filters to find additional matches."""
    assert render.session_search([], False, {}, set()) == "No prior session matches found."


def test_event_search_worked_examples() -> None:
    hits = [
        EventHit("sess-b", 12, "assistant/message", BASE + 60_000, "current",
                 "…the parser needle was a stale cache…"),
        EventHit("sess-b", 4, "user/message", BASE + 30_000, "shadowed",
                 "where is the parser needle?"),
    ]
    assert render.event_search("sess-b", TitleView("Fix flaky parser"), hits, False) == """\
Session sess-b — Fix flaky parser

Event search results (2):
1. seq 12 | assistant/message | current | 2026-07-24T00:01:00.000Z
   Snippet: …the parser needle was a stale cache…
2. seq 4 | user/message | shadowed | 2026-07-24T00:00:30.000Z
   Snippet: where is the parser needle?"""
    assert render.event_search("caller", TitleView("untitled"), [], False) == (
        "Session caller — untitled\n\nNo prior event matches found."
    )
    capped = render.event_search("s", TitleView("t"), hits[:1], True)
    assert capped.endswith(
        "\n\nResult cap reached. Narrow the query or add filters to find additional matches."
    )


def test_session_trace_worked_example() -> None:
    target = record("sess-c", BASE + DAY)
    ancestors = [record("sess-b", BASE, live=True)]
    descendants: list[VisibleNode | None] = [
        VisibleNode(record("sess-e", BASE + 2 * DAY, live=True, persisted=False),
                    [VisibleNode(record("sess-f", BASE + 3 * DAY))]),
        None,
        VisibleNode(record("sess-g", BASE + 3 * DAY + 50_000, live=True, persisted=False)),
    ]
    titles = {
        "sess-c": TitleView("Tokenizer follow-up"),
        "sess-b": TitleView("Fix flaky parser"),
        "sess-e": TitleView("Cache audit"),
        "sess-f": TitleView("untitled", "SESSION_QUERY_SESSION_NOT_FOUND"),
        "sess-g": TitleView("untitled"),
    }
    assert render.session_trace(target, ancestors, True, descendants, titles) == """\
Session sess-c — Tokenizer follow-up
Created: 2026-07-25T00:00:00.000Z
Availability: persisted

Ancestors (nearest first):
- sess-b — Fix flaky parser | 2026-07-24T00:00:00.000Z | live, persisted
- [outside workspace boundary]

Descendants:
- sess-e — Cache audit | 2026-07-26T00:00:00.000Z | live
  - sess-f — untitled (title unavailable: SESSION_QUERY_SESSION_NOT_FOUND) | \
2026-07-27T00:00:00.000Z | persisted
- [outside workspace subtree]
- sess-g — untitled | 2026-07-27T00:00:50.000Z | live"""


def test_root_trace_and_unresolved_parent() -> None:
    target = record("sess-b", BASE, live=True)
    titles = {"sess-b": TitleView("Fix flaky parser")}
    assert render.session_trace(target, [], False, [], titles) == """\
Session sess-b — Fix flaky parser
Created: 2026-07-24T00:00:00.000Z
Availability: live, persisted

Ancestors (nearest first):
- none (target is a root session)

Descendants:
- none"""
    unresolved = render.session_trace(target, [], True, [], titles)
    boundary_only = "Ancestors (nearest first):\n- [outside workspace boundary]\n\nDescendants:"
    assert boundary_only in unresolved
    assert "none (target is a root session)" not in unresolved


def test_unavailable_availability() -> None:
    assert render.availability_text(record("x", 0, live=False, persisted=False)) == "unavailable"


def trace(seq: int, typ: str, surface: Any, time: int, replaced_by: int | None, chain: list[int],
          replaced: list[int], sources: list[int], derived: list[int]) -> EventTrace:
    return EventTrace(
        session=SessionHeader(id="sess-b", createdAt=BASE, cwd="/work"),
        target=EventRecord("sess-b", seq, typ, time, surface),
        replaced_by=replaced_by, replacement_chain=chain, replaced_event_seqs=replaced,
        source_event_seqs=sources, derived_event_seqs=derived,
    )


def test_event_trace_worked_examples() -> None:
    title = TitleView("Fix flaky parser")
    four = trace(4, "assistant/message", "shadowed", 1784851230000, 8, [8], [3], [3, 2], [8])
    assert render.event_trace("sess-b", title, four) == """\
Session sess-b — Fix flaky parser
Target: seq 4 | assistant/message | shadowed | 2026-07-24T00:00:30.000Z
Replaced by: 8
Replacement chain: 8
Events replaced by target: 3
Events cited directly as sources: 3, 2
Direct derived events: 8"""
    two = trace(2, "assistant/chunk", "log-only", 1784851220000, None, [], [], [], [3, 4, 8])
    assert render.event_trace("sess-b", title, two) == """\
Session sess-b — Fix flaky parser
Target: seq 2 | assistant/chunk | log-only | 2026-07-24T00:00:20.000Z
Replaced by: none
Replacement chain: none
Events replaced by target: none
Events cited directly as sources: none
Direct derived events: 3, 4, 8"""


def event(obj: dict[str, Any]) -> SessionEvent:
    return SessionEvent.from_obj(obj)


def user_event(seq: int, time: int, text: str, msg_id: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": "user/message", "seq": seq, "time": time,
        "data": {"content": [{"type": "text", "text": text}], "source": {"kind": "user"},
                 "role": "user", "id": msg_id},
        **extra,
    }


def test_event_read_worked_example() -> None:
    three = user_event(3, BASE + 20_000, "original question about the parser", "m3",
                       sourceEventSeqs=[2], surfaceOp="append")
    four = {
        "type": "assistant/message", "seq": 4, "time": BASE + 30_000,
        "data": {"turn": 1, "step": 1, "message": {
            "role": "assistant", "content": [{"type": "text", "text": "summary one\nsecond line"}],
            "source": {"kind": "model", "provider": "p", "model": "m"}, "id": "m4"}},
        "sourceEventSeqs": [3, 2], "surfaceOp": {"op": "replace", "start": 3, "end": 3},
    }
    five = user_event(5, 1784851235000, "Check tokenizer.ts", "msg-5", surfaceOp="append")
    six = {"type": "step/end", "seq": 6, "time": BASE + 36_000, "data": {"turn": 1, "step": 1}}
    events = [event(e) for e in (three, four, five, six)]
    window = EventWindow(session=SessionHeader(id="sess-b", createdAt=BASE, cwd="/work"),
                         target=events[2], events=events, start_seq=3, end_seq=6)
    assert render.event_read("sess-b", TitleView("Fix flaky parser"), window) == EVENT_READ_SESS_B_5
    alone = EventWindow(session=window.session, target=events[2], events=[events[2]],
                        start_seq=5, end_seq=5)
    text = render.event_read("sess-b", TitleView("t"), alone)
    assert text.endswith('"surfaceOp": "append"\n}\n```')


def card(tool: str, args: dict[str, Any]) -> dict[str, Any]:
    return TOOLS[tool].card(args)


def test_call_cards() -> None:
    assert card("session_search", {"query": "q"}) == {
        "card": "generic", "kind": "search", "title": "Search prior sessions", "rawInput": "q"}
    events = card("session_event_search", {"query": "q"})
    assert events["title"] == "Search session events"
    assert card("session_trace", {}) == {
        "card": "generic", "kind": "read", "title": "Trace current session"}
    assert card("session_trace", {"session_id": "other"}) == {
        "card": "generic", "kind": "read", "title": "Trace session other", "rawInput": "other"}
    assert card("session_event_trace", {"session_id": "other", "seq": 3}) == {
        "card": "generic", "kind": "read", "title": "Trace event 3",
        "rawInput": {"session_id": "other", "seq": 3}}
    assert card("session_event_read", {"seq": 4, "before": 1}) == {
        "card": "generic", "kind": "read", "title": "Read event 4", "rawInput": {"seq": 4}}
