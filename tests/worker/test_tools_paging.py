"""SPEC §12.4: result cap, current-step bounds, provider failures, timeouts."""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest

from indexer.errors import SessionQueryError
from indexer.model.search import EventHit, SeqFilter
from indexer.query.types import SessionHit, SessionSearchPage
from tests.builders import header, plain, title, user
from tests.fixtures.tools import Harness, HarnessFactory, log_text
from worker.calls.limits import ToolLimits
from worker.contract import boundary
from worker.tools.access import Caller

CAP = "Result cap reached. Narrow the query or add filters to find additional matches."
FAILED = ("SESSION_QUERY_TOOL_FAILED", "session query operation failed")


def error_of(reply: Any) -> tuple[str, str]:
    assert reply.error is not None, reply.text
    return reply.error.code, reply.error.message


def scripted_search(h_ref: list[Harness], ids: list[str]) -> Any:
    """A provider returning real records of ``ids`` in this rank order, honouring ``limit``."""
    def search(_query: str, _sf: Any, _ef: Any, *, limit: int, **_kw: Any) -> SessionSearchPage:
        h = h_ref[0]
        hits = [
            SessionHit(h.real("get_session")(sid),
                       EventHit(sid, 0, "user/message", 1784851200000, "current", f"{sid} needle"))
            for sid in ids
        ]
        return SessionSearchPage(items=hits[:limit], more=len(hits) > limit)
    return search


def sessions(*specs: tuple[str, dict[str, Any]]) -> list[Any]:
    return [(header(sid, **kw), [title(0, sid.capitalize())]) for sid, kw in specs]


async def test_cap_skips_rejected_hits(make_harness: HarnessFactory) -> None:
    """64."""
    ref: list[Harness] = []
    h = make_harness(
        sessions(("unauthorized", {"cwd": "/outside"}), ("hidden-parent", {"cwd": "/outside"}),
                 ("alpha", {"parent": "hidden-parent"}), ("beta", {}), ("extra", {})),
        config=ToolLimits(maxSearchResults=2),
    )
    ref.append(h)
    h.spy.scripted["search_sessions"] = scripted_search(
        ref, ["caller", "unauthorized", "alpha", "beta", "extra"])
    reply = await h.call("session_search", {"query": "needle"})
    assert "1. Session alpha — Alpha" in reply.text
    assert "2. Session beta — Beta" in reply.text
    assert "Parent: [outside workspace]" in reply.text
    assert "hidden-parent" not in reply.text and "Session extra" not in reply.text
    assert reply.text.endswith("\n\n" + CAP)
    assert [k["limit"] for _, k in h.spy.calls_to("search_sessions")] == [3, 5]


async def test_rejected_hits_never_trigger_the_cap(make_harness: HarnessFactory) -> None:
    """65."""
    ref: list[Harness] = []
    h = make_harness(sessions(("authorized", {}), ("outside", {"cwd": "/outside"})),
                     config=ToolLimits(maxSearchResults=1))
    ref.append(h)
    h.spy.scripted["search_sessions"] = scripted_search(ref, ["authorized", "caller", "outside"])
    reply = await h.call("session_search", {"query": "needle"})
    assert "Session authorized" in reply.text and CAP not in reply.text
    assert len(h.spy.calls_to("search_sessions")) == 2


async def test_hit_parents_and_availability(make_harness: HarnessFactory) -> None:
    """80."""
    ref: list[Harness] = []
    h = make_harness([
        (header("parent"), []),
        (header("child-of-parent", parent="parent"), []),
        (header("child-of-caller", parent="caller"), []),
        (header("root-hit"), []),
    ], live=("caller", "parent", "child-of-parent"))
    ref.append(h)
    base = scripted_search(ref, ["child-of-parent", "child-of-caller", "root-hit"])

    def search(*args: Any, **kwargs: Any) -> SessionSearchPage:
        page = base(*args, **kwargs)
        last = page.items[2]
        unavailable = type(last.record)(last.record.header, live=False, persisted=False)
        return SessionSearchPage([*page.items[:2], SessionHit(unavailable, last.best)], page.more)

    h.spy.scripted["search_sessions"] = search
    text = (await h.call("session_search", {"query": "needle"})).text
    blocks = text.split("\n\n")
    assert "Parent: parent\n   Availability: live, persisted" in blocks[1]
    assert "Parent: caller\n   Availability: persisted" in blocks[2]
    assert "Parent: root\n   Availability: unavailable" in blocks[3]


