"""Retention selection (``indexer.store.maintenance.retention``): which sessions are past
``--retain-days``, oldest first, bounded, and asked for once until the resend delay."""

from __future__ import annotations

from pathlib import Path

import pytest

from indexer.model.records import EventsRecord, HeaderRecord
from indexer.store.maintenance.retention import DAY_MS, Retention
from indexer.store.records.store import Store
from tests.builders import header, user

NOW_S = 1_800_000_000.0  # 2027-01-15
NOW_MS = int(NOW_S * 1000)


def add(
    store: Store, sid: str, *, last_ms: int | None, cwd: str | None = "/w", t0: int = 0
) -> None:
    """A session whose newest event is at ``last_ms`` (None: no events; its header's
    createdAt is ``t0``); its first event is older still."""
    store.apply(HeaderRecord(v=1, kind="header", header=header(sid, cwd=cwd, created_at=t0)))
    if last_ms is not None:
        events = [user(0, "first", time=t0), user(1, "newest", time=last_ms)]
        store.apply(EventsRecord(v=1, kind="events", session_id=sid, events=events))
    store.commit()


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store(tmp_path / "data")
    old = NOW_MS - 40 * DAY_MS
    add(s, "recent", last_ms=NOW_MS - DAY_MS, t0=old)  # old start, recent newest event
    add(s, "old", last_ms=NOW_MS - 31 * DAY_MS, t0=old)
    add(s, "older", last_ms=NOW_MS - 35 * DAY_MS, t0=old)
    add(s, "no-cwd", last_ms=NOW_MS - 33 * DAY_MS, cwd=None, t0=old)
    add(s, "empty-old", last_ms=None, t0=NOW_MS - 32 * DAY_MS)
    add(s, "empty-new", last_ms=None, t0=NOW_MS - 2 * DAY_MS)
    return s


def test_sessions_past_retention_by_their_newest_event_oldest_first(store: Store) -> None:
    try:
        expired = Retention(30).expired(store.tables, NOW_S)
        assert [e.session_id for e in expired] == ["older", "no-cwd", "empty-old", "old"]
        keys = {e.session_id: e.routing_key for e in expired}
        assert keys["old"] == "/w" and keys["no-cwd"] == "session:no-cwd"
        assert expired[-1].last_event_ms == NOW_MS - 31 * DAY_MS
        assert Retention(34).expired(store.tables, NOW_S)[0].session_id == "older"
        assert [e.session_id for e in Retention(36).expired(store.tables, NOW_S)] == []
    finally:
        store.close()


def test_a_check_is_bounded_and_asks_once(store: Store) -> None:
    try:
        retention = Retention(30, limit=3)
        first = [e.session_id for e in retention.expired(store.tables, NOW_S)]
        assert first == ["older", "no-cwd", "empty-old"]
        assert [e.session_id for e in retention.expired(store.tables, NOW_S)] == ["old"]
        assert retention.expired(store.tables, NOW_S) == []
        retention.forget(["no-cwd"])  # its send failed
        assert [e.session_id for e in retention.expired(store.tables, NOW_S)] == ["no-cwd"]
        again = Retention(30, limit=10, resend_after_s=0)
        assert len(again.expired(store.tables, NOW_S)) == 4
        assert len(again.expired(store.tables, NOW_S)) == 4  # asked long enough ago
    finally:
        store.close()


def test_retention_needs_a_positive_number_of_days() -> None:
    with pytest.raises(ValueError):
        Retention(0)
