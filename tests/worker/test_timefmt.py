"""``iso`` equals ``Date.prototype.toISOString``; the §9.6 timestamp parser is exact."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.data_paths import JS_VECTORS
from worker.contract.errors import HarnessError
from worker.contract.timefmt import (
    ExactTimestamp,
    compare_timestamps,
    iso,
    lower_bound,
    parse_timestamp,
    upper_bound,
)

VECTORS = json.loads(JS_VECTORS.read_text())
BASE = 1784851200000  # 2026-07-24T00:00:00.000Z


@pytest.mark.parametrize(
    ("ms", "expected"),
    [
        (-124, "1969-12-31T23:59:59.876Z"),
        (1784851200000, "2026-07-24T00:00:00.000Z"),
        (-124.7, "1969-12-31T23:59:59.876Z"),  # truncation toward zero, not floor
        (124.9, "1970-01-01T00:00:00.124Z"),
        (-0.5, "1970-01-01T00:00:00.000Z"),
        (-62167219200000, "0000-01-01T00:00:00.000Z"),
        (-62167219200001, "-000001-12-31T23:59:59.999Z"),
        (0, "1970-01-01T00:00:00.000Z"),
        (253402300799999, "9999-12-31T23:59:59.999Z"),  # the last of the four-digit years
        (253402300800000, "+010000-01-01T00:00:00.000Z"),
        (8.64e15, "+275760-09-13T00:00:00.000Z"),
        (-8.64e15, "-271821-04-20T00:00:00.000Z"),
    ],
)
def test_iso_matches_to_iso_string(ms: float, expected: str) -> None:
    assert iso(ms) == expected


def test_iso_matches_node_vectors() -> None:
    for text, expected in VECTORS["iso"]:
        value = float(text) if "." in text or "e" in text else int(text)
        if expected == "RangeError":
            with pytest.raises(ValueError, match="Invalid time value"):
                iso(value)
        else:
            assert iso(value) == expected, text


@pytest.mark.parametrize("ms", [math.nan, math.inf, 8.64e15 + 1, -(10**16)])
def test_iso_outside_the_date_range_raises(ms: float) -> None:
    with pytest.raises(ValueError):
        iso(ms)


@given(st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59)))
def test_iso_agrees_with_datetime_in_its_range(moment: datetime) -> None:
    moment = moment.replace(microsecond=moment.microsecond // 1000 * 1000, tzinfo=UTC)
    ms = (moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)
    expected = moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    assert iso(ms) == expected.rjust(24, "0")


# ---- parsing (SPEC §9.6, §12.2 rows 17-37) ------------------------------------------------------
@pytest.mark.parametrize(
    "value",
    [
        "2026-07-24T10:00:00",  # no zone
        "2026-07-24t10:00:00Z",
        "2026-07-24T10:00:00z",
        "2026-07-24T10:00:00+0800",
        "2026-07-24T10:00:00.Z",
        "2026-07-24T10:00.5Z",
        "2026-07-24T10Z",
        "2026-07-24 10:00:00Z",
        "2026-07-24T10:00:00Z\n",
        "\u0662026-07-24T10:00:00Z",  # non-ASCII digit
        "2026-07-24T10:00:00Z ",
        "+2026-07-24T10:00:00Z",
        "",
    ],
)
def test_malformed_timestamps_are_rejected(value: str) -> None:
    with pytest.raises(HarnessError) as info:
        parse_timestamp("created_at_from", value)
    assert info.value.code == "SESSION_QUERY_INVALID_FILTER"
    assert info.value.message == (
        "session created_at_from range must be an ISO 8601 timestamp with Z or a numeric offset"
    )


@pytest.mark.parametrize(
    "value",
    [
        "2026-02-30T10:00:00Z",
        "2100-02-29T10:00:00Z",
        "2026-04-31T10:00:00Z",
        "2026-01-01T24:00:00Z",
        "2026-01-01T00:60:00Z",
        "2026-01-01T00:00:60Z",
        "2026-01-01T00:00:00+24:00",
        "2026-01-01T00:00:00+00:60",
        "2026-00-01T00:00:00Z",
        "2026-13-01T00:00:00Z",
        "2026-01-00T00:00:00Z",
    ],
)
def test_out_of_range_fields_are_rejected(value: str) -> None:
    with pytest.raises(HarnessError) as info:
        parse_timestamp("time_to", value)
    assert info.value.code == "SESSION_QUERY_INVALID_FILTER"
    assert info.value.message == "session time_to range must be a valid ISO 8601 timestamp"


@pytest.mark.parametrize(
    ("value", "ms", "rem"),
    [
        ("2026-07-24T00:00:00Z", BASE, ""),
        ("2026-07-24T00:00Z", BASE, ""),
        ("2026-07-24T00:00:00.1Z", BASE + 100, ""),
        ("2026-07-24T00:00:00.12Z", BASE + 120, ""),
        ("2026-07-24T00:00:00.123Z", BASE + 123, ""),
        ("2026-07-24T00:00:00.12300001Z", BASE + 123, "00001"),
        ("2026-07-24T00:00:00.1230000100Z", BASE + 123, "00001"),
        ("2026-07-24T08:00:00.1239999+08:00", BASE + 123, "9999"),
        ("2026-07-23T20:00:00-04:00", BASE, ""),
        ("0000-01-01T00:00:00.000Z", -62167219200000, ""),
        ("2024-02-29T00:00Z", 1709164800000, ""),
        ("2000-02-29T00:00Z", 951782400000, ""),
        ("9999-12-31T23:59:59.999-23:59", 253402387139999, ""),
    ],
)
def test_exact_timestamps(value: str, ms: int, rem: str) -> None:
    assert parse_timestamp("time_from", value) == ExactTimestamp(ms, rem)


def test_ordering_compares_sub_millisecond_digits() -> None:
    def stamp(fraction: str) -> ExactTimestamp:
        return parse_timestamp("x", f"2026-07-24T00:00:00.{fraction}Z")

    assert compare_timestamps(stamp("12300002"), stamp("12300001")) == 1
    assert compare_timestamps(stamp("1231"), stamp("12311")) == -1
    assert compare_timestamps(stamp("1230000100"), stamp("12300001")) == 0
    assert compare_timestamps(stamp("124"), stamp("1239999999")) == 1


def test_bounds_around_one_millisecond() -> None:
    low = lower_bound(parse_timestamp("x", "2026-07-24T00:00:00.12300001Z"))
    high = upper_bound(parse_timestamp("x", "2026-07-24T08:00:00.1239999+08:00"))
    assert BASE + 123 < low < high < BASE + 124
    assert lower_bound(parse_timestamp("x", "2026-07-24T00:00:00.123Z")) == BASE + 123
    assert isinstance(lower_bound(parse_timestamp("x", "2026-07-24T00:00:00.123Z")), int)


def test_bounds_across_zero() -> None:
    assert lower_bound(parse_timestamp("x", "1970-01-01T00:00:00.0000001Z")) == 5e-324
    assert upper_bound(parse_timestamp("x", "1969-12-31T23:59:59.9999999Z")) == -5e-324
    low = lower_bound(parse_timestamp("x", "1969-12-31T23:59:59.87600001Z"))
    high = upper_bound(parse_timestamp("x", "1969-12-31T19:59:59.8769999-04:00"))
    assert low == -123.99999999999999
    assert high == -123.00000000000001
    assert -124 < low < high < -123
