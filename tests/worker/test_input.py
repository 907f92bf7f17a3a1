"""Argument validation: the runtime's schema check and the tool-owned rules (SPEC §9.3, §9.6)."""

from __future__ import annotations

import math
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest
from hypothesis import given
from hypothesis import strategies as st

from indexer.model.search import (
    AvailabilityFilter,
    CreatedAtFilter,
    IdFilter,
    SeqFilter,
    SurfaceFilter,
    TimeFilter,
    TypeFilter,
)
from worker.contract.arguments import (
    TOOL_DEFINITIONS,
    event_filters,
    normalize_query,
    parent_session_ids,
    schema_violations,
)
from worker.contract.errors import HarnessError, InvalidArgsError
from worker.tools import registry
from worker.tools.event_read import EventReadArgs
from worker.tools.event_trace import EventTraceArgs
from worker.tools.session_search import SessionSearchArgs, session_filters


def parse_arguments(tool: str, arguments: Any) -> Any:
    found = registry.lookup(tool)
    if isinstance(found, HarnessError):
        raise found
    return registry.parse_arguments(found, arguments)

NOT_INTEGER = '"event_seq_from" must be an integer'


def violations(tool: str, arguments: Any) -> list[str]:
    return schema_violations(tool, arguments)


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("session_search", {}, ['missing required property "query"']),
        ("session_search", [], ['"arguments" must be an object']),
        ("session_search", None, ['"arguments" must be an object']),
        ("session_search", {"query": 1}, ['"query" must be a string']),
        ("session_search", {"query": None}, ['"query" must be a string']),
        ("session_search", {"query": "q", "availability": ["archived"]},
         ['"availability[0]" must be one of ["live","persisted"]']),
        ("session_search", {"query": "q", "event_surfaces": ["current", "hidden"]},
         ['"event_surfaces[1]" must be one of ["current","shadowed","log-only"]']),
        *[
            ("session_search", {"query": "q", "event_seq_from": bad}, [NOT_INTEGER])
            for bad in (1.5, True, "1", -0.0, math.nan, 10**400)
        ],
        ("session_search", {"query": "q", "include_root_sessions": 1},
         ['"include_root_sessions" must be a boolean']),
        ("session_search", {"query": "q", "session_ids": "a"}, ['"session_ids" must be an array']),
        ("session_search", {"query": "q", "session_ids": ["a", 2, None]},
         ['"session_ids[1]" must be a string', '"session_ids[2]" must be a string']),
        ("session_search", {"query": "q", "extra": math.inf},
         ['"arguments" must be a lossless JSON object']),
        ("session_event_read", {"seq": 0, "after": 1.5}, ['"after" must be an integer']),
        ("session_event_read", {"before": "x"},
         ['missing required property "seq"', '"before" must be an integer']),
        ("session_trace", {"session_id": 3}, ['"session_id" must be a string']),
    ],
)
def test_schema_violations_name_the_offending_property(
    tool: str, arguments: Any, expected: list[str]
) -> None:
    assert violations(tool, arguments) == expected


def test_invalid_args_message_joins_every_violation() -> None:
    with pytest.raises(InvalidArgsError) as info:
        parse_arguments("session_search", {"query": 1, "event_seq_from": 1.5})
    assert info.value.code == "INVALID_ARGS"
    assert info.value.message == (
        'invalid arguments: "query" must be a string; "event_seq_from" must be an integer'
    )


@pytest.mark.parametrize(
    "arguments",
    [
        {"query": "q", "event_seq_from": 3.0},
        {"query": "q", "event_seq_to": 2**53},  # an integer to the schema; the tool rejects it
        {"query": "q", "event_seq_from": -1},
        {"query": "q", "unknown": {"nested": [1, "x", None]}},  # open parameter root
        {"query": "q", "include_root_sessions": False},
    ],
)
def test_schema_accepts(arguments: dict[str, Any]) -> None:
    assert violations("session_search", arguments) == []


def test_unknown_tool_is_invalid_args() -> None:
    with pytest.raises(HarnessError) as info:
        parse_arguments("session_delete", {})
    assert info.value.code == "INVALID_ARGS"


def test_trace_and_read_integers_are_checked_while_parsing() -> None:
    assert parse_arguments("session_event_trace", {"seq": 3.0}) == EventTraceArgs(seq=3)
    assert parse_arguments("session_event_read", {"seq": 1, "before": 2}) == EventReadArgs(
        seq=1, before=2
    )
    for arguments, name in [
        ({"seq": -1}, "seq"),
        ({"seq": 2**53}, "seq"),
        ({"seq": 1e300}, "seq"),
        ({"seq": 0, "before": -1}, "before"),
        ({"seq": 0, "before": 1, "after": 2**53}, "after"),
    ]:
        with pytest.raises(HarnessError) as info:
            parse_arguments("session_event_read", arguments)
        assert info.value.code == "SESSION_QUERY_INVALID_FILTER"
        assert info.value.message == f"{name} must be a non-negative safe integer"


