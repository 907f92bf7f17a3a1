"""Reading block payloads (the format: ``indexer.store.blocks.format``): a payload's
entry line parsed once (``Payload``), the events of a seq range rebuilt byte for byte
(``events``), or handed out as groups whose chunk runs are not rebuilt
(``groups``, ``StoredGroup``)."""

from __future__ import annotations

import bisect
from typing import Any, NamedTuple

import orjson

from indexer.model.event import load_json
from indexer.store.blocks.format import (
    CHUNK_HEAD,
    CHUNK_TAIL,
    CHUNK_TIME,
    NO_END,
    SURFACES,
    StoredEvent,
)

__all__ = ["Payload", "StoredGroup"]


class StoredGroup(NamedTuple):
    """Consecutive stored events of one block entry, for readers that walk many of them
    (the redaction of a delta's run): one event (``deltas`` None), or members of a chunk
    run, which are the same JSON but for seq, time and their last string value — stored
    as ``deltas``, each the bytes between that value's quotes, so that ``raw`` (the
    first member's raw JSON) decoded once tells what every member holds."""

    first_seq: int
    type: str
    raw: bytes
    deltas: list[bytes] | None


RunMeta = tuple[int, bytes, int, list[int], list[int]]
"""A chunk run's body, parsed: (where its deltas start, the shared head as stored
between the envelope and the delta, first time, time gaps, delta lengths)."""


def _run_meta(body: bytes) -> RunMeta:
    cut = body.index(b"\n")
    head_text, time, gaps, lengths = orjson.loads(body[:cut])
    return cut + 1, b"," + head_text.encode(), time, gaps, lengths


def _expand_run(
    body: bytes, meta: RunMeta, first_seq: int, start: int = 0, end: int = NO_END
) -> list[tuple[int, int, bytes]]:
    """(seq, time, raw JSON) of the members of a chunk run with ``start <= seq <= end``.

    A run holds up to ``BLOCK_EVENTS`` members and a read wants a few: the wanted
    members' first offset and time are sums over the ones before (C-speed), and only the
    wanted ones are visited."""
    deltas_at, head, time, gaps, lengths = meta
    first = max(0, start - first_seq)
    stop = min(len(lengths), end - first_seq + 1)
    if first >= stop:
        return []
    pos = deltas_at + sum(lengths[:first])
    time += sum(gaps[:first])
    out = []
    for k in range(first, stop):
        if k > first:
            time += gaps[k - 1]
        size = lengths[k]
        seq = first_seq + k
        delta = body[pos : pos + size]
        raw = b"".join((CHUNK_HEAD, b"%d" % seq, CHUNK_TIME, b"%d" % time, head, delta, CHUNK_TAIL))
        out.append((seq, time, raw))
        pos += size
    return out


class Payload:
    """A block's decompressed payload with its entry line parsed once, and each chunk
    run's meta once it is read: a reader that reads one block more than once keeps it
    (``EventBlocks(remember=True)``), so its later reads parse nothing again. Entries
    outside a read's range are skipped unread."""

    __slots__ = ("_entries", "_next", "_offsets", "_positions", "_runs", "data")

    def __init__(self, data: bytes) -> None:
        self.data = data
        cut = data.index(b"\n")
        self._entries: list[list[Any]] = load_json(data[:cut])
        # each entry's first seq (from the block's first) and body position, in order,
        # indexed as far as reads have needed (the next entry's, from ``_next``)
        self._offsets: list[int] = []
        self._positions: list[int] = []
        self._next = (0, cut + 1)
        self._runs: dict[int, RunMeta] = {}

    def _wanted(self, first_seq: int, start: int, end: int) -> range:
        """The indices of the entries holding a seq in ``start..end``: the entries are
        indexed up to ``end`` (once), then bisected."""
        entries, offsets, positions = self._entries, self._offsets, self._positions
        offset, pos = self._next
        while len(offsets) < len(entries) and offset <= end - first_seq:
            entry = entries[len(offsets)]
            offsets.append(offset)
            positions.append(pos)
            offset, pos = offset + max(1, entry[3]), pos + entry[4]
        self._next = (offset, pos)
        lo = max(0, bisect.bisect_right(offsets, start - first_seq) - 1)
        hi = bisect.bisect_right(offsets, end - first_seq)
        return range(lo, hi)

    def _run(self, i: int, body: bytes) -> RunMeta:
        meta = self._runs.get(i)
        if meta is None:
            meta = self._runs[i] = _run_meta(body)
        return meta

    def events(self, first_seq: int, start: int = 0, end: int = NO_END) -> list[StoredEvent]:
        """The events with ``start <= seq <= end`` (default: all), in seq order, raw JSON
        exactly as stored."""
        data, entries, positions = self.data, self._entries, self._positions
        out: list[StoredEvent] = []
        for i in self._wanted(first_seq, start, end):
            etype, time, flags, count, size, _raw_size = entries[i]
            seq, pos = first_seq + self._offsets[i], positions[i]
            surface, indexed = SURFACES[flags >> 1], bool(flags & 1)
            body = data[pos : pos + size]
            if count == 0:
                if start <= seq <= end:
                    out.append(StoredEvent(seq, etype, time, surface, indexed, body))
            else:
                for s, t, raw in _expand_run(body, self._run(i, body), seq, start, end):
                    out.append(StoredEvent(s, etype, t, surface, indexed, raw))
        return out

    def groups(self, first_seq: int, start: int, end: int) -> list[StoredGroup]:
        """The events with ``start <= seq <= end`` as ``StoredGroup``s, in seq order: a
        chunk run's wanted members are one group, with no member's JSON rebuilt but the
        first one's."""
        data, entries, positions = self.data, self._entries, self._positions
        out: list[StoredGroup] = []
        for i in self._wanted(first_seq, start, end):
            etype, _time, _flags, count, size, _raw_size = entries[i]
            seq, pos = first_seq + self._offsets[i], positions[i]
            body = data[pos : pos + size]
            if count == 0:
                if start <= seq <= end:
                    out.append(StoredGroup(seq, etype, body, None))
                continue
            meta = self._run(i, body)
            first = max(start, seq)
            stop = min(count, end - seq + 1)
            if first - seq >= stop:
                continue
            [(_s, _t, raw)] = _expand_run(body, meta, seq, first, first)
            deltas_at, _head, _first_time, _gaps, lengths = meta
            at = deltas_at + sum(lengths[: first - seq])
            deltas = []
            for size_k in lengths[first - seq : stop]:
                deltas.append(body[at : at + size_k])
                at += size_k
            out.append(StoredGroup(first, etype, raw, deltas))
        return out
