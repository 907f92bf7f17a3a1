"""SPEC §6.2 event filters evaluated in Python over one session's documents
(``filterEvents``): metadata predicates plus the literal, case-insensitive text scan."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence

import orjson

from indexer.errors import INVALID_FILTER, SessionQueryError
from indexer.model.search import (
    EventFilter,
    SeqFilter,
    SurfaceFilter,
    TextFilter,
    TimeFilter,
    TypeFilter,
)
from indexer.query.types import EventRecord
from indexer.surface.jstext import JS_WHITESPACE, js_split, js_trim
from indexer.surface.text import extract_text

_WS_CLASS = "[" + re.escape(JS_WHITESPACE) + "]+"


def text_pattern(text: str) -> re.Pattern[str]:
    """Pieces split on WS runs, escaped, joined by one-or-more WS; case-insensitive."""
    trimmed = js_trim(text)
    if not trimmed:
        raise SessionQueryError(
            "session text filter must contain non-whitespace text", INVALID_FILTER
        )
    return re.compile(_WS_CLASS.join(re.escape(p) for p in js_split(trimmed)), re.IGNORECASE)


def _in_range(v: float, lo: float | None, hi: float | None) -> bool:
    return (lo is None or v >= lo) and (hi is None or v <= hi)


def matches(record: EventRecord, text: str, filters: Sequence[EventFilter]) -> bool:
    for f in filters:
        if isinstance(f, SeqFilter) and not _in_range(record.seq, f.from_, f.to):
            return False
        if isinstance(f, TimeFilter) and not _in_range(record.time, f.from_, f.to):
            return False
        if isinstance(f, TypeFilter) and record.type not in f.values:
            return False
        if isinstance(f, SurfaceFilter) and record.surface not in f.values:
            return False
        if isinstance(f, TextFilter) and not text_pattern(f.text).search(text):
            return False
    return True


def apply_event_filters(
    conn: sqlite3.Connection,
    session_id: str,
    records: Sequence[EventRecord],
    filters: Sequence[EventFilter],
    *,
    has_text: bool,
) -> list[EventRecord]:
    """Documents (events with non-empty semantic text) that pass every filter, by seq."""
    for f in filters:
        if isinstance(f, TextFilter):
            text_pattern(f.text)  # validate before reading anything
    raws = {
        seq: raw
        for seq, raw in conn.execute(
            "SELECT seq, raw FROM events WHERE session_id = ? AND indexed = 1", (session_id,)
        )
    }
    out: list[EventRecord] = []
    for rec in records:
        raw = raws.get(rec.seq)
        if raw is None:
            continue
        obj = orjson.loads(raw)
        text = extract_text(rec.type, obj.get("data")) if has_text else ""
        if matches(rec, text, filters):
            out.append(rec)
    return out
