"""Reading one session log file into a validated :class:`SessionLog`.

Order of operations, per line: decode JSON (orjson), then line 1 is the header
(:func:`parse_header`, checked against the id a root layout implies) and every later
line is expanded (packed chunk rows) and each resulting event object is checked
(envelope, then the surface fold step). The first failure rejects the whole file with
``<path>:<line>: <rule message>``; nothing is repaired (deliberate difference 8).

Per-event work is kept to one ``orjson.loads`` per line, one ``orjson.dumps`` per event
(the stored ``raw``) and the fold step: no models are built per event.
:func:`read_log_packed` makes the same checks and keeps each chunk row as one
:class:`PackedChunks` (its members are log-only chunks: only the first can break a rule
the fold checks, contiguity), for ingest, which stores a row the way the row is.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from indexer.errors import LogValidationError
from indexer.logs.chunks import PackedChunks, is_chunk_row, pack_chunk_row
from indexer.logs.envelope import check_envelope, event_raw
from indexer.logs.jsonl import iter_lines
from indexer.logs.roots import implied_session_id
from indexer.model.event import SessionEvent
from indexer.model.header import SessionHeader, parse_header
from indexer.model.records import MAX_NESTING, nesting_exceeds
from indexer.surface.fold import FoldedLog, FoldStep, SurfaceFold

__all__ = [
    "MAX_LOG_NESTING",
    "LogRejectedError",
    "PackedLog",
    "SessionLog",
    "parse_line",
    "read_log",
    "read_log_packed",
]


@dataclass(frozen=True, slots=True)
class SessionLog:
    """A whole, valid session log: its header and its contiguous events from seq 0."""

    path: Path
    header: SessionHeader
    events: list[SessionEvent]
    fold: FoldedLog | None = None


class LogRejectedError(LogValidationError):
    """A log file that cannot be read; ``str`` is ``<path>:<line>: <rule>``.

    ``rule`` is the message of the broken rule (SPEC wording where the SPEC has one) and
    ``line`` the 1-based physical line it was found on.
    """

    def __init__(self, path: Path, line: int, rule: str, code: str | None = None) -> None:
        super().__init__(f"{path}:{line}: {rule}", line=line, code=code)
        self.path = path
        self.rule = rule


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (math.inf, -math.inf):
        raise ValueError(f"number {text} is not a finite double")
    return value


MAX_LOG_NESTING = MAX_NESTING - 2
"""The JSON nesting levels one log line may have: 126. An event published as an
``events`` record sits two levels deeper (the record object, its ``events`` array), so
every line a reader accepts also fits the record bound (``MAX_NESTING``) and is stored
and read by the same code; orjson encodes it without the recursive fallback (its own
limit is 255), and the read path (``indexer.query.events``, which decodes with orjson and
prints with the iterative ``js_stringify``) reads whatever this bound lets in."""


def parse_line(line: bytes) -> Any:
    """Decode one JSON line as JavaScript's ``JSON.parse`` would, or fail.

    orjson handles everything real logs contain (integers beyond 64 bits become doubles,
    as in JavaScript). The stdlib decoder is the fallback for the one input JavaScript
    accepts and orjson refuses: lone surrogate escapes (a stream delta that split a
    surrogate pair). NaN, Infinity and numbers overflowing a double are rejected
    (lossless JSON only), as is nesting deeper than :data:`MAX_LOG_NESTING` levels.
    Raises :class:`LogValidationError`.
    """
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        try:
            value = json.loads(line, parse_constant=_reject_constant, parse_float=_finite_float)
        except (ValueError, RecursionError):
            raise LogValidationError(f"line is not valid JSON: {exc}") from exc
    # Counting brackets is C-speed and bounds the depth from above: only a line with
    # that many is walked (strings are opaque to the walk).
    if line.count(b"[") + line.count(b"{") > MAX_LOG_NESTING and nesting_exceeds(
        value, MAX_LOG_NESTING
    ):
        raise LogValidationError(f"line is nested deeper than {MAX_LOG_NESTING} levels")
    return value


def read_log(path: Path | str, *, expected_id: str | None = None) -> SessionLog:
    """Read, expand and validate a ``.jsonl`` / ``.jsonl.zstd`` session log.

    ``expected_id`` defaults to the id the root layout implies (``None`` outside it).
    Raises :class:`LogRejectedError` on the first broken rule; I/O errors propagate.
    """
    read = _read(Path(path), expected_id, packed=False)
    return SessionLog(path=read.path, header=read.header, events=read.events, fold=read.fold)


@dataclass(frozen=True, slots=True)
class PackedLog:
    """A whole, valid log read with its chunk rows kept packed (``read_log_packed``).

    ``items`` are the log in seq order: events, and chunk rows standing for their members;
    ``events`` the items that are events, ``fold`` their steps (a member's step is always
    ``log-only``) and the final state; ``count`` every event, members included.
    """

    path: Path
    header: SessionHeader
    items: list[SessionEvent | PackedChunks]
    events: list[SessionEvent]
    fold: FoldedLog
    count: int


def read_log_packed(path: Path | str, *, expected_id: str | None = None) -> PackedLog:
    """``read_log`` without expanding chunk rows: the same checks and the same errors,
    without hundreds of member objects per row (ingest: blocks store a run as the row
    does, ``indexer.store.blocks.packed``)."""
    return _read(Path(path), expected_id, packed=True)


def _read(path: Path, expected_id: str | None, *, packed: bool) -> PackedLog:
    if expected_id is None:
        expected_id = implied_session_id(path)
    at_line = 1
    header: SessionHeader | None = None
    events: list[SessionEvent] = []
    items: list[SessionEvent | PackedChunks] = []
    count = 0
    fold = SurfaceFold()
    steps: list[FoldStep] = []
    by_seq: dict[int, SessionEvent] = {}
    # Rule 5 looks up shadowed surface nodes: never a chunk, so never a packed member.
    event_at = by_seq.__getitem__ if packed else events.__getitem__
    try:
        for line_no, line in iter_lines(path):
            at_line = line_no
            if not line.strip(b" \t\r"):
                raise LogValidationError("blank line inside the log")
            obj = parse_line(line)
            if header is None:
                header = parse_header(obj, expected_id=expected_id)
                continue
            if is_chunk_row(obj):
                row = pack_chunk_row(obj)
                if packed:
                    fold.skip_log_only(row.seq0, len(row.fragments))
                    items.append(row)
                    count += len(row.fragments)
                    continue
                for member in row.expand():
                    # Expanded members are well-formed by construction: no envelope check.
                    event = SessionEvent(
                        type="assistant/chunk",
                        seq=member["seq"],
                        time=member["time"],
                        obj=member,
                        raw=event_raw(member),
                    )
                    steps.append(fold.step(event, event_at))
                    events.append(event)
                count += len(row.fragments)
                continue
            event = check_envelope(obj, count)
            steps.append(fold.step(event, event_at))
            events.append(event)
            count += 1
            if packed:
                items.append(event)
                by_seq[event.seq] = event
    except LogValidationError as exc:
        raise LogRejectedError(path, exc.line or at_line, exc.message, exc.code) from exc
    if header is None:
        raise LogRejectedError(path, 1, "empty or header-less session log")
    return PackedLog(path, header, items, events, FoldedLog(steps, fold), count)
