"""Logical lines of a session log file: plain ``.jsonl`` or ``.jsonl.zstd``.

A ``.jsonl.zstd`` file is a concatenation of zstd frames (the header frame, then one
frame per append batch). Frames are decoded one after the other so that a file ending
inside a frame (a torn write) is reported instead of being silently cut short. The
format is recognised by the zstd magic number, not by the file name.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, Final

import zstandard

from indexer.errors import LogValidationError

__all__ = ["ZSTD_MAGIC", "iter_lines"]

ZSTD_MAGIC: Final = b"\x28\xb5\x2f\xfd"
_READ_SIZE: Final = 1 << 20
_JSON_WHITESPACE: Final = b" \t\r\n"


def iter_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """Yield ``(line_no, line)`` for every logical line, 1-based, newline removed.

    Blank lines at the very end of the file are dropped (a trailing newline, or a few);
    a blank line followed by content is yielded so the reader can reject it. A final
    line without a newline is yielded like any other line. Decoding failures raise
    :class:`LogValidationError` with ``line`` set to the line that could not be read.
    """
    with path.open("rb") as f:
        compressed = f.read(4) == ZSTD_MAGIC
        f.seek(0)
        lines = _zstd_lines(f) if compressed else _plain_lines(f)
        blanks: list[tuple[int, bytes]] = []
        for line_no, line in lines:
            if not line.strip(_JSON_WHITESPACE):
                blanks.append((line_no, line))
                continue
            if blanks:
                yield from blanks
                blanks.clear()
            yield line_no, line


def _plain_lines(f: BinaryIO) -> Iterator[tuple[int, bytes]]:
    for line_no, line in enumerate(f, 1):
        yield line_no, line[:-1] if line.endswith(b"\n") else line


def _zstd_lines(f: BinaryIO) -> Iterator[tuple[int, bytes]]:
    line_no = 0
    pending: list[bytes] = []
    try:
        for chunk in _zstd_chunks(f):
            start = 0
            end = chunk.find(b"\n")
            while end >= 0:
                piece = chunk[start:end]
                if pending:
                    pending.append(piece)
                    piece = b"".join(pending)
                    pending.clear()
                line_no += 1
                yield line_no, piece
                start = end + 1
                end = chunk.find(b"\n", start)
            if start < len(chunk):
                pending.append(chunk[start:])
    except zstandard.ZstdError as exc:
        raise LogValidationError(f"corrupt zstd data: {exc}", line=line_no + 1) from exc
    except LogValidationError as exc:
        exc.line = line_no + 1
        raise
    if pending:
        yield line_no + 1, b"".join(pending)


def _zstd_chunks(f: BinaryIO) -> Iterator[bytes]:
    """Decompressed bytes of every frame in order; fails if the data ends mid-frame."""
    dctx = zstandard.ZstdDecompressor()
    frame = dctx.decompressobj()
    frame_started = False
    while data := f.read(_READ_SIZE):
        while data:
            out = frame.decompress(data)
            frame_started = True
            if out:
                yield out
            if frame.eof:
                data = frame.unused_data
                frame = dctx.decompressobj()
                frame_started = False
            else:
                data = b""
    if frame_started:
        raise LogValidationError("zstd data ends inside a frame (torn write)")
