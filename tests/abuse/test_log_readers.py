"""Hostile log files: the readers stream them with bounded memory (issue 10, item 4).

A tiny ``.jsonl.zstd`` of millions of newlines, a line longer than the line limit and a
decompression bomb are each read (or rejected) without buffering what they expand to,
by ``read_log`` (``sessionq ingest``) and by ``LogWatcher.scan()`` (``sessionq serve``).
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import orjson
import pytest
import zstandard

from indexer.logs import LogRejectedError, iter_lines, read_log
from indexer.logs.jsonl import MAX_DECOMPRESSED_BYTES, MAX_LINE_BYTES
from indexer.logs.watch import LogWatcher

T = TypeVar("T")
PEAK_LIMIT = 100 << 20
HEADER = {"type": "session", "version": 0, "id": "s1", "createdAt": 1, "delegationDepth": 0}
NEWLINES = 20 << 20


def user(seq: int) -> dict[str, Any]:
    return {
        "type": "user/message",
        "seq": seq,
        "time": 10 + seq,
        "data": {
            "content": [{"type": "text", "text": "hi"}],
            "source": {"kind": "user"},
            "role": "user",
            "id": f"m{seq}",
        },
        "surfaceOp": "append",
    }


def jsonl(*objs: Any) -> bytes:
    return b"".join(orjson.dumps(o) + b"\n" for o in objs)


def frame(data: bytes) -> bytes:
    return zstandard.ZstdCompressor(level=3).compress(data)


def peak_of(fn: Callable[[], T]) -> tuple[T, int]:
    """``fn()`` and the peak of Python allocations while it ran."""
    tracemalloc.start()
    try:
        return fn(), tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def rejected(path: Path) -> Callable[[], LogRejectedError]:
    def run() -> LogRejectedError:
        with pytest.raises(LogRejectedError) as info:
            read_log(path)
        return info.value

    return run


@pytest.fixture
def newline_log(tmp_path: Path) -> Path:
    """A valid log: header + two events (in their own frames), then 20 MB of newlines."""
    path = tmp_path / "blank.jsonl.zstd"
    path.write_bytes(
        frame(jsonl(HEADER)) + frame(jsonl(user(0), user(1))) + frame(b"\n" * NEWLINES)
    )
    assert path.stat().st_size < 4096
    return path


@pytest.fixture
def bomb(tmp_path: Path) -> Path:
    """A header, then frames decompressing to more than the cap (newlines only)."""
    block = frame(b"\n" * (64 << 20))
    count = MAX_DECOMPRESSED_BYTES // (64 << 20) + 1
    path = tmp_path / "bomb.jsonl.zstd"
    path.write_bytes(frame(jsonl(HEADER)) + block * count)
    return path


def test_trailing_newlines_are_valid_and_read_in_bounded_memory(newline_log: Path) -> None:
    log, peak = peak_of(lambda: read_log(newline_log))
    assert [e.seq for e in log.events] == [0, 1]
    assert peak < PEAK_LIMIT, f"peak {peak >> 20} MiB"


def test_plain_file_of_newlines_is_bounded_too(tmp_path: Path) -> None:
    path = tmp_path / "blank.jsonl"
    path.write_bytes(jsonl(HEADER, user(0)) + b"\r\n \n\t\n" * (NEWLINES // 5))
    log, peak = peak_of(lambda: read_log(path))
    assert [e.seq for e in log.events] == [0]
    assert peak < PEAK_LIMIT, f"peak {peak >> 20} MiB"


def test_blank_run_before_content_is_rejected_on_its_first_line(tmp_path: Path) -> None:
    path = tmp_path / "gap.jsonl.zstd"
    path.write_bytes(
        frame(jsonl(HEADER, user(0))) + frame(b"\n" * NEWLINES) + frame(jsonl(user(1)))
    )
    error, peak = peak_of(rejected(path))
    assert (error.line, error.rule) == (3, "blank line inside the log")
    assert str(error) == f"{path}:3: blank line inside the log"
    assert peak < PEAK_LIMIT, f"peak {peak >> 20} MiB"


def test_content_line_numbers_stay_physical_after_blank_runs(tmp_path: Path) -> None:
    data = jsonl(HEADER) + b"\n" * 3_000_000 + b"[1]\n" + b"\n" * 5
    for name, payload in (("x.jsonl", data), ("x.jsonl.zstd", frame(data))):
        path = tmp_path / name
        path.write_bytes(payload)
        assert list(iter_lines(path)) == [(1, orjson.dumps(HEADER)), (2, b""), (3_000_002, b"[1]")]


@pytest.mark.parametrize("compressed", [False, True])
def test_oversized_line_is_rejected_with_file_and_line(tmp_path: Path, compressed: bool) -> None:
    long_event = b'{"x":"' + b"a" * MAX_LINE_BYTES + b'"}'
    data = jsonl(HEADER, user(0)) + long_event + b"\n" + jsonl(user(2))
    path = tmp_path / ("long.jsonl.zstd" if compressed else "long.jsonl")
    path.write_bytes(frame(data) if compressed else data)
    error, peak = peak_of(rejected(path))
    rule = f"line longer than {MAX_LINE_BYTES} bytes"
    assert str(error) == f"{path}:3: {rule}"
    assert error.rule == rule
    assert peak < 3 * MAX_LINE_BYTES, f"peak {peak >> 20} MiB"


def test_line_limit_is_inclusive(tmp_path: Path) -> None:
    path = tmp_path / "edge.jsonl"
    path.write_bytes(b"a" * MAX_LINE_BYTES + b"\n" + b"b" * (MAX_LINE_BYTES + 1))
    got: Iterator[tuple[int, bytes]] = iter_lines(path)
    line_no, line = next(got)
    assert (line_no, len(line)) == (1, MAX_LINE_BYTES)
    with pytest.raises(Exception, match=f"line longer than {MAX_LINE_BYTES} bytes") as info:
        next(got)
    assert getattr(info.value, "line", None) == 2


def test_endless_whitespace_without_newline_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "spaces.jsonl.zstd"
    path.write_bytes(frame(jsonl(HEADER)) + frame(b" " * (4 * MAX_LINE_BYTES)))
    error, peak = peak_of(rejected(path))
    assert str(error) == f"{path}:2: line longer than {MAX_LINE_BYTES} bytes"
    assert peak < 3 * MAX_LINE_BYTES


def test_decompression_bomb_is_rejected_with_bounded_memory(bomb: Path) -> None:
    assert bomb.stat().st_size < 1 << 20
    error, peak = peak_of(rejected(bomb))
    assert error.rule == (
        f"zstd data decompresses to more than {MAX_DECOMPRESSED_BYTES} bytes (decompression bomb)"
    )
    assert str(error).startswith(f"{bomb}:")
    assert peak < PEAK_LIMIT, f"peak {peak >> 20} MiB"


def test_watcher_scan_of_trailing_newlines_is_bounded(tmp_path: Path, newline_log: Path) -> None:
    """The ``serve`` half of item 4 on its own (no decompression bomb beside it)."""
    watcher = LogWatcher.of([tmp_path])
    emitted, peak = peak_of(lambda: list(watcher.scan()))
    assert peak < PEAK_LIMIT, f"peak {peak >> 20} MiB"
    assert [(e.record.kind, e.events) for e in emitted] == [("header", 0), ("events", 2)]


def test_watcher_scan_stays_bounded(tmp_path: Path, newline_log: Path, bomb: Path) -> None:
    long_line = tmp_path / "long.jsonl"
    long_line.write_bytes(jsonl(HEADER) + b" " * (MAX_LINE_BYTES + 1))
    watcher = LogWatcher.of([tmp_path])
    emitted, peak = peak_of(lambda: list(watcher.scan()))
    assert peak < PEAK_LIMIT, f"peak {peak >> 20} MiB"
    kinds = [(e.key, e.record.kind, e.events) for e in emitted]
    assert kinds == [("session:s1", "header", 0), ("session:s1", "events", 2)]
    assert set(watcher.rejected) == {str(bomb), str(long_line)}
    assert "decompression bomb" in watcher.rejected[str(bomb)]
    assert watcher.rejected[str(long_line)] == (
        f"{long_line}:2: line longer than {MAX_LINE_BYTES} bytes"
    )
    assert list(watcher.scan()) == []
