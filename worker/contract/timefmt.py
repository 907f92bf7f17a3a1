"""Timestamps as the tools read and print them (SPEC §0 ``iso``, §9.6, §13.2-§13.4).

Both directions use day arithmetic on the proleptic Gregorian calendar instead of
``datetime``: the tools accept year 0000 and print negative and six-digit years, which
``datetime`` cannot represent. Parsing is exact: a timestamp is (epoch ms, the decimal
digits below one millisecond), and bounds become floats only at the very end.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from typing import Final

from worker.contract.errors import HarnessError, invalid_filter

__all__ = [
    "ExactTimestamp",
    "compare_timestamps",
    "days_from_civil",
    "iso",
    "lower_bound",
    "parse_timestamp",
    "upper_bound",
]

MS_PER_DAY: Final = 86_400_000
MAX_TIME_MS: Final = 8.64e15  # ECMAScript TimeClip range
MAX_SAFE_INTEGER: Final = 9007199254740991
_YEAR_10000_MS: Final = 253_402_300_800_000  # 10000-01-01T00:00:00.000Z

# SPEC §9.6 verbatim, with ASCII [0-9] for \d; used with re.fullmatch (no "$" before "\n").
_TIMESTAMP: Final = re.compile(
    "([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2})"
    "(?::([0-9]{2})(?:\\.([0-9]+))?)?(Z|([+-])([0-9]{2}):([0-9]{2}))"
)


def days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (any year, incl. 0 and negatives)."""
    year -= month <= 2
    era = year // 400
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def civil_from_days(days: int) -> tuple[int, int, int]:
    """The (year, month, day) of a day count since 1970-01-01."""
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (month <= 2), month, day


def iso(ms: float) -> str:
    """JavaScript ``new Date(ms).toISOString()``.

    Fractional milliseconds truncate toward zero (TimeClip); years outside 0000-9999
    print with a sign and six digits. Out of the Date range (or NaN) raises
    ``ValueError("Invalid time value")`` as JavaScript throws ``RangeError``.
    """
    # a stored time of a four-digit year, the usual case, needs no check
    t = ms if type(ms) is int and 0 <= ms < _YEAR_10000_MS else _time_value(ms)
    days, in_day = divmod(t, MS_PER_DAY)
    return _date_text(days) + _clock_text(in_day // 1000) + _MILLI_TEXT[in_day % 1000]


def _time_value(ms: float) -> int:
    """``ms`` as JavaScript's TimeClip makes it (truncated toward zero), or ValueError."""
    if isinstance(ms, float):
        if not math.isfinite(ms):
            raise ValueError("Invalid time value")
        t = math.trunc(ms)
    else:
        t = int(ms)
    if not -MAX_TIME_MS <= t <= MAX_TIME_MS:
        raise ValueError("Invalid time value")
    return t


@functools.lru_cache(maxsize=1 << 14)
def _date_text(days: int) -> str:
    """``YYYY-MM-DD`` of a day count (a reply prints the same few days many times)."""
    year, month, day = civil_from_days(days)
    year_text = f"{year:04d}" if 0 <= year <= 9999 else f"{'+' if year > 0 else '-'}{abs(year):06d}"
    return f"{year_text}-{month:02d}-{day:02d}"


@functools.lru_cache(maxsize=1 << 14)
def _clock_text(second: int) -> str:
    """``THH:MM:SS`` of a second of the day (a reply's times cluster)."""
    hour, rest = divmod(second, 3600)
    minute, sec = divmod(rest, 60)
    return f"T{hour:02d}:{minute:02d}:{sec:02d}"


_MILLI_TEXT: Final = tuple(f".{milli:03d}Z" for milli in range(1000))


@dataclass(frozen=True, slots=True)
class ExactTimestamp:
    """An instant: epoch milliseconds plus the fraction digits below one millisecond.

    ``rem`` has no trailing zeros, so equal instants have equal values.
    """

    ms: int
    rem: str


def _days_in_month(year: int, month: int) -> int:
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _epoch_ms(
    year: int, month: int, day: int, hour: int, minute: int, second: int, milli: int
) -> float:
    """Epoch milliseconds of a UTC wall time (the seam a test uses to fake a parser failure)."""
    days = days_from_civil(year, month, day)
    return float(((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + milli)


def _range_error(name: str, detail: str) -> HarnessError:
    return invalid_filter(f"session {name} range {detail}")


def parse_timestamp(name: str, value: str) -> ExactTimestamp:
    """Parse one bound argument (``name`` is e.g. ``created_at_from``) per SPEC §9.6.

    Order: shape (whole string, ASCII digits), then field ranges, then the instant.
    """
    match = _TIMESTAMP.fullmatch(value)
    if match is None:
        raise _range_error(name, "must be an ISO 8601 timestamp with Z or a numeric offset")
    year, month, day, hour, minute = (int(match.group(i)) for i in range(1, 6))
    second = int(match.group(6) or "0")
    fraction = match.group(7) or ""
    offset_sign = match.group(9)
    offset_hour = int(match.group(10) or "0")
    offset_minute = int(match.group(11) or "0")
    if (
        not 1 <= month <= 12
        or not 1 <= day <= _days_in_month(year, month)
        or hour > 23
        or minute > 59
        or second > 59
        or offset_hour > 23
        or offset_minute > 59
    ):
        raise _range_error(name, "must be a valid ISO 8601 timestamp")
    wall = _epoch_ms(year, month, day, hour, minute, second, int(fraction[:3].ljust(3, "0")))
    offset = (offset_hour * 60 + offset_minute) * 60_000
    instant = wall - offset if offset_sign == "+" else wall + offset
    if not math.isfinite(instant) or not instant.is_integer() or abs(instant) > MAX_SAFE_INTEGER:
        raise _range_error(name, "must be a valid ISO 8601 timestamp")
    return ExactTimestamp(int(instant), fraction[3:].rstrip("0"))


def compare_timestamps(left: ExactTimestamp, right: ExactTimestamp) -> int:
    """-1/0/1: by milliseconds, then digit by digit below the millisecond (missing = 0)."""
    if left.ms != right.ms:
        return -1 if left.ms < right.ms else 1
    width = max(len(left.rem), len(right.rem))
    a, b = left.rem.ljust(width, "0"), right.rem.ljust(width, "0")
    return 0 if a == b else (-1 if a < b else 1)


def lower_bound(stamp: ExactTimestamp) -> int | float:
    """Inclusive lower bound: the millisecond itself, or the next double above it."""
    return stamp.ms if not stamp.rem else math.nextafter(float(stamp.ms), math.inf)


def upper_bound(stamp: ExactTimestamp) -> int | float:
    """Inclusive upper bound: the millisecond itself, or the largest double below ms + 1."""
    return stamp.ms if not stamp.rem else math.nextafter(float(stamp.ms + 1), -math.inf)
