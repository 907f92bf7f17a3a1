"""How an importer's mapped events become session log pieces.

An importer is a record source and a mapper (:class:`Importer`): ``units`` yields the
log's records in order (keeping ``EventBuilder.line`` current), ``map`` turns one into
dsh events queued on the :class:`EventBuilder`, and ``header`` says the session's
header once every record was seen. :func:`import_pieces` drives it and hands out the
events in pieces of at most ``max_events`` events and about ``max_bytes`` of source
bytes, each numbered, timed and folded like a dsh log's piece, so what is held at once
is bounded whatever the log holds (``indexer.logs.reader`` does the same for dsh logs).

The header goes out with the first piece. An importer whose header can no longer
change says so (``settled``: every field it takes from the first record that has it is
found); a log whose header is not settled when its first piece is full (a field that
only a later record, or none, gives) is read once more, its events dropped as they are
mapped, for the header alone.

Totality: whatever a record makes the mapping raise — a field of an unexpected type, an
id no path can hold, a value the encoder refuses — is that file's rejection at the
record's line (``<path>:<line>: <why>``), never an error that escapes to the caller: one
bad log never stops the others.

Mapping is prefix-stable: the events of a file's first N records never depend on what
follows them, so a live log that grows is re-read into the same events plus new ones
(the store drops the identical prefix).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final, Protocol, TypeVar

from indexer.errors import LogValidationError
from indexer.logs.importers.titles import fallback_title
from indexer.logs.jsonl import iter_lines
from indexer.logs.reader import (
    MAX_LOG_NESTING,
    PIECE_BYTES,
    PIECE_EVENTS,
    LogRejectedError,
    SessionLog,
    parse_line,
)
from indexer.model.event import SURFACE_ELIGIBLE, SessionEvent, dump_json
from indexer.model.header import SessionHeader, ill_formed_field
from indexer.model.records import nesting_exceeds
from indexer.model.shapes import EventShapeError, check_message_shape
from indexer.surface.fold import FoldedLog, FoldStep, SurfaceFold

__all__ = [
    "STEP_START",
    "EventBuilder",
    "Importer",
    "MakeImporter",
    "import_pieces",
    "import_whole",
]

STEP_START: Final = "step/start"


class Importer(Protocol):
    """One log's reading (module docstring)."""

    def units(self) -> Iterator[Any]:
        """The log's records, in order, each after setting the builder's ``line``."""
        ...

    def map(self, unit: Any) -> None:
        """Queue the events of one record on the builder."""
        ...

    def settled(self) -> SessionHeader | None:
        """The header, when no later record can change it; else ``None``."""
        ...

    def header(self) -> SessionHeader:
        """The header after the last record; raises ``LogRejectedError`` when the log
        gives none."""
        ...


MakeImporter = Callable[["EventBuilder"], Importer]
T = TypeVar("T")


def _never(seq: int) -> SessionEvent:
    """The fold's look-up of an earlier event: only a ``replace`` asks for one, and an
    importer appends every event."""
    raise AssertionError(f"an imported event replaced seq {seq}")


