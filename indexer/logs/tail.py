"""Where the next read of a watched dsh log starts: after what the last read took, when
the file was only appended to since.

``Tail.of`` remembers a read's end (``indexer.logs.reader.ReadState``: a position in
the file and the fold there) with what identifies the bytes before it: the file (device
and inode), a digest of its first ``SAMPLE_BYTES`` and one of the ``SAMPLE_BYTES``
before the position. ``Tail.resume`` gives that state back for the file as it is now
only if the same file holds the same bytes at both places and is no shorter: dsh only
appends, so that is an append, and the read goes on from the position (a plain file
from that byte, a zstd file from that frame). Anything else (a rewrite, a replaced
file, a shorter file) reads the log from its start again. A rewrite that keeps both
samples and the length is taken for an append; the store still refuses what conflicts
with what it holds.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from indexer.logs.files import open_regular
from indexer.logs.reader import LogPieces, ReadState

__all__ = ["SAMPLE_BYTES", "Tail"]

SAMPLE_BYTES: Final = 4096


def _samples(path: Path, offset: int) -> tuple[bytes, bytes]:
    """Digests of the first and of the last ``SAMPLE_BYTES`` of the first ``offset``."""
    size = min(offset, SAMPLE_BYTES)
    with open_regular(path) as f:
        head = f.read(size)
        f.seek(offset - size)
        before = f.read(size)
    return hashlib.blake2b(head, digest_size=16).digest(), hashlib.blake2b(
        before, digest_size=16
    ).digest()


@dataclass(frozen=True, slots=True)
class Tail:
    """A read's end and the file it was read from (module docstring)."""

    state: ReadState
    file: tuple[int, int]  # (st_dev, st_ino)
    head: bytes
    before: bytes

    @classmethod
    def after(
        cls, path: Path, pieces: LogPieces | None, st: os.stat_result, resumed: bool, read: int
    ) -> Tail | None:
        """Where the next read goes on after ``pieces`` (``read`` of them went out) was
        read from ``path``: kept for a log of more than one piece (or one already read
        from a tail), whose ``end`` is known; a short log is read whole each time."""
        if pieces is None or pieces.end is None or (not resumed and read <= 1):
            return None
        return cls.of(path, pieces.end, st)

    @classmethod
    def of(cls, path: Path, state: ReadState, st: os.stat_result) -> Tail | None:
        """Remember ``state`` of ``path`` (``st``: its stat when it was read); ``None``
        when the file cannot be sampled."""
        try:
            head, before = _samples(path, state.position.offset)
        except OSError:
            return None
        return cls(state, (st.st_dev, st.st_ino), head, before)

    def resume(self, path: Path, st: os.stat_result) -> ReadState | None:
        """The state to read ``path`` on from, when it was only appended to since."""
        offset = self.state.position.offset
        if (st.st_dev, st.st_ino) != self.file or st.st_size < offset:
            return None
        try:
            samples = _samples(path, offset)
        except OSError:
            return None
        return self.state if samples == (self.head, self.before) else None