# ---- agreement with a reference JSON Schema validator -------------------------------------------
finite = st.floats(-10, 10).filter(lambda x: math.copysign(1.0, x) > 0 or x != 0)  # not -0
scalars = st.none() | st.booleans() | st.integers(-5, 2**54) | finite | st.text(max_size=3)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3), max_leaves=6)
argument_dicts = st.dictionaries(
    st.sampled_from(
        ["query", "session_ids", "availability", "event_seq_from", "include_root_sessions",
         "event_surfaces", "session_id", "seq", "before", "extra"]
    ),
    values | st.lists(st.sampled_from(["live", "persisted", "current", "x"]), max_size=2),
    max_size=5,
)


@given(argument_dicts, st.sampled_from([d["name"] for d in TOOL_DEFINITIONS]))
def test_validity_agrees_with_jsonschema(arguments: dict[str, Any], tool: str) -> None:
    """Same verdict as Draft 2020-12 for finite values (JS extras: -0 and NaN, tested above)."""
    schema = next(d["parameters"] for d in TOOL_DEFINITIONS if d["name"] == tool)
    reference = jsonschema.Draft202012Validator(schema).is_valid(arguments)
    assert (violations(tool, arguments) == []) == reference


# ---- tool-owned rules ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("query", "normalized"),
    [("  alpha   beta ", "alpha beta"), ("\ufeffa\u3000b\u2028", "a b"), ("a\u0085b", "a\u0085b")],
)
def test_query_normalization_uses_js_whitespace(query: str, normalized: str) -> None:
    assert normalize_query(query).text == normalized


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("   ", "session-search query must contain non-whitespace text"),
        ("\u00a0\ufeff", "session-search query must contain non-whitespace text"),
        ("bad\0query", "session-search query must not contain NUL"),
    ],
)
def test_query_rejections(query: str, message: str) -> None:
    with pytest.raises(HarnessError) as info:
        normalize_query(query)
    assert (info.value.code, info.value.message) == ("SESSION_QUERY_INVALID_QUERY", message)


def test_filter_construction_order() -> None:
    args = SessionSearchArgs(
        query="q",
        session_ids=("a", "b", "a"),
        created_at_from="2026-07-24T00:00:00+08:00",
        created_at_to="2026-07-24T01:00:00+08:00",
        availability=("live",),
    )
    assert session_filters(args) == [
        IdFilter(("a", "b", "a")),
        CreatedAtFilter(from_=1784822400000, to=1784826000000),
        AvailabilityFilter(("live",)),
    ]
    assert event_filters(
        seq_from=2, seq_to=9.0, time_from="2026-07-24T00:00:00Z", time_to="2026-07-24T01:00:00Z",
        event_types=("plugin/open-event",), surfaces=("shadowed",),
    ) == [
        SeqFilter(from_=2, to=9),
        TimeFilter(from_=1784851200000, to=1784854800000),
        TypeFilter(("plugin/open-event",)),
        SurfaceFilter(("shadowed",)),
    ]
    assert event_filters(
        seq_from=None, seq_to=None, time_from=None, time_to=None, event_types=None, surfaces=None
    ) == []


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: session_filters(SessionSearchArgs("q", session_ids=())),
         "session_ids must contain at least one value when supplied"),
        (lambda: session_filters(SessionSearchArgs("q", availability=())),
         "availability must contain at least one value when supplied"),
        (lambda: parent_session_ids(()),
         "parent_session_ids must contain at least one value when supplied"),
        (lambda: event_filters(seq_from=None, seq_to=None, time_from=None, time_to=None,
                               event_types=(), surfaces=None),
         "event_types must contain at least one value when supplied"),
        (lambda: event_filters(seq_from=None, seq_to=None, time_from=None, time_to=None,
                               event_types=None, surfaces=()),
         "surfaces must contain at least one value when supplied"),
        (lambda: event_filters(seq_from=-1, seq_to=None, time_from=None, time_to=None,
                               event_types=None, surfaces=None),
         "sequence lower bound must be a non-negative safe integer"),
        (lambda: event_filters(seq_from=None, seq_to=2**53, time_from=None, time_to=None,
                               event_types=None, surfaces=None),
         "sequence upper bound must be a non-negative safe integer"),
        (lambda: event_filters(seq_from=2, seq_to=1, time_from=None, time_to=None,
                               event_types=None, surfaces=None),
         "session sequence range from must be less than or equal to to"),
        (lambda: session_filters(SessionSearchArgs(
            "q", created_at_from="2026-07-25T00:00:00Z", created_at_to="2026-07-24T00:00:00Z")),
         "session created_at range from must be less than or equal to to"),
        (lambda: event_filters(seq_from=None, seq_to=None,
                               time_from="2026-07-24T00:00:00.12300002Z",
                               time_to="2026-07-24T00:00:00.12300001Z", event_types=None,
                               surfaces=None),
         "session time range from must be less than or equal to to"),
    ],
)
def test_tool_owned_messages(call: Any, message: str) -> None:
    with pytest.raises(HarnessError) as info:
        call()
    assert (info.value.code, info.value.message) == ("SESSION_QUERY_INVALID_FILTER", message)


def test_parent_ids_are_deduplicated_in_first_seen_order() -> None:
    assert parent_session_ids(("b", "a", "b")) == ["b", "a"]
    assert parent_session_ids(None) is None