class EventBuilder:
    """Collects mapped events in file order; :meth:`piece` numbers the queued ones from
    where the last piece ended, gives each its time and folds them like a dsh log.

    A record without a usable timestamp (Claude Code's ``summary``) takes the time of
    the event before it, or the session's creation time when it comes first.

    Model steps are marked as dsh marks them: a log-only ``step/start {turn, step}``
    before the first assistant event after a user message or tool result (one model
    call), the turn counted by user messages. It is the boundary a current-session event
    search stops at, so an imported session can be a caller like a dsh one.

    Titles: a log's own title record is a ``session/title`` event where it stands; a
    log with none before its first prompt gets dsh's ``fallback`` title of that prompt
    (:func:`fallback_title`, from its redacted text) right after it. A later title
    event wins (the title fold takes the last one), and neither depends on later lines.

    Every event is checked against the read path's rule (``check_message_shape``) and
    the nesting bound of log lines: a mapping that would break either rejects the file
    with the source line, never stores an event that cannot be read.
    """

    def __init__(
        self, path: Path, *, max_events: int | None = None, max_bytes: int = PIECE_BYTES
    ) -> None:
        self.path = path
        self.line = 0
        self.max_events = max_events
        self.max_bytes = max_bytes
        self.first_time: int | None = None
        """The time of the first queued event that had one."""
        self._pending: list[tuple[str, int | None, Any, int]] = []
        self._size = 0  # source bytes read since the last piece
        self._start = 0  # the seq of the first pending event
        self._last: int | None = None  # the time of the last event handed out
        self._fold = SurfaceFold()
        self._turn = 0
        self._step = 0
        self._in_step = False
        self._titled = False

    def reject(self, rule: str, line: int | None = None) -> LogRejectedError:
        return LogRejectedError(self.path, line if line is not None else self.line, rule)

    def consumed(self, size: int) -> None:
        """Count ``size`` bytes of source read (towards the piece's ``max_bytes``)."""
        self._size += size

    def records(self) -> Iterator[tuple[dict[str, Any], str]]:
        """The file's JSON-lines records with their ``type``, ``line`` kept current; a
        line that is not a JSON object with a string ``type`` rejects the file."""
        for line_no, raw in iter_lines(self.path):
            self.line = line_no
            self._size += len(raw)
            record = self.parse(raw)
            if not isinstance(record, dict):
                raise self.reject("record is not a JSON object")
            rtype = record.get("type")
            if not isinstance(rtype, str) or not rtype:
                raise self.reject("record has no type")
            yield record, rtype

    def parse(self, raw: bytes) -> Any:
        """One JSON text as a log line is read (``parse_line``), rejected at ``line``."""
        try:
            return parse_line(raw)
        except LogValidationError as exc:
            raise self.reject(exc.message) from exc

    def add(self, etype: str, time: int | None, data: Any, *, prompt: str | None = None) -> None:
        """Queue one event (``surfaceOp: append`` for the surface-eligible types).
        ``prompt``: the text of a human prompt (a ``user/message`` a title may come from)."""
        line = self.line
        if time is not None and self.first_time is None:
            self.first_time = time
        if etype == "user/message":
            self._turn, self._step, self._in_step = self._turn + 1, 0, False
        elif etype == "tool/result":
            self._in_step = False
        elif etype == "assistant/message" and not self._in_step:
            self._step += 1
            self._in_step = True
            step = {"turn": self._turn, "step": self._step}
            self._pending.append((STEP_START, time, step, line))
        elif etype == "session/title":
            self._titled = True
        self._pending.append((etype, time, data, line))
        if prompt is not None and not self._titled:
            title = fallback_title(prompt)
            if title is not None:
                self._titled = True
                seq = self._start + len(self._pending) - 1
                fallback = {"title": title, "messageSeqs": [seq], "source": {"kind": "fallback"}}
                self._pending.append(("session/title", time, fallback, line))

    def full(self) -> bool:
        """Whether the queued events make a piece (``max_events``: ``None`` never)."""
        return self.max_events is not None and (
            len(self._pending) >= self.max_events or self._size >= self.max_bytes
        )

    def drop(self) -> None:
        """Forget the queued events, numbering on after them (a reading for the header)."""
        self._start += len(self._pending)
        self._pending.clear()
        self._size = 0

    def piece(self, header: SessionHeader, final: bool) -> SessionLog:
        """The queued events as the next piece of the log, numbered from where the last
        piece ended; ``final``: no piece follows."""
        fold, start = self._fold, self._start
        start_nodes = list(fold.nodes)
        events: list[SessionEvent] = []
        steps: list[FoldStep] = []
        last = self._last if self._last is not None else header.created_at
        for seq, (etype, time, data, line) in enumerate(self._pending, start):
            last = time if time is not None else last
            obj: dict[str, Any] = {"type": etype, "seq": seq, "time": last, "data": data}
            if etype in SURFACE_ELIGIBLE:
                obj["surfaceOp"] = "append"
            if nesting_exceeds(obj, MAX_LOG_NESTING):
                raise self.reject(f"record is nested deeper than {MAX_LOG_NESTING} levels", line)
            event = SessionEvent(type=etype, seq=seq, time=last, obj=obj, raw=dump_json(obj))
            try:
                check_message_shape(event)
                steps.append(fold.step(event, _never))
            except (LogValidationError, EventShapeError) as exc:  # a mapping bug
                why = f"imported event breaks a read rule: {exc.message}"
                raise self.reject(why, line) from exc
            events.append(event)
        self._last = last
        self.drop()
        state = fold if final else SurfaceFold(list(fold.nodes), fold.next_seq)
        folded = FoldedLog(steps, state, start, start_nodes)
        return SessionLog(self.path, header, events, folded, final)


