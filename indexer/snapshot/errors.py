"""Why a snapshot could not be made or restored: one error family, one code each.

The CLI prints ``message`` as its one line; the indexer logs it and counts the failure.
"""

from __future__ import annotations

from typing import Final

from indexer.errors import SessionqError

SNAPSHOT_FAILED: Final = "SESSIONQ_SNAPSHOT_FAILED"  # storage unreachable, I/O error
SNAPSHOT_NOT_FOUND: Final = "SESSIONQ_SNAPSHOT_NOT_FOUND"  # no complete snapshot at SRC
SNAPSHOT_CORRUPT: Final = "SESSIONQ_SNAPSHOT_CORRUPT"  # a checksum, size or file is wrong
DATA_NOT_EMPTY: Final = "SESSIONQ_DATA_NOT_EMPTY"  # restore would overwrite a data dir


class SnapshotError(SessionqError):
    """A snapshot operation failed; nothing half-done is left behind."""

    code = SNAPSHOT_FAILED


class SnapshotBusyError(SnapshotError):
    """Another snapshot of the same data dir held the lock for longer than the wait."""


class SnapshotNotFoundError(SnapshotError):
    code = SNAPSHOT_NOT_FOUND


class SnapshotCorruptError(SnapshotError):
    code = SNAPSHOT_CORRUPT


class DataDirNotEmptyError(SnapshotError):
    code = DATA_NOT_EMPTY
