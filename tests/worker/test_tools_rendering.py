"""SPEC §10 worked examples end to end, §12.5 rendering and §12.6 integration, on a real store.

sessionq stores every session, so a live session reads ``live, persisted`` where the
upstream examples (a live-only session) read ``live`` (deliberate difference 1).
"""

from __future__ import annotations

import re
from typing import Any

from indexer.errors import SessionQueryError
from indexer.model import SessionHeader
from indexer.query.types import LineageNode, SessionRecord, SessionTrace, TitleObservation
from tests.builders import BASE_TIME, assistant, chunk, header, plain, title, user
from tests.fixtures.tools import HarnessFactory
from tests.worker.spec_examples import EVENT_READ_SESS_B_5

DAY = 86_400_000
STEP_START = {"turn": 1, "step": 1}


def at(event: dict[str, Any], time: int) -> dict[str, Any]:
    return {**event, "time": time}


def surface_log() -> list[dict[str, Any]]:
    """The log of SPEC §2.3 (+ a title), with seq 2 at +20 s and seq 4 at +30 s."""
    return [
        plain(0, "turn/start", {"turn": 1}),
        plain(1, "step/start", STEP_START),
        at(chunk(2), BASE_TIME + 20_000),
        user(3, "question", sources=[2]),
        at(assistant(4, "summary", op=(3, 3), sources=[3, 2]), BASE_TIME + 30_000),
        user(5, "more"),
        plain(6, "step/end", STEP_START),
        plain(7, "step/start", STEP_START),
        assistant(8, "final", op=(4, 4), sources=[2, 4]),
        title(9, "Fix flaky parser"),
    ]


async def test_event_trace_worked_examples(make_harness: HarnessFactory) -> None:
    h = make_harness([(header("sess-b"), surface_log())])
    reply = await h.call("session_event_trace", {"session_id": "sess-b", "seq": 4})
    assert reply.text == """\
Session sess-b — Fix flaky parser
Target: seq 4 | assistant/message | shadowed | 2026-07-24T00:00:30.000Z
Replaced by: 8
Replacement chain: 8
Events replaced by target: 3
Events cited directly as sources: 3, 2
Direct derived events: 8"""
    reply = await h.call("session_event_trace", {"session_id": "sess-b", "seq": 2})
    assert reply.text == """\
Session sess-b — Fix flaky parser
Target: seq 2 | assistant/chunk | log-only | 2026-07-24T00:00:20.000Z
Replaced by: none
Replacement chain: none
Events replaced by target: none
Events cited directly as sources: none
Direct derived events: 3, 4, 8"""
    reply = await h.call("session_event_trace", {"session_id": "sess-b", "seq": 3})
    assert "Replaced by: 4\nReplacement chain: 4, 8\n" in reply.text


async def test_event_read_worked_example(make_harness: HarnessFactory) -> None:
    log = [
        plain(0, "turn/start", {"turn": 1}),
        plain(1, "step/start", STEP_START),
        chunk(2),
        at(user(3, "original question about the parser", sources=[2]), BASE_TIME + 20_000),
        at(assistant(4, "summary one\nsecond line", op=(3, 3), sources=[3, 2]),
           BASE_TIME + 30_000),
        user(5, "Check tokenizer.ts", time=1784851235000, msg_id="msg-5"),
        plain(6, "step/end", STEP_START, time=BASE_TIME + 36_000),
        title(7, "Fix flaky parser"),
    ]
    h = make_harness([(header("sess-b"), log)])
    reply = await h.call("session_event_read",
                         {"session_id": "sess-b", "seq": 5, "before": 2, "after": 1})
    assert reply.text == EVENT_READ_SESS_B_5
    reply = await h.call("session_event_read", {"session_id": "sess-b", "seq": 5, "before": 51})
    assert reply.text == "Error: session event window is invalid"


