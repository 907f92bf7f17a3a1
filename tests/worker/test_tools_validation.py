"""SPEC §12.2: argument validation and translation into the exact service request."""

from __future__ import annotations

from typing import Any

import pytest

from indexer.model.search import (
    AvailabilityFilter,
    CreatedAtFilter,
    CwdFilter,
    IdFilter,
    ParentFilter,
    Query,
    SeqFilter,
    SurfaceFilter,
    TimeFilter,
    TypeFilter,
)
from tests.builders import header
from tests.fixtures.tools import HarnessFactory
from worker.contract import timefmt

BASE = 1784851200000
FILTER = "SESSION_QUERY_INVALID_FILTER"


@pytest.mark.parametrize(
    ("arguments", "code", "message"),
    [
        ({"query": "   "}, "SESSION_QUERY_INVALID_QUERY",
         "session-search query must contain non-whitespace text"),
        ({"query": "bad\0query"}, "SESSION_QUERY_INVALID_QUERY",
         "session-search query must not contain NUL"),
        ({"session_ids": []}, FILTER, "session_ids must contain at least one value when supplied"),
        ({"parent_session_ids": []}, FILTER,
         "parent_session_ids must contain at least one value when supplied"),
        ({"availability": []}, FILTER,
         "availability must contain at least one value when supplied"),
        ({"availability": ["archived"]}, "INVALID_ARGS",
         'invalid arguments: "availability[0]" must be one of ["live","persisted"]'),
        ({"event_types": []}, FILTER, "event_types must contain at least one value when supplied"),
        ({"event_surfaces": []}, FILTER, "surfaces must contain at least one value when supplied"),
        ({"event_surfaces": ["hidden"]}, "INVALID_ARGS",
         'invalid arguments: "event_surfaces[0]" must be one of ["current","shadowed","log-only"]'),
        ({"event_seq_from": -1}, FILTER,
         "sequence lower bound must be a non-negative safe integer"),
        ({"event_seq_to": 2**53}, FILTER,
         "sequence upper bound must be a non-negative safe integer"),
        ({"event_seq_from": 2, "event_seq_to": 1}, FILTER,
         "session sequence range from must be less than or equal to to"),
        ({"created_at_from": "2026-07-24T10:00:00"}, FILTER,
         "session created_at_from range must be an ISO 8601 timestamp with Z or a numeric offset"),
        *[
            ({"created_at_from": bad}, FILTER,
             "session created_at_from range must be a valid ISO 8601 timestamp")
            for bad in (
                "2026-02-30T10:00:00Z", "2100-02-29T10:00:00Z", "2026-04-31T10:00:00Z",
                "2026-01-01T24:00:00Z", "2026-01-01T00:60:00Z", "2026-01-01T00:00:60Z",
                "2026-01-01T00:00:00+24:00", "2026-01-01T00:00:00+00:60",
            )
        ],
        ({"created_at_from": "2026-07-25T00:00:00Z", "created_at_to": "2026-07-24T00:00:00Z"},
         FILTER, "session created_at range from must be less than or equal to to"),
        ({"event_time_to": "2026-07-24"}, FILTER,
         "session time_to range must be an ISO 8601 timestamp with Z or a numeric offset"),
        ({"event_seq_from": 1.5}, "INVALID_ARGS",
         'invalid arguments: "event_seq_from" must be an integer'),
    ],
)
async def test_session_search_rejections(
    make_harness: HarnessFactory, arguments: dict[str, Any], code: str, message: str
) -> None:
    """Rows 5-26: the exact code and message; the service is never searched."""
    h = make_harness()
    reply = await h.call("session_search", {"query": "needle", **arguments})
    assert (reply.error and (reply.error.code, reply.error.message)) == (code, message)
    assert reply.text == f"Error: {message}"
    assert not h.spy.calls_to("search_sessions")


async def test_full_translation(make_harness: HarnessFactory) -> None:
    """Row 27: exactly one request with the filters of §9.6 in order, no paging arguments."""
    h = make_harness([(header("parent", created_at=5), [])], live=("caller", "parent"))
    reply = await h.call("session_search", {
        "query": "  alpha   beta ",
        "session_ids": ["a", "b"],
        "created_at_from": "2026-07-24T00:00:00+08:00",
        "created_at_to": "2026-07-24T01:00:00+08:00",
        "parent_session_ids": ["parent"],
        "include_root_sessions": True,
        "availability": ["live"],
        "event_seq_from": 2,
        "event_seq_to": 9,
        "event_time_from": "2026-07-24T00:00:00Z",
        "event_time_to": "2026-07-24T01:00:00Z",
        "event_types": ["plugin/open-event"],
        "event_surfaces": ["shadowed"],
    })
    assert reply.text == "No prior session matches found."
    [(args, kwargs)] = h.spy.calls_to("search_sessions")
    query, session_filters, event_filters = args
    assert query == Query("alpha beta")
    assert list(session_filters) == [
        IdFilter(("a", "b")),
        CreatedAtFilter(from_=BASE - 8 * 3_600_000, to=BASE - 7 * 3_600_000),
        AvailabilityFilter(("live",)),
        ParentFilter(("parent", None)),
        CwdFilter(("/work",)),
    ]
    assert list(event_filters) == [
        SeqFilter(from_=2, to=9),
        TimeFilter(from_=BASE, to=BASE + 3_600_000),
        TypeFilter(("plugin/open-event",)),
        SurfaceFilter(("shadowed",)),
    ]
    assert kwargs == {"limit": 101, "exclude_session_ids": frozenset({"caller"}), "mode": "words"}


