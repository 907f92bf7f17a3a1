"""SQL over the compact event tables: ``blocks`` (raw events, ``indexer.store.blocks``),
``replaced`` (shadow marks) and ``dictionaries``.

The writer (``SqliteTables``) and the readers (``indexer.query.events``) share this
class over their own connections; only the writer calls the methods that write. An
append rewrites at most the session's open last block (``blocks`` module docstring); an
exact read decompresses only the blocks that hold the seqs it asks for.
"""

from __future__ import annotations

import bisect
import sqlite3
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from indexer.store.blocks import (
    NO_DICTIONARY,
    Codec,
    StoredEvent,
    append_payload,
    decode,
    encode,
    is_full,
    payload_fill,
    split_blocks,
)


class EventView(NamedTuple):
    """A stored event as readers see it: the shadow mark applied."""

    seq: int
    type: str
    time: int
    surface: str
    replaced_by: int | None
    indexed: bool
    raw: bytes


def _view(event: StoredEvent, replaced_by: int | None) -> EventView:
    surface = "shadowed" if replaced_by is not None else event.surface
    return EventView(
        event.seq, event.type, event.time, surface, replaced_by, event.indexed, event.raw
    )


BlockRow = tuple[int, int, int, bytes]
"""A block as stored: (first seq, last seq, dictionary id, compressed payload)."""


def block_rows(events: Sequence[StoredEvent], codec: Codec, did: int) -> list[BlockRow]:
    """``events`` (starting a new block) cut into blocks and compressed. Pure, so ingest
    workers build a new session's blocks off the writer process
    (``indexer.ingest_parallel``) exactly as ``EventBlocks.append`` would."""
    return [
        (block[0].seq, block[-1].seq, did, codec.compress(encode(block), did))
        for block in split_blocks(events)
    ]