def _describe(exc: Exception) -> str:
    text = str(exc).splitlines()[0][:200] if str(exc) else ""
    return f"record cannot be imported ({type(exc).__name__}{': ' + text if text else ''})"


def _guarded(b: EventBuilder, step: Callable[..., T], *args: Any) -> T:
    """``step(*args)``, any error it raises but an I/O one made the file's rejection at
    the current record (module docstring)."""
    try:
        return step(*args)
    except LogRejectedError:
        raise
    except LogValidationError as exc:  # a line too long, a torn zstd frame
        raise b.reject(exc.message, exc.line) from exc
    except (OSError, MemoryError):
        raise
    except Exception as exc:
        raise b.reject(_describe(exc)) from exc


def _mapped(b: EventBuilder, importer: Importer) -> Iterator[None]:
    """Map every record; yield after each one that filled a piece."""
    units = _guarded(b, importer.units)
    while True:
        unit = _guarded(b, next, units, _END)
        if unit is _END:
            return
        _guarded(b, importer.map, unit)
        if b.full():
            yield


_END: Final = object()


def _header(b: EventBuilder, importer: Importer, *, final: bool) -> SessionHeader | None:
    """The importer's header (``final``: after the last record, else only when
    settled), checked: its identifying strings must be storable."""
    header = _guarded(b, importer.header if final else importer.settled)
    if header is not None:
        fault = ill_formed_field(header.to_json())
        if fault is not None:
            raise b.reject(fault, 1)
    return header


def _header_alone(path: Path, make: MakeImporter, max_bytes: int) -> SessionHeader:
    """The header of a log read whole, its events dropped as they are mapped."""
    b = EventBuilder(path, max_events=PIECE_EVENTS, max_bytes=max_bytes)
    importer = _guarded(b, make, b)
    for _ in _mapped(b, importer):
        b.drop()
    header = _header(b, importer, final=True)
    assert header is not None
    return header


def import_pieces(
    path: Path,
    make: MakeImporter,
    *,
    max_events: int | None = PIECE_EVENTS,
    max_bytes: int = PIECE_BYTES,
) -> Iterator[SessionLog]:
    """The pieces of one log (module docstring); ``max_events=None``: one piece.
    Raises ``LogRejectedError`` (``<path>:<line>: <why>``) when the piece holding the
    first broken record is read, and ``OSError`` for I/O errors."""
    b = EventBuilder(path, max_events=max_events, max_bytes=max_bytes)
    importer = _guarded(b, make, b)
    header: SessionHeader | None = None
    for _ in _mapped(b, importer):
        if header is None:
            header = _header(b, importer, final=False) or _header_alone(path, make, max_bytes)
        yield _guarded(b, b.piece, header, False)
    if header is None:
        header = _header(b, importer, final=True)
    assert header is not None
    yield _guarded(b, b.piece, header, True)


def import_whole(path: Path, make: MakeImporter) -> SessionLog:
    """The log as one piece."""
    (log,) = import_pieces(path, make, max_events=None)
    return log
