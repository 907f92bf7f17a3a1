"""Blocks built from a log read with its chunk rows packed (``read_log_packed``).

A dsh chunk row already is what a block keeps of a chunk run: the shared JSON once, the
times, the deltas (``indexer.store.blocks.format``). Ingest workers build a new session's blocks
from the rows directly, without an event object, a raw JSON dump and a run search per
member; the payloads are byte for byte those ``blocks.encode`` makes of the expanded
events (the same cuts, the same runs, merged across rows as there), which the tests
check over real logs. A row whose members are not in orjson's compact form (a lone
surrogate) is expanded and goes the ordinary way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from indexer.logs.chunks import PackedChunks
from indexer.model.event import dump_json
from indexer.store.blocks.format import (
    _CHUNK,
    _SURFACE_CODE,
    CHUNK_HEAD,
    CHUNK_TAIL,
    CHUNK_TIME,
    BlockCuts,
    Codec,
    StoredEvent,
    _chunk_parts,
    _continues,
    _run_body,
    _single,
)
from indexer.store.blocks.table import BlockRow

_MEMBER_SURFACE: Final = "log-only"  # a chunk is never surface-eligible, never has text
_MEMBER_FLAGS: Final = _SURFACE_CODE[_MEMBER_SURFACE] * 2
_ENVELOPE_BYTES: Final = len(CHUNK_HEAD) + len(CHUNK_TIME) + 1 + len(CHUNK_TAIL)


@dataclass(slots=True)
class _Members:
    """Consecutive members of one packed row inside one block."""

    head: bytes  # the shared raw JSON after ``"time":T,``, up to the delta
    seq0: int
    times: list[int] = field(default_factory=list)
    deltas: list[bytes] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)  # each member's raw JSON bytes

    def after_first(self) -> _Members:
        return _Members(self.head, self.seq0 + 1, self.times[1:], self.deltas[1:], self.sizes[1:])

    def raw(self, k: int) -> bytes:
        return b"".join(
            (
                CHUNK_HEAD,
                b"%d" % (self.seq0 + k),
                CHUNK_TIME,
                b"%d" % self.times[k],
                b",",
                self.head,
                self.deltas[k],
                CHUNK_TAIL,
            )
        )


Item = StoredEvent | PackedChunks
_Piece = StoredEvent | _Members


def _row_parts(row: PackedChunks) -> tuple[bytes, list[bytes]] | None:
    """(shared head, deltas) of a row's members: each member's raw JSON is its envelope,
    the head, its delta and the tail. ``None`` when that JSON is not orjson's (then the
    row is expanded)."""
    try:
        deltas = [dump_delta(text) for text in row.fragments]
    except TypeError:
        return None
    first = dump_json(row.member(0))
    envelope = b"%s%d%s%d," % (CHUNK_HEAD, row.seq0, CHUNK_TIME, row.times[0])
    end = deltas[0] + CHUNK_TAIL
    if not (first.startswith(envelope) and first.endswith(end)):
        return None
    return first[len(envelope) : len(first) - len(end)], deltas


def dump_delta(text: str) -> bytes:
    """A delta's bytes inside its member's raw JSON: orjson's string, unquoted."""
    return orjson.dumps(text)[1:-1]


def _expanded(row: PackedChunks) -> list[StoredEvent]:
    return [
        StoredEvent(row.seq0 + k, _CHUNK, row.times[k], _MEMBER_SURFACE, False, dump_json(m))
        for k, m in enumerate(row.expand())
    ]


def split_items(items: Sequence[Item]) -> list[list[_Piece]]:
    """``items`` cut into blocks where ``blocks.split_blocks`` cuts the expanded events."""
    out: list[list[_Piece]] = [[]]
    cuts = BlockCuts()
    for item in items:
        parts = None if isinstance(item, StoredEvent) else _row_parts(item)
        if isinstance(item, StoredEvent) or parts is None:  # an event, or a row's events
            for event in [item] if isinstance(item, StoredEvent) else _expanded(item):
                if cuts.starts_block(len(event.raw)):
                    out.append([])
                out[-1].append(event)
            continue
        head, deltas = parts
        fixed = _ENVELOPE_BYTES + len(head)
        piece: _Members | None = None
        for k, delta in enumerate(deltas):
            seq, time = item.seq0 + k, item.times[k]
            size = fixed + len(b"%d" % seq) + len(b"%d" % time) + len(delta)
            if cuts.starts_block(size):
                out.append([])
                piece = None
            if piece is None:
                piece = _Members(head, seq)
                out[-1].append(piece)
            piece.times.append(time)
            piece.deltas.append(delta)
            piece.sizes.append(size)
    return out if out[0] else out[1:]


