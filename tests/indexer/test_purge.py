"""Physical purge (``indexer.store.maintenance.purge``): after the commit that deletes a session, no
file of the data dir holds its text or its stored bytes, while a session that stays is
found by the same scan; without the purge the scan does find the deleted text."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import orjson
import pytest

from indexer.logs.roots import discover
from indexer.model.records import DeleteRecord, EventsRecord, HeaderRecord
from indexer.sources.files import ingest_files
from indexer.store.layout import index_path
from indexer.store.maintenance.purge import PENDING_KEY, Segment, dirty_segments, read_segments
from indexer.store.records.store import Store
from tests.builders import BASE_TIME, assistant, header, plain, user
from tests.data_paths import CORPUS_DIR
from tests.erasure_scan import cell_values, marker, scan, unique_fragments
from tests.indexer.tantivy_helpers import dump_docs

RNG_SEED = 11


def session(sid: str, mark: str, *, events: int = 40, t0: int = BASE_TIME) -> list[Any]:
    """Header + events whose every message carries ``mark``."""
    evs: list[dict[str, Any]] = [plain(0, "turn/start", {"turn": 1}, time=t0)]
    for seq in range(1, events):
        text = f"note {seq} of {sid}: {mark} and the words {sid}-{seq} around it"
        build = user if seq % 2 else assistant
        evs.append(build(seq, text, time=t0 + seq * 1000))
    return [
        HeaderRecord(v=1, kind="header", header=header(sid, cwd=f"/w/{sid}")),
        EventsRecord(v=1, kind="events", session_id=sid, events=evs),
    ]


def apply_all(store: Store, records: list[Any]) -> None:
    for record in records:
        store.apply(record)
    store.commit()


def delete(sid: str) -> DeleteRecord:
    return DeleteRecord(v=1, kind="delete", session_id=sid)


@pytest.fixture(scope="module")
def markers() -> tuple[str, str]:
    rng = random.Random(RNG_SEED)
    victim = marker(rng)
    return victim, marker(rng, avoid=[victim])


def build(data: Path, markers: tuple[str, str], **store_args: Any) -> tuple[Store, set[bytes]]:
    """The real corpus, then a control session, then the victim session in two batches,
    each shared with another session's documents (so the victim's segments hold live
    documents of others, which the purge must move). Returns the store and the stored
    values the control session added."""
    victim, control = markers
    store = Store(data, **store_args)
    ingest_files(store, discover([CORPUS_DIR]))
    corpus_only = cell_values(data)
    control_records = session("control", control, events=60)
    control_events = control_records[1].events
    apply_all(
        store,
        [
            control_records[0],
            EventsRecord(v=1, kind="events", session_id="control", events=control_events[:30]),
        ],
    )
    records = session("victim", victim)
    head, tail = records[1].events[:20], records[1].events[20:]
    later = session("later", marker(random.Random(1), avoid=markers))
    apply_all(
        store,
        [records[0], EventsRecord(v=1, kind="events", session_id="victim", events=head), *later],
    )
    apply_all(
        store,
        [
            EventsRecord(v=1, kind="events", session_id="victim", events=tail),
            EventsRecord(v=1, kind="events", session_id="control", events=control_events[30:]),
        ],
    )
    control_values = cell_values(data) - corpus_only
    return store, control_values


def needles(mark: str) -> list[bytes]:
    return [mark.encode(), mark.lower().encode()]


def test_deleted_session_leaves_every_file_of_the_data_dir(
    tmp_path: Path, markers: tuple[str, str]
) -> None:
    victim, control = markers
    data = tmp_path / "data"
    store, control_values = build(data, markers, purge_interval_s=0)
    try:
        with_victim = cell_values(data)
        found = scan(data, [victim.encode(), control.encode()])
        assert found[victim.encode()] and found[control.encode()]  # the scan sees both
        docs_before = [d for d in dump_docs(store.index) if d.session_id != "victim"]

        store.apply(delete("victim"))
        store.commit()

        report = store.purger.last
        assert report is not None and report.complete, report
        assert report.segments >= 1 and report.wal_truncated
        assert not store.purger.pending
        found = scan(data, [*needles(victim), control.encode()])
        assert found[control.encode()], "the control must be found, else the scan proves nothing"
        assert not found[victim.encode()] and not found[victim.lower().encode()], found

        # The exact stored bytes of the victim's rows (whatever the table layout: raw
        # JSON or compressed blocks), read before the delete: none is in any file ...
        after = cell_values(data)
        gone = with_victim - after
        assert gone, "the victim had stored values"
        pieces = unique_fragments(gone, after | gone)
        assert all(pieces.values()), "every deleted value has a piece no other value has"
        hits = scan(data, [p for ps in pieces.values() for p in ps])
        assert not any(hits.values()), {k: v for k, v in hits.items() if v}
        # ... while every stored value of the control session is found by the same scan.
        kept = control_values & after
        assert kept
        kept_pieces = {v: f for v, f in unique_fragments(kept, after | gone).items() if f}
        assert len(kept_pieces) >= len(kept) // 2
        for value, frags in kept_pieces.items():
            assert any(scan(data, frags).values()), f"control value not found: {value[:60]!r}"

        # Nothing else changed: every other document is still there, as it was.
        assert dump_docs(store.index) == docs_before
    finally:
        store.close()


def test_without_purge_the_deleted_text_stays_in_the_index_files(
    tmp_path: Path, markers: tuple[str, str]
) -> None:
    """What the issue saw (and what proves the scan above can fail): a delete alone
    leaves the text in Tantivy's segments as deleted documents."""
    victim, _ = markers
    data = tmp_path / "data"
    store, _ = build(data, markers, purge_interval_s=None)
    try:
        store.apply(delete("victim"))
        store.commit()
        assert sum(s.deleted for s in read_segments(index_path(data))) > 0
        found = scan(data, [victim.encode()])[victim.encode()]
        assert any(f.startswith("tantivy/") for f in found), found
    finally:
        store.close()


