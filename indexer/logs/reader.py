"""Reading one session log file into validated :class:`SessionLog` pieces.

Order of operations, per line: decode JSON (orjson), then line 1 is the header
(:func:`parse_header`, checked against the id a root layout implies) and every later
line is expanded (packed chunk rows) and each resulting event object is checked
(envelope, then the surface fold step). The first failure rejects the whole file with
``<path>:<line>: <rule message>``; nothing is repaired (deliberate difference 8).

A log is read as a stream of pieces (:class:`LogPieces`): at most ``max_events`` events
(chunk-row members count one each) and about ``max_bytes`` of lines each, so what is
held at once is bounded whatever the file holds. A piece is valid when it is handed
out, and it says whether more follow (``final``). The first piece is all or nothing: a
broken rule in it rejects the file before anything went out (a log of one piece, nearly
every log, is read whole, as it always was). After it, a broken rule ends the stream:
the valid events before the broken line go out as a last piece, then the rejection is
raised, so a long log's consumer holds everything before it (``indexer.sources.files``
holds such a session at that seq). Across pieces the reader keeps only the fold: the
surface's nodes and a 16-byte digest of each current ``tool/result`` node, the one thing
a later event may look up (SPEC §2.1 rule 5: a ``tool/result`` replace compares the
result it rewrites, its content blanked: ``indexer.surface.result_shape``).
:func:`read_log` is the one piece of a whole log.

Per-event work is kept to one ``orjson.loads`` per line, one ``orjson.dumps`` per event
(the stored ``raw``) and the fold step: no models are built per event. ``packed``
keeps each chunk row as one :class:`PackedChunks` (its members are log-only chunks:
only the first can break a rule the fold checks, contiguity), for ingest, which stores
a row the way the row is.

A read leaves the state a later read of the same file may start from
(``LogPieces.end``: where ``indexer.logs.jsonl`` says a read may start, with the fold
there), when every event before it went out; a read from that state (``resume``) reads
only what was appended since and continues the fold where it stopped.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import orjson

from indexer.errors import LogValidationError
from indexer.logs.chunks import PackedChunks, is_chunk_row, pack_chunk_row
from indexer.logs.envelope import check_envelope, event_raw
from indexer.logs.jsonl import Lines, Position
from indexer.logs.roots import implied_session_id
from indexer.model.event import SessionEvent, load_json
from indexer.model.header import SessionHeader, parse_header
from indexer.model.records import MAX_NESTING, nesting_exceeds
from indexer.surface.fold import FoldedLog, FoldStep, SurfaceFold
from indexer.surface.jstext import to_well_formed
from indexer.surface.result_shape import ResultShape

__all__ = [
    "MAX_LOG_NESTING",
    "PIECE_BYTES",
    "PIECE_EVENTS",
    "LogPieces",
    "LogRejectedError",
    "PackedLog",
    "ReadState",
    "SessionLog",
    "parse_line",
    "read_log",
    "read_log_packed",
    "read_pieces",
]

PIECE_EVENTS: Final = 10_000
"""Events in one piece at most: applying a piece holds a few KB per event (its objects,
plan and index documents), so a piece of one-line messages stays under ~60 MB."""
PIECE_BYTES: Final = 4 << 20
"""Bytes of lines after which a piece ends (the line that crosses it is its last)."""


@dataclass(frozen=True, slots=True)
class SessionLog:
    """A valid session log, or a piece of one: its header and its contiguous events
    from ``fold.start`` (0: from the log's start). ``final``: no events follow."""

    path: Path
    header: SessionHeader
    events: list[SessionEvent]
    fold: FoldedLog | None = None
    final: bool = True


@dataclass(frozen=True, slots=True)
class PackedLog:
    """A valid log (or a piece of one) read with its chunk rows kept packed.

    ``items`` are the piece in seq order: events, and chunk rows standing for their
    members; ``events`` the items that are events, ``fold`` their steps (a member's step
    is always ``log-only``) and the state after them; ``count`` every event, members
    included; ``final``: nothing follows.
    """

    path: Path
    header: SessionHeader
    items: list[SessionEvent | PackedChunks]
    events: list[SessionEvent]
    fold: FoldedLog
    count: int
    final: bool = True


class LogRejectedError(LogValidationError):
    """A log file that cannot be read; ``str`` is ``<path>:<line>: <rule>``.

    ``rule`` is the message of the broken rule (SPEC wording where the SPEC has one) and
    ``line`` the 1-based physical line it was found on.
    """

    def __init__(self, path: Path, line: int, rule: str, code: str | None = None) -> None:
        rule = to_well_formed(rule)  # it may quote a log's text: shown, printed, sent as JSON
        super().__init__(f"{path}:{line}: {rule}", line=line, code=code)
        self.path = path
        self.rule = rule


class NoConversationError(LogRejectedError):
    """A file that holds no conversation at all (an agent's side file: resume summaries,
    file-history snapshots): skipped and said so, not reported as a broken log."""


MAX_LOG_NESTING = MAX_NESTING - 2
"""The JSON nesting levels one log line may have: 126. An event published as an
``events`` record sits two levels deeper (the record object, its ``events`` array), so
every line a reader accepts also fits the record bound (``MAX_NESTING``) and is stored
and read by the same code; orjson encodes it without the recursive fallback (its own
limit is 255), and the read path (``indexer.query.events``, which decodes with orjson and
prints with the iterative ``js_stringify``) reads whatever this bound lets in."""


def parse_line(line: bytes) -> Any:
    """Decode one JSON line as JavaScript's ``JSON.parse`` would, or fail.

    ``load_json`` reads it (integers beyond 64 bits become doubles, as in JavaScript; a
    lone surrogate escape, a stream delta that split a surrogate pair, is read as the
    one code unit it is). NaN, Infinity and numbers overflowing a double are rejected
    (lossless JSON only), as is nesting deeper than :data:`MAX_LOG_NESTING` levels.
    Raises :class:`LogValidationError`.
    """
    try:
        value = load_json(line)
    except orjson.JSONDecodeError as exc:
        raise LogValidationError(f"line is not valid JSON: {exc}") from exc
    # Counting brackets is C-speed and bounds the depth from above: only a line with
    # that many is walked (strings are opaque to the walk).
    if line.count(b"[") + line.count(b"{") > MAX_LOG_NESTING and nesting_exceeds(
        value, MAX_LOG_NESTING
    ):
        raise LogValidationError(f"line is nested deeper than {MAX_LOG_NESTING} levels")
    return value


@dataclass(frozen=True, slots=True)
class ReadState:
    """Where a read of a log ended cleanly, and its fold there: a later read of the
    same file from here (``LogPieces(resume=...)``) reads only what follows."""

    header: SessionHeader
    position: Position
    count: int  # events read (the next seq)
    nodes: list[int]
    results: dict[int, bytes]  # the rule-5 digest of each current tool/result node


class _Results:
    """The fold's look-up of an earlier node (SPEC §2.1 rule 5, ``SurfaceFold.step``):
    only a current surface node is ever asked for, and only what the rule compares of
    it (``ResultShape``). So the digest of each current ``tool/result`` node is all that
    is kept, whatever piece it came in: 16 bytes a node, never the result itself."""

    def __init__(self, results: dict[int, bytes]) -> None:
        self.digests = results

    def event_at(self, seq: int) -> ResultShape:
        digest = self.digests.get(seq)
        return ResultShape(False) if digest is None else ResultShape(True, digest)

    def after(self, event: SessionEvent, step: FoldStep) -> None:
        for seq in step.shadowed:
            self.digests.pop(seq, None)
        if step.kind != "log-only" and event.type == "tool/result":
            self.digests[event.seq] = ResultShape.of(event).digest


@dataclass(slots=True)
class _Piece:
    """The piece being read."""

    start: int
    start_nodes: list[int]
    items: list[SessionEvent | PackedChunks] = field(default_factory=list)
    events: list[SessionEvent] = field(default_factory=list)
    steps: list[FoldStep] = field(default_factory=list)
    count: int = 0
    size: int = 0


class LogPieces:
    """The pieces of one log file, read as they are iterated (module docstring).

    ``max_events=None`` reads the whole log as one piece. ``resume``: the ``end`` of an
    earlier read of the same file; the pieces then hold only the events after it (the
    caller checked the file was only appended to), and its first piece is the one that
    is all or nothing. Once read (or rejected after its first piece), ``end`` is the
    state to resume from, or ``None``.
    """

    def __init__(
        self,
        path: Path,
        *,
        expected_id: str | None = None,
        packed: bool = False,
        max_events: int | None = PIECE_EVENTS,
        max_bytes: int = PIECE_BYTES,
        resume: ReadState | None = None,
    ) -> None:
        self.path = path
        self.expected_id = expected_id if expected_id is not None else implied_session_id(path)
        self.packed = packed
        self.max_events = max_events
        self.max_bytes = max_bytes
        self.resume = resume
        self.end: ReadState | None = None

    def __iter__(self) -> Iterator[PackedLog]:
        path, resume, packed = self.path, self.resume, self.packed
        lines = Lines(path, resume.position if resume is not None else None)
        header = resume.header if resume is not None else None
        count = resume.count if resume is not None else 0
        fold = SurfaceFold(resume.nodes if resume is not None else (), count)
        results = _Results(dict(resume.results) if resume is not None else {})
        event_at = results.event_at
        piece = _Piece(count, list(fold.nodes))
        full = False
        out = 0  # pieces handed out
        before_last: ReadState | None = None  # the state before a last, unended line
        at_line = resume.position.line if resume is not None else 1
        try:
            for line_no, line in lines:
                at_line = line_no
                if lines.end is not None and before_last is None and header is not None:
                    before_last = ReadState(
                        header, lines.end, count, list(fold.nodes), dict(results.digests)
                    )
                if full:
                    yield self._out(header, piece, fold, final=False)
                    out += 1
                    piece, full = _Piece(count, list(fold.nodes)), False
                if not line.strip(b" \t\r"):
                    raise LogValidationError("blank line inside the log")
                obj = parse_line(line)
                if header is None:
                    header = parse_header(obj, expected_id=self.expected_id)
                    continue
                piece.size += len(line)
                if is_chunk_row(obj):
                    row = pack_chunk_row(obj)
                    if packed:
                        fold.skip_log_only(row.seq0, len(row.fragments))
                        piece.items.append(row)
                    else:
                        for member in row.expand():
                            # Expanded members are well-formed by construction: no envelope check.
                            event = SessionEvent(
                                type="assistant/chunk",
                                seq=member["seq"],
                                time=member["time"],
                                obj=member,
                                raw=event_raw(member),
                            )
                            piece.steps.append(fold.step(event, event_at))
                            piece.events.append(event)
                    count += len(row.fragments)
                    piece.count += len(row.fragments)
                else:
                    event = check_envelope(obj, count)
                    step = fold.step(event, event_at)
                    results.after(event, step)
                    piece.steps.append(step)
                    piece.events.append(event)
                    if packed:
                        piece.items.append(event)
                    count += 1
                    piece.count += 1
                full = self.max_events is not None and (
                    piece.count >= self.max_events or piece.size >= self.max_bytes
                )
        except LogValidationError as exc:
            if out:  # the first piece is all or nothing; after it, the events before go out
                self.end = before_last
                if piece.count:
                    yield self._out(header, piece, fold, final=True)
            raise LogRejectedError(path, exc.line or at_line, exc.message, exc.code) from exc
        if header is None:
            raise LogRejectedError(path, 1, "empty or header-less session log")
        if before_last is not None:
            self.end = before_last
        elif lines.end is not None:
            self.end = ReadState(header, lines.end, count, fold.nodes, results.digests)
        yield self._out(header, piece, fold, final=True)

    def _out(
        self, header: SessionHeader | None, piece: _Piece, fold: SurfaceFold, *, final: bool
    ) -> PackedLog:
        assert header is not None
        # A piece that is not the last keeps the fold's state as it was at its end.
        state = fold if final else SurfaceFold(list(fold.nodes), fold.next_seq)
        folded = FoldedLog(piece.steps, state, piece.start, piece.start_nodes)
        items: list[SessionEvent | PackedChunks] = (
            piece.items if self.packed else list(piece.events)
        )
        return PackedLog(self.path, header, items, piece.events, folded, piece.count, final)


def read_log(path: Path | str, *, expected_id: str | None = None) -> SessionLog:
    """Read, expand and validate a ``.jsonl`` / ``.jsonl.zstd`` session log.

    ``expected_id`` defaults to the id the root layout implies (``None`` outside it).
    Raises :class:`LogRejectedError` on the first broken rule; I/O errors propagate.
    """
    return expanded(_whole(LogPieces(Path(path), expected_id=expected_id, max_events=None)))


def read_log_packed(path: Path | str, *, expected_id: str | None = None) -> PackedLog:
    """``read_log`` without expanding chunk rows: the same checks and the same errors,
    without hundreds of member objects per row (ingest: blocks store a run as the row
    does, ``indexer.store.blocks.packed``)."""
    return _whole(LogPieces(Path(path), expected_id=expected_id, packed=True, max_events=None))


def read_pieces(
    path: Path | str,
    *,
    expected_id: str | None = None,
    max_events: int = PIECE_EVENTS,
    max_bytes: int = PIECE_BYTES,
) -> Iterator[SessionLog]:
    """``read_log`` in pieces (``LogPieces``), expanded: the same checks and the same
    errors, each raised when the piece holding the broken line is read."""
    pieces = LogPieces(
        Path(path), expected_id=expected_id, max_events=max_events, max_bytes=max_bytes
    )
    for piece in pieces:
        log = expanded(piece)
        del piece  # nothing of a piece is held here while the next one is read
        yield log
        del log


def expanded(piece: PackedLog) -> SessionLog:
    """A piece read expanded (its items are its events) as a :class:`SessionLog`."""
    return SessionLog(piece.path, piece.header, piece.events, piece.fold, piece.final)


def _whole(pieces: LogPieces) -> PackedLog:
    (log,) = pieces
    return log
