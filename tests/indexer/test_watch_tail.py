"""The watcher over long logs (``indexer.logs.watch``, ``indexer.logs.tail``): a log of
many pieces is emitted as it is read, an append to it is read from where the last read
ended (plain: that byte; zstd: that frame), a line still being written is read once it
ends, and a log that was not only appended to is read from its start again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import zstandard

from indexer.logs.emitted import Emitted
from indexer.logs.reader import read_log
from indexer.logs.watch import LogWatcher, WatchRoot
from indexer.model.records import EventsRecord
from tests.long_session import long_session_turns

PIECE = 500


def _parts(n_events: int) -> list[bytes]:
    """The log's header line, then one block of lines per turn."""
    return list(long_session_turns(n_events))


def _write(path: Path, parts: list[bytes], *, zstd: bool, mode: str = "wb") -> None:
    compressor = zstandard.ZstdCompressor()
    with path.open(mode) as f:
        for part in parts:
            f.write(compressor.compress(part) if zstd else part)


def _events(records: list[Emitted]) -> list[Any]:
    return [e for r in records if isinstance(r.record, EventsRecord) for e in r.record.events]


def _watcher(root: Path) -> LogWatcher:
    return LogWatcher([WatchRoot(root)], piece_events=PIECE)


def _log(tmp_path: Path, zstd: bool) -> Path:
    (tmp_path / "logs").mkdir()
    return tmp_path / "logs" / ("session.jsonl.zstd" if zstd else "session.jsonl")


def _break_middle(path: Path) -> None:
    """Overwrite a line in the middle of the file, far from both ends, with as many
    bytes that are not JSON: only a read of the middle sees it."""
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    start = data.index(b"\n", middle) + 1
    end = data.index(b"\n", start)
    data[start:end] = b"#" * (end - start)
    path.write_bytes(bytes(data))


@pytest.fixture(params=["plain", "zstd"])
def zstd(request: pytest.FixtureRequest) -> bool:
    return bool(request.param == "zstd")


def test_a_long_log_is_emitted_as_it_is_read(tmp_path: Path, zstd: bool) -> None:
    path = _log(tmp_path, zstd)
    _write(path, _parts(5_000), zstd=zstd)
    records = list(_watcher(path.parent).scan())
    assert records[0].record.kind == "header"
    assert _events(records) == [e.obj for e in read_log(path).events]
    assert [r.final for r in records] == [False] * (len(records) - 1) + [True]
    assert all(r.whole for r in records)


def test_an_append_to_a_long_log_is_read_from_where_the_last_read_ended(
    tmp_path: Path, zstd: bool
) -> None:
    path = _log(tmp_path, zstd)
    parts = _parts(6_000)
    cut = len(parts) * 3 // 4
    _write(path, parts[:cut], zstd=zstd)
    watcher = _watcher(path.parent)
    first = _events(list(watcher.scan()))
    _break_middle(path)  # what was read already is not read again: this goes unseen
    _write(path, parts[cut:], zstd=zstd, mode="ab")

    records = list(watcher.scan())

    assert watcher.rejected == {}
    assert all(not r.whole for r in records) and records[-1].final
    whole = [e.obj for e in read_log(_mended(tmp_path, parts, zstd)).events]
    assert first + _events(records) == whole
    assert _rejects_fresh(path)  # a read from the start sees the broken middle


def _mended(tmp_path: Path, parts: list[bytes], zstd: bool) -> Path:
    out = tmp_path / "mended" / ("session.jsonl.zstd" if zstd else "session.jsonl")
    out.parent.mkdir()
    _write(out, parts, zstd=zstd)
    return out


def _rejects_fresh(path: Path) -> bool:
    watcher = _watcher(path.parent)
    list(watcher.scan())
    return str(path) in watcher.rejected


def test_a_line_still_being_written_is_read_once_it_ends(tmp_path: Path) -> None:
    path = _log(tmp_path, zstd=False)
    parts = _parts(5_000)
    text = b"".join(parts)
    torn = text.rindex(b"\n", 0, len(text) * 3 // 4) + 1
    end = text.index(b"\n", torn) + 1
    path.write_bytes(text[: torn + (end - torn) // 2])  # half of a line, no newline
    watcher = _watcher(path.parent)

    first = list(watcher.scan())

    assert f"{path}:" in watcher.rejected[str(path)]
    assert not first[-1].final  # the log was not read to its end
    _break_middle(path)  # the next read starts at the torn line: this goes unseen
    with path.open("ab") as f:
        f.write(text[torn + (end - torn) // 2 :])
    second = list(watcher.scan())
    assert watcher.rejected == {}
    whole = [e.obj for e in read_log(_mended(tmp_path, parts, zstd=False)).events]
    assert _events(first) + _events(second) == whole


def test_a_replaced_long_log_is_read_from_its_start(tmp_path: Path) -> None:
    path = _log(tmp_path, zstd=False)
    parts = _parts(5_000)
    cut = len(parts) // 2
    _write(path, parts[:cut], zstd=False)
    watcher = _watcher(path.parent)
    list(watcher.scan())
    replacement = tmp_path / "next.tmp"
    _write(replacement, parts, zstd=False)
    _break_middle(replacement)
    replacement.replace(path)  # another file (inode) under the same name

    list(watcher.scan())

    assert f"{path}:" in watcher.rejected[str(path)]