def encode_pieces(pieces: Sequence[_Piece]) -> bytes:
    """The payload ``blocks.encode`` makes of the events ``pieces`` stand for: the same
    greedy runs (a run goes on across rows and single chunk events with its head)."""
    entries: list[list[Any]] = []
    bodies: list[bytes] = []
    pieces = list(pieces)
    i, n = 0, len(pieces)
    while i < n:
        piece = pieces[i]
        if isinstance(piece, _Members) and piece.deltas[0].endswith(b":"):
            # ``_chunk_parts`` cuts at the last ``:"``: a delta ending in ``:`` puts one
            # at its closing quote, so this member cannot start a run; it stands alone
            # and the next one may start it (it may still continue a run: ``_continues``).
            _single(entries, bodies, _member_event(piece, 0))
            if len(piece.deltas) == 1:
                i += 1
            else:
                pieces[i] = piece.after_first()
            continue
        if isinstance(piece, _Members):
            head, surface, indexed = piece.head, _MEMBER_SURFACE, False
            times, deltas, sizes = list(piece.times), list(piece.deltas), list(piece.sizes)
        else:
            parts = _chunk_parts(piece) if piece.type == _CHUNK else None
            if parts is None:
                _single(entries, bodies, piece)
                i += 1
                continue
            head, surface, indexed = parts[0], piece.surface, piece.indexed
            times, deltas, sizes = [piece.time], [parts[1]], [len(piece.raw)]
        j = i + 1
        while j < n:
            nxt = pieces[j]
            if isinstance(nxt, _Members):
                if nxt.head != head or surface != _MEMBER_SURFACE or indexed:
                    break
                times += nxt.times
                deltas += nxt.deltas
                sizes += nxt.sizes
            else:
                delta = _continues(nxt, head, surface, indexed)
                if delta is None:
                    break
                times.append(nxt.time)
                deltas.append(delta)
                sizes.append(len(nxt.raw))
            j += 1
        body = None
        if len(deltas) >= 2:
            try:
                body = _run_body(head, times, deltas)
            except UnicodeDecodeError:
                body = None
        if body is None:  # one member, or a head that is not text: the first stands alone
            if isinstance(piece, _Members):
                for k in range(len(piece.deltas)):  # one member (a run of 2 never fails)
                    _single(entries, bodies, _member_event(piece, k))
            else:
                _single(entries, bodies, piece)
            i += 1
            continue
        flags = _SURFACE_CODE[surface] * 2 + int(indexed)
        entries.append([_CHUNK, times[0], flags, len(deltas), len(body), sum(sizes)])
        bodies.append(body)
        i = j
    return dump_json(entries) + b"\n" + b"".join(bodies)


def _member_event(piece: _Members, k: int) -> StoredEvent:
    return StoredEvent(piece.seq0 + k, _CHUNK, piece.times[k], _MEMBER_SURFACE, False, piece.raw(k))


def _first_last(block: Sequence[_Piece]) -> tuple[int, int]:
    first, last = block[0], block[-1]
    start = first.seq if isinstance(first, StoredEvent) else first.seq0
    end = last.seq if isinstance(last, StoredEvent) else last.seq0 + len(last.deltas) - 1
    return start, end


def packed_block_rows(items: Sequence[Item], codec: Codec, did: int, level: int) -> list[BlockRow]:
    """``event_blocks.block_rows`` of the events ``items`` stand for (a new session's)."""
    rows = []
    for block in split_items(items):
        first, last = _first_last(block)
        rows.append((first, last, did, codec.compress(encode_pieces(block), did, level)))
    return rows