async def test_provider_failures_are_sanitized_and_logged(
    make_harness: HarnessFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """66-67."""
    def conflict(*_a: Any, **_k: Any) -> Any:
        try:
            raise ValueError("cause secret 1")
        except ValueError as cause:
            raise SessionQueryError("secret 2", "SESSION_QUERY_SOURCE_CONFLICT") from cause

    def plain_error(*_a: Any, **_k: Any) -> Any:
        try:
            raise KeyError("cause secret 3")
        except KeyError as cause:
            raise RuntimeError("secret 4") from cause

    h = make_harness([(header("other"), [])], search_sessions=conflict,
                     search_events=plain_error)
    with caplog.at_level(logging.WARNING, logger="sessionq.tools"):
        first = await h.call("session_search", {"query": "q"})
        second = await h.call("session_event_search", {"session_id": "other", "query": "q"})
    for reply in (first, second):
        assert error_of(reply) == FAILED
        assert "secret" not in reply.text
    text = log_text(caplog)
    assert all(f"secret {i}" in text for i in range(1, 5))
    assert "session search failed" in text and "event search failed" in text


async def test_hostile_provider_errors(
    make_harness: HarnessFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """72-73, 77 end to end."""
    class ThrowingCode(SessionQueryError):
        @property
        def code(self) -> str:  # type: ignore[override]
            raise RuntimeError("no code")

    for error in (ThrowingCode("secret"), SessionQueryError("secret", "__proto__")):
        h = make_harness(search_sessions=lambda *a, error=error, **k: (_ for _ in ()).throw(error))
        assert error_of(await h.call("session_search", {"query": "q"})) == FAILED
    calls: list[Any] = []

    def warning(*args: Any) -> None:
        calls.append(args)
        raise RuntimeError("logger down")

    monkeypatch.setattr(boundary.LOG, "warning", warning)
    h = make_harness(search_sessions=lambda *a, **k: (_ for _ in ()).throw(
        SessionQueryError("secret", "SESSION_QUERY_EVENT_NOT_FOUND")))
    reply = await h.call("session_search", {"query": "q"})
    assert error_of(reply) == FAILED and "secret" not in reply.text
    assert len(calls) == 1


async def test_stale_provider_is_not_retried(make_harness: HarnessFactory) -> None:
    """78."""
    h = make_harness(search_sessions=lambda *a, **k: (_ for _ in ()).throw(
        SessionQueryError("stale", "SESSION_QUERY_STALE_CURSOR")))
    reply = await h.call("session_search", {"query": "q"})
    assert error_of(reply)[0] == "SESSION_QUERY_STALE_CURSOR"
    assert "retry the complete search call" in reply.text
    assert len(h.spy.calls_to("search_sessions")) == 1


async def test_provider_that_cannot_advance(make_harness: HarnessFactory) -> None:
    """79: sessionq's analogue of a repeated cursor — ``more`` without a full page."""
    h = make_harness(search_sessions=lambda *a, **k: SessionSearchPage(items=[], more=True))
    reply = await h.call("session_search", {"query": "q"})
    assert reply.text == "Error: session-search provider repeated a continuation cursor"
    assert error_of(reply)[0] == "SESSION_QUERY_INVALID_CURSOR"
    assert len(h.spy.calls_to("search_sessions")) == 1


def seq_filters(h: Harness) -> list[SeqFilter]:
    return [f for args, _ in h.spy.calls_to("search_events") for f in args[2]
            if isinstance(f, SeqFilter)]


async def test_current_step_bounds(make_harness: HarnessFactory) -> None:
    """81-82."""
    h = make_harness([(header("other"), [user(0, "needle")])])
    await h.call("session_event_search", {"query": "needle", "seq_from": 0, "seq_to": 99})
    await h.call("session_event_search",
                 {"session_id": "other", "query": "needle", "seq_from": 0, "seq_to": 99})
    assert seq_filters(h) == [SeqFilter(from_=0, to=1), SeqFilter(from_=0, to=99)]
    reply = await h.call("session_event_search", {"query": "needle", "seq_from": 2})
    assert reply.text == "Session caller — untitled\n\nNo prior event matches found."
    assert len(h.spy.calls_to("search_events")) == 2


async def test_current_step_from_the_request(make_harness: HarnessFactory) -> None:
    """Deliberate difference 5: the envelope's ``step_seq`` wins over the stored log."""
    h = make_harness()
    reply = await h.call("session_event_search", {"query": "prior needle"},
                         caller=Caller("caller", step_seq=1))
    assert "No prior event matches found." in reply.text
    assert seq_filters(h) == [SeqFilter(from_=None, to=0)]
    assert not h.spy.calls_to("last_step_start_seq")


async def test_step_zero_quirk(make_harness: HarnessFactory) -> None:
    """SPEC §9.8 step 7 quirk: a step/start at seq 0 leaves ``to = -1``."""
    h = make_harness()
    reply = await h.call("session_event_search", {"query": "q"}, caller=Caller("caller", 0))
    assert reply.text == "Error: sequence upper bound must be a non-negative safe integer"


async def test_no_step_and_event_cap(make_harness: HarnessFactory) -> None:
    """83."""
    h = make_harness(
        [(header("caller", created_at=10), [user(0, "needle")]),
         (header("other"),
          [user(0, "needle one"), user(1, "needle two"), user(2, "needle three")])],
        with_caller=False, config=ToolLimits(maxSearchResults=2),
    )
    reply = await h.call("session_event_search", {"query": "needle"})
    assert error_of(reply) == (
        "SESSION_QUERY_TOOL_NO_CURRENT_STEP",
        "current-session search requires an active step boundary",
    )
    reply = await h.call("session_event_search", {"session_id": "other", "query": "needle"})
    assert reply.text.startswith("Session other — untitled\n\nEvent search results (2):\n1. seq ")
    assert reply.text.endswith("\n\n" + CAP)
    assert [k["limit"] for _, k in h.spy.calls_to("search_events")] == [3]


async def test_deadline_during_hit_parent_authorization(make_harness: HarnessFactory) -> None:
    """91: the stalled service call settles, then the call reports TOOL_TIMEOUT."""
    h = make_harness(
        [(header("par"), []), (header("child", parent="par"), [user(0, "needle")])],
        config=ToolLimits(searchTimeoutMs=200),
    )
    real = h.real("filter_sessions")

    def slow(*args: Any) -> Any:
        time.sleep(0.4)
        return real(*args)

    h.spy.scripted["filter_sessions"] = slow
    started = time.monotonic()
    reply = await h.call("session_search", {"query": "needle"})
    assert error_of(reply) == ("TOOL_TIMEOUT", "tool call timed out after 200ms")
    assert reply.text == "Error: tool call timed out after 200ms"
    assert time.monotonic() - started >= 0.4
    assert len(h.spy.calls_to("search_sessions")) == 1
    assert not h.spy.calls_to("read_title_snapshots")


async def test_trace_tools_have_no_default_deadline(make_harness: HarnessFactory) -> None:
    h = make_harness(config=ToolLimits(searchTimeoutMs=1))
    real = h.real("trace_session")

    def slow(sid: str) -> Any:
        time.sleep(0.05)
        return real(sid)

    h.spy.scripted["trace_session"] = slow
    assert (await h.call("session_trace", {})).ok
    reply = await h.call("session_trace", {}, timeout_ms=10)
    assert error_of(reply) == ("TOOL_TIMEOUT", "tool call timed out after 10ms")


async def test_plugin_events_are_searchable_in_order(make_harness: HarnessFactory) -> None:
    h = make_harness([(header("other"), [plain(0, "turn/start", {"turn": 1}),
                                         user(1, "alpha needle")])])
    reply = await h.call("session_event_search", {"session_id": "other", "query": "needle"})
    assert "1. seq 1 | user/message | current | 2026-07-24T00:00:01.000Z" in reply.text
