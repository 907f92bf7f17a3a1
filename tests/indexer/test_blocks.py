"""The compact event store (``indexer.store.blocks.format``, ``event_blocks``): byte-exact round
trips of every real log, bounded blocks, appends that rewrite only the open block, exact
reads that decompress one block, deletes that leave no block behind, and dirs that stay
readable without the shipped dictionary."""

from __future__ import annotations

import itertools
import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from indexer.logs.reader import LogRejectedError, read_log
from indexer.logs.roots import discover
from indexer.model.records import DeleteRecord, EventsRecord, HeaderRecord
from indexer.query.service import StoreQueryService
from indexer.redact import Redaction
from indexer.redact.chunks import delta_of
from indexer.sources.files import ingest_files
from indexer.store.blocks import format as block_format
from indexer.store.blocks.format import (
    BLOCK_BYTES,
    BLOCK_EVENTS,
    Codec,
    StoredEvent,
    encode,
    split_blocks,
)
from indexer.store.blocks.payload import Payload
from indexer.store.blocks.table import EventBlocks
from indexer.store.layout import sqlite_path
from indexer.store.records.store import Store
from indexer.store.tables import schema
from indexer.store.tables.schema import decode_surface, encode_surface, source_runs
from tests.builders import header, plain, user
from tests.data_paths import CORPUS_DIR
from tests.snapshots import snapshot


def _stored(obj: dict[str, Any], surface: str = "log-only", indexed: bool = False) -> StoredEvent:
    return StoredEvent(obj["seq"], obj["type"], obj["time"], surface, indexed, orjson.dumps(obj))


def _chunk(seq: int, text: str, **chunk: Any) -> dict[str, Any]:
    body = {"type": "text-delta", "index": 0, "text": text, **chunk}
    return {
        "type": "assistant/chunk",
        "seq": seq,
        "time": 1_000 + 7 * seq,
        "data": {"turn": 1, "step": 1, "chunk": body},
    }


def test_every_real_log_round_trips_byte_for_byte() -> None:
    logs = 0
    for path in discover([CORPUS_DIR]):
        try:
            log = read_log(path)
        except LogRejectedError:
            continue
        logs += 1
        events = [_stored(e.obj, "current", e.seq % 2 == 0) for e in log.events]
        back: list[StoredEvent] = []
        for block in split_blocks(events):
            payload = encode(block)
            back.extend(Payload(payload).events(block[0].seq))
            first, last = block[0].seq, block[-1].seq
            middle = Payload(payload).events(first, first + 1, last - 1)
            assert middle == block[1:-1]
        assert back == events, path.name
    assert logs == 156


def test_chunk_runs_are_stored_packed_and_read_back_exactly() -> None:
    events = [_stored(_chunk(i, f"word{i} ")) for i in range(200)]
    payload = encode(events)
    assert len(payload) < sum(len(e.raw) for e in events) / 3
    assert Payload(payload).events(0) == events


@given(
    st.lists(st.integers(min_value=0, max_value=5_000), min_size=1, max_size=300),
    st.integers(min_value=0, max_value=320),
    st.integers(min_value=-1, max_value=320),
)
def test_a_range_of_a_chunk_run_reads_as_the_same_members_of_the_whole(
    gaps: list[int], start: int, end: int
) -> None:
    """A read of a few members of a run (``_expand_run`` visits only those) returns
    exactly what the whole run's read returns for them, times included."""
    times = list(itertools.accumulate(gaps, initial=1_000))
    events = []
    for i, t in enumerate(times):
        obj = {**_chunk(10 + i, f"w{i} "), "time": t}
        events.append(_stored(obj))
    payload = encode(events)
    whole = Payload(payload).events(10)
    assert whole == events
    first, last = 10 + start, 10 + end
    assert Payload(payload).events(10, first, last) == [e for e in events if first <= e.seq <= last]


@pytest.mark.parametrize(
    "odd",
    [
        {"extra": 1},  # a key the packed layout does not have
        {"text": "\ud800 lone surrogate"},  # orjson cannot write it
    ],
)
def test_chunks_outside_the_packed_layout_stay_raw(odd: dict[str, Any]) -> None:
    objs = [_chunk(i, "a") for i in range(5)]
    objs[2]["data"]["chunk"].update(odd)
    events = []
    for obj in objs:
        try:
            raw = orjson.dumps(obj)
        except TypeError:
            from indexer.model.event import dump_json

            raw = dump_json(obj)
        events.append(StoredEvent(obj["seq"], obj["type"], obj["time"], "log-only", False, raw))
    assert Payload(encode(events)).events(0) == events


