"""A data dir's own zstd dictionary: trained on its events, once it holds enough of them.

The shipped dictionary (``indexer.store.blocks.format``) is trained on other people's logs; a
dictionary trained on the dir's own events compresses its blocks about a quarter
smaller (measured in ``bench/README.md``: the workspace paths, tool names and prompts of
one installation repeat across its sessions). So:

* **When**: after a commit (``Store.commit``), once the dir has no trained dictionary
  and holds ``TRAIN_AT_BYTES`` of raw events (counted once by reading the blocks, then
  by what the writer appends). There is no later re-training: the first window already
  holds the repeated envelope and vocabulary; a retired dictionary (below) is replaced.
* **How**: the newest blocks' payloads, at most ``SAMPLE_BYTES``, cut in
  ``BLOCK_BYTES`` samples, train a ``DICTIONARY_BYTES`` dictionary. It is stored in
  ``dictionaries`` and named current in ``meta`` (a reopened dir keeps using it), and
  every older block is then recompressed with it, at ``SEALED_LEVEL``; a file of up to
  ``VACUUM_MAX_BYTES`` is then vacuumed, since the smaller blocks leave free pages.
* **Transactions**: each step is its own short transaction after the batch's commit
  (a failure here never costs a batch): first the dictionary row and ``meta`` (current
  id, training record, the pending recompression), then the blocks in runs of
  ``RECOMPRESS_RUN`` rows, at most ``RECOMPRESS_BUDGET_S`` after one commit (a large
  dir written by an older release is recompressed over several commits). A block row
  is rewritten with its data and ``dict_id`` together, so after a crash at any point
  every block reads through its recorded dictionary; a recompression still pending goes
  on after the next commit. The purge pass's recompression (below) runs to the end.

**Erasure.** A trained dictionary holds pieces of its training samples verbatim, so a
deleted session's text could outlive its rows inside it. The rule: the training record
(``meta``) lists the session keys its samples came from; deleting one of them marks the
dictionary *retired* in the delete's own transaction, and the purge pass
(``indexer.store.maintenance.purge``) that makes that delete physical trains a new dictionary from
the sessions still stored (or goes back to the shipped one when too few are left),
recompresses every block with it and deletes the retired dictionary's row, all before it
truncates the WAL. A pass counts as complete only once that is done, so "no byte of a
deleted session in any file after its purge pass" holds for dictionaries too. Samples
come from the newest blocks, which age-based retention deletes last, so a dir
recompresses for this about once per retention period.
"""

from __future__ import annotations

import logging
import random
import sqlite3
import time
from collections.abc import Iterator
from typing import Final

import orjson
import zstandard

from indexer.failpoints import DISARMED, FailPoints
from indexer.store.blocks.format import (
    BLOCK_BYTES,
    LEVEL,
    SEALED_LEVEL,
    dictionary_id,
    payload_fill,
    shipped_dictionary,
)
from indexer.store.tables.schema import DICTIONARY_KEY
from indexer.store.tables.sqlite_tables import SqliteTables

log = logging.getLogger("sessionq.store")

TRAIN_AT_BYTES: Final = 4 * 1024 * 1024  # raw events a dir holds before it trains
SAMPLE_BYTES: Final = 8 * 1024 * 1024  # the most block payload one training reads
DICTIONARY_BYTES: Final = 112 * 1024
RECOMPRESS_RUN: Final = 256  # blocks recompressed per transaction
RECOMPRESS_BUDGET_S: Final = 2.0  # the most recompression one commit waits for
VACUUM_MAX_BYTES: Final = 64 * 1024 * 1024  # compact after a recompression up to this size
TRAINED_KEY: Final = "zstd_trained"  # {"id": dict id, "sessions": [keys sampled]}
RETIRED_KEY: Final = "zstd_retired"  # "1": a sampled session was deleted
RECOMPRESS_KEY: Final = "zstd_recompress"  # id the blocks are being moved to
_MIN_ID: Final = 2**15  # zstd reserves the ids below


def sample_payloads(conn: sqlite3.Connection, tables: SqliteTables) -> tuple[list[bytes], set[int]]:
    """``BLOCK_BYTES`` pieces of the newest blocks' payloads (at most ``SAMPLE_BYTES``)
    and the session keys they came from."""
    samples: list[bytes] = []
    sessions: set[int] = set()
    total = 0
    for key, did, data in conn.execute(
        "SELECT session_key, dict_id, data FROM blocks ORDER BY id DESC"
    ):
        payload = tables.blocks.payload(bytes(data), did)
        sessions.add(int(key))
        for at in range(0, len(payload), BLOCK_BYTES):
            samples.append(payload[at : at + BLOCK_BYTES])
        total += len(payload)
        if total >= SAMPLE_BYTES:
            break
    return samples, sessions