def test_a_pending_purge_survives_a_restart(tmp_path: Path, markers: tuple[str, str]) -> None:
    victim, control = markers
    data = tmp_path / "data"
    store, _ = build(data, markers, purge_interval_s=0)
    try:
        store.apply(delete("victim"))
        store.checkpoint.commit()  # committed, then the process "dies" before its pass
    finally:
        store.close()
    assert scan(data, [victim.encode()])[victim.encode()]
    store = Store(data, purge_interval_s=0)
    try:
        assert store.purger.pending
        assert store.tables.get_meta(PENDING_KEY) == "1"
        report = store.purge_if_due()
        assert report is not None and report.complete
        assert store.tables.get_meta(PENDING_KEY) == "0"
        found = scan(data, [victim.encode(), control.encode()])
        assert not found[victim.encode()] and found[control.encode()]
    finally:
        store.close()


def test_passes_keep_their_interval(tmp_path: Path) -> None:
    store = Store(tmp_path / "data", purge_interval_s=3600)
    try:
        apply_all(store, session("a", "x") + session("b", "y"))
        store.apply(delete("a"))
        store.commit()
        first = store.purger.last
        assert first is not None and first.segments == 1 and first.complete
        store.apply(delete("b"))
        store.commit()  # within the interval: the pass waits
        assert store.purger.last is first and store.purger.pending
        assert store.purge_if_due() is None
    finally:
        store.close()


def test_dirty_segments_are_the_ones_that_gained_deletions() -> None:
    segments = [Segment("a", 10, 0), Segment("b", 10, 2), Segment("c", 10, 3), Segment("d", 5, 1)]
    assert dirty_segments(segments, {}) == [1, 2, 3]
    assert dirty_segments(segments, {"b": 2, "c": 1, "d": 1}) == [2]
    assert dirty_segments(segments, {"a": 0, "b": 2, "c": 3, "d": 1}) == []


def test_read_segments_follows_meta_json(tmp_path: Path) -> None:
    assert read_segments(tmp_path) == []
    (tmp_path / "meta.json").write_bytes(
        orjson.dumps(
            {
                "segments": [
                    {"segment_id": "s1", "max_doc": 7, "deletes": None},
                    {"segment_id": "s2", "max_doc": 9, "deletes": {"num_deleted_docs": 4}},
                ]
            }
        )
    )
    assert read_segments(tmp_path) == [Segment("s1", 7, 0), Segment("s2", 9, 4)]
    assert [s.live for s in read_segments(tmp_path)] == [7, 5]


def test_a_real_sessions_text_leaves_every_file(tmp_path: Path) -> None:
    """The same on real data: pieces of the real session with the most documents that
    the scan finds before the delete (its text, as its rows and documents store it) are
    found in no file after, except pieces that other sessions' data holds too."""
    data = tmp_path / "data"
    store = Store(data, purge_interval_s=0)
    try:
        ingest_files(store, discover([CORPUS_DIR]), commit_every_events=500)  # many segments
        docs = dump_docs(store.index)
        counts: dict[str, int] = {}
        for d in docs:
            counts[d.session_id] = counts.get(d.session_id, 0) + 1
        victim = max(sorted(counts), key=lambda sid: counts[sid])
        text = b"\n".join(d.text.encode() for d in docs if d.session_id == victim)
        step = max(8, len(text) // 1200)  # dense enough to find text LZ4 kept literal
        candidates = {text[i : i + 32] for i in range(0, len(text) - 32, step)}
        found_before = {c for c, files in scan(data, candidates).items() if files}
        # The raw events are compressed: pieces of the victim's blocks stand for them.
        victim_blocks = [
            bytes(r[0])
            for r in store.tables.conn.execute(
                "SELECT b.data FROM blocks b JOIN sessions s ON s.key = b.session_key"
                " WHERE s.id = ?",
                (victim,),
            )
        ]
        block_pieces = {
            p for ps in unique_fragments(victim_blocks, cell_values(data)).values() for p in ps
        }
        blocks_before = {c for c, files in scan(data, block_pieces).items() if files}

        store.apply(delete(victim))
        store.commit()
        report = store.purger.last
        assert report is not None and report.complete and report.segments >= 1

        remaining = b"\x00".join(
            [*cell_values(data), *(d.text.encode() for d in dump_docs(store.index))]
        )
        checked = {c for c in found_before if c not in remaining}
        checked |= {c for c in blocks_before if c not in remaining}
        assert len(checked) >= 50, "the scan found the session's text before the delete"
        left = {c: files for c, files in scan(data, checked).items() if files}
        assert not left, left
    finally:
        store.close()