@given(st.lists(st.integers(min_value=0, max_value=2**40), max_size=50))
def test_surface_encoding_round_trips(nodes: list[int]) -> None:
    assert decode_surface(encode_surface(nodes)) == nodes


@given(st.lists(st.integers(min_value=0, max_value=300), max_size=60))
def test_source_runs_cover_exactly_the_cited_seqs(seqs: list[int]) -> None:
    runs = source_runs(seqs)
    covered = [s for first, last in runs for s in range(first, last + 1)]
    assert covered == sorted(set(seqs))
    assert all(b[0] > a[1] + 1 for a, b in itertools.pairwise(runs))


def _session_events(n: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [plain(0, "turn/start", {"turn": 1})]
    for seq in range(1, n):
        if seq % 50 == 0:
            out.append(user(seq, f"needle {seq} " + "x" * 900))
        else:
            out.append(_chunk(seq, f"t{seq} "))
    return out


def _block_rows(data: Path) -> list[tuple[int, int]]:
    conn = sqlite3.connect(sqlite_path(data))
    try:
        return conn.execute("SELECT first_seq, last_seq FROM blocks ORDER BY first_seq").fetchall()
    finally:
        conn.close()


@pytest.mark.parametrize("per_record", [1, 7, 5000])
def test_blocks_are_bounded_and_do_not_depend_on_how_records_split_the_log(
    tmp_path: Path, per_record: int
) -> None:
    events = _session_events(3000)
    data = tmp_path / "data"
    store = Store(data)
    try:
        store.apply(HeaderRecord(v=1, kind="header", header=header("s")))
        for i in range(0, len(events), per_record):
            chunk = events[i : i + per_record]
            store.apply(EventsRecord(v=1, kind="events", session_id="s", events=chunk))
        store.commit()
    finally:
        store.close()
    rows = _block_rows(data)
    expected = [(b[0].seq, b[-1].seq) for b in split_blocks([_stored(e) for e in events])]
    assert rows == expected and len(rows) > 3
    raw = {e["seq"]: len(orjson.dumps(e)) for e in events}
    for first, last in rows:
        assert last - first + 1 <= BLOCK_EVENTS
        assert sum(raw[s] for s in range(first, last)) < BLOCK_BYTES
    service = StoreQueryService(data)
    try:
        window = service.read_event("s", 1500, before=50, after=50)
        assert [e.raw for e in window.events] == [orjson.dumps(e) for e in events[1450:1551]]
    finally:
        service.close()


class CountingCodec(Codec):
    def __init__(self) -> None:
        super().__init__()
        self.decompressed = 0

    def decompress(self, data: bytes, did: int) -> bytes:
        self.decompressed += 1
        return super().decompress(data, did)


@pytest.mark.parametrize("mode", ["off", "on"])
def test_an_exact_read_decompresses_one_block(tmp_path: Path, mode: str) -> None:
    """One block per exact read; with redaction on, a streamed delta chunk also reads
    the deltas beside it (a secret may be split over them: ``indexer.redact.chunks``),
    every other event still one block."""
    store = Store(tmp_path / "data", redaction=Redaction(mode))  # type: ignore[arg-type]
    try:
        ingest_files(store, discover([CORPUS_DIR]))
    finally:
        store.close()
    conn = sqlite3.connect(sqlite_path(tmp_path / "data"))
    sid, blocks = conn.execute(
        "SELECT s.id, COUNT(*) FROM blocks b JOIN sessions s ON s.key = b.session_key"
        " GROUP BY s.id ORDER BY 2 DESC LIMIT 1"
    ).fetchone()
    conn.close()
    assert blocks >= 2
    service = StoreQueryService(tmp_path / "data")
    counting = CountingCodec()
    service._codec = counting
    try:
        for seq in (0, 3, 200, 1000):
            counting.decompressed = 0
            window = service.read_event(sid, seq)
            chunk = delta_of(window.target) is not None
            if mode == "on" and chunk:
                assert 1 <= counting.decompressed <= 3  # the blocks of its delta run
            else:
                assert counting.decompressed == 1
            counting.decompressed = 0
            service.trace_event(sid, seq)
            assert counting.decompressed == 1
    finally:
        service.close()


def test_group_reads_return_the_stored_events_of_a_range(tmp_path: Path) -> None:
    """``read_groups`` (the redaction's context reads) holds for any range the events
    ``read_range`` returns: the same seqs and types, each group's first raw JSON, and a
    packed run's members' last string values as their raw JSON ends with them."""
    store = Store(tmp_path / "data")
    try:
        ingest_files(store, discover([CORPUS_DIR]))
    finally:
        store.close()
    conn = sqlite3.connect(sqlite_path(tmp_path / "data"))
    try:
        key, next_seq = conn.execute(
            "SELECT key, next_seq FROM sessions ORDER BY next_seq DESC LIMIT 1"
        ).fetchone()
        blocks = EventBlocks(conn, Codec(), remember=True)
        last = next_seq - 1
        packed = 0
        for start, end in [(0, 0), (0, last), (5, 140), (last - 2, last + 10), (9, 8)]:
            full = {e.seq: e for e in blocks.read_range(key, start, end)}
            seqs: list[int] = []
            for group in blocks.read_groups(key, start, end):
                assert group.raw == full[group.first_seq].raw
                members = [b""] if group.deltas is None else group.deltas
                packed += group.deltas is not None
                for seq, delta in enumerate(members, start=group.first_seq):
                    assert full[seq].type == group.type
                    assert full[seq].raw.endswith(delta + (b'"}}}' if delta else b""))
                    seqs.append(seq)
            assert seqs == sorted(full), (start, end)
            assert len(seqs) == max(0, min(end, next_seq - 1) - start + 1)
        assert packed > 0, "the longest real session holds packed chunk runs"
    finally:
        conn.close()


def test_deleting_a_session_deletes_its_blocks_and_marks(tmp_path: Path) -> None:
    data = tmp_path / "data"
    store = Store(data)
    try:
        ingest_files(store, discover([CORPUS_DIR]))
        store.commit()
        sid = "dde299fd-4ffb-5ac4-bbde-7d8c0df3400a"  # has a replace and source links
        key = store.tables.session_state(sid)
        assert key is not None
        counts = _rows_of(data, key.key)
        assert all(counts.values()), counts
        store.apply(DeleteRecord(v=1, kind="delete", session_id=sid))
        store.commit()
        assert not any(_rows_of(data, key.key).values())
    finally:
        store.close()


def _rows_of(data: Path, key: int) -> dict[str, int]:
    conn = sqlite3.connect(sqlite_path(data))
    try:
        return {
            table: conn.execute(
                f"SELECT COUNT(*) FROM {table} WHERE session_key = ?", (key,)
            ).fetchone()[0]
            for table in ("blocks", "replaced", "source_runs", "replacements")
        }
    finally:
        conn.close()


def test_a_dir_stays_readable_when_the_shipped_dictionary_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    store = Store(data)
    try:
        ingest_files(store, discover([CORPUS_DIR])[:40])
    finally:
        store.close()
    before = snapshot(data)
    for module in (block_format, schema):
        monkeypatch.setattr(module, "shipped_dictionary", lambda: b"not a dictionary")
    store = Store(data)  # the dir's own copy is used; the shipped one is not read
    try:
        store.apply(HeaderRecord(v=1, kind="header", header=header("later")))
        store.apply(
            EventsRecord(v=1, kind="events", session_id="later", events=_session_events(80))
        )
        store.commit()
    finally:
        store.close()
    after = snapshot(data)
    assert [r for r in after["events"] if r[0] != "later"] == before["events"]
    assert len([r for r in after["events"] if r[0] == "later"]) == 80


def test_an_append_rewrites_only_the_open_last_block(tmp_path: Path) -> None:
    events = _session_events(3000)
    data = tmp_path / "data"
    store = Store(data)
    try:
        store.apply(HeaderRecord(v=1, kind="header", header=header("s")))
        store.apply(EventsRecord(v=1, kind="events", session_id="s", events=events[:2990]))
        store.commit()
        before = _block_data(data)
        store.apply(EventsRecord(v=1, kind="events", session_id="s", events=events[2990:]))
        store.commit()
        after = _block_data(data)
    finally:
        store.close()
    sealed = sorted(before)[:-1]
    assert len(sealed) >= 3
    assert all(after[first] == before[first] for first in sealed)
    last = sorted(before)[-1]
    assert after[last] != before[last]  # the open block took the new events


def _block_data(data: Path) -> dict[int, bytes]:
    conn = sqlite3.connect(sqlite_path(data))
    try:
        return {int(f): bytes(d) for f, d in conn.execute("SELECT first_seq, data FROM blocks")}
    finally:
        conn.close()
