"""A consistent local copy of a data directory, taken while its indexer keeps writing.

Order of a capture (``capture``):
  1. take the commit lock (``indexer.store.checkpoint.CommitLock``): no batch is between
     its Tantivy commit and its SQLite commit while it is held;
  2. open a SQLite read transaction (it pins the last committed batch: rows and offsets);
  3. read ``tantivy/meta.json`` and hard-link (else copy) every file it references into
     the staging directory: segment files are immutable, and a background merge that
     rewrites ``meta.json`` and deletes files meanwhile only makes the step start over;
  4. release the lock: the indexer commits again while the rest runs;
  5. copy the pinned SQLite view with the online backup API, then end the transaction;
     drop the "caught up" mark from the copy (a restored replica is caught up only when
     its own indexer has reached the topic's end);
  6. copy the other top-level files of the data dir as they are.

The index and the tables in the copy are those of one batch, so a search over a restored
copy never finds documents without their rows, and its indexer resumes from the copy's
offsets. Files are named generically (the SQLite database whatever its tables, the index
by its own ``meta.json``), so a new table layout needs no change here.
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import orjson

from indexer.snapshot.errors import SnapshotError
from indexer.store.layout import RUNTIME_FILES, SQLITE_NAME, index_path, sqlite_path
from indexer.store.locks import CommitLock
from indexer.store.private import copy_file, create_file, make_dir, make_dirs, write_file
from indexer.store.tables.connection import connect
from indexer.store.tables.sqlite_tables import CAUGHT_UP_KEY

log = logging.getLogger("sessionq.snapshot")

TANTIVY_DIR: Final = "tantivy"
STAGING_DIR: Final = ".snapshot-staging"  # inside the data dir: hard links need one fs
SNAPSHOT_LOCK: Final = ".snapshot.lock"  # one snapshot of a data dir at a time
# Restore's own names inside a data dir (restore.py), never copied.
RESTORE_PREFIX: Final = ".sessionq-restore"
_LINK_ATTEMPTS: Final = 20


@dataclass(frozen=True, slots=True)
class Captured:
    """What a capture copied: paths relative to the staging directory."""

    files: list[str]
    offsets: list[tuple[str, int, int]]
    schema_version: str | None
    tantivy_opstamp: int | None


def _link_or_copy(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            raise
        copy_file(src, dst)  # another file system, or links not allowed


def _segment_files(meta: dict[str, Any]) -> list[str]:
    """The files of every segment ``meta.json`` names: ``<id>.<component>`` plus the
    deletes of the committed opstamp; older ``.del`` files are garbage."""
    wanted: list[str] = []
    for segment in meta.get("segments", []):
        seg = str(segment["segment_id"]).replace("-", "")
        wanted.append(seg)
        deletes = segment.get("deletes")
        if deletes:
            wanted.append(f"{seg}.{int(deletes['opstamp'])}.del")
    return wanted


def _link_index(index_dir: Path, out: Path) -> tuple[list[str], int | None]:
    """Step 3: ``meta.json`` and the files it references, consistent with each other."""
    for _attempt in range(_LINK_ATTEMPTS):
        shutil.rmtree(out, ignore_errors=True)
        make_dirs(out)
        try:
            meta_bytes = (index_dir / "meta.json").read_bytes()
        except FileNotFoundError:
            return [], None  # no index yet: an empty data dir has no documents
        meta = orjson.loads(meta_bytes)
        prefixes = _segment_files(meta)
        segments = {p for p in prefixes if "." not in p}
        deletes = {p for p in prefixes if p.endswith(".del")}
        names: list[str] = []
        try:
            for entry in sorted(os.listdir(index_dir)):
                seg, _, rest = entry.partition(".")
                if entry in deletes or (seg in segments and rest and "." not in rest):
                    _link_or_copy(index_dir / entry, out / entry)
                    names.append(entry)
        except FileNotFoundError:
            continue  # a merge collected a file: start over from the newer meta.json
        if (index_dir / "meta.json").read_bytes() != meta_bytes:
            continue  # merged meanwhile: the files linked may not be the living ones
        missing = deletes - set(names)
        if missing:
            raise SnapshotError(f"index file {sorted(missing)[0]} named by meta.json is missing")
        write_file(out / "meta.json", meta_bytes)
        # Tantivy collects only the files it lists as managed: list them all, so the
        # restored index frees its segments after later merges.
        managed = [*names, "meta.json"]
        write_file(out / ".managed.json", orjson.dumps(managed))
        opstamp = meta.get("opstamp")
        return [*names, "meta.json", ".managed.json"], int(opstamp) if opstamp is not None else None
    raise SnapshotError(
        f"the index kept changing under the snapshot ({_LINK_ATTEMPTS} attempts); try again"
    )


def _begin_read(db: Path) -> sqlite3.Connection:
    """Step 2: a read transaction that pins the last committed batch."""
    conn = connect(db, readonly=True)
    conn.execute("BEGIN")
    conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    return conn


def _finish_copy(target: Path) -> tuple[list[tuple[str, int, int]], str | None]:
    """Step 5's tail: a self-contained file (no WAL), no caught-up mark; what it resumes
    from and its schema version, read from the copy itself."""
    conn = sqlite3.connect(target, isolation_level=None)
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        offsets: list[tuple[str, int, int]] = []
        version: str | None = None
        if "meta" in tables:
            conn.execute("DELETE FROM meta WHERE key = ?", (CAUGHT_UP_KEY,))
            row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            version = None if row is None else str(row[0])
        if "offsets" in tables:
            offsets = [
                (str(t), int(p), int(o))
                for t, p, o in conn.execute(
                    "SELECT topic, partition, next_offset FROM offsets ORDER BY topic, partition"
                )
            ]
        conn.execute("PRAGMA journal_mode = DELETE")
    finally:
        conn.close()
    return offsets, version


def _other_files(data_dir: Path) -> list[str]:
    """Top-level regular files besides the database, its journals and the runtime files
    (locks, the writer lease)."""
    skip = {SQLITE_NAME, *RUNTIME_FILES}
    out = []
    for entry in sorted(os.listdir(data_dir)):
        if entry in skip or entry.startswith((SQLITE_NAME + "-", ".")):
            continue
        if (data_dir / entry).is_file():
            out.append(entry)
    return out


def capture(data_dir: Path, staging: Path) -> Captured:
    """Copy ``data_dir`` into the empty directory ``staging`` (steps in the module doc)."""
    db = sqlite_path(data_dir)
    if not db.is_file():
        raise SnapshotError(f"no sessionq data directory at {data_dir}")
    make_dirs(staging.parent)
    make_dir(staging)
    try:
        with CommitLock(data_dir):  # (1)
            reader = _begin_read(db)  # (2)
            try:
                index_files, opstamp = _link_index(index_path(data_dir), staging / TANTIVY_DIR)
            except BaseException:
                reader.close()
                raise
        try:  # (4) the lock is released: the indexer goes on
            create_file(staging / SQLITE_NAME)  # the copy's bits are the file's
            target = sqlite3.connect(staging / SQLITE_NAME)
            try:
                reader.backup(target)  # (5) one step: the pinned view, whole
            finally:
                target.close()
        finally:
            reader.close()
        offsets, version = _finish_copy(staging / SQLITE_NAME)
        others = _other_files(data_dir)
        for name in others:  # (6)
            copy_file(data_dir / name, staging / name)
    except sqlite3.Error as exc:
        raise SnapshotError(f"cannot copy {db}: {exc}") from exc
    except OSError as exc:
        raise SnapshotError(f"cannot copy {data_dir}: {exc}") from exc
    files = [SQLITE_NAME, *(f"{TANTIVY_DIR}/{n}" for n in index_files), *others]
    return Captured(files, offsets, version, opstamp)
