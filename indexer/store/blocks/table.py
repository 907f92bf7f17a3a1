"""SQL over the compact event tables: ``blocks`` (raw events, ``indexer.store.blocks.format``),
``replaced`` (shadow marks) and ``dictionaries``.

The writer (``SqliteTables``) and the readers (``indexer.query.events``) share this
class over their own connections; only the writer calls the methods that write. An
append rewrites at most the session's open last block (``blocks`` module docstring); an
exact read decompresses only the blocks that hold the seqs it asks for. A block is
compressed with the dictionary ``dict_id`` names when it is written, at the sealed level
once it is full.
"""

from __future__ import annotations

import bisect
import functools
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple, TypeVar

from indexer.store.blocks.format import (
    LEVEL,
    NO_DICTIONARY,
    SEALED_LEVEL,
    Codec,
    StoredEvent,
    append_payload,
    encode,
    is_full,
    payload_fill,
    split_blocks,
)
from indexer.store.blocks.payload import Payload, StoredGroup

_T = TypeVar("_T")


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


class MissingDictionaryError(LookupError):
    """A block names a dictionary the dir does not hold. A reader sees this for a block
    row it read just before the writer recompressed it and deleted the old dictionary
    (``indexer.store.blocks.dictionaries``): reading the row again finds the new one."""


def _retrying(read: Callable[..., _T]) -> Callable[..., _T]:
    """Run a read once more when a dictionary went missing under it (see above)."""

    @functools.wraps(read)
    def wrapper(*args: Any, **kwargs: Any) -> _T:
        try:
            return read(*args, **kwargs)
        except MissingDictionaryError:
            return read(*args, **kwargs)

    return wrapper


BlockRow = tuple[int, int, int, bytes]
"""A block as stored: (first seq, last seq, dictionary id, compressed payload)."""


def block_rows(events: Sequence[StoredEvent], codec: Codec, did: int, level: int) -> list[BlockRow]:
    """``events`` (starting a new block) cut into blocks and compressed. Pure, so ingest
    workers build a new session's blocks off the writer process
    (``indexer.sources.parallel``) exactly as ``EventBlocks.append`` would."""
    return [
        (block[0].seq, block[-1].seq, did, codec.compress(encode(block), did, level))
        for block in split_blocks(events)
    ]


