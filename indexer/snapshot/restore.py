"""Restoring a snapshot into a data directory: verified, then installed in one move.

Order of a restore (``restore_snapshot``):
  1. look at the data dir: absent, empty (``lost+found`` and restore leftovers do not
     count), holding data (refused unless ``force``; with ``if_empty`` a no-op), or left
     by an interrupted restore (its marker is there: redone);
  2. find the snapshot: the location itself when it holds a ``manifest.json``, else
     its newest complete child (incomplete ones have no manifest and are ignored);
  3. download every file into a temporary folder, checking size and sha256 as the bytes
     land (a file longer than listed stops at its listed size); any mismatch, missing
     file, symbolic link or special file (a directory store never follows one) is
     ``SnapshotCorruptError`` and the folder goes;
  4. install: a data dir that does not exist is the temporary folder renamed (beside it,
     one rename); an existing (possibly mounted) one gets a marker file, loses its old
     entries, receives the new ones by rename, and loses the marker last.

Nothing half-restored is ever taken for data: before step 4 the data dir is untouched,
during it the marker says "redo". The restored indexer resumes from the offsets in the
copied tables, so it consumes only what was published after the snapshot. What a restore
writes is owner-only (``indexer.store.private``), and so is the data dir it restores
into.
"""

from __future__ import annotations

import os
import secrets
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from indexer.snapshot.copy import RESTORE_PREFIX
from indexer.snapshot.create import newest_snapshot
from indexer.snapshot.errors import (
    DataDirNotEmptyError,
    SnapshotCorruptError,
    SnapshotError,
    SnapshotNotFoundError,
)
from indexer.snapshot.manifest import MANIFEST_NAME, HashingWriter, Manifest, TooLargeError
from indexer.snapshot.stores import FileMissingError, SnapshotStore
from indexer.store.private import make_dir, make_dirs, open_file, own_dir, write_file
from indexer.store.tables.schema import SCHEMA_VERSION

MARKER: Final = f"{RESTORE_PREFIX}-incomplete"
NOT_DATA: Final = frozenset({"lost+found"})  # a fresh ext4 volume's root has one

DataState = Literal["absent", "empty", "interrupted", "data"]


@dataclass(frozen=True, slots=True)
class RestoreOutcome:
    restored: bool
    message: str  # one line for the log
    name: str | None = None
    manifest: Manifest | None = None
    seconds: float = 0.0


def _ours(name: str) -> bool:
    return name in NOT_DATA or name.startswith(RESTORE_PREFIX)


def data_state(data_dir: Path) -> DataState:
    if not data_dir.exists():
        return "absent"
    names = os.listdir(data_dir)
    if MARKER in names:
        return "interrupted"
    return "data" if any(not _ours(n) for n in names) else "empty"


def _check_schema(manifest: Manifest, where: str) -> None:
    """A snapshot from a newer store layout cannot be read; an older one is migrated by
    the store when it opens."""
    theirs, ours = manifest.schema_version, SCHEMA_VERSION
    if theirs is not None and theirs.isdigit() and ours.isdigit() and int(theirs) > int(ours):
        raise SnapshotError(
            f"{where}: store schema version {theirs} is newer than this sessionq's ({ours});"
            " restore it with a newer sessionq"
        )


