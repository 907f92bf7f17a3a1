"""Checks on typed filter lists (SPEC §6.3) and sessionq's filter-size bound
(deliberate difference 7)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from indexer.errors import INVALID_FILTER, SessionQueryError
from indexer.model.search import (
    AvailabilityFilter,
    CreatedAtFilter,
    CwdFilter,
    EventFilter,
    IdFilter,
    ParentFilter,
    SeqFilter,
    SessionFilter,
    SurfaceFilter,
    TextFilter,
    TimeFilter,
    TypeFilter,
)

MAX_FILTER_VALUES = 10_000
_RANGE_KIND = {CreatedAtFilter: "created-at", SeqFilter: "seq", TimeFilter: "time"}


def _check_range(kind: str, lo: float | None, hi: float | None) -> None:
    for side, v in (("from", lo), ("to", hi)):
        if v is not None and (
            isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v)
        ):
            raise SessionQueryError(f"session {kind} filter {side} must be finite", INVALID_FILTER)
    if lo is not None and hi is not None and lo > hi:
        raise SessionQueryError(
            f"session {kind} filter from must be less than or equal to to", INVALID_FILTER
        )


def check_filters(
    session_filters: Sequence[SessionFilter], event_filters: Sequence[EventFilter]
) -> None:
    """Raise INVALID_FILTER for a malformed range or too many list values in total."""
    total = 0
    for f in (*session_filters, *event_filters):
        if isinstance(f, CreatedAtFilter | SeqFilter | TimeFilter):
            _check_range(_RANGE_KIND[type(f)], f.from_, f.to)
        elif isinstance(
            f, IdFilter | CwdFilter | ParentFilter | AvailabilityFilter | TypeFilter | SurfaceFilter
        ):
            total += len(f.values)
        elif isinstance(f, TextFilter):
            if not isinstance(f.text, str):
                raise SessionQueryError("session text filter text must be a string", INVALID_FILTER)
        else:
            raise SessionQueryError(
                f'session unknown filter kind "{type(f).__name__}"', INVALID_FILTER
            )
    if total > MAX_FILTER_VALUES:
        raise SessionQueryError(
            "session-search request has too many filter values; reduce filter values",
            INVALID_FILTER,
        )
