"""Long logs ingested in bounded pieces (``indexer.logs.reader.LogPieces``,
``indexer.sources.files``): a streamed ingest stores exactly what a whole one stores,
a broken line after the first piece leaves the session held just before it, the
parallel ingest leaves long logs to the writer, and what an ingest holds does not grow
with the log."""

from __future__ import annotations

import sqlite3
import tracemalloc
from pathlib import Path
from typing import Any

import orjson
import pytest

from indexer.logs.reader import LogPieces, read_log, read_log_packed, read_pieces
from indexer.logs.roots import discover
from indexer.sources import parallel as ingest_parallel
from indexer.sources.files import IngestSummary, ingest_files
from indexer.sources.parallel import prepare
from indexer.stats import store_stats
from indexer.store.blocks.format import Codec
from indexer.store.layout import sqlite_path
from indexer.store.records.store import Store
from tests.indexer.test_ingest_parallel import _rows
from tests.long_session import write_long_session
from tests.snapshots import snapshot

EVENTS = 30_000
PIECE = 2_000


def _ingest(data: Path, files: list[Path], **kwargs: Any) -> IngestSummary:
    store = Store(data)
    try:
        return ingest_files(store, files, **kwargs)
    finally:
        store.close()


def _stored(data: Path) -> dict[str, Any]:
    """The snapshot, and every column of the session rows and the redaction counts."""
    out = snapshot(data)
    conn = sqlite3.connect(sqlite_path(data))
    try:
        out["session_rows"] = conn.execute(
            "SELECT id, next_seq, surface, last_step_start, title, last_time, held, live"
            " FROM sessions ORDER BY id"
        ).fetchall()
        out["redactions"] = conn.execute("SELECT * FROM redactions ORDER BY 1, 2").fetchall()
    finally:
        conn.close()
    return out


def _counts(s: IngestSummary) -> tuple[int, int, int, int, int]:
    return s.files, s.sessions, s.unchanged, s.events, s.documents


