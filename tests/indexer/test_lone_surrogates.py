"""Stored events holding a lone UTF-16 surrogate read back everywhere.

A model streams text as deltas of a few characters, and a delta may end between the
two halves of a surrogate pair (an emoji): each half is then a lone surrogate, which the
log holds as a ``\\ud83d`` escape and the store keeps as such (``dump_json``). Every
reader of stored events — the window and trace reads, the redaction of a delta's run,
the writer's fold over stored events and its re-indexing, the session's title — must
read it back.
"""

from __future__ import annotations

from pathlib import Path

from indexer.query.service import StoreQueryService
from indexer.store.records.store import Store
from tests.builders import (
    assistant,
    chunk,
    events_record,
    header,
    header_record,
    plain,
    title,
    user,
)

SID = "split-pair"
EMOJI_HALVES = ("\ud83d", "\ude00")  # 😀 split over two deltas


def _store(path: Path) -> Store:
    store = Store(path)
    store.apply(header_record(header(SID, cwd="/w")))
    store.apply(
        events_record(SID,
            [
                plain(0, "turn/start", {"turn": 1}),
                plain(1, "step/start", {"turn": 1, "step": 1}),
                chunk(2, "smile "),
                chunk(3, EMOJI_HALVES[0]),
                chunk(4, EMOJI_HALVES[1]),
                chunk(5, " done"),
                user(6, "a lone \udc00 half, pasted"),
            ]
        )
    )
    store.commit()
    return store


def test_every_event_beside_a_split_pair_reads_and_traces(tmp_path: Path) -> None:
    _store(tmp_path).close()
    service = StoreQueryService(tmp_path)
    try:
        for seq in range(7):
            window = service.read_event(SID, seq, before=3, after=3)
            assert window.target.seq == seq
            assert service.trace_event(SID, seq).target.seq == seq
        texts = [service.read_event(SID, seq).target.data["chunk"]["text"] for seq in (3, 4)]
        assert "".join(texts) == "".join(EMOJI_HALVES)
    finally:
        service.close()


def test_the_writer_folds_and_reindexes_over_a_stored_lone_surrogate(tmp_path: Path) -> None:
    store = _store(tmp_path)
    try:
        # a compaction that replaces the stored message: the fold reads it back
        summary = assistant(7, "summary of the lone half", op=(6, 6), sources=[6])
        store.apply(events_record(SID, [summary]))
        store.commit()
        assert store.writer.reindex([SID]) > 0
        store.commit()
    finally:
        store.close()
    service = StoreQueryService(tmp_path)
    try:
        assert service.trace_event(SID, 6).replaced_by == 7
    finally:
        service.close()


def test_a_title_cut_mid_emoji_is_stored_and_shown_as_it_was(tmp_path: Path) -> None:
    store = _store(tmp_path)
    try:
        store.apply(events_record(SID, [title(7, "Project \ud83d")]))
        store.commit()
    finally:
        store.close()
    service = StoreQueryService(tmp_path)
    try:
        (observation,) = service.read_title_snapshots([SID])
        assert observation.title is not None and observation.title.title == "Project \ud83d"
    finally:
        service.close()
