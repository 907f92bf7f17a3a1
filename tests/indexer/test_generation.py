"""A reader's remembered session rows (``indexer.query.generation``): every commit of the
writer is seen by the reader's next read, and the rows read from memory answer exactly
what the SQL would."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from indexer.model.records import DeleteRecord, LifecycleRecord
from indexer.model.search import (
    AvailabilityFilter,
    CreatedAtFilter,
    CwdFilter,
    IdFilter,
    ParentFilter,
    SessionFilter,
)
from indexer.query import generation
from indexer.query.service import StoreQueryService
from indexer.query.sessions import filter_sessions
from indexer.store.records.store import Store
from tests.builders import BASE_TIME, events_record, header, header_record, plain, title, user


@pytest.fixture
def dirs(tmp_path: Path) -> Iterator[tuple[Store, StoreQueryService]]:
    store = Store(tmp_path)
    service = StoreQueryService(tmp_path)
    try:
        yield store, service
    finally:
        service.close()
        store.close()


def _title(service: StoreQueryService, sid: str) -> str | None:
    [observation] = service.read_title_snapshots([sid])
    return None if observation.title is None else observation.title.title


def test_a_commit_is_seen_by_the_next_read_of_every_remembered_row(
    dirs: tuple[Store, StoreQueryService],
) -> None:
    store, service = dirs
    assert service.get_session("s1") is None  # a missing row is remembered too
    assert service.last_seq("s1") is None
    store.apply(header_record(header("s1", cwd="/w")))
    store.apply(header_record(header("kid", cwd="/w", parent="s1")))
    step = plain(0, "step/start", {"turn": 1, "step": 1})
    store.apply(events_record("s1", [step, title(1, "One")]))
    store.commit()

    record = service.get_session("s1")
    assert record is not None and not record.live
    assert (service.last_seq("s1"), service.last_step_start_seq("s1")) == (1, 0)
    assert _title(service, "s1") == "One"
    assert [d.session.header.id for d in service.trace_session("s1").descendants] == ["kid"]
    assert [r.header.id for r in service.filter_sessions([IdFilter(("s1",))])] == ["s1"]

    step = plain(3, "step/start", {"turn": 1, "step": 2})
    store.apply(events_record("s1", [title(2, "Two"), step]))
    store.apply(LifecycleRecord(v=1, kind="lifecycle", session_id="s1", live=True))
    store.apply(header_record(header("kid2", cwd="/w", parent="s1", created_at=BASE_TIME + 1)))
    store.commit()

    record = service.get_session("s1")
    assert record is not None and record.live
    assert (service.last_seq("s1"), service.last_step_start_seq("s1")) == (3, 3)
    assert _title(service, "s1") == "Two"
    descendants = service.trace_session("s1").descendants
    assert [d.session.header.id for d in descendants] == ["kid", "kid2"]
    assert service.read_event("s1", 2).target.seq == 2

    store.apply(DeleteRecord(v=1, kind="delete", session_id="s1"))
    store.commit()
    assert service.get_session("s1") is None
    assert service.filter_sessions([IdFilter(("s1", "kid"))])[0].header.id == "kid"
    [gone] = service.read_title_snapshots(["s1"])
    assert gone.error is not None and gone.header is None


def test_rows_past_the_bound_start_the_memory_over_and_still_answer(
    dirs: tuple[Store, StoreQueryService], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, service = dirs
    ids = [f"s{i:02d}" for i in range(12)]
    for sid in ids:
        store.apply(header_record(header(sid, cwd="/w")))
        store.apply(events_record(sid, [user(0, f"hello {sid}")]))
    store.commit()
    monkeypatch.setattr(generation, "MAX_ROWS", 5)
    for start in range(0, 12, 3):
        wanted = ids[start : start + 4]
        found = service.filter_sessions([IdFilter(tuple(wanted)), CwdFilter(("/w",))])
        assert sorted(r.header.id for r in found) == sorted(wanted)
    titles = service.read_title_snapshots(ids)
    assert [t.session_id for t in titles] == ids and all(t.header is not None for t in titles)


# ---- the remembered rows filter as the SQL does -------------------------------------------------
IDS = [f"s{i}" for i in range(8)]
CWDS: list[str | None] = ["/a", "/b", None]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StoreQueryService]:
    """Eight sessions over three workspaces (one without a cwd), some children, one live."""
    path = tmp_path_factory.mktemp("generation")
    store = Store(path)
    for i, sid in enumerate(IDS):
        parent = IDS[i // 2] if i >= 2 else None
        store.apply(
            header_record(header(sid, cwd=CWDS[i % 3], parent=parent, created_at=BASE_TIME + i % 4))
        )
        if i % 3 == 1:
            store.apply(LifecycleRecord(v=1, kind="lifecycle", session_id=sid, live=True))
    store.commit()
    store.close()
    service = StoreQueryService(path)
    yield service
    service.close()


_values = st.lists(st.sampled_from([*IDS, "ghost"]), max_size=4).map(tuple)
_nullable = st.lists(st.sampled_from([*IDS[:3], "/a", "/b", "ghost", None]), max_size=3).map(
    tuple
)
_bound = st.one_of(st.none(), st.integers(BASE_TIME - 1, BASE_TIME + 4), st.floats(
    BASE_TIME - 1, BASE_TIME + 4, allow_nan=False
))
_filter: st.SearchStrategy[SessionFilter] = st.one_of(
    _values.map(IdFilter),
    st.lists(st.sampled_from(CWDS), max_size=3).map(lambda v: CwdFilter(tuple(v))),
    _nullable.map(ParentFilter),
    st.builds(CreatedAtFilter, from_=_bound, to=_bound),
    st.lists(st.sampled_from(["live", "persisted"]), max_size=2).map(
        lambda v: AvailabilityFilter(tuple(v))
    ),
)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ids=_values, rest=st.lists(_filter, max_size=4), at=st.integers(0, 4))
def test_an_id_list_answers_from_remembered_rows_as_the_sql_does(
    corpus: StoreQueryService, ids: tuple[str, ...], rest: list[SessionFilter], at: int
) -> None:
    filters = [*rest[:at], IdFilter(ids), *rest[at:]]
    ranges = [f for f in filters if isinstance(f, CreatedAtFilter)]
    if any(f.from_ is not None and f.to is not None and f.from_ > f.to for f in ranges):
        return  # refused by check_filters before either path runs
    from_rows = corpus.filter_sessions(filters)
    from_sql = filter_sessions(corpus._conn, filters)
    assert [r.header.id for r in from_rows] == [r.header.id for r in from_sql]
    assert from_rows == from_sql


def test_a_reading_scope_checks_the_generation_once_and_the_next_read_after_it_again(
    dirs: tuple[Store, StoreQueryService],
) -> None:
    store, service = dirs
    store.apply(header_record(header("s1", cwd="/w")))
    store.apply(events_record("s1", [title(0, "One")]))
    store.commit()
    with service.reading():
        assert _title(service, "s1") == "One"
        store.apply(events_record("s1", [title(1, "Two")]))
        store.commit()
        with service.reading():  # nested: still the outer scope's generation
            assert _title(service, "s1") == "One"
        assert _title(service, "s1") == "One"
        assert service.last_seq("s1") == 0
    assert _title(service, "s1") == "Two"
    assert service.last_seq("s1") == 1


def test_a_reading_scope_reads_one_snapshot_and_ends_it(
    dirs: tuple[Store, StoreQueryService],
) -> None:
    """Rows and blocks read in one scope are of one commit: a delete committed meanwhile
    takes neither the row nor the events away from it (each statement on its own read
    the row, then no blocks: the read failed inside); after the scope (also one left by
    an error) the connection holds no read transaction, so the writer's checkpoints
    pass it."""
    store, service = dirs
    store.apply(header_record(header("s1", cwd="/w")))
    store.apply(events_record("s1", [user(0, "hello"), title(1, "One")]))
    store.commit()
    with service.reading():
        assert service.get_session("s1") is not None
        store.apply(DeleteRecord(v=1, kind="delete", session_id="s1"))
        store.commit()
        assert [e.seq for e in service.read_event("s1", 0, after=1).events] == [0, 1]
        assert [e.seq for e in service.list_events("s1")] == [0, 1]
    assert not service._conn.in_transaction
    assert service.get_session("s1") is None
    with pytest.raises(RuntimeError), service.reading():
        service.get_session("s1")
        raise RuntimeError("a tool failed")
    assert not service._conn.in_transaction
