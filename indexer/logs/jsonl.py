"""Logical lines of a session log file: plain ``.jsonl`` or ``.jsonl.zstd``.

A ``.jsonl.zstd`` file is a concatenation of zstd frames (the header frame, then one
frame per append batch). The format is recognised by the zstd magic number, not by the
file name. Both formats are streamed in chunks of ``_READ_SIZE`` bytes with bounded
memory, whatever the file holds:

* a line longer than :data:`MAX_LINE_BYTES` rejects the file
  (``line longer than N bytes``, on that line);
* a ``.jsonl.zstd`` file decompressing to more than :data:`MAX_DECOMPRESSED_BYTES`
  rejects the file (a decompression bomb); nothing is buffered beyond one chunk;
* runs of blank lines are counted, never accumulated;
* a file ending inside a zstd frame (a torn write) is reported instead of being
  silently cut short (the frame headers are walked before decoding).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO, BinaryIO, Final, cast

import zstandard

from indexer.errors import LogValidationError
from indexer.logs.files import open_regular

__all__ = ["MAX_DECOMPRESSED_BYTES", "MAX_LINE_BYTES", "ZSTD_MAGIC", "iter_lines"]

ZSTD_MAGIC: Final = b"\x28\xb5\x2f\xfd"
MAX_LINE_BYTES: Final = 16 << 20
"""The longest line (newline excluded) a log may hold: 16 MiB."""
MAX_DECOMPRESSED_BYTES: Final = 1 << 30
"""The most a ``.jsonl.zstd`` log may decompress to: 1 GiB."""
_READ_SIZE: Final = 1 << 20
_JSON_WHITESPACE: Final = b" \t\r\n"
_SKIPPABLE_MAGIC: Final = 0x184D2A50


def iter_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """Yield ``(line_no, line)`` for every logical line, 1-based, newline removed.

    Blank lines at the very end of the file are dropped (a trailing newline, or many);
    of a run of blank lines followed by content only the first is yielded, so the
    reader can reject it on the right line. A final line without a newline is yielded
    like any other line. Failures raise :class:`LogValidationError` with ``line`` set to
    the line that could not be read. A path that is not a regular file (a FIFO, a
    socket, a device) raises ``NotRegularFileError`` before anything is read.
    """
    with open_regular(path) as f:
        compressed = f.read(4) == ZSTD_MAGIC
        f.seek(0)
        yield from _split(_zstd_chunks(f) if compressed else _plain_chunks(f))


def _too_long(line_no: int) -> LogValidationError:
    return LogValidationError(f"line longer than {MAX_LINE_BYTES} bytes", line=line_no)


def _split(chunks: Iterator[bytes]) -> Iterator[tuple[int, bytes]]:
    ws = _JSON_WHITESPACE
    line_no = 0  # lines completed so far
    pending: list[bytes] = []  # the start of the current, unfinished line
    pending_size = 0
    blank_no = 0  # first line of the current run of blank lines (0: none)
    blank = b""
    try:
        for chunk in chunks:
            end = chunk.find(b"\n")
            if end < 0:
                pending_size += len(chunk)
                if pending_size > MAX_LINE_BYTES:
                    raise _too_long(line_no + 1)
                pending.append(chunk)
                continue
            if pending_size + end > MAX_LINE_BYTES:
                raise _too_long(line_no + 1)
            first = chunk[:end]
            if pending:
                pending.append(first)
                first = b"".join(pending)
                pending.clear()
                pending_size = 0
            line_no += 1
            if first.strip(ws):
                if blank_no:
                    yield blank_no, blank
                    blank_no = 0
                yield line_no, first
            elif not blank_no:
                blank_no, blank = line_no, first
            last = chunk.rfind(b"\n")
            if last > end:
                middle = chunk[end + 1 : last]
                # a run of blank lines: count them (isspace() is the fast filter)
                if middle.isspace() and not middle.translate(None, ws):
                    if not blank_no:
                        cut = middle.find(b"\n")
                        blank_no, blank = line_no + 1, middle if cut < 0 else middle[:cut]
                    line_no += middle.count(b"\n") + 1
                else:
                    for line in middle.split(b"\n"):
                        line_no += 1
                        if line.strip(ws):
                            if blank_no:
                                yield blank_no, blank
                                blank_no = 0
                            yield line_no, line
                        elif not blank_no:
                            blank_no, blank = line_no, line
            if last + 1 < len(chunk):
                tail = chunk[last + 1 :]
                pending.append(tail)
                pending_size = len(tail)
    except LogValidationError as exc:
        if exc.line is None:
            exc.line = line_no + 1
        raise
    if pending:
        line = b"".join(pending)
        if line.strip(ws):
            if blank_no:
                yield blank_no, blank
            yield line_no + 1, line


def _plain_chunks(f: BinaryIO) -> Iterator[bytes]:
    while chunk := f.read(_READ_SIZE):
        yield chunk


class _Prefix:
    """The first ``size`` bytes of a file, as a reader (the frames found valid)."""

    __slots__ = ("f", "left")

    def __init__(self, f: BinaryIO, size: int) -> None:
        self.f, self.left = f, size

    def read(self, n: int = -1) -> bytes:
        n = self.left if n < 0 else min(n, self.left)
        data = self.f.read(n)
        self.left -= len(data)
        return data


def _zstd_chunks(f: BinaryIO) -> Iterator[bytes]:
    """Decompressed bytes of every frame in order, at most ``_READ_SIZE`` at a time;
    fails if the data ends mid-frame, is not zstd frames, or decompresses beyond the cap."""
    valid, problem = _walk_frames(f)
    f.seek(0)
    reader = zstandard.ZstdDecompressor().stream_reader(
        cast(IO[bytes], _Prefix(f, valid)),
        read_size=_READ_SIZE,
        read_across_frames=True,
        closefd=False,
    )
    total = 0
    try:
        while chunk := reader.read(_READ_SIZE):
            total += len(chunk)
            if total > MAX_DECOMPRESSED_BYTES:
                raise LogValidationError(
                    f"zstd data decompresses to more than {MAX_DECOMPRESSED_BYTES} bytes"
                    " (decompression bomb)"
                )
            yield chunk
    except zstandard.ZstdError as exc:
        raise LogValidationError(f"corrupt zstd data: {exc}") from exc
    if problem:
        raise LogValidationError(problem)


def _walk_frames(f: BinaryIO) -> tuple[int, str | None]:
    """``(end, problem)``: where the well-formed frames end, from the frame and block
    headers alone, and what follows them when it is not the end of the file."""
    size = os.fstat(f.fileno()).st_size
    pos = 0
    torn = "zstd data ends inside a frame (torn write)"
    while pos < size:
        start = pos
        f.seek(pos)
        head = f.read(14)  # magic, descriptor, window, dictionary id; content size later
        magic = head[:4]
        if len(magic) == 4 and int.from_bytes(magic, "little") & 0xFFFFFFF0 == _SKIPPABLE_MAGIC:
            if len(head) < 8:
                return start, torn
            pos += 8 + int.from_bytes(head[4:8], "little")
            continue
        if not ZSTD_MAGIC.startswith(magic):
            return start, f"corrupt zstd data: not a zstd frame at byte {start}"
        if len(head) < 5:
            return start, torn
        fhd = head[4]
        single = fhd >> 5 & 1
        pos += 5 + (1 - single) + (0, 1, 2, 4)[fhd & 3] + (single, 2, 4, 8)[fhd >> 6]
        while True:
            f.seek(pos)
            block = f.read(3)
            if len(block) < 3:
                return start, torn
            bits = int.from_bytes(block, "little")
            kind = bits >> 1 & 3
            if kind == 3:
                return start, f"corrupt zstd data: invalid block in the frame at byte {start}"
            pos += 3 + (1 if kind == 1 else bits >> 3)
            if bits & 1:
                break
        pos += 4 * (fhd >> 2 & 1)
        if pos > size:
            return start, torn
    return pos, None
