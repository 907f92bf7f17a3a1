"""The compact event format: a session's raw events in zstd-compressed blocks.

A block holds a run of consecutive events of one session. It closes (is *sealed*) once
its raw events reach ``BLOCK_BYTES`` or ``BLOCK_EVENTS``; the last block of a session
stays open and later appends rewrite only it, so an append costs at most one block,
never the session.

Payload (before compression): one compact JSON line of entries, then the bodies::

    [[type, time, flags, n, body bytes, raw bytes], ...]\\n<body><body>...

``flags`` is ``surface code * 2 + indexed``; ``raw bytes`` the size of the raw JSON the
entry stands for (a block's fill is read from the first line alone). An entry with
``n == 0`` is one event whose body is its raw JSON, byte for byte. An entry with
``n > 0`` is a *chunk run*: ``n`` consecutive ``assistant/chunk`` events that differ
only in seq, time and their delta, stored as the dsh packed row does (SPEC §1.5: the
shared JSON once, the time gaps, the deltas); a member is rebuilt by concatenating the
very bytes it was cut from, so reads return the stored bytes in every case.
Chunks are most of a session's events and most of their bytes are the repeated
envelope. An append keeps the stored entries and adds its own, so the block boundaries
depend on the events only, the entries inside a block on how appends were grouped.

Reading a payload back is ``indexer.store.blocks.payload``'s.

Compression uses a zstd dictionary: a new data dir starts with the one the package
ships (``zstd.dict``, trained on real logs by ``worker/devtools/zstd_dictionary.py``)
and, once it holds enough events, trains its own (``indexer.store.blocks.dictionaries``).
Every data dir keeps a copy of the dictionaries its blocks need (``dictionaries``
table; each block row names its ``dict_id``), so a dir stays readable when the shipped
one changes.

Levels: the open block is rewritten by every append, so a rewrite that leaves it open
uses the fast ``LEVEL``. Every other write is at ``SEALED_LEVEL``: the rewrite that seals
a block (its last), a block an append writes whole (written once, rewritten only if a
later append continues it), the open block of a session that went not-live, and the
recompression to a new dictionary. Whole-file ingest thus writes every block once at
``SEALED_LEVEL``; a live session's blocks end there once they seal or the session ends.
(A dir that has not trained its own dictionary yet writes at ``LEVEL`` throughout: the
training recompresses every block at ``SEALED_LEVEL``.)
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Sequence
from importlib import resources
from typing import Any, Final, NamedTuple

import orjson
import zstandard

from indexer.model.event import dump_json, load_json

BLOCK_BYTES: Final = 32 * 1024
BLOCK_EVENTS: Final = 1024
LEVEL: Final = 3
SEALED_LEVEL: Final = 6  # higher levels save little for much more CPU (bench/README.md)
SHIPPED_DICTIONARY: Final = "zstd.dict"
NO_DICTIONARY: Final = 0

SURFACES: Final = ("current", "log-only", "shadowed")
NO_END: Final = 2**63
_SURFACE_CODE: Final = {s: i for i, s in enumerate(SURFACES)}
_CHUNK: Final = "assistant/chunk"
_TEXT_DELTAS: Final = frozenset({"text-delta", "reasoning-delta"})
_TEXT_CHUNK_KEYS: Final = ("type", "index", "text")
_TOOL_CHUNK_KEYS: Final = ("type", "index", "id", "argumentsDelta")
_NAMED_TOOL_CHUNK_KEYS: Final = ("type", "index", "id", "name", "argumentsDelta")


class StoredEvent(NamedTuple):
    """One event as the store keeps it: its metadata and its exact raw JSON (a tuple:
    hundreds of thousands are built per ingest batch)."""

    seq: int
    type: str
    time: int
    surface: str
    indexed: bool
    raw: bytes


def is_full(raw_bytes: int, events: int) -> bool:
    """Whether a block with these totals is sealed (the next event starts a new one)."""
    return raw_bytes >= BLOCK_BYTES or events >= BLOCK_EVENTS


class BlockCuts:
    """Where blocks end, event after event (the one cutting rule of every block writer)."""

    __slots__ = ("count", "raw_bytes")

    def __init__(self, raw_bytes: int = 0, count: int = 0) -> None:
        self.raw_bytes = raw_bytes
        self.count = count

    def starts_block(self, size: int) -> bool:
        """Count the next event (``size`` raw bytes); whether it starts a new block."""
        new = bool(self.count) and is_full(self.raw_bytes, self.count)
        if new:
            self.raw_bytes = self.count = 0
        self.raw_bytes += size
        self.count += 1
        return new


def split_blocks(
    events: Sequence[StoredEvent], raw_bytes: int = 0, count: int = 0
) -> list[list[StoredEvent]]:
    """``events`` cut into blocks; the first continues an open block that already holds
    ``count`` events of ``raw_bytes`` (the first list is then its continuation)."""
    out: list[list[StoredEvent]] = [[]]
    cuts = BlockCuts(raw_bytes, count)
    for event in events:
        if cuts.starts_block(len(event.raw)):
            out.append([])
        out[-1].append(event)
    return out if out[0] else out[1:]


# ---- chunk runs --------------------------------------------------------------------------------
# A chunk's raw JSON is ``{"type":"assistant/chunk","seq":S,"time":T,`` + rest, where rest
# is ``"data":{...,"chunk":{...,"<key>":"`` + delta + ``"}}}``; a run keeps the shared
# head of rest once and each member's delta bytes. Reads concatenate the pieces, so a
# member reads back exactly the bytes it was stored from.
CHUNK_HEAD: Final = b'{"type":"assistant/chunk","seq":'
CHUNK_TIME: Final = b',"time":'
CHUNK_HEAD_LEN: Final = len(CHUNK_HEAD)
CHUNK_TIME_LEN: Final = len(CHUNK_TIME)
CHUNK_TAIL: Final = b'"}}}'


def _chunk_parts(event: StoredEvent) -> tuple[bytes, bytes] | None:
    """(shared head, delta) of a chunk's raw JSON, or ``None`` when it is laid out
    otherwise (then it is stored raw)."""
    raw = event.raw
    if not raw.startswith(CHUNK_HEAD) or not raw.endswith(CHUNK_TAIL):
        return None
    seq, time = b"%d" % event.seq, b"%d" % event.time
    i = CHUNK_HEAD_LEN + len(seq)
    j = i + CHUNK_TIME_LEN + len(time)
    if raw[CHUNK_HEAD_LEN:i] != seq or raw[i:j] != CHUNK_TIME + time or raw[j : j + 1] != b",":
        return None
    rest = raw[j + 1 :]
    # The delta is the last string value: a quote inside a JSON string is always \".
    cut = rest.rfind(b':"') + 2
    if cut < 2 or cut > len(rest) - len(CHUNK_TAIL):
        return None
    return rest[:cut], rest[cut : -len(CHUNK_TAIL)]


def _run_body(head: bytes, times: Sequence[int], deltas: Sequence[bytes]) -> bytes:
    gaps = [b - a for a, b in itertools.pairwise(times)]
    lengths = [len(d) for d in deltas]
    meta = orjson.dumps([head.decode(), times[0], gaps, lengths])
    return meta + b"\n" + b"".join(deltas)


def _continues(event: StoredEvent, head: bytes, surface: str, indexed: bool) -> bytes | None:
    """The delta of ``event`` when it continues a chunk run with ``head``: exactly its
    envelope, the head, a delta and the tail (reads rebuild it by that concatenation)."""
    if event.type != _CHUNK or event.surface != surface or event.indexed != indexed:
        return None
    raw = event.raw
    prefix = b"".join((CHUNK_HEAD, b"%d" % event.seq, CHUNK_TIME, b"%d" % event.time, b",", head))
    tail = len(CHUNK_TAIL)
    if len(raw) < len(prefix) + tail or not (raw.startswith(prefix) and raw.endswith(CHUNK_TAIL)):
        return None
    return raw[len(prefix) : -tail]


def _chunk_run(events: Sequence[StoredEvent], start: int) -> tuple[int, bytes] | None:
    """The longest chunk run from ``start`` (at least two events) and its body."""
    first = events[start]
    parts = _chunk_parts(first)
    if parts is None:
        return None
    head = parts[0]
    deltas = [parts[1]]
    j = start + 1
    while j < len(events):
        delta = _continues(events[j], head, first.surface, first.indexed)
        if delta is None:
            break
        deltas.append(delta)
        j += 1
    if len(deltas) < 2:
        return None
    try:
        body = _run_body(head, [e.time for e in events[start:j]], deltas)
    except UnicodeDecodeError:
        return None
    return len(deltas), body


# ---- payload -----------------------------------------------------------------------------------
def _single(entries: list[list[Any]], bodies: list[bytes], event: StoredEvent) -> None:
    """An entry of one event, its raw JSON as the body."""
    flags = _SURFACE_CODE[event.surface] * 2 + int(event.indexed)
    entries.append([event.type, event.time, flags, 0, len(event.raw), len(event.raw)])
    bodies.append(event.raw)


def encode(events: Sequence[StoredEvent]) -> bytes:
    """The uncompressed payload of a block."""
    entries: list[list[Any]] = []
    bodies: list[bytes] = []
    i, n = 0, len(events)
    while i < n:
        event = events[i]
        run = _chunk_run(events, i) if event.type == _CHUNK else None
        if run is not None:
            count, body = run
            flags = _SURFACE_CODE[event.surface] * 2 + int(event.indexed)
            size = sum(len(e.raw) for e in events[i : i + count])
            entries.append([_CHUNK, event.time, flags, count, len(body), size])
            bodies.append(body)
            i += count
            continue
        _single(entries, bodies, event)
        i += 1
    return dump_json(entries) + b"\n" + b"".join(bodies)


def append_payload(payload: bytes, more: bytes) -> bytes:
    """One payload holding the events of ``payload`` followed by those of ``more``: the
    stored entries are kept as they are (nothing is re-encoded)."""
    cut, more_cut = payload.index(b"\n"), more.index(b"\n")
    entries = load_json(payload[:cut]) + load_json(more[:more_cut])
    return dump_json(entries) + b"\n" + payload[cut + 1 :] + more[more_cut + 1 :]


def payload_fill(payload: bytes) -> tuple[int, int]:
    """(raw bytes, events) a payload holds, from its first line."""
    entries = load_json(payload[: payload.index(b"\n")])
    return sum(e[5] for e in entries), sum(max(1, e[3]) for e in entries)


# ---- compression -------------------------------------------------------------------------------
def shipped_dictionary() -> bytes:
    """The dictionary the package ships (trained by ``worker/devtools/zstd_dictionary.py``)."""
    return resources.files("indexer.store.blocks").joinpath(SHIPPED_DICTIONARY).read_bytes()


def dictionary_id(data: bytes) -> int:
    return int(zstandard.ZstdCompressionDict(data).dict_id())


class Codec:
    """zstd compression with the dictionaries of one data dir, by dictionary id.

    zstd contexts are not safe to share between threads: every thread gets its own
    (readers answer calls from several threads).
    """

    def __init__(self, dictionaries: dict[int, bytes] | None = None) -> None:
        self._dictionaries: dict[int, zstandard.ZstdCompressionDict] = {}
        self._local = threading.local()
        for did, data in (dictionaries or {}).items():
            self.add(did, data)

    def add(self, did: int, data: bytes) -> None:
        if did != NO_DICTIONARY and did not in self._dictionaries:
            self._dictionaries[did] = zstandard.ZstdCompressionDict(data)

    def knows(self, did: int) -> bool:
        return did == NO_DICTIONARY or did in self._dictionaries

    def data(self, did: int) -> bytes:
        """The bytes of a known dictionary (empty for ``NO_DICTIONARY``)."""
        if did == NO_DICTIONARY:
            return b""
        return bytes(self._dictionaries[did].as_bytes())

    def _contexts(self) -> dict[tuple[str, int, int], Any]:
        contexts: dict[tuple[str, int, int], Any] | None = getattr(self._local, "contexts", None)
        if contexts is None:
            contexts = {}
            self._local.contexts = contexts
        return contexts

    def compress(self, payload: bytes, did: int, level: int = LEVEL) -> bytes:
        contexts = self._contexts()
        ctx = contexts.get(("c", did, level))
        if ctx is None:
            if did == NO_DICTIONARY:
                ctx = zstandard.ZstdCompressor(level=level)
            else:
                ctx = zstandard.ZstdCompressor(level=level, dict_data=self._dictionaries[did])
            contexts[("c", did, level)] = ctx
        return bytes(ctx.compress(payload))

    def decompress(self, data: bytes, did: int) -> bytes:
        contexts = self._contexts()
        ctx = contexts.get(("d", did, 0))
        if ctx is None:
            if did == NO_DICTIONARY:
                ctx = zstandard.ZstdDecompressor()
            else:
                ctx = zstandard.ZstdDecompressor(dict_data=self._dictionaries[did])
            contexts[("d", did, 0)] = ctx
        return bytes(ctx.decompress(data))
