"""Parallel ingest: the per-file work done in worker processes, the writes in order.

Reading a log (decode, validate, fold), planning its writes (``indexer.store.records.plan``) and
cutting and compressing its blocks need nothing from the store when the session is new,
and they are most of an ingest's CPU. Worker processes do them for chunks of files; the
writer process applies the results in the files' order through ``Store.apply_fresh``,
under the record path's usual atomicity. A dsh log is read with its chunk rows packed
(``read_log_packed``), its blocks built from the rows (``indexer.store.blocks.packed``):
most of its events are chunk-row members, which then never become objects. What a worker
cannot plan — a file whose session the store already holds, a reader failure other than
a rejection — is applied the ordinary way in the writer, so the outcome is the
sequential ingest's, file for file.

Workers are spawned (the writer process runs Tantivy's threads, which a fork must not
copy) as the writer's own children, and each watches that its parent is alive: a writer
killed outright (``SIGKILL``, the OOM killer) leaves no worker behind holding its pipes.
They redact as the writer does (its ``Redaction``, given when they start; in ``store``
mode a log is read expanded, its events redacted before they are planned, since packed
chunk rows never become events to redact), and a plan carries the redaction it was made
with: a writer of another redaction applies that file the ordinary way.
They get the data dir's current dictionary when they start, and a chunk carries the
new one after a commit trained it (``indexer.store.blocks.dictionaries``); a block names the
dictionary it was compressed with, and the one it names stays in the dir while blocks use
it. As with any process pool, the calling program's main module
must be import-safe (``if __name__ == "__main__"``): the CLI's is.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from indexer.logs.importers.detect import LogSource, read_source_pieces
from indexer.logs.reader import (
    PIECE_BYTES,
    PIECE_EVENTS,
    LogPieces,
    LogRejectedError,
    NoConversationError,
    PackedLog,
)
from indexer.model import SessionEvent
from indexer.redact import OFF, Redaction
from indexer.store.blocks.format import LEVEL, NO_DICTIONARY, Codec
from indexer.store.blocks.packed import packed_block_rows
from indexer.store.blocks.table import block_rows
from indexer.store.records.plan import FreshLog, WritePlan, plan_events, plan_packed
from indexer.store.tantivy import prebuilt

CHUNK_FILES: Final = 16
"""Files per worker task: large enough to amortize a task's round trip and dictionary,
small enough that the writer starts early and the workers stay balanced."""

IN_FLIGHT: Final = 8
"""Chunks in flight per worker: enough that the workers go on while the writer stalls
(a commit, a dictionary's recompression), few enough to bound what finished chunks hold
(a chunk's results are about its files' size)."""

CHUNK_BYTES: Final = 4 << 20
IN_FLIGHT_BYTES: Final = 32 << 20
ZSTD_WEIGHT: Final = 8
"""A chunk ends at ``CHUNK_BYTES`` of its files' weight (``_weight``: their size, a zstd
file's times ``ZSTD_WEIGHT``, its usual ratio for logs), and at most ``IN_FLIGHT_BYTES``
of weight is in flight: what finished chunks hold (plans, built blocks, tokenized
documents) is of the order of their files' size, so it stays bounded whatever the
files."""

MIN_FILES: Final = 2 * CHUNK_FILES
MIN_BYTES: Final = 8 << 20
"""Fewer files or fewer bytes than these are read in the writer process: starting the
workers (each imports the package, about half a second) costs more than they save (the
real corpus, 1.6 MB: 0.6 s with workers, 0.3 s without)."""


def worth_a_pool(items: Sequence[Item]) -> bool:
    """Whether ``items`` are enough work for worker processes (sizes from ``stat``; a file
    that cannot be stat'ed counts as empty: its reader reports it)."""
    if len(items) < MIN_FILES:
        return False
    total = 0
    for item in items:
        try:
            total += _size(item)
        except OSError:
            continue
        if total >= MIN_BYTES:
            return True
    return False


Item = Path | LogSource


@dataclass(slots=True)
class Outcome:
    """What a worker made of one file: a planned new session, a rejection reason (the
    sequential ingest's wording), or ``"local"``: read and apply it in the writer."""

    kind: Literal["fresh", "rejected", "local"]
    fresh: FreshLog | None = None
    reason: str = ""
    skipped: bool = False  # rejected as a file with no conversation (NoConversationError)


def default_jobs(jobs: int = 0) -> int:
    """``jobs``, or one worker per CPU core this process may use when it is 0."""
    if jobs > 0:
        return jobs
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _path(item: Item) -> Path:
    return item.path if isinstance(item, LogSource) else item


def _size(item: Item) -> int:
    """The bytes an item's log holds: its file's, or its session's in a file of many (an
    Aider history's, as discovery found it)."""
    if isinstance(item, LogSource) and item.section is not None:
        return item.section.size
    return _path(item).stat().st_size


def prepare(
    item: Item,
    codec: Codec,
    dict_id: int,
    level: int,
    redaction: Redaction = OFF,
    piece_events: int = PIECE_EVENTS,
) -> Outcome:
    """Read and plan one file as a new session (runs in a worker). A log of more than
    one piece (``piece_events``) is the writer's to read: its first piece is all that
    is read here."""
    path = _path(item)
    try:
        packed = isinstance(item, Path) or item.format == "dsh"
        if packed and not redaction.stores_redacted:
            pieces = LogPieces(path, packed=True, max_events=piece_events)
            first = next(iter(pieces))
            if not first.final:
                return Outcome("local")
            return _prepare_packed(first, codec, dict_id, level, redaction)
        log = next(read_source_pieces(item, max_events=piece_events))
        if not log.final:
            return Outcome("local")
    except LogRejectedError as exc:
        return Outcome("rejected", reason=str(exc), skipped=isinstance(exc, NoConversationError))
    except OSError as exc:
        return Outcome("rejected", reason=f"{path}: cannot read: {exc}")
    except Exception:  # the writer reads it again and reports it its own way
        return Outcome("local")
    if not log.events:
        return Outcome("fresh", FreshLog(log.header, None, [], redaction))
    if log.fold is None or len(log.fold.steps) != len(log.events) or log.events[0].seq != 0:
        return Outcome("local")
    events, stored = log.events, dict[int, Counter[str]]()
    if redaction.stores_redacted:
        events = redaction.events(events, stored)
    plan = plan_events(log.header, events, log.fold.steps, log.fold.state, redaction)
    for found in stored.values():
        plan.redactions.update(found)
    blocks = block_rows(plan.rows, codec, dict_id, level)
    return Outcome("fresh", FreshLog(log.header, _shipped(plan), blocks, redaction))


def _prepare_packed(
    log: PackedLog, codec: Codec, dict_id: int, level: int, redaction: Redaction
) -> Outcome:
    """A dsh log read with its chunk rows packed: its blocks come from the rows."""
    if not log.items:
        return Outcome("fresh", FreshLog(log.header, None, [], redaction))
    plan = plan_packed(log, redaction)
    if plan is None:  # chunk rows only: nothing to plan but the rows
        return Outcome("local")
    rows = iter(plan.rows)
    items = [next(rows) if isinstance(i, SessionEvent) else i for i in log.items]
    blocks = packed_block_rows(items, codec, dict_id, level)
    return Outcome("fresh", FreshLog(log.header, _shipped(plan), blocks, redaction))


def _shipped(plan: WritePlan) -> WritePlan:
    """The plan as it travels to the writer: its blocks carry the rows, nothing else
    reads them; its documents are tokenized here."""
    plan.rows = []
    plan.docs = [prebuilt(d) for d in plan.docs]
    return plan


@dataclass(frozen=True, slots=True)
class Compression:
    """How new blocks are compressed: the data dir's current dictionary and the level of
    blocks written whole (``EventBlocks.sealed_level``)."""

    dict_id: int
    dictionary: bytes
    level: int

    def same(self, other: Compression | None) -> bool:
        return other is not None and (self.dict_id, self.level) == (other.dict_id, other.level)


class _Worker:
    """A worker process's codec, the compression its blocks use, and how it reads."""

    codec = Codec()
    compression = Compression(NO_DICTIONARY, b"", LEVEL)
    redaction = OFF
    piece_events = PIECE_EVENTS


WATCH_INTERVAL_S: Final = 0.2


def _start_worker(
    owner: int, compression: Compression, redaction: Redaction, piece_events: int
) -> None:
    _use(compression)
    _Worker.redaction = redaction
    _Worker.piece_events = piece_events
    threading.Thread(target=_exit_with, args=(owner,), name="owner-watch", daemon=True).start()


def _use(compression: Compression) -> None:
    _Worker.codec.add(compression.dict_id, compression.dictionary)
    _Worker.compression = compression


def _exit_with(owner: int) -> None:
    """End this worker once the writer that started it is gone (a dead parent's children
    are re-parented at once, so the parent pid changes even while the writer is a
    zombie). The pool ends its workers itself otherwise."""
    while os.getppid() == owner:
        time.sleep(WATCH_INTERVAL_S)
    os._exit(1)


def prepare_chunk(
    items: Sequence[Item], compression: Compression | None = None
) -> tuple[list[Outcome], float]:
    """The chunk's outcomes and the worker CPU seconds they took (for the summary);
    ``compression``: the dir's since a training changed it (else the pool's)."""
    cpu = time.process_time()
    if compression is not None:
        _use(compression)
    c = _Worker.compression
    w = _Worker
    outcomes = [
        prepare(item, w.codec, c.dict_id, c.level, w.redaction, w.piece_events) for item in items
    ]
    return outcomes, time.process_time() - cpu


@dataclass(slots=True)
class PoolStats:
    """What the workers spent, summed over the chunks they finished."""

    cpu_seconds: float = 0.0


def _weight(item: Item) -> int:
    """A file's share of what finished chunks may hold: its size (a zstd file's times
    ``ZSTD_WEIGHT``), at most a piece's (a longer log comes back unplanned)."""
    try:
        size = _size(item)
    except OSError:
        return 0
    zstd = _path(item).name.endswith(".zstd")
    return min(size * ZSTD_WEIGHT if zstd else size, PIECE_BYTES)


def _chunks(items: Iterable[Item]) -> Iterator[tuple[list[Item], int]]:
    """Chunks of ``CHUNK_FILES`` files or ``CHUNK_BYTES`` of weight, with their weight."""
    chunk: list[Item] = []
    weight = 0
    for item in items:
        chunk.append(item)
        weight += _weight(item)
        if len(chunk) == CHUNK_FILES or weight >= CHUNK_BYTES:
            yield chunk, weight
            chunk, weight = [], 0
    if chunk:
        yield chunk, weight


def prepared(
    items: Sequence[Item],
    jobs: int,
    compression: Callable[[], Compression],
    stats: PoolStats | None = None,
    redaction: Redaction = OFF,
    piece_events: int = PIECE_EVENTS,
) -> Iterator[tuple[Item, Outcome]]:
    """Every item with its outcome, in order; at most ``IN_FLIGHT * jobs`` chunks and
    ``IN_FLIGHT_BYTES`` of their weight in flight (the writer's pace bounds the memory
    held by finished ones). ``compression`` is asked before each chunk: a commit may
    have trained the dir's own dictionary meanwhile. ``redaction``: the writer's
    (``Store.redaction``); ``piece_events``: a log of more is the writer's to read."""
    context = multiprocessing.get_context("spawn")
    first = compression()
    with ProcessPoolExecutor(
        max_workers=jobs,
        mp_context=context,
        initializer=_start_worker,
        initargs=(os.getpid(), first, redaction, piece_events),
    ) as pool:
        pending: deque[tuple[list[Item], int, Future[tuple[list[Outcome], float]]]] = deque()
        stats = stats if stats is not None else PoolStats()
        in_flight = 0
        try:
            for chunk, weight in _chunks(items):
                now = compression()
                changed = None if now.same(first) else now
                pending.append((chunk, weight, pool.submit(prepare_chunk, chunk, changed)))
                in_flight += weight
                while len(pending) >= IN_FLIGHT * jobs or in_flight >= IN_FLIGHT_BYTES:
                    done, done_weight, future = pending.popleft()
                    in_flight -= done_weight
                    yield from _finished(done, future, stats)
            while pending:
                done, _, future = pending.popleft()
                yield from _finished(done, future, stats)
        finally:
            for *_chunk, future in pending:
                future.cancel()


def _finished(
    chunk: list[Item], future: Future[tuple[list[Outcome], float]], stats: PoolStats
) -> Iterator[tuple[Item, Outcome]]:
    try:
        outcomes, cpu = future.result()
    except Exception:  # a worker died: the writer reads the chunk itself
        outcomes, cpu = [Outcome("local") for _ in chunk], 0.0
    stats.cpu_seconds += cpu
    yield from zip(chunk, outcomes, strict=True)