class EventBlocks:
    """One connection's access to a data dir's event blocks."""

    def __init__(self, conn: sqlite3.Connection, codec: Codec, dict_id: int = NO_DICTIONARY):
        self.conn = conn
        self.codec = codec
        self.dict_id = dict_id

    # ---- compression -----------------------------------------------------------------------------
    def _payload(self, data: bytes, did: int) -> bytes:
        if not self.codec.knows(did):
            row = self.conn.execute("SELECT data FROM dictionaries WHERE id = ?", (did,)).fetchone()
            if row is None:
                raise LookupError(f"zstd dictionary {did} is missing from the data dir")
            self.codec.add(did, row[0])
        return self.codec.decompress(data, did)

    def _decode(
        self, first_seq: int, did: int, data: bytes, start: int = 0, end: int = 2**63
    ) -> list[StoredEvent]:
        return decode(self._payload(data, did), first_seq, start, end)

    # ---- writes ----------------------------------------------------------------------------------
    def append(self, key: int, events: Sequence[StoredEvent]) -> None:
        """Store events that continue the session (the caller checked contiguity)."""
        if not events:
            return
        tail = self.conn.execute(
            "SELECT id, first_seq, dict_id, data FROM blocks WHERE session_key = ?"
            " ORDER BY first_seq DESC LIMIT 1",
            (key,),
        ).fetchone()
        start = 0
        if tail is not None:
            rowid, _first_seq, did, data = tail
            payload = self._payload(data, did)
            size, count = payload_fill(payload)
            if not is_full(size, count):
                head = split_blocks(events, size, count)[0]
                start = len(head)
                more = encode(head)
                grown = append_payload(payload, more)
                self.conn.execute(
                    "UPDATE blocks SET last_seq = ?, dict_id = ?, data = ? WHERE id = ?",
                    (head[-1].seq, self.dict_id, self.codec.compress(grown, self.dict_id), rowid),
                )
        self.insert_rows(key, block_rows(events[start:], self.codec, self.dict_id))

    def insert_rows(self, key: int, rows: Iterable[BlockRow]) -> None:
        """Store built blocks of a session that holds no events yet, or continue its
        sealed ones (the caller checked contiguity)."""
        self.conn.executemany(
            "INSERT INTO blocks(session_key, first_seq, last_seq, dict_id, data)"
            " VALUES (?, ?, ?, ?, ?)",
            [(key, *row) for row in rows],
        )

    def mark_replaced(self, key: int, seqs: Iterable[int], replaced_by: int) -> None:
        self.conn.executemany(
            "INSERT INTO replaced(session_key, seq, replaced_by) VALUES (?, ?, ?)"
            " ON CONFLICT(session_key, seq) DO UPDATE SET replaced_by = excluded.replaced_by",
            [(key, s, replaced_by) for s in seqs],
        )

    def delete(self, key: int) -> None:
        self.conn.execute("DELETE FROM blocks WHERE session_key = ?", (key,))
        self.conn.execute("DELETE FROM replaced WHERE session_key = ?", (key,))

    # ---- reads -----------------------------------------------------------------------------------
    def _blocks(self, key: int, start: int, end: int) -> list[tuple[int, int, bytes]]:
        """(first seq, dictionary id, data) of the blocks holding any seq in [start, end]:
        the block holding ``start``, then those starting up to ``end``."""
        return self.conn.execute(
            "SELECT first_seq, dict_id, data FROM blocks WHERE session_key = ?1"
            " AND first_seq BETWEEN COALESCE((SELECT MAX(first_seq) FROM blocks"
            " WHERE session_key = ?1 AND first_seq <= ?2), ?2) AND ?3"
            " ORDER BY first_seq",
            (key, start, end),
        ).fetchall()

    def _replaced(self, key: int, start: int, end: int) -> dict[int, int]:
        return dict(
            self.conn.execute(
                "SELECT seq, replaced_by FROM replaced WHERE session_key = ?"
                " AND seq BETWEEN ? AND ?",
                (key, start, end),
            ).fetchall()
        )

    def read_range(self, key: int, start: int, end: int) -> list[EventView]:
        """The events with ``start <= seq <= end``, in seq order."""
        if end < start:
            return []
        marks = self._replaced(key, start, end)
        out: list[EventView] = []
        for first_seq, did, data in self._blocks(key, start, end):
            for event in self._decode(first_seq, did, data, start, end):
                out.append(_view(event, marks.get(event.seq)))
        return out

    def read(self, key: int, seq: int) -> EventView | None:
        found = self.read_range(key, seq, seq)
        return found[0] if found else None

    def read_seqs(self, key: int, seqs: Sequence[int]) -> dict[int, EventView]:
        """The stored events among ``seqs``; each block that holds some is decompressed
        once, and only the part between the first and the last wanted seq is decoded."""
        wanted = sorted(set(seqs))
        out: dict[int, EventView] = {}
        i = 0
        while i < len(wanted):
            seq = wanted[i]
            row = self.conn.execute(
                "SELECT first_seq, last_seq, dict_id, data FROM blocks WHERE session_key = ?"
                " AND first_seq <= ? ORDER BY first_seq DESC LIMIT 1",
                (key, seq),
            ).fetchone()
            if row is None or row[1] < seq:
                i += 1
                continue
            first_seq, last_seq, did, data = row
            j = bisect.bisect_right(wanted, last_seq)
            hi = wanted[j - 1]
            marks = self._replaced(key, seq, hi)
            for e in self._decode(first_seq, did, data, seq, hi):
                out[e.seq] = _view(e, marks.get(e.seq))
            i = j
        keep = set(wanted)
        return {s: e for s, e in out.items() if s in keep}

    def replaced_by(self, key: int, seq: int) -> int | None:
        row = self.conn.execute(
            "SELECT replaced_by FROM replaced WHERE session_key = ? AND seq = ?", (key, seq)
        ).fetchone()
        return None if row is None else int(row[0])

    def block_count(self) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM blocks").fetchone()[0])