def train(samples: list[bytes], taken: set[int]) -> bytes:
    """A dictionary trained on ``samples`` with an id none of ``taken`` has."""
    rng = random.Random()
    while True:
        did = rng.randrange(_MIN_ID, 2**31)
        if did not in taken:
            break
    pieces: list[bytes | bytearray | memoryview] = list(samples)
    trained = zstandard.train_dictionary(DICTIONARY_BYTES, pieces, dict_id=did)
    return bytes(trained.as_bytes())


class Dictionaries:
    """Training, recompression and retirement of one data dir's dictionaries (writer
    side; every method that writes runs its own transactions between batches)."""

    def __init__(self, tables: SqliteTables, failpoints: FailPoints = DISARMED) -> None:
        self.tables = tables
        self.failpoints = failpoints
        self.conn = tables.conn
        record = tables.get_meta(TRAINED_KEY)
        self.trained: dict[str, object] | None = None if record is None else orjson.loads(record)
        self._sampled: set[int] = set(self._record_sessions())
        self._raw_base: int | None = None  # raw bytes counted from the blocks at first check
        self._appended_base = 0
        self._train_at = TRAIN_AT_BYTES
        self._cursor = (0, 0)  # (last block id moved, to dictionary id) of a recompression
        self._level_blocks()

    def _level_blocks(self) -> None:
        """Until the dir trains, blocks are written at the fast level: the training
        rewrites them all at the sealed level (``EventBlocks.sealed_level``)."""
        self.tables.blocks.sealed_level = LEVEL if self.trained is None else SEALED_LEVEL

    def _record_sessions(self) -> list[int]:
        if self.trained is None:
            return []
        sessions = self.trained.get("sessions", [])
        return [int(k) for k in sessions] if isinstance(sessions, list) else []

    # ---- in the batch transaction ----------------------------------------------------------------
    def note_deleted(self, key: int) -> None:
        """A session is deleted in the open transaction: a dictionary sampled from it is
        retired (the next purge pass replaces it)."""
        if key in self._sampled:
            self.tables.set_meta(RETIRED_KEY, "1")

    def retired(self) -> bool:
        return self.tables.get_meta(RETIRED_KEY) == "1"

    # ---- between batches -------------------------------------------------------------------------
    def after_commit(self) -> None:
        """Train when due, or finish a recompression a crash interrupted. Errors are
        logged: the batch is committed, and the blocks read through their dict ids."""
        try:
            pending = self.tables.get_meta(RECOMPRESS_KEY) is not None
            if not pending and self.trained is None and self._raw_stored() >= self._train_at:
                pending = self._install(retire=False)
                if not pending:
                    self._train_at *= 2  # too little to train on: try again later
            if pending:
                self._recompress(RECOMPRESS_BUDGET_S)
        except Exception:
            self.tables.tx.rollback()
            log.exception("zstd dictionary upkeep failed; retrying after a later commit")

    def retire(self) -> bool:
        """The purge pass's step: replace a retired dictionary (module docstring). True
        when no retired dictionary is left in the dir."""
        try:
            if self.retired() or self.tables.get_meta(RECOMPRESS_KEY) is not None:
                if self.retired():
                    self._install(retire=True)
                self._recompress()
            return not self.retired()
        except Exception:
            self.tables.tx.rollback()
            log.exception("retiring a zstd dictionary failed; the next purge pass retries")
            return False

    def _raw_stored(self) -> int:
        """Raw event bytes stored, at least up to the threshold (the blocks are read once,
        then the writer's appends are added; a rolled-back append still counts)."""
        appended = self.tables.blocks.raw_appended
        if self._raw_base is None:
            total = 0
            for (data_fill,) in self._fills():
                total += data_fill
                if total >= self._train_at:
                    break
            self._raw_base, self._appended_base = total, appended
        return self._raw_base + appended - self._appended_base

    def _fills(self) -> Iterator[tuple[int]]:
        for did, data in self.conn.execute("SELECT dict_id, data FROM blocks ORDER BY id"):
            yield (payload_fill(self.tables.blocks.payload(bytes(data), did))[0],)

    def _install(self, *, retire: bool) -> bool:
        """Train from the stored blocks and make the result current, with the
        recompression pending (one transaction). Retiring with too little to train on
        goes back to the shipped dictionary. False when nothing was trained."""
        started = time.perf_counter()
        samples, sessions = sample_payloads(self.conn, self.tables)
        taken = {int(r[0]) for r in self.conn.execute("SELECT id FROM dictionaries")}
        data: bytes | None = None
        if sum(len(s) for s in samples) >= TRAIN_AT_BYTES // 4:
            try:
                data = train(samples, taken)
            except zstandard.ZstdError as exc:
                log.warning("training a zstd dictionary failed: %s", exc)
        if data is None and not retire:
            return False
        if data is None:
            data, sessions = shipped_dictionary(), set()
        did = dictionary_id(data)
        with self.tables.tx.step():
            self.conn.execute(
                "INSERT OR IGNORE INTO dictionaries(id, data) VALUES (?, ?)", (did, data)
            )
            self.tables.set_meta(DICTIONARY_KEY, str(did))
            self.tables.set_meta(RECOMPRESS_KEY, str(did))
            if sessions:
                record = {"id": did, "sessions": sorted(sessions)}
                self.tables.set_meta(TRAINED_KEY, orjson.dumps(record).decode())
            else:
                self.conn.execute("DELETE FROM meta WHERE key = ?", (TRAINED_KEY,))
            self.conn.execute("DELETE FROM meta WHERE key = ?", (RETIRED_KEY,))
        self.trained = {"id": did, "sessions": sorted(sessions)} if sessions else None
        self._sampled = sessions
        self._raw_base = None  # count again before a later training
        self._level_blocks()
        self.tables.blocks.codec.add(did, data)
        self.tables.blocks.dict_id = did
        log.info(
            "zstd dictionary %d (%d bytes) trained from %d sessions in %.2f s",
            did,
            len(data),
            len(sessions),
            time.perf_counter() - started,
        )
        return True

    def _recompress(self, budget_s: float | None = None) -> None:
        """Move every block to the pending dictionary in runs of ``RECOMPRESS_RUN``, then
        delete the trained dictionaries no block uses (the shipped one is kept: code that
        compresses elsewhere may still hold its id). With ``budget_s``, stop after the
        run that exceeds it; the next call goes on from there."""
        target = int(self.tables.get_meta(RECOMPRESS_KEY) or "0")
        blocks = self.tables.blocks
        after = self._cursor if self._cursor[1] == target else (0, target)
        moved, runs, started = 0, 0, time.perf_counter()
        while True:
            if budget_s is not None and time.perf_counter() - started > budget_s:
                self._cursor = after
                log.info(
                    "recompressed %d blocks in %.2f s; more after the next commit",
                    moved,
                    time.perf_counter() - started,
                )
                return
            rows = self.conn.execute(
                "SELECT id, dict_id, data FROM blocks WHERE id > ? ORDER BY id LIMIT ?",
                (after[0], RECOMPRESS_RUN),
            ).fetchall()
            if not rows:
                break
            with self.tables.tx.step():
                for rowid, did, data in rows:
                    if did == target:
                        continue
                    payload = blocks.payload(bytes(data), did)
                    packed = blocks.codec.compress(payload, target, SEALED_LEVEL)
                    self.conn.execute(
                        "UPDATE blocks SET dict_id = ?, data = ? WHERE id = ?",
                        (target, packed, rowid),
                    )
                    moved += 1
            after = (int(rows[-1][0]), target)
            runs += 1
            self.failpoints.reach("recompress-midway")
        shipped = dictionary_id(shipped_dictionary())
        with self.tables.tx.step():
            self.conn.execute(
                "DELETE FROM dictionaries WHERE id NOT IN (?, ?)"
                " AND id NOT IN (SELECT DISTINCT dict_id FROM blocks)",
                (target, shipped),
            )
            self.conn.execute("DELETE FROM meta WHERE key = ?", (RECOMPRESS_KEY,))
        self._cursor = (0, 0)
        log.info(
            "recompressed %d blocks with zstd dictionary %d in %.2f s",
            moved,
            target,
            time.perf_counter() - started,
        )
        self._compact()

    def _compact(self) -> None:
        """The recompressed blocks are smaller than the ones they replaced: a file of at
        most ``VACUUM_MAX_BYTES`` is rebuilt without the freed pages (a fraction of a
        second); a larger one keeps them for later writes to reuse."""
        path = self.tables.path
        if path.stat().st_size > VACUUM_MAX_BYTES:
            return
        try:
            self.conn.execute("VACUUM")
            self.tables.truncate_wal()  # VACUUM wrote the whole file to the WAL
        except sqlite3.Error as exc:
            log.warning("VACUUM after the recompression failed (nothing is lost): %s", exc)