class EventBlocks:
    """One connection's access to a data dir's event blocks."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        codec: Codec,
        dict_id: int = NO_DICTIONARY,
        *,
        remember: bool = False,
    ):
        """``remember``: keep each block's parsed payload for later reads through this
        object (a query that reads the same block more than once: a window, then the
        stored events around its target); never for a long-lived writer."""
        self.conn = conn
        self.codec = codec
        self.dict_id = dict_id
        self._payloads: dict[tuple[int, bytes], Payload] | None = {} if remember else None
        self.raw_appended = 0  # raw JSON bytes appended through this object (training)
        # The level of writes that are not rewrites of the open block (``blocks`` module
        # docstring); LEVEL while the dir has not trained its own dictionary, since
        # training rewrites every block at SEALED_LEVEL anyway.
        self.sealed_level = SEALED_LEVEL

    def _rewrite_level(self, events: Sequence[StoredEvent], raw_bytes: int, count: int) -> int:
        """The level of the open block continued by ``events``."""
        full = is_full(raw_bytes + sum(len(e.raw) for e in events), count + len(events))
        return self.sealed_level if full else LEVEL

    # ---- compression -----------------------------------------------------------------------------
    def block_dictionary(self) -> tuple[int, bytes]:
        """(id, bytes) of the dictionary new blocks are compressed with, for code that
        compresses blocks elsewhere (worker processes). The id changes when the dir
        trains its own dictionary (``indexer.store.blocks.dictionaries``); a dictionary that new
        blocks no longer use stays in the dir while blocks use it, the shipped one always."""
        return self.dict_id, self.codec.data(self.dict_id)

    def payload(self, data: bytes, did: int) -> bytes:
        """A block's payload, decompressed with the dictionary its row names."""
        if not self.codec.knows(did):
            row = self.conn.execute("SELECT data FROM dictionaries WHERE id = ?", (did,)).fetchone()
            if row is None:
                raise MissingDictionaryError(f"zstd dictionary {did} is missing from the data dir")
            self.codec.add(did, row[0])
        return self.codec.decompress(data, did)

    def _decode(
        self, first_seq: int, did: int, data: bytes, start: int = 0, end: int = 2**63
    ) -> list[StoredEvent]:
        return self._payload_of(did, data).events(first_seq, start, end)

    def _payload_of(self, did: int, data: bytes) -> Payload:
        """The parsed payload of a block row (kept when this object remembers)."""
        remembered = self._payloads
        parsed = None if remembered is None else remembered.get((did, data))
        if parsed is None:
            parsed = Payload(self.payload(data, did))
            if remembered is not None:
                remembered[did, data] = parsed
        return parsed

    # ---- writes ----------------------------------------------------------------------------------
    def append(self, key: int, events: Sequence[StoredEvent]) -> None:
        """Store events that continue the session (the caller checked contiguity)."""
        if not events:
            return
        self.raw_appended += sum(len(e.raw) for e in events)
        tail = self.conn.execute(
            "SELECT id, first_seq, dict_id, data FROM blocks WHERE session_key = ?"
            " ORDER BY first_seq DESC LIMIT 1",
            (key,),
        ).fetchone()
        start = 0
        if tail is not None:
            rowid, _first_seq, did, data = tail
            payload = self.payload(data, did)
            size, count = payload_fill(payload)
            if not is_full(size, count):
                head = split_blocks(events, size, count)[0]
                start = len(head)
                more = encode(head)
                grown = append_payload(payload, more)
                level = self._rewrite_level(head, size, count)
                data = self.codec.compress(grown, self.dict_id, level)
                self.conn.execute(
                    "UPDATE blocks SET last_seq = ?, dict_id = ?, data = ? WHERE id = ?",
                    (head[-1].seq, self.dict_id, data, rowid),
                )
        self.insert_rows(
            key, block_rows(events[start:], self.codec, self.dict_id, self.sealed_level)
        )

    def insert_rows(self, key: int, rows: Iterable[BlockRow]) -> None:
        """Store built blocks of a session that holds no events yet, or continue its
        sealed ones (the caller checked contiguity)."""
        self.conn.executemany(
            "INSERT INTO blocks(session_key, first_seq, last_seq, dict_id, data)"
            " VALUES (?, ?, ?, ?, ?)",
            [(key, *row) for row in rows],
        )

    def settle(self, key: int) -> None:
        """Write the session's open block once more at the sealed level: its session is
        not live, so appends to it are not expected any more."""
        tail = self.conn.execute(
            "SELECT id, dict_id, data FROM blocks WHERE session_key = ?"
            " ORDER BY first_seq DESC LIMIT 1",
            (key,),
        ).fetchone()
        if tail is None:
            return
        rowid, did, data = tail
        payload = self.payload(data, did)
        self.conn.execute(
            "UPDATE blocks SET dict_id = ?, data = ? WHERE id = ?",
            (self.dict_id, self.codec.compress(payload, self.dict_id, self.sealed_level), rowid),
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

    @_retrying
    def read_range(self, key: int, start: int, end: int) -> list[EventView]:
        """The events with ``start <= seq <= end``, in seq order."""
        if end < start:
            return []
        marks = self._replaced(key, start, end)
        return [_view(event, marks.get(event.seq)) for event in self._stored(key, start, end)]

    @_retrying
    def read_groups(self, key: int, start: int, end: int) -> list[StoredGroup]:
        """The stored events with ``start <= seq <= end``, in seq order, as stored (no
        replacement marks), as ``StoredGroup``s: a chunk run's members one group, for
        readers that walk many events of a range (the redaction of a delta's run)."""
        out: list[StoredGroup] = []
        if start > end:
            return out
        for first_seq, did, data in self._blocks(key, start, end):
            out += self._payload_of(did, data).groups(first_seq, start, end)
        return out

    def _stored(self, key: int, start: int, end: int) -> list[StoredEvent]:
        out: list[StoredEvent] = []
        for first_seq, did, data in self._blocks(key, start, end):
            out += self._decode(first_seq, did, data, start, end)
        return out

    def read(self, key: int, seq: int) -> EventView | None:
        found = self.read_range(key, seq, seq)
        return found[0] if found else None

    @_retrying
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
