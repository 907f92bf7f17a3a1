"""The store's apply API: idempotence, batching, re-delivery, conflicts, compaction,
delete, rejection without side effects, and crash-safe commits."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest

from indexer.errors import INVALID_SURFACE, SOURCE_CONFLICT, RecordRejectedError
from indexer.model.records import (
    DeleteRecord,
    LifecycleRecord,
    decode_record,
)
from indexer.query.service import StoreQueryService
from indexer.store.records.store import Store
from tests.builders import assistant, chunk, events_record, header, header_record, plain, user
from tests.snapshots import snapshot

COMPACTION = [
    plain(0, "turn/start", {"turn": 1}),
    plain(1, "step/start", {"turn": 1, "step": 1}),
    chunk(2),
    user(3, "original needle question", sources=[2]),
    assistant(4, "summary needle one", op=(3, 3), sources=[3, 2]),
    user(5, "follow up"),
    plain(6, "step/end", {"turn": 1, "step": 1}),
    plain(7, "step/start", {"turn": 1, "step": 2}),
    assistant(8, "final needle summary", op=(4, 4), sources=[2, 4]),
]


def apply_all(data_dir: Path, records: list[Any], *, commit_each: bool = False) -> None:
    store = Store(data_dir)
    try:
        for r in records:
            with contextlib.suppress(RecordRejectedError):
                store.apply(r)
            if commit_each:
                store.commit()
        store.commit()
    finally:
        store.close()


def test_applying_the_same_records_twice_changes_nothing(tmp_path: Path) -> None:
    records = [header_record(header("s1")), events_record("s1", COMPACTION)]
    apply_all(tmp_path / "a", records)
    once = snapshot(tmp_path / "a")
    apply_all(tmp_path / "a", records)
    assert snapshot(tmp_path / "a") == once


def test_small_batches_end_identical_to_one_whole_batch(tmp_path: Path) -> None:
    apply_all(tmp_path / "whole", [header_record(header("s1")), events_record("s1", COMPACTION)])
    pieces = [header_record(header("s1"))] + [events_record("s1", [e]) for e in COMPACTION]
    apply_all(tmp_path / "pieces", pieces, commit_each=True)
    assert snapshot(tmp_path / "pieces") == snapshot(tmp_path / "whole")


def test_identical_overlap_applies_only_the_new_tail(tmp_path: Path) -> None:
    d = tmp_path / "d"
    store = Store(d)
    store.apply(header_record(header("s1")))
    store.apply(events_record("s1", COMPACTION[:5]))
    applied = store.apply(events_record("s1", COMPACTION[3:]))
    store.commit()
    store.close()
    assert applied.events == len(COMPACTION) - 5
    ref = tmp_path / "ref"
    apply_all(ref, [header_record(header("s1")), events_record("s1", COMPACTION)])
    assert snapshot(d) == snapshot(ref)


def test_differing_overlap_is_a_conflict_and_changes_nothing(tmp_path: Path) -> None:
    store = Store(tmp_path)
    store.apply(header_record(header("s1")))
    store.apply(events_record("s1", COMPACTION[:5]))
    store.commit()
    before = snapshot(tmp_path)
    changed = [user(3, "a different question", sources=[2]), *COMPACTION[4:]]
    with pytest.raises(RecordRejectedError) as err:
        store.apply(events_record("s1", changed))
    assert "conflicts with the stored event" in err.value.message
    store.commit()
    store.close()
    assert snapshot(tmp_path) == before


def test_a_gap_is_rejected_and_leaves_the_session_as_it_was(tmp_path: Path) -> None:
    store = Store(tmp_path)
    store.apply(header_record(header("s1")))
    store.apply(events_record("s1", COMPACTION[:3]))
    store.commit()
    before = snapshot(tmp_path)
    with pytest.raises(RecordRejectedError) as err:
        store.apply(events_record("s1", COMPACTION[5:]))
    assert err.value.message == "session event seq 5 is not contiguous; expected 3"
    # the repair record (the missing seqs onward) applies
    store.apply(events_record("s1", COMPACTION[3:]))
    store.commit()
    store.close()
    after = snapshot(tmp_path)
    assert after["events"][:3] == before["events"]
    assert len(after["events"]) == len(COMPACTION)


def test_surface_violation_is_rejected_with_its_rule(tmp_path: Path) -> None:
    store = Store(tmp_path)
    store.apply(header_record(header("s1")))
    store.commit()
    before = snapshot(tmp_path)
    bad = [user(0, "x"), assistant(1, "y", op=(9, 9), sources=[0])]
    with pytest.raises(RecordRejectedError) as err:
        store.apply(events_record("s1", bad))
    assert err.value.code == INVALID_SURFACE
    assert "surface replace: start seq 9 not found in surface" in err.value.message
    store.commit()
    store.close()
    assert snapshot(tmp_path) == before


def test_compaction_replace_reclassifies_and_reindexes_shadowed_events(tmp_path: Path) -> None:
    store = Store(tmp_path)
    store.apply(header_record(header("s1")))
    store.apply(events_record("s1", COMPACTION[:4]))
    store.commit()
    store.apply(events_record("s1", COMPACTION[4:]))
    store.commit()
    store.close()
    svc = StoreQueryService(tmp_path)
    surfaces = [r.surface for r in svc.list_events("s1")]
    assert surfaces == [
        "log-only",
        "log-only",
        "log-only",
        "shadowed",
        "shadowed",
        "current",
        "log-only",
        "log-only",
        "current",
    ]
    page = svc.search_events("s1", "needle", [], limit=10)
    by_seq = {h.seq: h.surface for h in page.items}
    assert by_seq == {3: "shadowed", 4: "shadowed", 8: "current"}
    trace = svc.trace_event("s1", 3)
    assert (trace.replaced_by, trace.replacement_chain, trace.derived_event_seqs) == (
        4,
        [4, 8],
        [4],
    )
    trace2 = svc.trace_event("s1", 2)
    assert trace2.derived_event_seqs == [3, 4, 8]
    assert svc.trace_event("s1", 8).replaced_event_seqs == [4]
    svc.close()


def test_delete_removes_every_trace(tmp_path: Path) -> None:
    kept = [header_record(header("s2")), events_record("s2", [user(0, "keep me")])]
    apply_all(tmp_path / "ref", kept)
    d = tmp_path / "d"
    apply_all(
        d,
        [
            header_record(header("s1")),
            events_record("s1", COMPACTION),
            header_record(header("s2")),
            events_record("s2", [user(0, "keep me")]),
            DeleteRecord(v=1, kind="delete", session_id="s1"),
        ],
    )
    assert snapshot(d) == snapshot(tmp_path / "ref")


def test_header_conflict_is_rejected_and_the_stored_header_stays(tmp_path: Path) -> None:
    store = Store(tmp_path)
    store.apply(header_record(header("s1", cwd="/a")))
    with pytest.raises(RecordRejectedError) as err:
        store.apply(header_record(header("s1", cwd="/b")))
    assert err.value.code == SOURCE_CONFLICT
    store.commit()
    store.close()
    svc = StoreQueryService(tmp_path)
    rec = svc.get_session("s1")
    assert rec is not None and rec.header.cwd == "/a"
    svc.close()


def test_lifecycle_sets_the_live_flag(tmp_path: Path) -> None:
    apply_all(
        tmp_path,
        [
            header_record(header("s1")),
            LifecycleRecord(v=1, kind="lifecycle", session_id="s1", live=True),
        ],
    )
    svc = StoreQueryService(tmp_path)
    rec = svc.get_session("s1")
    assert rec is not None and rec.live and rec.persisted
    svc.close()


def test_events_for_an_unknown_session_are_rejected(tmp_path: Path) -> None:
    store = Store(tmp_path)
    with pytest.raises(RecordRejectedError) as err:
        store.apply(events_record("ghost", [user(0, "x")]))
    assert "has no header" in err.value.message
    store.close()


def test_uncommitted_batch_is_dropped_on_abort(tmp_path: Path) -> None:
    store = Store(tmp_path)
    store.apply(header_record(header("s1")))
    store.apply(events_record("s1", [user(0, "committed needle")]))
    store.commit({("t", 0): 2})
    before = snapshot(tmp_path)
    store.apply(events_record("s1", [user(1, "uncommitted needle")]))
    store.abort()
    store.close()
    assert snapshot(tmp_path) == before
    reopened = Store(tmp_path)
    assert reopened.offsets() == {("t", 0): 2}
    reopened.close()


def test_record_decoding_names_what_is_wrong() -> None:
    with pytest.raises(RecordRejectedError, match="not JSON"):
        decode_record(b"{nope")
    with pytest.raises(RecordRejectedError, match="kind"):
        decode_record(b'{"v":1,"kind":"unknown"}')
    rec = decode_record(b'{"v":1,"kind":"lifecycle","session_id":"s","live":true}')
    assert isinstance(rec, LifecycleRecord) and rec.live


def test_a_search_shows_no_hit_a_read_cannot_find_yet(tmp_path: Path) -> None:
    """The index commits before the tables: in between, a search must not show the new
    event (a read of it would say it does not exist), then shows it once both commit."""
    store = Store(tmp_path)
    store.apply(header_record(header("s1")))
    store.apply(events_record("s1", [user(0, "first question")]))
    store.commit()
    store.apply(events_record("s1", [assistant(1, "quokka answer")]))
    store.index.commit()  # the window: the index committed, the tables not yet
    svc = StoreQueryService(tmp_path)
    try:
        assert svc.search_sessions("quokka", [], [], limit=10).items == []
        assert svc.search_events("s1", "quokka", [], limit=10).items == []
        store.commit()
        sessions = svc.search_sessions("quokka", [], [], limit=10).items
        assert [(h.record.header.id, h.best.seq) for h in sessions] == [("s1", 1)]
        assert [h.seq for h in svc.search_events("s1", "quokka", [], limit=10).items] == [1]
    finally:
        svc.close()
        store.close()
