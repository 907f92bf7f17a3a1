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

A read tells where a later read of the same file may start (:class:`Position`,
:class:`Lines`): after the last line when the data ends cleanly (its last byte is the
newline of a line that is not blank), or, in a plain file, at the start of a last line
without its newline (one still being written). So an appended log is read from there,
the tail alone: a plain file from that byte, a ``.jsonl.zstd`` file from the end of
its last frame. Whether the bytes before it are still the ones read is the caller's
to check.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, BinaryIO, Final, cast

import zstandard

from indexer.errors import LogValidationError
from indexer.logs.files import open_regular

__all__ = [
    "MAX_DECOMPRESSED_BYTES",
    "MAX_LINE_BYTES",
    "ZSTD_MAGIC",
    "Lines",
    "Position",
    "iter_lines",
]

ZSTD_MAGIC: Final = b"\x28\xb5\x2f\xfd"
MAX_LINE_BYTES: Final = 16 << 20
"""The longest line (newline excluded) a log may hold: 16 MiB."""
MAX_DECOMPRESSED_BYTES: Final = 1 << 30
"""The most a ``.jsonl.zstd`` log may decompress to: 1 GiB."""
_READ_SIZE: Final = 1 << 20
_JSON_WHITESPACE: Final = b" \t\r\n"
_SKIPPABLE_MAGIC: Final = 0x184D2A50


@dataclass(frozen=True, slots=True)
class Position:
    """Where a later read may start: after ``offset`` bytes of the file (for a
    ``.jsonl.zstd`` file the end of a frame), which hold ``line`` lines, the last one
    not blank and ended by its newline; ``decompressed``: the bytes a zstd file's frames
    before ``offset`` decompress to (the decompression cap counts from the file's
    start)."""

    offset: int
    line: int
    decompressed: int = 0


class Lines:
    """The logical lines of a log file as :func:`iter_lines` yields them, from its start
    or from ``start`` (the ``end`` of an earlier read of the same file; line numbers go
    on from there). ``end`` is where a later read may start (module docstring), known
    once the data is read: before a last line without its newline is yielded, else once
    the lines are exhausted; ``None`` when there is no such place (the data ends in
    blank lines, or in the middle of a zstd frame's line)."""

    def __init__(self, path: Path, start: Position | None = None) -> None:
        self.path = path
        self.start = start if start is not None else Position(0, 0)
        self.end: Position | None = None

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        start = self.start
        with open_regular(self.path) as f:
            compressed = f.read(4) == ZSTD_MAGIC
            f.seek(start.offset)
            source = _ZstdSource(f, start) if compressed else _PlainSource(f, start.offset)

            def ended(line: int, pending: int) -> None:
                # A plain file may end in a line still being written: a later read
                # starts at that line (a zstd frame's middle is no place to start).
                if pending == 0 or not compressed:
                    self.end = Position(source.offset - pending, line, source.decompressed)

            yield from _split(source.chunks(), start.line, ended)


def iter_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """Yield ``(line_no, line)`` for every logical line, 1-based, newline removed.

    Blank lines at the very end of the file are dropped (a trailing newline, or many);
    of a run of blank lines followed by content only the first is yielded, so the
    reader can reject it on the right line. A final line without a newline is yielded
    like any other line. Failures raise :class:`LogValidationError` with ``line`` set to
    the line that could not be read. A path that is not a regular file (a FIFO, a
    socket, a device) raises ``NotRegularFileError`` before anything is read.
    """
    return iter(Lines(path))


def _too_long(line_no: int) -> LogValidationError:
    return LogValidationError(f"line longer than {MAX_LINE_BYTES} bytes", line=line_no)


def _split(
    chunks: Iterator[bytes],
    line_no: int = 0,
    ended: Callable[[int, int], None] | None = None,
) -> Iterator[tuple[int, bytes]]:
    """The lines of ``chunks`` (``line_no`` lines before them). Once the data is read,
    unless it ends in blank lines, ``ended(lines, pending)`` is told the lines completed
    and the bytes after the last of them: 0 when the data ended cleanly, else the
    length of a last line without its newline, told before that line is yielded."""
    ws = _JSON_WHITESPACE
    # line_no: lines completed so far
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
            elif ended is not None:
                ended(line_no, pending_size)
            yield line_no + 1, line
    elif not blank_no and ended is not None:
        ended(line_no, 0)


class _PlainSource:
    """A plain file's bytes from ``offset``; ``offset`` ends where the reading ended."""

    decompressed = 0

    def __init__(self, f: BinaryIO, offset: int) -> None:
        self.f, self.offset = f, offset

    def chunks(self) -> Iterator[bytes]:
        while chunk := self.f.read(_READ_SIZE):
            self.offset += len(chunk)
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


class _ZstdSource:
    """The decompressed bytes of every frame from ``start`` on, at most ``_READ_SIZE``
    at a time; fails if the data ends mid-frame, is not zstd frames, or decompresses
    beyond the cap. Once read, ``offset`` is the end of the last frame and
    ``decompressed`` the bytes the file's frames decompressed to."""

    def __init__(self, f: BinaryIO, start: Position) -> None:
        self.f = f
        self.offset = start.offset
        self.decompressed = start.decompressed

    def chunks(self) -> Iterator[bytes]:
        f = self.f
        valid, problem = _walk_frames(f, self.offset)
        f.seek(self.offset)
        reader = zstandard.ZstdDecompressor().stream_reader(
            cast(IO[bytes], _Prefix(f, valid - self.offset)),
            read_size=_READ_SIZE,
            read_across_frames=True,
            closefd=False,
        )
        try:
            while chunk := reader.read(_READ_SIZE):
                self.decompressed += len(chunk)
                if self.decompressed > MAX_DECOMPRESSED_BYTES:
                    raise LogValidationError(
                        f"zstd data decompresses to more than {MAX_DECOMPRESSED_BYTES} bytes"
                        " (decompression bomb)"
                    )
                yield chunk
        except zstandard.ZstdError as exc:
            raise LogValidationError(f"corrupt zstd data: {exc}") from exc
        if problem:
            raise LogValidationError(problem)
        self.offset = valid


def _walk_frames(f: BinaryIO, pos: int = 0) -> tuple[int, str | None]:
    """``(end, problem)``: where the well-formed frames from ``pos`` end, from the frame
    and block headers alone, and what follows them when it is not the end of the file."""
    size = os.fstat(f.fileno()).st_size
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
