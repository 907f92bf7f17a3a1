"""Why a snapshot could not be made or restored: one error family, one code each.

The CLI prints ``message`` as its one line; the indexer logs it and counts the failure.
"""

from __future__ import annotations

from typing import Final

from indexer.errors import ErrorCode, SessionqError

SNAPSHOT_FAILED: Final = ErrorCode.SNAPSHOT_FAILED
SNAPSHOT_NOT_FOUND: Final = ErrorCode.SNAPSHOT_NOT_FOUND
SNAPSHOT_CORRUPT: Final = ErrorCode.SNAPSHOT_CORRUPT
DATA_NOT_EMPTY: Final = ErrorCode.DATA_NOT_EMPTY


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