def _download(
    store: SnapshotStore, prefix: str, manifest: Manifest, where: str, into: Path
) -> None:
    """Step 3: every file, checked as it lands."""
    for entry in manifest.files:
        target = into / entry.path
        make_dirs(target.parent)
        with os.fdopen(open_file(target), "wb") as out:
            sink = HashingWriter(out, limit=entry.size)
            try:
                store.download(prefix + entry.path, sink)
            except FileMissingError:
                raise SnapshotCorruptError(f"{where}: {entry.path} is missing") from None
            except TooLargeError:
                raise SnapshotCorruptError(
                    f"{where}: {entry.path} has more than {entry.size} bytes, the size the"
                    " manifest says (read no further)"
                ) from None
            out.flush()
            os.fsync(out.fileno())
        if sink.size != entry.size:
            raise SnapshotCorruptError(
                f"{where}: {entry.path} has {sink.size} bytes, the manifest says {entry.size}"
            )
        if sink.hexdigest() != entry.sha256:
            raise SnapshotCorruptError(
                f"{where}: {entry.path} fails its checksum (sha256 {sink.hexdigest()[:12]}…,"
                f" the manifest says {entry.sha256[:12]}…)"
            )


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def _clear(data_dir: Path) -> None:
    for name in os.listdir(data_dir):
        if not _ours(name) or name == MARKER:
            _remove(data_dir / name)


def _install(temp: Path, data_dir: Path, state: DataState) -> None:
    """Step 4."""
    if state == "absent":
        os.rename(temp, data_dir)
        _fsync_dir(data_dir.parent)
        return
    marker = data_dir / MARKER
    write_file(marker, b"")
    _fsync_dir(data_dir)
    for name in os.listdir(data_dir):
        if not _ours(name):
            _remove(data_dir / name)
    for name in os.listdir(temp):
        os.rename(temp / name, data_dir / name)
    _fsync_dir(data_dir)
    temp.rmdir()
    marker.unlink()
    _fsync_dir(data_dir)


def restore_snapshot(
    store: SnapshotStore, data_dir: Path, *, force: bool = False, if_empty: bool = False
) -> RestoreOutcome:
    """Restore the newest snapshot at ``store`` into ``data_dir`` (module doc)."""
    started = time.perf_counter()
    state = data_state(data_dir)
    if state == "data":
        if if_empty:
            return RestoreOutcome(False, f"{data_dir} already holds data; not restoring")
        if not force:
            raise DataDirNotEmptyError(
                f"{data_dir} is not empty; stop its indexer and worker and give --force"
                " to replace it"
            )
    name = newest_snapshot(store)
    if name is None:
        if state == "interrupted":
            _clear(data_dir)  # an interrupted restore's leftovers are no data
        if if_empty:
            return RestoreOutcome(False, f"no snapshot at {store.where} yet; starting empty")
        raise SnapshotNotFoundError(f"no complete snapshot at {store.where}")
    prefix = f"{name}/" if name else ""
    where = f"{store.where.rstrip('/')}/{name}".rstrip("/")
    manifest = Manifest.decode(store.read_bytes(prefix + MANIFEST_NAME), where)
    _check_schema(manifest, where)
    if "store.sqlite3" not in {f.path for f in manifest.files}:
        raise SnapshotCorruptError(f"{where}: {MANIFEST_NAME} lists no store.sqlite3")
    token = secrets.token_hex(4)
    if state == "absent":
        make_dirs(data_dir.parent)  # what exists is the user's: left as it is
        temp = data_dir.parent / f".{data_dir.name}{RESTORE_PREFIX}-{token}"
    else:
        own_dir(data_dir)
        temp = data_dir / f"{RESTORE_PREFIX}-{token}"
    try:
        make_dir(temp)  # becomes the data dir itself when there was none
        _download(store, prefix, manifest, where, temp)
        _install(temp, data_dir, state)
    except OSError as exc:
        raise SnapshotError(f"cannot restore {where} into {data_dir}: {exc}") from exc
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    for leftover in os.listdir(data_dir):  # temporary folders of earlier, failed restores
        if leftover.startswith(RESTORE_PREFIX + "-") and leftover != MARKER:
            shutil.rmtree(data_dir / leftover, ignore_errors=True)
    seconds = time.perf_counter() - started
    return RestoreOutcome(
        True,
        f"restored {where} ({len(manifest.files)} files, {manifest.total_bytes():,} bytes)"
        f" into {data_dir} in {seconds:.1f}s",
        name or manifest.name,
        manifest,
        seconds,
    )