@pytest.fixture(scope="module", params=["plain", "zstd"])
def long_log(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    zstd = request.param == "zstd"
    name = "session.jsonl.zstd" if zstd else "session.jsonl"
    return write_long_session(tmp_path_factory.mktemp("long") / name, EVENTS, zstd=zstd)


@pytest.fixture(scope="module")
def whole(long_log: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    data = tmp_path_factory.mktemp("whole")
    summary = _ingest(data, [long_log], piece_events=10 * EVENTS)
    assert summary.rejected == [] and summary.events == EVENTS
    return _stored(data)


def test_a_log_read_in_pieces_is_the_log_read_whole(long_log: Path) -> None:
    log = read_log(long_log)
    pieces = list(read_pieces(long_log, max_events=PIECE))
    assert len(pieces) > EVENTS // PIECE // 2
    assert [p.final for p in pieces] == [False] * (len(pieces) - 1) + [True]
    assert [e.raw for p in pieces for e in p.events] == [e.raw for e in log.events]
    assert log.fold is not None
    assert [s for p in pieces if p.fold is not None for s in p.fold.steps] == log.fold.steps
    last = pieces[-1].fold
    assert last is not None and last.state.nodes == log.fold.state.nodes
    packed = list(LogPieces(long_log, packed=True, max_events=PIECE))
    assert sum(p.count for p in packed) == EVENTS
    assert read_log_packed(long_log).count == EVENTS


def test_a_streamed_ingest_stores_what_a_whole_ingest_stores(
    long_log: Path, whole: dict[str, Any], tmp_path: Path
) -> None:
    """Pieces of 2,000 events and commits every 7,000: the pieces' folds continue one
    another, compactions shadow events of earlier pieces (re-indexed as shadowed),
    tool results rewritten across pieces are looked up, titles and steps carry over."""
    summary = _ingest(tmp_path / "data", [long_log], piece_events=PIECE, commit_every_events=7_000)
    assert summary.rejected == []
    assert _counts(summary) == (1, 1, 0, EVENTS, len(whole["documents"]))
    assert _stored(tmp_path / "data") == whole


def test_the_corpus_ingested_in_tiny_pieces_is_stored_as_whole(
    corpus_dir: Path, tmp_path: Path
) -> None:
    """Seven events a piece: every real log of more than seven events is streamed (the
    three broken ones break inside their first piece: rejected whole, as before)."""
    files = discover([corpus_dir])
    whole = _ingest(tmp_path / "whole", files)
    streamed = _ingest(tmp_path / "streamed", files, piece_events=7, commit_every_events=500)
    assert _counts(streamed) == _counts(whole) == (159, 156, 0, 15048, 945)
    assert streamed.rejected == whole.rejected
    assert _stored(tmp_path / "streamed") == _stored(tmp_path / "whole")


def _break_line_at(path: Path, seq: int) -> tuple[int, bytes]:
    """Replace the first event line at or after ``seq`` with a truncated one; returns
    its line number and its original bytes."""
    lines = path.read_bytes().split(b"\n")
    for i, line in enumerate(lines[1:], start=1):
        obj = orjson.loads(line)
        if obj.get("seq", -1) >= seq:
            lines[i] = line[: len(line) // 2]
            path.write_bytes(b"\n".join(lines))
            return i + 1, line
    raise AssertionError(f"no event line at seq {seq}")


def _restore_line(path: Path, line_no: int, original: bytes) -> None:
    lines = path.read_bytes().split(b"\n")
    lines[line_no - 1] = original
    path.write_bytes(b"\n".join(lines))


def _cut_before(path: Path, line_no: int, out: Path) -> Path:
    out.write_bytes(b"\n".join(path.read_bytes().split(b"\n")[: line_no - 1]) + b"\n")
    return out


def test_a_broken_line_after_the_first_piece_leaves_the_session_held_before_it(
    tmp_path: Path,
) -> None:
    path = write_long_session(tmp_path / "logs" / "session.jsonl", 10_000)
    full = _stored(_ingest_to(tmp_path / "full", path))
    line_no, original = _break_line_at(path, 6_500)
    cut = _cut_before(path, line_no, tmp_path / "cut.jsonl")
    held_at = read_log(cut).events[-1].seq + 1

    data = tmp_path / "data"
    summary = _ingest(data, [path], piece_events=1_000, commit_every_events=2_500)

    (rejection,) = summary.rejected
    assert rejection.path == path
    assert rejection.reason.startswith(f"{path}:{line_no}: line is not valid JSON")
    assert rejection.reason.endswith(
        f" (events before seq {held_at} are stored; the session is held)"
    )
    assert (summary.sessions, summary.events) == (1, held_at)
    stored = _stored(data)
    before = _stored(_ingest_to(tmp_path / "before", cut))
    held_row = stored["session_rows"][0]
    assert held_row[6] == rejection.reason
    assert {**stored, "session_rows": None} == {**before, "session_rows": None}
    assert held_row[:6] == before["session_rows"][0][:6]
    assert store_stats(data).held_sessions == 1

    # The mended log goes on from where the session is held, and clears the mark.
    _restore_line(path, line_no, original)
    again = _ingest(data, [path], piece_events=1_000)
    assert again.rejected == [] and (again.sessions, again.events) == (1, 10_000 - held_at)
    assert _stored(data) == full
    assert store_stats(data).held_sessions == 0


def _ingest_to(data: Path, path: Path) -> Path:
    assert _ingest(data, [path]).rejected == []
    return data


def test_a_broken_line_in_the_first_piece_leaves_nothing(tmp_path: Path) -> None:
    path = write_long_session(tmp_path / "session.jsonl", 10_000)
    line_no, _ = _break_line_at(path, 600)
    summary = _ingest(tmp_path / "data", [path], piece_events=1_000)
    (rejection,) = summary.rejected
    assert rejection.path == path
    assert rejection.reason.startswith(f"{path}:{line_no}: line is not valid JSON")
    assert "held" not in rejection.reason
    assert _counts(summary) == (1, 0, 0, 0, 0)
    assert store_stats(tmp_path / "data").sessions == 0


def test_a_long_log_among_many_is_left_to_the_writer_by_the_parallel_ingest(
    corpus_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ingest_parallel, "MIN_BYTES", 0)
    long_log = write_long_session(tmp_path / "long.jsonl", 5_000)
    assert prepare(long_log, Codec(), 0, 3, piece_events=1_000).kind == "local"
    assert prepare(long_log, Codec(), 0, 3, piece_events=10_000).kind == "fresh"
    files = [*sorted(corpus_dir.glob("*.jsonl"))[:40], long_log]
    kwargs: dict[str, Any] = {"piece_events": 1_000, "commit_every_events": 3_000}
    sequential = _ingest(tmp_path / "sequential", files, jobs=1, **kwargs)
    parallel = _ingest(tmp_path / "parallel", files, jobs=2, **kwargs)
    assert _counts(parallel) == _counts(sequential)
    assert parallel.rejected == sequential.rejected
    assert _rows(tmp_path / "parallel") == _rows(tmp_path / "sequential")
    assert _ingest(tmp_path / "whole", files).rejected == parallel.rejected
    assert snapshot(tmp_path / "parallel") == snapshot(tmp_path / "whole")


def _peak_of_ingest(path: Path, data: Path) -> int:
    """The peak of Python allocations while ``ingest_files`` stores ``path`` (defaults)."""
    store = Store(data)
    try:
        tracemalloc.start()
        try:
            summary = ingest_files(store, [path])
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    finally:
        store.close()
    assert summary.rejected == []
    return peak


def test_what_an_ingest_holds_does_not_grow_with_the_log(tmp_path: Path) -> None:
    """Logs of 30,000 and 60,000 events, ingested with the defaults: read whole, the
    longer one held twice as much (about 1 KB an event); read in pieces (20,000 events),
    both hold about one piece. Allocations are counted, not time: the bounds do not
    depend on the machine's speed."""
    peaks = []
    for n in (30_000, 60_000):
        path = write_long_session(tmp_path / f"s{n}.jsonl", n)
        peaks.append(_peak_of_ingest(path, tmp_path / f"data{n}"))
    short, long = peaks
    assert long < short * 1.25 + (2 << 20), f"peaks {short >> 20} MiB, {long >> 20} MiB"
    assert long < 40 << 20, f"peak {long >> 20} MiB"