def created_at(h: Any) -> CreatedAtFilter:
    [(args, _)] = h.spy.calls_to("search_sessions")
    return next(f for f in args[1] if isinstance(f, CreatedAtFilter))


@pytest.mark.parametrize(("fraction", "offset"), [("1", 100), ("12", 120), ("123", 123)])
async def test_short_fractions_are_whole_milliseconds(
    make_harness: HarnessFactory, fraction: str, offset: int
) -> None:
    """Rows 28-30."""
    h = make_harness()
    await h.call("session_search", {"query": "q",
                                    "created_at_from": f"2026-07-24T00:00:00.{fraction}Z"})
    bound = created_at(h).from_
    assert bound == BASE + offset and isinstance(bound, int)


async def test_same_millisecond_decimal_bounds(make_harness: HarnessFactory) -> None:
    """Row 31: a valid interval that contains no integer millisecond."""
    h = make_harness()
    reply = await h.call("session_search", {
        "query": "q",
        "created_at_from": "2026-07-24T00:00:00.12300001Z",
        "created_at_to": "2026-07-24T08:00:00.1239999+08:00",
    })
    assert reply.text == "No prior session matches found."
    bounds = created_at(h)
    assert bounds.from_ is not None and bounds.to is not None
    assert BASE + 123 < bounds.from_ < bounds.to < BASE + 124


@pytest.mark.parametrize(
    ("low", "high", "accepted"),
    [
        ("12300002", "12300001", False),  # row 32
        ("1231", "12311", True),  # row 33
        ("12311", "1231", False),
        ("1230000100", "12300001", True),  # row 34: equal instants
    ],
)
async def test_sub_millisecond_ordering(
    make_harness: HarnessFactory, low: str, high: str, accepted: bool
) -> None:
    h = make_harness()
    reply = await h.call("session_search", {
        "query": "q",
        "created_at_from": f"2026-07-24T00:00:00.{low}Z",
        "created_at_to": f"2026-07-24T00:00:00.{high}Z",
    })
    assert reply.ok is accepted
    assert len(h.spy.calls_to("search_sessions")) == (1 if accepted else 0)
    if not accepted:
        assert reply.error is not None and reply.error.message == (
            "session created_at range from must be less than or equal to to"
        )


async def test_bounds_across_zero(make_harness: HarnessFactory) -> None:
    """Row 35."""
    h = make_harness([(header("other"), [])])
    await h.call("session_search", {
        "query": "q",
        "created_at_from": "1970-01-01T00:00:00.0000001Z",
        "event_time_to": "1969-12-31T23:59:59.9999999Z",
    })
    [(args, _)] = h.spy.calls_to("search_sessions")
    assert created_at(h).from_ == 5e-324
    assert next(f for f in args[2] if isinstance(f, TimeFilter)).to == -5e-324
    await h.call("session_event_search", {
        "session_id": "other",
        "query": "q",
        "time_from": "1969-12-31T23:59:59.87600001Z",
        "time_to": "1969-12-31T19:59:59.8769999-04:00",
    })
    [(args, _)] = h.spy.calls_to("search_events")
    [time] = [f for f in args[2] if isinstance(f, TimeFilter)]
    assert time.from_ is not None and time.to is not None
    assert -124 < time.from_ < time.to < -123


async def test_platform_date_failure_is_invalid_filter(
    make_harness: HarnessFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Row 36."""
    monkeypatch.setattr(timefmt, "_epoch_ms", lambda *_: float("nan"))
    h = make_harness()
    reply = await h.call("session_search", {"query": "q", "created_at_from": "2026-07-24T00:00Z"})
    assert reply.error is not None and (reply.error.code, reply.error.message) == (
        FILTER, "session created_at_from range must be a valid ISO 8601 timestamp"
    )
    assert not h.spy.calls_to("search_sessions")


async def test_one_sided_bounds_and_parent_clauses(make_harness: HarnessFactory) -> None:
    """Row 37."""
    h = make_harness([(header("parent"), [])])
    reply = await h.call("session_search", {
        "query": "q", "created_at_from": "2024-02-29T00:00Z",
        "event_time_to": "2000-02-29T00:00Z", "include_root_sessions": True,
    })
    assert reply.ok
    reply = await h.call("session_search", {"query": "q", "parent_session_ids": ["parent"]})
    assert reply.ok
    first, second = h.spy.calls_to("search_sessions")
    assert CreatedAtFilter(from_=1709164800000, to=None) in first[0][1]
    assert TimeFilter(from_=None, to=951782400000) in first[0][2]
    assert ParentFilter((None,)) in first[0][1]
    assert ParentFilter(("parent",)) in second[0][1]


@pytest.mark.parametrize(
    ("tool", "arguments", "code", "message"),
    [
        ("session_event_trace", {"seq": -1}, FILTER, "seq must be a non-negative safe integer"),
        ("session_event_read", {"seq": 2**53}, FILTER, "seq must be a non-negative safe integer"),
        ("session_event_read", {"seq": 0, "before": -1}, FILTER,
         "before must be a non-negative safe integer"),
        ("session_event_read", {"seq": 0, "after": 1.5}, "INVALID_ARGS",
         'invalid arguments: "after" must be an integer'),
    ],
)
async def test_trace_and_read_integers(
    make_harness: HarnessFactory, tool: str, arguments: dict[str, Any], code: str, message: str
) -> None:
    """Rows 97-100; they are checked before the caller is resolved."""
    h = make_harness()
    reply = await h.call(tool, arguments, caller=None)
    assert reply.error is not None and (reply.error.code, reply.error.message) == (code, message)
    assert h.spy.calls == []