async def test_session_trace_worked_example(make_harness: HarnessFactory) -> None:
    h = make_harness(
        [
            (header("hidden-root", cwd="/other", created_at=0), []),
            (header("sess-b", created_at=BASE_TIME, parent="hidden-root"),
             [title(0, "Fix flaky parser")]),
            (header("sess-c", created_at=BASE_TIME + DAY, parent="sess-b"),
             [title(0, "Tokenizer follow-up")]),
            (header("sess-e", created_at=BASE_TIME + 2 * DAY, parent="sess-c"),
             [title(0, "Cache audit")]),
            (header("sess-f", created_at=BASE_TIME + 3 * DAY, parent="sess-e"), []),
            (header("sess-x", cwd="/other", created_at=BASE_TIME + 2 * DAY + DAY // 2,
                    parent="sess-c"), []),
            (header("sess-x-child", created_at=BASE_TIME + 3 * DAY, parent="sess-x"), []),
            (header("sess-g", created_at=BASE_TIME + 3 * DAY + 50_000, parent="sess-c"), []),
        ],
        live=("caller", "sess-b", "sess-e", "sess-g"),
    )
    real_titles = h.real("read_title_snapshots")

    def titles(ids: Any) -> list[TitleObservation]:
        missing = SessionQueryError('session "sess-f" not found', "SESSION_QUERY_SESSION_NOT_FOUND")
        return [TitleObservation("sess-f", error=missing) if o.session_id == "sess-f" else o
                for o in real_titles(ids)]

    h.spy.scripted["read_title_snapshots"] = titles
    reply = await h.call("session_trace", {"session_id": "sess-c"})
    assert reply.text == """\
Session sess-c — Tokenizer follow-up
Created: 2026-07-25T00:00:00.000Z
Availability: persisted

Ancestors (nearest first):
- sess-b — Fix flaky parser | 2026-07-24T00:00:00.000Z | live, persisted
- [outside workspace boundary]

Descendants:
- sess-e — Cache audit | 2026-07-26T00:00:00.000Z | live, persisted
  - sess-f — untitled (title unavailable: SESSION_QUERY_SESSION_NOT_FOUND) | \
2026-07-27T00:00:00.000Z | persisted
- [outside workspace subtree]
- sess-g — untitled | 2026-07-27T00:00:50.000Z | live, persisted"""
    reply = await h.call("session_trace", {"session_id": "sess-b"})
    assert "Ancestors (nearest first):\n- [outside workspace boundary]\n" in reply.text
    assert "hidden-root" not in reply.text


async def test_deep_lineage(make_harness: HarnessFactory) -> None:
    """93: a mocked lineage 3000 levels deep renders without recursion."""
    def record(sid: str, created: int) -> SessionRecord:
        return SessionRecord(SessionHeader(id=sid, createdAt=created, cwd="/work"), live=True)

    node: LineageNode | None = None
    for depth in range(3000, 0, -1):
        node = LineageNode(record(f"deep-{depth}", depth), [node] if node else [])
    assert node is not None

    def trace(_sid: str) -> SessionTrace:
        return SessionTrace(target=h.real("get_session")("caller"), ancestors=[],
                            descendants=[node], complete=True)

    h = make_harness(trace_session=trace)
    reply = await h.call("session_trace", {})
    assert "Descendants:\n- deep-1 — " in reply.text
    assert "\n" + " " * (2 * 2999) + "- deep-3000 — untitled" in reply.text


async def test_read_with_unknown_type(make_harness: HarnessFactory) -> None:
    """95."""
    h = make_harness([(header("read"), [
        user(0, "before semantic text"),
        assistant(1, "target full text"),
        plain(2, "context/message", {"content": [{"type": "text", "text": "after semantic text"}]}),
    ])])
    reply = await h.call("session_event_read",
                         {"session_id": "read", "seq": 1, "before": 1, "after": 1})
    text = reply.text
    assert "```json\n{" in text and '"text": "target full text"' in text
    assert "before semantic text" in text
    assert "- seq 2 | context/message | 2026-07-24T00:00:02.000Z | (no semantic text)" in text
    assert "after semantic text" not in text and "truncated" not in text


async def test_integration_with_the_real_index(make_harness: HarnessFactory) -> None:
    """101."""
    h = make_harness(
        [(header("caller", created_at=10), [
            plain(0, "turn/start", {"turn": 1}), user(1, "live integration needle"),
            plain(2, "step/start", STEP_START)]),
         (header("persisted", created_at=20), [user(0, "persisted integration needle")])],
        with_caller=False,
    )
    reply = await h.call("session_search", {"query": "persisted integration needle"})
    assert "Session persisted" in reply.text
    assert "Session caller" not in reply.text
    reply = await h.call("session_event_search",
                         {"session_id": "persisted", "query": "persisted integration needle"})
    assert "seq 0" in reply.text
    reply = await h.call("session_event_search", {"query": "live integration needle"})
    assert "1. seq 1 | user/message" in reply.text


async def test_sub_millisecond_time_bounds_against_the_index(make_harness: HarnessFactory) -> None:
    """102."""
    h = make_harness([(header("times"), [
        user(0, "alpha phrase", time=BASE_TIME + 123),
        user(1, "alpha phrase", time=BASE_TIME + 124),
        user(2, "beta phrase", time=-124),
        user(3, "beta phrase", time=-123),
    ])])

    async def seqs(query: str, **bounds: str) -> list[int]:
        reply = await h.call("session_event_search",
                             {"session_id": "times", "query": query, **bounds})
        assert reply.ok, reply.text
        return sorted(int(m) for m in re.findall(r"^\d+\. seq (\d+) ", reply.text, re.M))

    low, high = "2026-07-24T00:00:00.12300001Z", "2026-07-24T08:00:00.1239999+08:00"
    assert await seqs("alpha phrase", time_from=low) == [1]
    assert await seqs("alpha phrase", time_to=high) == [0]
    assert await seqs("alpha phrase", time_from=low, time_to=high) == []
    assert await seqs("beta phrase", time_from="1969-12-31T23:59:59.87600001Z") == [3]
    assert await seqs("beta phrase", time_to="1969-12-31T19:59:59.8769999-04:00") == [2]
