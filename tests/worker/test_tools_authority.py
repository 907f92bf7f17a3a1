"""SPEC §12.3: workspace authority, lineage redaction, sanitized service failures."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

import pytest

from indexer.errors import SessionQueryError
from indexer.model.search import CwdFilter, IdFilter, ParentFilter
from indexer.query.types import LineageNode, SessionRecord, SessionTrace, TitleObservation
from tests.builders import assistant, header, plain, title, user
from tests.fixtures.tools import (
    Gate,
    HarnessFactory,
    cancel_while_in_flight,
    log_text,
)

UNAUTHORIZED = ("SESSION_QUERY_TOOL_UNAUTHORIZED", "session target is outside the caller workspace")
FAILED = ("SESSION_QUERY_TOOL_FAILED", "session query operation failed")


def error_of(reply: Any) -> tuple[str, str]:
    assert reply.error is not None, reply.text
    return reply.error.code, reply.error.message


def raiser(error: BaseException) -> Any:
    def method(*_args: Any, **_kwargs: Any) -> Any:
        raise error

    return method


async def test_missing_agent_and_foreign_target(make_harness: HarnessFactory) -> None:
    """38."""
    h = make_harness([(header("outside", cwd="/outside"), [user(0, "secret payload")])])
    reply = await h.call("session_trace", {}, caller=None)
    assert error_of(reply) == (
        "SESSION_QUERY_TOOL_MISSING_AGENT", "session query tools require an agent-bound caller"
    )
    reply = await h.call("session_event_read", {"session_id": "outside", "seq": 0})
    assert error_of(reply) == UNAUTHORIZED
    assert 'session "outside"' not in reply.text and "secret payload" not in reply.text
    assert not h.spy.calls_to("read_event")


async def test_caller_without_workspace(make_harness: HarnessFactory) -> None:
    """39."""
    h = make_harness(
        [(header("caller", cwd=None, created_at=10), [user(0, "mine")]),
         (header("other-nocwd", cwd=None), [])],
        with_caller=False,
    )
    reply = await h.call("session_trace", {})
    assert reply.ok and "Session caller" in reply.text
    reply = await h.call("session_search", {"query": "mine"})
    assert error_of(reply) == (
        "SESSION_QUERY_TOOL_UNAUTHORIZED",
        "cross-session search is unavailable because the caller session has no workspace",
    )
    reply = await h.call("session_trace", {"session_id": "other-nocwd"})
    assert error_of(reply) == UNAUTHORIZED
    assert not h.spy.calls_to("filter_sessions")


async def test_parent_guess_oracle(make_harness: HarnessFactory) -> None:
    """40: a hidden parent and a nonexistent one answer identically, without searching."""
    h = make_harness([
        (header("hidden-parent", cwd="/outside"), []),
        (header("child", parent="hidden-parent"), [user(0, "needle")]),
    ])
    hidden = await h.call("session_search",
                          {"query": "needle", "parent_session_ids": ["hidden-parent"]})
    missing = await h.call("session_search", {"query": "needle", "parent_session_ids": ["nope"]})
    assert hidden.text == missing.text == "No prior session matches found."
    assert "child" not in hidden.text
    assert not h.spy.calls_to("search_sessions")


async def test_parent_dedup_and_authorization(make_harness: HarnessFactory) -> None:
    """41."""
    h = make_harness([(header("visible"), []), (header("hidden", cwd="/outside"), [])])
    for requested, expected in [
        (["visible", "hidden", "visible", "missing"], ("visible", None)),
        (["hidden"], (None,)),
        (["missing"], (None,)),
    ]:
        before = len(h.spy.calls_to("search_sessions"))
        reply = await h.call("session_search", {
            "query": "q", "parent_session_ids": requested, "include_root_sessions": True,
        })
        assert reply.ok
        (args, _), = h.spy.calls_to("search_sessions")[before:]
        assert [f for f in args[1] if isinstance(f, ParentFilter)] == [ParentFilter(expected)]
    (args, _), *_ = h.spy.calls_to("filter_sessions")
    assert list(args[0]) == [IdFilter(("visible", "hidden", "missing")), CwdFilter(("/work",))]


async def test_unrequested_and_foreign_records_are_ignored(make_harness: HarnessFactory) -> None:
    """42."""
    def filter_sessions(_filters: Any) -> list[SessionRecord]:
        stray = h.real("get_session")("stray")
        foreign = h.real("get_session")("asked")
        return [stray, foreign]

    h = make_harness(
        [(header("stray"), []), (header("asked", cwd="/outside"), [])],
        filter_sessions=filter_sessions,
    )
    reply = await h.call("session_search", {"query": "q", "parent_session_ids": ["asked"]})
    assert reply.text == "No prior session matches found."
    assert not h.spy.calls_to("search_sessions")


async def test_validation_precedes_authorization(make_harness: HarnessFactory) -> None:
    """43."""
    h = make_harness()
    reply = await h.call("session_search", {
        "query": "q", "parent_session_ids": ["p"], "event_seq_from": -1,
    })
    assert error_of(reply)[0] == "SESSION_QUERY_INVALID_FILTER"
    assert [name for name, *_ in h.spy.calls] == ["get_session"]  # only the caller lookup


async def test_parent_preauthorization_failure_is_sanitized(
    make_harness: HarnessFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """44."""
    h = make_harness(filter_sessions=raiser(
        SessionQueryError("conflict about secret-session-77", "SESSION_QUERY_SOURCE_CONFLICT")))
    with caplog.at_level(logging.WARNING, logger="sessionq.tools"):
        reply = await h.call("session_search", {"query": "q", "parent_session_ids": ["p"]})
    assert error_of(reply) == FAILED
    assert reply.text == "Error: session query operation failed"
    assert "secret-session-77" in log_text(caplog)
    assert "session-id authorization failed" in log_text(caplog)
    assert not h.spy.calls_to("search_sessions")


async def test_direct_target_authorization_failure_is_sanitized(
    make_harness: HarnessFactory,
) -> None:
    """45."""
    h = make_harness(filter_sessions=raiser(
        SessionQueryError("secret", "SESSION_QUERY_SOURCE_CONFLICT")))
    reply = await h.call("session_event_search", {"session_id": "other", "query": "q"})
    assert error_of(reply) == FAILED
    assert not h.spy.calls_to("search_events")


@pytest.mark.parametrize(
    ("tool", "arguments", "method", "message"),
    [
        ("session_search", {"query": "q", "parent_session_ids": ["p"]}, "filter_sessions",
         "parent preauthorization cancelled"),  # 46
        ("session_event_search", {"session_id": "other", "query": "q"}, "filter_sessions",
         "direct-target authorization cancelled"),  # 90
        ("session_trace", {}, "trace_session", "session_trace cancelled"),  # 54
        ("session_event_trace", {"seq": 0}, "trace_event", "session_event_trace cancelled"),  # 55
        ("session_event_read", {"seq": 0}, "read_event", "session_event_read cancelled"),  # 56
        ("session_search", {"query": "q"}, "search_sessions", "search cancelled"),  # 92
    ],
)
async def test_cancellation_waits_for_the_service_and_wins(
    make_harness: HarnessFactory, caplog: pytest.LogCaptureFixture,
    tool: str, arguments: dict[str, Any], method: str, message: str,
) -> None:
    gate = Gate()
    h = make_harness([(header("other"), [])])
    real = h.real(method)
    h.spy.scripted[method] = gate.hold(lambda: real_call())
    captured: dict[str, Any] = {}

    def real_call() -> Any:
        args, kwargs = h.spy.calls_to(method)[-1]
        captured["result"] = real(*args, **kwargs)
        return captured["result"]

    reason = SessionQueryError(message, "SESSION_QUERY_ABORTED")
    with caplog.at_level(logging.WARNING, logger="sessionq.tools"):
        reply = await cancel_while_in_flight(h, gate, reason, tool, arguments)
    assert error_of(reply) == ("SESSION_QUERY_ABORTED", message)
    assert reply.text == f"Error: {message}"
    assert reply.cancel_reason is reason
    assert "result" in captured  # the service call ran to completion
    assert log_text(caplog) == ""
    assert not h.spy.calls_to("search_events")
    assert not h.spy.calls_to("read_title_snapshots")


async def test_abort_beats_a_late_failure(make_harness: HarnessFactory) -> None:
    """58."""
    gate = Gate()

    def fail() -> None:
        raise SessionQueryError("cycle at hidden-9", "SESSION_QUERY_INVALID_LINEAGE")

    h = make_harness(trace_session=gate.hold(fail))
    reply = await cancel_while_in_flight(
        h, gate, {"code": "SESSION_QUERY_ABORTED", "message": "lineage trace cancelled first"},
        "session_trace", {},
    )
    assert reply.text == "Error: lineage trace cancelled first"
    assert "hidden-9" not in reply.text


async def test_lineage_redaction(make_harness: HarnessFactory) -> None:
    """47."""
    h = make_harness([
        (header("hidden-parent", cwd="/outside", created_at=1), []),
        (header("target", created_at=2, parent="hidden-parent"), [title(0, "Target title")]),
        (header("visible-child", created_at=30, parent="target"), []),
        (header("hidden-child", cwd="/outside", created_at=40, parent="target"), []),
        (header("grandchild", created_at=50, parent="hidden-child"), []),
    ])
    reply = await h.call("session_trace", {"session_id": "target"})
    assert reply.ok
    for visible in ("Target title", "visible-child", "[outside workspace boundary]",
                    "[outside workspace subtree]"):
        assert visible in reply.text
    for hidden in ("hidden-parent", "hidden-child", "grandchild"):
        assert hidden not in reply.text


async def test_real_ancestor_cycle_is_invalid_lineage(make_harness: HarnessFactory) -> None:
    """48."""
    h = make_harness([
        (header("cycle-a", cwd="/outside", parent="cycle-b"), []),
        (header("cycle-b", cwd="/outside", parent="cycle-a"), []),
        (header("target", parent="cycle-a"), []),
    ])
    reply = await h.call("session_trace", {"session_id": "target"})
    assert error_of(reply) == ("SESSION_QUERY_INVALID_LINEAGE", "session lineage is invalid")
    assert "cycle-" not in reply.text


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (SessionQueryError("secret", "SESSION_QUERY_SOURCE_CONFLICT"), FAILED),  # 49
        (SessionQueryError("secret", "SESSION_QUERY_PERSISTENCE_FAILED"),
         ("SESSION_QUERY_PERSISTENCE_FAILED", "session history storage is unavailable")),  # 50
        (RuntimeError("secret"), FAILED),  # 51
    ],
)
async def test_trace_failures_are_sanitized(
    make_harness: HarnessFactory, error: BaseException, expected: tuple[str, str]
) -> None:
    h = make_harness(trace_session=raiser(error))
    reply = await h.call("session_trace", {})
    assert error_of(reply) == expected
    assert "secret" not in reply.text


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [("session_event_trace", {"seq": 99}), ("session_event_read", {"seq": 99})],
)
async def test_missing_event_is_sanitized(
    make_harness: HarnessFactory, caplog: pytest.LogCaptureFixture,
    tool: str, arguments: dict[str, Any],
) -> None:
    """52-53 (the real store's own EVENT_NOT_FOUND message stays in the log)."""
    h = make_harness()
    with caplog.at_level(logging.WARNING, logger="sessionq.tools"):
        reply = await h.call(tool, arguments)
    assert error_of(reply) == ("SESSION_QUERY_EVENT_NOT_FOUND", "session event was not found")
    assert "99" not in reply.text
    assert "99" in log_text(caplog)


async def test_abort_discards_a_late_success(make_harness: HarnessFactory) -> None:
    """57."""
    gate = Gate()
    h = make_harness()
    real = h.real("trace_session")
    h.spy.scripted["trace_session"] = gate.hold(lambda: real("caller"))
    reply = await cancel_while_in_flight(
        h, gate, SessionQueryError("trace cancelled", "SESSION_QUERY_ABORTED"), "session_trace", {}
    )
    assert error_of(reply) == ("SESSION_QUERY_ABORTED", "trace cancelled")


async def test_branching_descendants(make_harness: HarnessFactory) -> None:
    """59 (built in the real store rather than mocked)."""
    h = make_harness([
        (header("branch-target", created_at=20), []),
        (header("branch-first", created_at=30, parent="branch-target"), []),
        (header("branch-nested", created_at=40, parent="branch-first"), []),
        (header("branch-hidden", cwd="/outside", created_at=50, parent="branch-first"), []),
        (header("hidden-descendant", created_at=60, parent="branch-hidden"), []),
        (header("branch-last", created_at=70, parent="branch-target"), []),
    ], live=("caller", "branch-first", "branch-nested", "branch-last"))
    reply = await h.call("session_trace", {"session_id": "branch-target"})
    assert reply.text.endswith(
        "Descendants:\n"
        "- branch-first — untitled | 1970-01-01T00:00:00.030Z | live, persisted\n"
        "  - branch-nested — untitled | 1970-01-01T00:00:00.040Z | live, persisted\n"
        "  - [outside workspace subtree]\n"
        "- branch-last — untitled | 1970-01-01T00:00:00.070Z | live, persisted"
    )
    [(args, _)] = h.spy.calls_to("read_title_snapshots")
    assert list(args[0]) == ["branch-target", "branch-first", "branch-nested", "branch-last"]


async def test_complete_and_unresolved_lineage(make_harness: HarnessFactory) -> None:
    """60."""
    h = make_harness([
        (header("visible-root", created_at=1), []),
        (header("mid", created_at=2, parent="visible-root"), []),
        (header("orphan", created_at=3, parent="missing-parent-id"), []),
    ])
    reply = await h.call("session_trace", {"session_id": "mid"})
    assert "- visible-root — untitled" in reply.text
    assert "[outside workspace boundary]" not in reply.text
    reply = await h.call("session_trace", {"session_id": "orphan"})
    assert "Ancestors (nearest first):\n- [outside workspace boundary]\n" in reply.text
    assert "missing-parent-id" not in reply.text


async def test_unavailable_target_and_caller_descendant(make_harness: HarnessFactory) -> None:
    """61 (mocked trace: neither flag on the target; the caller as a persisted descendant)."""
    def trace_session(_target: str) -> SessionTrace:
        target = h.real("get_session")("target")
        me = h.real("get_session")("caller")
        return SessionTrace(
            target=replace(target, live=False, persisted=False),
            ancestors=[],
            descendants=[LineageNode(replace(me, live=False, persisted=True))],
            complete=True,
            root=target,
        )

    h = make_harness([(header("target"), [])], trace_session=trace_session)
    reply = await h.call("session_trace", {"session_id": "target"})
    assert "Availability: unavailable" in reply.text
    assert "- caller — untitled | 1970-01-01T00:00:00.010Z | persisted" in reply.text


def moved(observed: Any) -> Any:
    return observed.model_copy(update={"cwd": "/outside"})


@pytest.mark.parametrize(
    ("tool", "arguments", "method", "rewrite"),
    [
        ("session_event_search", {"session_id": "other", "query": "payload"}, "search_events",
         lambda page: replace(page, session=moved(page.session))),
        ("session_trace", {"session_id": "other"}, "trace_session",
         lambda trace: replace(trace, target=replace(
             trace.target, header=moved(trace.target.header)))),
        ("session_event_trace", {"session_id": "other", "seq": 0}, "trace_event",
         lambda trace: replace(trace, session=moved(trace.session))),
        ("session_event_read", {"session_id": "other", "seq": 0}, "read_event",
         lambda window: replace(window, session=moved(window.session))),
        ("session_event_read", {"session_id": "other", "seq": 0}, "read_title_snapshots",
         lambda observations: [replace(o, header=moved(o.header)) for o in observations]),
        ("session_event_read", {"seq": 1}, "read_event",  # 63: the caller's own session
         lambda window: replace(window, session=moved(window.session))),
    ],
)
async def test_observations_are_rechecked(
    make_harness: HarnessFactory, tool: str, arguments: dict[str, Any], method: str, rewrite: Any
) -> None:
    """62-63: a target that moved to another workspace after the preflight."""
    h = make_harness([(header("other"), [user(0, "payload secret"), title(1, "Secret title")])])
    real = h.real(method)
    h.spy.scripted[method] = lambda *a, **k: rewrite(real(*a, **k))
    reply = await h.call(tool, arguments)
    assert error_of(reply) == UNAUTHORIZED
    for secret in ("payload", "Secret title", "prior needle"):
        assert secret not in reply.text


async def test_title_rejections(
    make_harness: HarnessFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """84-86, 89: per-id title failures become markers; UNAUTHORIZED fails the call."""
    def titles_with(errors: dict[str, Any]) -> Any:
        def read(ids: Any) -> list[TitleObservation]:
            out = h.real("read_title_snapshots")(ids)
            return [TitleObservation(o.session_id, error=errors[o.session_id])
                    if o.session_id in errors else o for o in out]
        return read

    from worker.contract.errors import HarnessError

    h = make_harness([
        (header("first", parent="second"), [user(0, "needle")]),
        (header("second"), [user(0, "needle")]),
    ])

    class Unprintable(Exception):
        def __str__(self) -> str:
            raise RuntimeError("nope")

        @property
        def __traceback__(self) -> Any:  # type: ignore[override]
            raise RuntimeError("nope")

    h.spy.scripted["read_title_snapshots"] = titles_with({
        "first": HarnessError("title backend failed", "TITLE_BACKEND"),
        "second": "string failure",
    })
    with caplog.at_level(logging.WARNING, logger="sessionq.tools"):
        reply = await h.call("session_trace", {"session_id": "second"})
    assert reply.ok
    assert "Session second — untitled (title unavailable: SESSION_QUERY_TOOL_FAILED)" in reply.text
    assert "- first — untitled (title unavailable: SESSION_QUERY_TOOL_FAILED)" in reply.text
    text = log_text(caplog)
    assert "title observation item failed" in text
    assert "title backend failed" in text and "HarnessError" in text and "string failure" in text
    [(args, _)] = h.spy.calls_to("read_title_snapshots")
    assert list(args[0]) == ["second", "first"]

    h.spy.scripted["read_title_snapshots"] = titles_with({"second": Unprintable()})
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="sessionq.tools"):
        reply = await h.call("session_trace", {"session_id": "second"})
    assert "untitled (title unavailable: SESSION_QUERY_TOOL_FAILED)" in reply.text
    assert "[unprintable session query failure]" in log_text(caplog)

    h.spy.scripted["read_title_snapshots"] = titles_with({"second": SessionQueryError(
        "secret", "SESSION_QUERY_PERSISTENCE_FAILED")})
    reply = await h.call("session_trace", {"session_id": "second"})
    assert "untitled (title unavailable: SESSION_QUERY_PERSISTENCE_FAILED)" in reply.text

    h.spy.scripted["read_title_snapshots"] = titles_with({"second": HarnessError(
        "second is hidden", "SESSION_QUERY_TOOL_UNAUTHORIZED")})
    reply = await h.call("session_trace", {"session_id": "second"})
    assert error_of(reply) == UNAUTHORIZED


async def test_title_batch_failures(make_harness: HarnessFactory) -> None:
    """87-88: a failed batch fails the call; an abort during the batch is the abort."""
    h = make_harness(read_title_snapshots=raiser(RuntimeError("batch down")))
    reply = await h.call("session_event_trace", {"seq": 0})
    assert error_of(reply) == FAILED
    gate = Gate()
    h = make_harness()
    h.spy.scripted["read_title_snapshots"] = gate.hold(lambda: [])
    reply = await cancel_while_in_flight(
        h, gate, {"code": "SESSION_QUERY_ABORTED", "message": "titles cancelled"},
        "session_event_trace", {"seq": 0},
    )
    assert error_of(reply) == ("SESSION_QUERY_ABORTED", "titles cancelled")


async def test_relationship_trace(make_harness: HarnessFactory) -> None:
    """94."""
    h = make_harness([(header("relationships"), [
        user(0, "source"), assistant(1, "replacement", op=(0, 0), sources=[0]),
    ])])
    reply = await h.call("session_event_trace", {"session_id": "relationships", "seq": 0})
    assert "Replacement chain: 1" in reply.text
    assert "Events cited directly as sources: none" in reply.text
    assert "Direct derived events: 1" in reply.text
    assert "2026-07-24T00:00:00.000Z" in reply.text


async def test_step_events_trace_and_read(make_harness: HarnessFactory) -> None:
    """96."""
    h = make_harness([(header("steps"), [
        plain(0, "step/start", {"turn": 1, "step": 1}),
        plain(1, "step/end", {"turn": 1, "step": 1}),
    ])])
    reply = await h.call("session_event_trace", {"session_id": "steps", "seq": 0})
    assert "Replaced by: none\nReplacement chain: none" in reply.text
    reply = await h.call("session_event_read", {"session_id": "steps", "seq": 0, "after": 1})
    assert "Before:" not in reply.text and "(no semantic text)" in reply.text
    reply = await h.call("session_event_read", {"session_id": "steps", "seq": 1, "before": 1})
    assert "Before:" in reply.text and "After:" not in reply.text
